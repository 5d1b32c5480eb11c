#!/usr/bin/env bash
# CorrelationCore on the GPU machine, session 7: the 3xTF32 kernel's band row body (tile pattern
# compiled in, addresses once per task, truncating split; DirectKernel::TensorTf32 and Auto on
# the bar's shape) against the batched bar (one-to-many 32x32 x1024, full maps, float: best
# direct at least 2x cached-plan cuFFT).
# From the repository root:   OUT=/some/dir scripts/gpu/corr-session7.sh
# Steps (each under `timeout`, every rc in summary.txt):
#  1. build CorrelationCore alone (CUDA sm_90, FFTW, -j$(nproc), Release)
#  2. ctest, all tests
#  3. the bar case: tensor-3xtf32, auto, lanes-w24 and cufft-cached in REPEATS (3) separate bench
#     processes each, interleaved (median of 11 calls per process, GPU execution only), then
#     tensor-3xtf32-w8, -w12 and tensor-2xf16 once
#  4. Nsight Compute on tensor-3xtf32 (instructions, opcodes, tensor pipe, stalls, shared memory)
#  5. compute-sanitizer memcheck and racecheck on TensorKernels.SanitizerCase (both kernels; the
#     bar's shape with 37 pairs runs the band row body)
#  6. tensor-3xtf32, auto and cufft-cached on 32x32 x128 / x512 (one process each)
# Leaves in $OUT: gpu.txt, summary.txt, contenders.txt, variants.txt, ncu.txt, batches.txt,
# bench-rc.txt, logs.tgz.
set -u
ROOT=$(pwd)
OUT=${OUT:-$ROOT/gpu-out-corr-session7}
REPEATS=${REPEATS:-3}
mkdir -p "$OUT"
BUILD=${BUILD:-/tmp/build-corr-gpu7}
BENCH="$BUILD/bin/correlation-bench"
export CUDA_MODULE_LOADING=EAGER
stamp() { echo "[${SECONDS}s] $*" >> "$OUT/summary.txt"; }
room() { [ "$SECONDS" -lt "$1" ] || { stamp "skipped $2 (time)"; return 1; }; }

(nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.sm,driver_version --format=csv
  echo "cpus: $(nproc), $(grep -m1 "model name" /proc/cpuinfo)"; nvcc --version | tail -1
  date -u; git log -1 --format='%h %s' 2> /dev/null) > "$OUT/gpu.txt" 2>&1

stamp "configure"
{ timeout 80 cmake -S CorrelationCore -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DCORRELATION_ENABLE_CUDA=ON &&
  timeout 90 cmake --build "$BUILD" -j "$(nproc)"; } > "$OUT/build.log" 2>&1
rc=$?
stamp "build rc=$rc"
grep -E "CorrelationCore: CUDA|error" "$OUT/build.log" | head -20 >> "$OUT/summary.txt"
[ $rc -eq 0 ] || { tail -40 "$OUT/build.log" >> "$OUT/summary.txt"; exit 1; }

timeout 50 ctest --test-dir "$BUILD" -j 8 --output-on-failure --output-junit "$OUT/ctest.xml" \
  > "$OUT/ctest.log" 2>&1
stamp "ctest rc=$? ($(grep -c '(Skipped)' "$OUT/ctest.log") skipped)"
grep -E "tests passed|tests failed|\(Failed\)|\(Timeout\)" "$OUT/ctest.log" | head -30 >> "$OUT/summary.txt"
grep -B2 -A12 "Failure" "$OUT/ctest.log" | head -60 >> "$OUT/summary.txt"

for i in $(seq 1 "$REPEATS"); do
  for cfg in tensor-3xtf32 auto lanes-w24 cufft-cached; do
    timeout 10 "$BENCH" --no-cpu --case "32x32 x1024" --config "$cfg" --json /dev/null \
      | grep "32x32 x1024" >> "$OUT/contenders.txt"
    echo "rc=${PIPESTATUS[0]} $cfg" >> "$OUT/bench-rc.txt"
  done
done
stamp "contenders (config: gpu_ms per process, kernel that ran): $(awk '{ v[$4] = v[$4] " " $6; k[$4] = $8 } END { for (c in v) print c ":" v[c] " (" k[c] ");" }' "$OUT/contenders.txt" | tr '\n' ' ')"
grep -v "rc=0" "$OUT/bench-rc.txt" >> "$OUT/summary.txt"
for cfg in tensor-3xtf32-w8 tensor-3xtf32-w12 tensor-2xf16; do
  timeout 10 "$BENCH" --no-cpu --case "32x32 x1024" --config "$cfg" --json /dev/null \
    | grep "32x32 x1024" >> "$OUT/variants.txt"
  echo "rc=${PIPESTATUS[0]} $cfg" >> "$OUT/bench-rc.txt"
done
stamp "variants: $(awk '{ print $4 ": " $6 " (" $8 ");" }' "$OUT/variants.txt" | tr '\n' ' ')"

NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2> /dev/null | head -1)
if [ -n "$NCU" ] && room 110 "ncu"; then
  echo "=== tensor-3xtf32" >> "$OUT/ncu.txt"
  timeout 25 "$NCU" --clock-control none --kernel-name "regex:tensorTf32" --launch-skip 2 \
    --launch-count 1 --section SpeedOfLight --section Occupancy --section LaunchStats \
    --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis \
    --section InstructionStats \
    --metrics smsp__inst_executed.sum,sm__inst_executed_pipe_tensor_op_hmma.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_tensor_op_hmma_cycles_active.avg,sm__cycles_active.avg,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio,sass__inst_executed_per_opcode \
    --print-metric-instances details \
    "$BENCH" --no-cpu --case "32x32 x1024" --config tensor-3xtf32 --json /dev/null \
    2>&1 | grep -v "^==PROF==" >> "$OUT/ncu.txt"
  stamp "ncu tensor-3xtf32 rc=${PIPESTATUS[0]}: $(grep -E " Duration|Registers Per|Achieved Occ|Issued Warp Per|inst_executed.sum|hmma|HMMA|wavefronts|bank_conflicts|cycles_active.avg|stalled_(short|long|math|wait|barrier|mio|not_sel|lg|dispatch)" "$OUT/ncu.txt" | tr -s ' ' | tr '\n' ';')"
fi

for tool in memcheck racecheck; do
  room 150 $tool || continue
  timeout 30 compute-sanitizer --tool $tool --error-exitcode 9 \
    "$BUILD/bin/correlation_test_tensor" --gtest_filter='TensorKernels.SanitizerCase' \
    > "$OUT/$tool.log" 2>&1
  stamp "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/$tool.log" | tail -1)"
  grep -E "PASSED|FAILED" "$OUT/$tool.log" | tail -2 >> "$OUT/summary.txt"
done
if room 170 "other batches"; then
  for case in "32x32 x128" "32x32 x512"; do
    for cfg in tensor-3xtf32 auto cufft-cached; do
      [ "$SECONDS" -lt 180 ] || break 2
      timeout 6 "$BENCH" --no-cpu --case "$case" --config "$cfg" --json /dev/null \
        | grep -E "^(one-to-many|n-to-m) " >> "$OUT/batches.txt"
    done
  done
  stamp "batches (case config gpu_ms kernel): $(awk '{ print $2 " " $3 " " $4 " " $6 " (" $8 ");" }' "$OUT/batches.txt" | tr '\n' ' ')"
fi
# The band kernel's SASS (instructions of the row loop), for the record.
SASSTOOL=$(command -v cuobjdump || ls /usr/local/cuda*/bin/cuobjdump 2> /dev/null | head -1)
OBJ=$(find "$BUILD" -name "TensorTf32.cu.o" | head -1)
if [ -n "$SASSTOOL" ] && [ -n "$OBJ" ]; then
  "$SASSTOOL" -sass "$OBJ" > "$OUT/sass.log" 2>&1
  awk '/Function : .*tensorTf32KernelILb1E/ { on = 1 } /Function : .*tensorTf32KernelILb0E/ { on = 0 } on' \
    "$OUT/sass.log" > "$OUT/sass-band.log"
  stamp "sass band kernel: $(grep -c HMMA "$OUT/sass-band.log") HMMA, $(grep -cE '^\s+/\*[0-9a-f]{4}\*/' "$OUT/sass-band.log") instructions"
fi
stamp "done"
cd "$OUT" && tar czf logs.tgz --remove-files build.log ctest.log ctest.xml memcheck.log \
  racecheck.log sass-band.log 2> /dev/null
rm -f sass.log
exit 0
