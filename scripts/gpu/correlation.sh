#!/usr/bin/env bash
# CorrelationCore on the GPU machine, one batch, from the repository root:
#   OUT=/some/dir BUDGET=260 scripts/gpu/correlation.sh
# build (CorrelationCore alone, CUDA sm_90, FFTW), ctest (CUDA cases run there),
# correlation-bench (the study's grid) as a table and JSON, then compute-sanitizer memcheck on
# small CUDA cases of every kernel family. BUDGET (seconds since start) bounds the benchmark so
# that results are always saved. Leaves in $OUT: gpu.txt, summary.txt, bench.txt, bench.json,
# logs.tgz.
set -u
ROOT=$(pwd)
OUT=${OUT:-$ROOT/gpu-out-correlation}
mkdir -p "$OUT"
BUDGET=${BUDGET:-200}
START=$(date +%s)
BUILD=${BUILD:-$ROOT/build-correlation-gpu}
elapsed() { echo $(($(date +%s) - START)); }
stamp() { echo "$(elapsed)s $*" >> "$OUT/summary.txt"; }

{
  nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,driver_version --format=csv
  echo "cpus: $(nproc)"
  grep -m1 "model name" /proc/cpuinfo
  nvcc --version | tail -2
  date -u
} > "$OUT/gpu.txt" 2>&1

stamp "configure"
cmake -S CorrelationCore -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DCORRELATION_ENABLE_CUDA=ON > "$OUT/build.log" 2>&1
cmake --build "$BUILD" -j "$(nproc)" >> "$OUT/build.log" 2>&1
rc=$?
stamp "build rc=$rc"
grep -E "CorrelationCore: CUDA" "$OUT/build.log" >> "$OUT/summary.txt"
grep -E "warning|error" "$OUT/build.log" | head -20 >> "$OUT/summary.txt"
if [ $rc -ne 0 ]; then
  tail -60 "$OUT/build.log" >> "$OUT/summary.txt"
  exit 1
fi

(cd "$BUILD" && timeout 120 ctest -j 8 --output-on-failure --output-junit "$OUT/ctest.xml" \
  > "$OUT/ctest.log" 2>&1)
stamp "ctest rc=$?"
grep -E "tests passed|tests failed|Skipped|Failed|\*\*\*" "$OUT/ctest.log" | head -40 >> "$OUT/summary.txt"
grep -A6 "Failure" "$OUT/ctest.log" | head -80 >> "$OUT/summary.txt"

left=$((BUDGET - $(elapsed)))
left=$((left - 110)) # keep time for the sanitizers
if [ $left -gt 20 ]; then
  CUDA_MODULE_LOADING=EAGER timeout $((left - 5)) "$BUILD/bin/correlation-bench" \
    --json "$OUT/bench.json" > "$OUT/bench.txt" 2> "$OUT/bench.err"
  stamp "bench rc=$?"
else
  stamp "bench skipped: budget"
fi
# memcheck on small cases of every kernel family: baseline, warp shuffle with each work
# distribution and several shifts/rights per thread, split tiled (every pairs-per-warp on the
# larger cases), cuFFT cached and per call.
timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 \
  "$BUILD/bin/correlation_test_reference" \
  --gtest_filter='CUDA/ReferenceLarger.*:CUDA/Reference.*/cuda_ws_s2r4_tri:CUDA/Reference.*/cuda_split_p4_w1:SplitTiled.*' \
  > "$OUT/memcheck.log" 2>&1
stamp "memcheck rc=$?"
grep -E "ERROR SUMMARY|PASSED|FAILED" "$OUT/memcheck.log" | tail -5 >> "$OUT/summary.txt"
# racecheck on the kernels that share memory between warps (register tiled, split tiled).
timeout 60 compute-sanitizer --tool racecheck --error-exitcode 9 \
  "$BUILD/bin/correlation_test_reference" \
  --gtest_filter='CUDA/ReferenceLarger.*/cuda_tiled*:CUDA/ReferenceLarger.*/cuda_split*' \
  > "$OUT/racecheck.log" 2>&1
stamp "racecheck rc=$?"
grep -E "ERROR SUMMARY|RACE|PASSED|FAILED" "$OUT/racecheck.log" | tail -5 >> "$OUT/summary.txt"

cd "$OUT" && tar czf logs.tgz --remove-files build.log ctest.log ctest.xml memcheck.log racecheck.log bench.err 2>/dev/null
exit 0
