#!/usr/bin/env bash
# One device run for the prepared-grid work (issue 11): SparseGridCore configured alone with CUDA,
# built, all its tests run; compute-sanitizer memcheck on the new GPU tests (test_prepared);
# benchmarks: prepared against unprepared probes, the per-call crossover behind Auto's prepared
# threshold, then the non-codec tables of docs/benchmarks-gpu.md, most important first, until the
# time budget (BUDGET seconds from the start, default 250) runs out. CUDA_MODULE_LOADING=EAGER.
# Results: $OUT/summary.txt, $OUT/bench.jsonl (one line per benchmark: label, args, result).
set -u
OUT=${OUT:-$PWD/gpu-out}
BUDGET=${BUDGET:-250}
mkdir -p "$OUT"
export CUDA_MODULE_LOADING=EAGER
START=$(date +%s)
elapsed() { echo $(($(date +%s) - START)); }
left() { echo $((BUDGET - $(elapsed))); }
BUILD=build-gpu-prepared
BENCH=$BUILD/bin/sparsegrid-bench
SUMMARY="$OUT/summary.txt"
: > "$SUMMARY"
log() { echo "[$(elapsed) s] $*" | tee -a "$SUMMARY"; }

nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.max.mem,driver_version,power.limit \
  --format=csv > "$OUT/gpu.txt" 2>&1
nvidia-smi -L >> "$OUT/gpu.txt" 2>&1
{ nproc; lscpu | grep 'Model name'; free -g | head -2; nvcc --version | tail -2; cmake --version | head -1; } \
  >> "$OUT/gpu.txt" 2>&1
cat "$OUT/gpu.txt" >> "$SUMMARY"

cmake -S SparseGridCore -B $BUILD -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_ARCHITECTURES=90 > "$OUT/configure.log" 2>&1 &&
  cmake --build $BUILD -j 16 > "$OUT/build.log" 2>&1
rc=$?
log "build rc=$rc"
if [ $rc -ne 0 ]; then
  tail -40 "$OUT/build.log" >> "$SUMMARY"
  exit 1
fi

(cd $BUILD && ctest -j 8 --timeout 120 --output-on-failure > "$OUT/ctest.log" 2>&1)
log "ctest rc=$?"
grep -E "tests passed|tests failed|\(Failed\)|SEGFAULT|Timeout" "$OUT/ctest.log" | head -20 >> "$SUMMARY"
echo "skipped: $(grep -c '(Skipped)' "$OUT/ctest.log")" >> "$SUMMARY"
grep -E "(Skipped)" "$OUT/ctest.log" | head -10 >> "$SUMMARY"
"$BUILD/bin/sgcore_test_prepared" --gtest_filter='PreparedGpu*' > "$OUT/upload-test.log" 2>&1
log "10^7-point probe test rc=$?"
grep -E "prepared probe|per-component|OK|FAILED" "$OUT/upload-test.log" >> "$SUMMARY"

SPARSEGRID_TEST_PROBE_POINTS=200000 timeout 120 compute-sanitizer --tool memcheck --leak-check full \
  --error-exitcode 9 "$BUILD/bin/sgcore_test_prepared" \
  --gtest_filter='*CUDA*:PreparedGpu*:PreparedBackends*' > "$OUT/memcheck.log" 2>&1
log "memcheck rc=$? $(grep -E 'ERROR SUMMARY|LEAK SUMMARY' "$OUT/memcheck.log" | tr '\n' ' ')"
grep -E "PASSED|FAILED" "$OUT/memcheck.log" | head -5 >> "$SUMMARY"

# b LABEL [ENV=VALUE...] -- BENCH-ARGS...: one benchmark line into bench.jsonl.
b() {
  local label=$1
  shift
  local envs=()
  while [ "$1" != "--" ]; do
    envs+=("$1")
    shift
  done
  shift
  local remaining
  remaining=$(left)
  if [ "$remaining" -lt 8 ]; then
    echo "{\"label\":\"$label\",\"skipped\":\"time budget\"}" >> "$OUT/bench.jsonl"
    return
  fi
  local line
  line=$(timeout $((remaining - 3)) env "${envs[@]}" "$BENCH" --json "$@" 2>> "$OUT/bench.err" | tail -1)
  [ -z "$line" ] && line="null"
  echo "{\"label\":\"$label\",\"args\":\"$*\",\"result\":$line}" >> "$OUT/bench.jsonl"
}

log "bench: prepared probes"
P="--dims 3 --level 9 --boundary 1 --points 1e7"
b probe-prepared-c3-b4 -- --op probe $P --components 3 --batches 4 --prepared 1 --backend cuda --repeat 5
b probe-unprepared-c3-b4 -- --op probe $P --components 3 --batches 4 --prepared 0 --backend cuda --repeat 5
b probe-prepared-c1-b1 -- --op probe $P --components 1 --batches 1 --prepared 1 --backend cuda --repeat 5
b probe-unprepared-c1-b1 -- --op probe $P --components 1 --batches 1 --prepared 0 --backend cuda --repeat 5
b probe-prepared-c3-b40 -- --op probe $P --components 3 --batches 40 --prepared 1 --backend cuda --repeat 5
b probe-unprepared-c3-b40 -- --op probe $P --components 3 --batches 40 --prepared 0 --backend cuda --repeat 5
b probe-cpu-c3-b4 -- --op probe $P --components 3 --batches 4 --prepared 1 --backend cpu --threads 16 --repeat 3
for n in 1e3 1e4 3e4 1e5 3e5 1e6; do
  b "crossover-gpu-$n" -- --op prepared-evaluate --dims 3 --level 9 --boundary 1 --points $n --backend cuda --repeat 9
  b "crossover-cpu-$n" -- --op prepared-evaluate --dims 3 --level 9 --boundary 1 --points $n --backend cpu --threads 16 --repeat 9
done
for n in 1e4 3e4 1e5; do
  b "crossover-gpu-5-8-$n" -- --op prepared-evaluate --dims 5 --level 8 --points $n --backend cuda --repeat 9
  b "crossover-cpu-5-8-$n" -- --op prepared-evaluate --dims 5 --level 8 --points $n --backend cpu --threads 16 --repeat 9
done

log "bench: goals"
b goal-eval-3-10 -- --op evaluate --dims 3 --level 10 --points 1e8 --backend cuda --repeat 3
b goal-hier-3-14 -- --op hierarchize --dims 3 --level 14 --backend cuda --repeat 7
b goal-reconstruct-513 -- --op reconstruct --dims 3 --level 9 --boundary 1 --backend cuda --repeat 5
b goal-eval-5-8-1e7 -- --op evaluate --dims 5 --level 8 --points 1e7 --backend cuda --repeat 5
b goal-eval-10-6-1e7 -- --op evaluate --dims 10 --level 6 --points 1e7 --backend cuda --repeat 5
b goal-hier-5-8 -- --op hierarchize --dims 5 --level 8 --backend cuda --repeat 11

log "bench: hierarchize and evaluate tables (1e6)"
for p in float double; do
  for dl in "3 10" "3 12" "3 14" "5 8" "10 6"; do
    set -- $dl
    b "table-hier-$1-$2-$p" -- --op hierarchize --dims $1 --level $2 --precision $p --backend cuda --repeat 7
    b "table-dehier-$1-$2-$p" -- --op dehierarchize --dims $1 --level $2 --precision $p --backend cuda --repeat 5
    b "table-eval-$1-$2-$p-1e6" -- --op evaluate --dims $1 --level $2 --points 1e6 --precision $p --backend cuda --repeat 5
  done
done
b hier-3-9-boundary -- --op hierarchize --dims 3 --level 9 --boundary 1 --backend cuda --repeat 7
b eval-12-4 -- --op evaluate --dims 12 --level 4 --points 1e6 --backend cuda --repeat 3

log "bench: reconstruct and GPU against CPU"
b table-reconstruct-513-double -- --op reconstruct --dims 3 --level 9 --boundary 1 --precision double --backend cuda --repeat 3
b reconstruct-400x300x200 -- --op reconstruct --dims 3 --level 9 --boundary 1 --image 400,300,200 --backend cuda --repeat 5
b eval-3-10-1e7 -- --op evaluate --dims 3 --level 10 --points 1e7 --backend cuda --repeat 3
for dl in "3 10" "3 12" "3 14" "5 8" "10 6"; do
  set -- $dl
  b "cpu-hier-$1-$2" -- --op hierarchize --dims $1 --level $2 --backend cpu --threads 16 --repeat 5
  b "cpu-eval-$1-$2-1e6" -- --op evaluate --dims $1 --level $2 --points 1e6 --backend cpu --threads 16 --repeat 3
done
b cpu-eval-3-10-1e7 -- --op evaluate --dims 3 --level 10 --points 1e7 --backend cpu --threads 16 --repeat 3
b cpu-eval-12-4 -- --op evaluate --dims 12 --level 4 --points 1e6 --backend cpu --threads 16 --repeat 3
b cpu-reconstruct-513 -- --op reconstruct --dims 3 --level 9 --boundary 1 --backend cpu --threads 16 --repeat 3
b cpu-reconstruct-400x300x200 -- --op reconstruct --dims 3 --level 9 --boundary 1 --image 400,300,200 --backend cpu --threads 16 --repeat 3

log "bench: evaluate 1e8"
b eval-3-9-boundary-1e8 -- --op evaluate --dims 3 --level 9 --boundary 1 --points 1e8 --backend cuda --repeat 2
for p in float double; do
  for dl in "3 12" "3 14" "5 8" "3 10" "10 6"; do
    set -- $dl
    b "table-eval-$1-$2-$p-1e8" -- --op evaluate --dims $1 --level $2 --points 1e8 --precision $p --backend cuda --repeat 2
  done
done
log "done; $(grep -c '"skipped"' "$OUT/bench.jsonl") benchmarks skipped for time"
