# Shared start of the CorrelationCore GPU scripts (sourced by corr-bar.sh and corr-session5.sh):
# variables, the summary stamp, the machine facts and the build of CorrelationCore alone
# (CUDA sm_90, FFTW). Expects OUT (default: $ROOT/gpu-out-$CORR_NAME) and MODE.
set -u
ROOT=$(pwd)
OUT=${OUT:-$ROOT/gpu-out-$CORR_NAME}
MODE=${MODE:-probe}
mkdir -p "$OUT"
START=$(date +%s)
BUILD=${BUILD:-$ROOT/build-corr-gpu}
BENCH="$BUILD/bin/correlation-bench"
export CUDA_MODULE_LOADING=EAGER
stamp() { echo "$(($(date +%s) - START))s $*" >> "$OUT/summary.txt"; }

(nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.sm,driver_version --format=csv
  echo "cpus: $(nproc), $(grep -m1 "model name" /proc/cpuinfo)"; nvcc --version | tail -1
  date -u) > "$OUT/gpu.txt" 2>&1

stamp "configure ($MODE)"
{ cmake -S CorrelationCore -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DCORRELATION_ENABLE_CUDA=ON && cmake --build "$BUILD" -j "$(nproc)"; } \
  > "$OUT/build.log" 2>&1
rc=$?
stamp "build rc=$rc"
grep -E "CorrelationCore: CUDA|error" "$OUT/build.log" | head -20 >> "$OUT/summary.txt"
[ $rc -eq 0 ] || { tail -40 "$OUT/build.log" >> "$OUT/summary.txt"; exit 1; }

# compute-sanitizer memcheck and racecheck on the reference tests that match the two gtest
# filters (90 s each at most), then the logs packed and the script's end.
corr_sanitize_and_finish() {
  local tool filter
  for tool in memcheck racecheck; do
    filter=$1
    [ $tool = racecheck ] && filter=$2
    timeout 90 compute-sanitizer --tool $tool --error-exitcode 9 \
      "$BUILD/bin/correlation_test_reference" --gtest_filter="$filter" > "$OUT/$tool.log" 2>&1
    stamp "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/$tool.log" | tail -1)"
    grep -E "PASSED|FAILED" "$OUT/$tool.log" | tail -2 >> "$OUT/summary.txt"
  done
  cd "$OUT" && tar czf logs.tgz --remove-files build.log ctest.log ctest.xml memcheck.log \
    racecheck.log bar.err grid.err 2> /dev/null
  exit 0
}
