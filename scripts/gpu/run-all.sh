#!/usr/bin/env bash
# One batch on the GPU machine, from the repository root:
#   OUT=/some/dir BUDGET=560 scripts/gpu/run-all.sh [phase...]
# phases (run in the order given; default: all, in this order):
#   build     configure + build the core with CUDA (sm_90), the check and bandwidth programs
#   tests     ctest (every core test; CUDA cases run here), JUnit + summary JSON
#   check     scripts/gpu/check.cxx: CUDA vs CPU through the public API (--large)
#   sanitize  compute-sanitizer memcheck and racecheck on the check program, CUDA test subsets
#             and a small benchmark
#   bench     bandwidth and the goal benchmarks
#   bench-tables  the tables of docs/benchmarks-gpu.md (D, L, precision, 1e6 and 1e8 points)
#   bench-opts, bench-cpu   the optimisation switches; the CPU backend on 16 threads
#   bench-tune, bench-tune2 points per thread, shared coefficients, staging sizes, other shapes
# Leaves in $OUT (few files: the device tool returns a limited number): gpu.txt, summary.txt
# (tests.json, check.json, sanitize.json, bandwidth.json, timing), bench.jsonl (one JSON
# object per benchmark: label, environment, arguments, result) and logs.tgz (build, ctest and
# JUnit, check and sanitizer logs). BUDGET (seconds since start) stops starting new work so
# that a run limit is never hit with nothing saved.
set -u
ROOT=$(pwd)
OUT=${OUT:-$ROOT/gpu-out}
mkdir -p "$OUT"
BUDGET=${BUDGET:-560}
START=$(date +%s)
BUILD=${BUILD:-$ROOT/build-gpu}
BENCH=$BUILD/bin/sparsegrid-bench
PHASES=${*:-build check tests sanitize bench bench-tune bench-opts bench-cpu bench-tables}

elapsed() { echo $(($(date +%s) - START)); }
pack() {
  cd "$OUT" || return
  {
    for f in tests.json check.json sanitize.json bandwidth.json; do
      [ -f "$f" ] && { echo "== $f"; cat "$f"; }
    done
    echo "== timing"
    cat timing.txt 2>/dev/null
    echo "== build warnings"
    cat build-warnings.txt 2>/dev/null
    echo "== check.err (head)"
    head -40 check.err 2>/dev/null
  } > summary.txt
  tar czf logs.tgz --remove-files $(ls | grep -v -E '^(gpu.txt|summary.txt|bench.jsonl|logs.tgz)$') 2>/dev/null
  cd "$ROOT" || return
}
trap pack EXIT
left() { echo $((BUDGET - $(elapsed))); }
stamp() { echo "$(elapsed)s $*" >> "$OUT/timing.txt"; }

# b LABEL [ENV=VALUE...] -- BENCH-ARGS...: one benchmark line into bench.jsonl.
b() {
  local label=$1
  shift
  local envs=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    envs+=("$1")
    shift
  done
  shift
  local remaining
  remaining=$(left)
  if [ "$remaining" -lt 15 ]; then
    echo "{\"label\":\"$label\",\"skipped\":\"time budget\"}" >> "$OUT/bench.jsonl"
    return
  fi
  local line
  line=$(timeout $((remaining - 5)) env "${envs[@]}" "$BENCH" --json "$@" 2>> "$OUT/bench.err" | tail -1)
  [ -n "$line" ] || line=null
  echo "{\"label\":\"$label\",\"env\":\"${envs[*]}\",\"args\":\"$*\",\"result\":$line}" >> "$OUT/bench.jsonl"
}

phase_build() {
  {
    nvidia-smi -L
    nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.max.memory,driver_version,power.limit --format=csv
    nvidia-smi
    echo "cpus: $(nproc)"
    grep -m1 "model name" /proc/cpuinfo
    free -g | head -2
    nvcc --version | tail -2
    cmake --version | head -1
  } > "$OUT/gpu.txt" 2>&1
  stamp "configure"
  cmake -S SparseGridCore -B "$BUILD" -G Ninja -DSPARSEGRID_ENABLE_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90 > "$OUT/build.log" 2>&1
  stamp "build"
  cmake --build "$BUILD" -j16 >> "$OUT/build.log" 2>&1
  echo "build exit $?" >> "$OUT/build.log"
  g++ -O2 -std=c++17 -ISparseGridCore/include scripts/gpu/check.cxx "$BUILD/libSparseGridCore.a" \
    -L/usr/local/cuda/lib64 -lcudart_static -ldl -lrt -lpthread -o "$BUILD/sparsegrid-gpu-check" >> "$OUT/build.log" 2>&1
  nvcc -O3 -arch=sm_90 scripts/gpu/bandwidth.cu -o "$BUILD/bandwidth" >> "$OUT/build.log" 2>&1
  g++ -O3 -march=native -std=c++17 scripts/gpu/nanscan.cxx -o "$BUILD/nanscan" >> "$OUT/build.log" 2>&1
  grep -i -E "warning|error" "$OUT/build.log" | grep -v -E "Werror|errors\.cxx|test_errors" > "$OUT/build-warnings.txt"
  tail -3 "$OUT/build.log"
  stamp "built"
}

phase_tests() {
  stamp "tests"
  ctest --test-dir "$BUILD" --output-on-failure -j6 --timeout 300 \
    --output-junit "$OUT/ctest-junit.xml" > "$OUT/ctest.log" 2>&1
  echo "ctest exit $?" >> "$OUT/ctest.log"
  python3 - "$OUT/ctest-junit.xml" > "$OUT/tests.json" <<'EOF'
import sys, json, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
res = {"all": {"passed": 0, "failed": 0, "skipped": 0}, "cuda": {"passed": 0, "failed": 0, "skipped": 0}, "failed_names": []}
for tc in root.iter("testcase"):
    name = tc.get("name", "")
    status = tc.get("status", "")
    if tc.find("failure") is not None or tc.find("error") is not None or status == "fail":
        kind = "failed"; res["failed_names"].append(name)
    elif tc.find("skipped") is not None or status in ("notrun", "disabled", "skipped"):
        kind = "skipped"
    else:
        kind = "passed"
    res["all"][kind] += 1
    if "CUDA" in name or "Cuda" in name:
        res["cuda"][kind] += 1
print(json.dumps(res))
EOF
  tail -4 "$OUT/ctest.log"
  cat "$OUT/tests.json"
  stamp "tested"
}

phase_check() {
  stamp "check"
  timeout $(($(left) > 60 ? 240 : 30)) "$BUILD/sparsegrid-gpu-check" --large > "$OUT/check.json" 2> "$OUT/check.err"
  echo "check exit $?" >> "$OUT/check.err"
  cat "$OUT/check.json"
  head -20 "$OUT/check.err"
  stamp "checked"
}

phase_sanitize() {
  stamp "sanitize"
  CS="compute-sanitizer --print-limit 20 --error-exitcode 99"
  san() { # name, seconds, command...
    local name=$1 secs=$2
    shift 2
    if [ "$(left)" -lt $((secs + 20)) ]; then
      echo "{\"name\":\"$name\",\"skipped\":\"time budget\"}" >> "$OUT/sanitize.json"
      return
    fi
    timeout "$secs" "$@" > "$OUT/sanitize-$name.log" 2>&1
    local rc=$?
    local summary
    summary=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY|LEAK SUMMARY" "$OUT/sanitize-$name.log" | tail -2 | tr '\n' ' ' | tr -d '"')
    echo "{\"name\":\"$name\",\"exit\":$rc,\"summary\":\"$summary\"}" >> "$OUT/sanitize.json"
  }
  FILTER='*CUDA*:-*AllOptimizationCombinations*'
  san memcheck-check 120 $CS --tool memcheck --leak-check full "$BUILD/sparsegrid-gpu-check" --sanitize
  san racecheck-check 120 $CS --tool racecheck "$BUILD/sparsegrid-gpu-check" --sanitize
  san memcheck-tests-errors 60 $CS --tool memcheck "$BUILD/bin/sgcore_test_errors" --gtest_filter="$FILTER"
  san memcheck-tests-properties 60 $CS --tool memcheck "$BUILD/bin/sgcore_test_properties" --gtest_filter="$FILTER"
  san memcheck-tests-options 60 $CS --tool memcheck "$BUILD/bin/sgcore_test_options" --gtest_filter="$FILTER"
  san racecheck-tests-options 60 $CS --tool racecheck "$BUILD/bin/sgcore_test_options" --gtest_filter="$FILTER"
  san synccheck-check 60 $CS --tool synccheck "$BUILD/sparsegrid-gpu-check" --sanitize
  san memcheck-bench 60 $CS --tool memcheck "$BENCH" --op evaluate --dims 3 --level 7 --points 20000 --backend cuda --repeat 1
  san racecheck-bench-reconstruct 60 $CS --tool racecheck "$BENCH" --op reconstruct --dims 3 --level 5 --boundary 1 --backend cuda --repeat 1
  cat "$OUT/sanitize.json"
  stamp "sanitized"
}

phase_bench() {
  stamp "bench"
  "$BUILD/bandwidth" > "$OUT/bandwidth.json" 2>&1
  cat "$OUT/bandwidth.json"
  "$BUILD/nanscan" | while read -r line; do echo "{\"label\":\"nan-scan\",\"result\":$line}"; done >> "$OUT/bench.jsonl"
  # The goals (float, kernel time; end-to-end for the fastsg comparisons).
  b goal-eval-3-10 -- --op evaluate --dims 3 --level 10 --points 1e8 --backend cuda --repeat 3
  b goal-hier-3-14 -- --op hierarchize --dims 3 --level 14 --backend cuda --repeat 7
  b goal-reconstruct-513 -- --op reconstruct --dims 3 --level 9 --boundary 1 --backend cuda --repeat 5
  b goal-eval-5-8-1e7 -- --op evaluate --dims 5 --level 8 --points 1e7 --backend cuda --repeat 5
  b goal-eval-10-6-1e7 -- --op evaluate --dims 10 --level 6 --points 1e7 --backend cuda --repeat 5
  b goal-hier-5-8 -- --op hierarchize --dims 5 --level 8 --backend cuda --repeat 11
  stamp "benched goals"
}

phase_bench_tables() {
  stamp "bench-tables"
  # Tables: (D, L) x precision; evaluate at 1e6 and 1e8 points.
  for p in float double; do
    for dl in "3 10" "3 12" "3 14" "5 8" "10 6"; do
      set -- $dl
      b "table-hier-$1-$2-$p" -- --op hierarchize --dims $1 --level $2 --precision $p --backend cuda --repeat 7
      b "table-dehier-$1-$2-$p" -- --op dehierarchize --dims $1 --level $2 --precision $p --backend cuda --repeat 5
      b "table-eval-$1-$2-$p-1e6" -- --op evaluate --dims $1 --level $2 --points 1e6 --precision $p --backend cuda --repeat 5
    done
  done
  for p in float double; do
    for dl in "3 10" "3 12" "3 14" "5 8" "10 6"; do
      set -- $dl
      b "table-eval-$1-$2-$p-1e8" -- --op evaluate --dims $1 --level $2 --points 1e8 --precision $p --backend cuda --repeat 2
    done
  done
  b table-reconstruct-513-double -- --op reconstruct --dims 3 --level 9 --boundary 1 --precision double --backend cuda --repeat 3
  stamp "benched"
}

phase_bench_opts() {
  stamp "bench-opts"
  # Each switch off from the defaults, and the unoptimised baseline.
  for o in default none \
    inv2,inv3,inv4,ichg1,ichg2,vec1,sred1 inv1,inv2,inv3,inv4,ichg1,vec1,sred1 \
    inv1,inv2,inv3,inv4,ichg1,ichg2,sred1 inv1,inv2,inv3,inv4,ichg1,ichg2,vec1; do
    b "opts-eval-3-10-$o" -- --op evaluate --dims 3 --level 10 --points 1e7 --backend cuda --repeat 3 --opts $o
    b "opts-eval-5-8-$o" -- --op evaluate --dims 5 --level 8 --points 1e6 --backend cuda --repeat 3 --opts $o
  done
  for o in default none inv2,inv3,inv4,ichg1 inv1,inv3,inv4,ichg1 inv1,inv2,inv4,ichg1 \
    inv1,inv2,inv3,ichg1 inv1,inv2,inv3,inv4; do
    b "opts-hier-3-14-$o" -- --op hierarchize --dims 3 --level 14 --backend cuda --repeat 5 --opts $o
    b "opts-hier-5-8-$o" -- --op hierarchize --dims 5 --level 8 --backend cuda --repeat 5 --opts $o
  done
  for c in 32 64 128 512 2048; do
    b "chunk-eval-3-10-$c" -- --op evaluate --dims 3 --level 10 --points 1e7 --backend cuda --repeat 3 --chunk $c
  done
  stamp "benched-opts"
}

phase_bench_tune() {
  stamp "bench-tune"
  for ppl in 1 2 4; do
    b "ppl$ppl-eval-3-10" SPARSEGRID_CUDA_PPL=$ppl -- --op evaluate --dims 3 --level 10 --points 1e7 --backend cuda --repeat 3
    b "ppl$ppl-eval-3-10-noshared" SPARSEGRID_CUDA_PPL=$ppl SPARSEGRID_CUDA_SHARED_COEFFICIENTS=0 -- --op evaluate --dims 3 --level 10 --points 1e7 --backend cuda --repeat 3
    b "ppl$ppl-eval-5-8" SPARSEGRID_CUDA_PPL=$ppl -- --op evaluate --dims 5 --level 8 --points 1e7 --backend cuda --repeat 3
    b "ppl$ppl-eval-3-14" SPARSEGRID_CUDA_PPL=$ppl -- --op evaluate --dims 3 --level 14 --points 1e7 --backend cuda --repeat 3
    b "ppl$ppl-eval-5-8-double" SPARSEGRID_CUDA_PPL=$ppl -- --op evaluate --dims 5 --level 8 --points 1e7 --precision double --backend cuda --repeat 3
  done
  for ppl in 1 2; do
    b "ppl$ppl-eval-10-6" SPARSEGRID_CUDA_PPL=$ppl -- --op evaluate --dims 10 --level 6 --points 1e7 --backend cuda --repeat 3
  done
  for mb in 0 8 128; do
    b "pinned$mb-eval-5-8-1e7" SPARSEGRID_CUDA_PINNED_MB=$mb -- --op evaluate --dims 5 --level 8 --points 1e7 --backend cuda --repeat 5
    b "pinned$mb-eval-10-6-1e7" SPARSEGRID_CUDA_PINNED_MB=$mb -- --op evaluate --dims 10 --level 6 --points 1e7 --backend cuda --repeat 5
    b "pinned$mb-reconstruct-513" SPARSEGRID_CUDA_PINNED_MB=$mb -- --op reconstruct --dims 3 --level 9 --boundary 1 --backend cuda --repeat 5
    b "pinned$mb-hier-3-14" SPARSEGRID_CUDA_PINNED_MB=$mb -- --op hierarchize --dims 3 --level 14 --backend cuda --repeat 7
  done
  b "chunked-eval-3-10-1e8" SPARSEGRID_CUDA_CHUNKED=1 -- --op evaluate --dims 3 --level 10 --points 1e8 --backend cuda --repeat 3
  b "chunked-eval-5-8-1e7" SPARSEGRID_CUDA_CHUNKED=1 -- --op evaluate --dims 5 --level 8 --points 1e7 --backend cuda --repeat 5
  stamp "benched-tune"
}

phase_bench_tune2() {
  stamp "bench-tune2"
  # Points per thread in double (register pressure: spills above D = 5 with 4, above 6 with 2).
  for ppl in 1 2 4; do
    b "ppl$ppl-eval-3-10-double" SPARSEGRID_CUDA_PPL=$ppl -- --op evaluate --dims 3 --level 10 --points 1e7 --precision double --backend cuda --repeat 3
    b "ppl$ppl-eval-6-6-double" SPARSEGRID_CUDA_PPL=$ppl -- --op evaluate --dims 6 --level 6 --points 1e6 --precision double --backend cuda --repeat 3
    b "ppl$ppl-eval-6-6-float" SPARSEGRID_CUDA_PPL=$ppl -- --op evaluate --dims 6 --level 6 --points 1e6 --backend cuda --repeat 3
  done
  for ppl in 1 2; do
    b "ppl$ppl-eval-10-6-double" SPARSEGRID_CUDA_PPL=$ppl -- --op evaluate --dims 10 --level 6 --points 1e7 --precision double --backend cuda --repeat 3
  done
  # Beyond the compiled dimensions (runtime D kernel) and with boundary points.
  b "eval-12-4" -- --op evaluate --dims 12 --level 4 --points 1e6 --backend cuda --repeat 3
  b "cpu-eval-12-4" -- --op evaluate --dims 12 --level 4 --points 1e6 --backend cpu --threads 16 --repeat 3
  b "eval-3-9-boundary-1e8" -- --op evaluate --dims 3 --level 9 --boundary 1 --points 1e8 --backend cuda --repeat 3
  b "hier-3-9-boundary" -- --op hierarchize --dims 3 --level 9 --boundary 1 --backend cuda --repeat 7
  b "reconstruct-400x300x200" -- --op reconstruct --dims 3 --level 9 --boundary 1 --image 400,300,200 --backend cuda --repeat 5
  b "cpu-reconstruct-400x300x200" -- --op reconstruct --dims 3 --level 9 --boundary 1 --image 400,300,200 --backend cpu --threads 16 --repeat 5
  stamp "benched-tune2"
}

phase_bench_cpu() {
  stamp "bench-cpu"
  for dl in "3 10" "3 12" "3 14" "5 8" "10 6"; do
    set -- $dl
    b "cpu-hier-$1-$2" -- --op hierarchize --dims $1 --level $2 --backend cpu --threads 16 --repeat 5
    b "cpu-eval-$1-$2-1e6" -- --op evaluate --dims $1 --level $2 --points 1e6 --backend cpu --threads 16 --repeat 3
  done
  b cpu-eval-3-10-1e7 -- --op evaluate --dims 3 --level 10 --points 1e7 --backend cpu --threads 16 --repeat 3
  b cpu-reconstruct-513 -- --op reconstruct --dims 3 --level 9 --boundary 1 --backend cpu --threads 16 --repeat 3
  stamp "benched-cpu"
}
for phase in $PHASES; do
  if [ "$(left)" -lt 20 ]; then
    stamp "skipped $phase (time budget)"
    continue
  fi
  "phase_${phase//-/_}"
done
stamp "done"
echo "done in $(elapsed) s"
