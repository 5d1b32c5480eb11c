#!/usr/bin/env bash
# CorrelationCore on the GPU machine, session 6: the tensor-core direct kernels against the
# batched bar (one-to-many 32x32 x1024, full maps, float: best direct at least 2x cached-plan
# cuFFT): DirectKernel::TensorTf32 (3xTF32; bench configs tensor-3xtf32[-w8|-w12]) and
# DirectKernel::TensorF16 (2xFP16 with power-of-two scaling; tensor-2xf16[-w8]).
# From the repository root:   OUT=/some/dir scripts/gpu/corr-session6.sh
# Steps (wall budget 150 s, each step under `timeout`, every rc in summary.txt):
#  1. build CorrelationCore alone (CUDA sm_90, FFTW, -j$(nproc), Release)
#  2. ctest, all tests (TensorKernels.*, TensorTf32Emulation.*, TensorF16Emulation.* among them)
#  3. the bar case: tensor-3xtf32, tensor-2xf16, lanes-w24 (session 5's best) and cufft-cached
#     in REPEATS (3) separate bench processes each, interleaved (median of 11 calls per process,
#     GPU execution only), then tensor-3xtf32-w8, -w12 and tensor-2xf16-w8 once
#  4. Nsight Compute on both tensor kernels (duration, issue, pipes, shared-memory wavefronts
#     and bank conflicts, stalls, opcode counts), if ncu is installed
#  5. compute-sanitizer memcheck and racecheck on TensorKernels.SanitizerCase (both kernels, two
#     groups of pairs, an empty M half, every mode)
#  6. tensor-3xtf32, tensor-2xf16, auto and cufft-cached on 32x32 x128 / x512, 16x16 x1024 and
#     n-to-m 32x32 50x50 (one process each)
# Steps 4-6 are skipped (and say so) when the time so far leaves no room for them.
# Leaves in $OUT: gpu.txt, summary.txt, contenders.txt, variants.txt, ncu.txt, batches.txt,
# bench-rc.txt, logs.tgz.
# (corr-common.sh's steps, with a timeout on the build.)
set -u
ROOT=$(pwd)
OUT=${OUT:-$ROOT/gpu-out-corr-session6}
REPEATS=${REPEATS:-3}
mkdir -p "$OUT"
BUILD=${BUILD:-$ROOT/build-corr-gpu}
BENCH="$BUILD/bin/correlation-bench"
export CUDA_MODULE_LOADING=EAGER
stamp() { echo "[${SECONDS}s] $*" >> "$OUT/summary.txt"; }
# Optional steps run only while the elapsed time leaves room for them in the 150 s budget.
room() { [ "$SECONDS" -lt "$1" ] || { stamp "skipped $2 (time)"; return 1; }; }

(nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.sm,driver_version --format=csv
  echo "cpus: $(nproc), $(grep -m1 "model name" /proc/cpuinfo)"; nvcc --version | tail -1
  date -u) > "$OUT/gpu.txt" 2>&1

stamp "configure"
{ timeout 80 cmake -S CorrelationCore -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DCORRELATION_ENABLE_CUDA=ON &&
  timeout 80 cmake --build "$BUILD" -j "$(nproc)"; } > "$OUT/build.log" 2>&1
rc=$?
stamp "build rc=$rc"
grep -E "CorrelationCore: CUDA|error" "$OUT/build.log" | head -20 >> "$OUT/summary.txt"
[ $rc -eq 0 ] || { tail -40 "$OUT/build.log" >> "$OUT/summary.txt"; exit 1; }

timeout 45 ctest --test-dir "$BUILD" -j 8 --output-on-failure --output-junit "$OUT/ctest.xml" \
  > "$OUT/ctest.log" 2>&1
stamp "ctest rc=$? ($(grep -c '(Skipped)' "$OUT/ctest.log") skipped)"
grep -E "tests passed|tests failed|\(Failed\)|\(Timeout\)" "$OUT/ctest.log" | head -30 >> "$OUT/summary.txt"
grep -B2 -A12 "Failure" "$OUT/ctest.log" | head -60 >> "$OUT/summary.txt"

# The contenders in separate processes, interleaved: REPEATS medians each.
for i in $(seq 1 "$REPEATS"); do
  for cfg in tensor-3xtf32 tensor-2xf16 lanes-w24 cufft-cached; do
    timeout 10 "$BENCH" --no-cpu --case "32x32 x1024" --config "$cfg" --json /dev/null \
      | grep "32x32 x1024" >> "$OUT/contenders.txt"
    echo "rc=${PIPESTATUS[0]} $cfg" >> "$OUT/bench-rc.txt"
  done
done
stamp "contenders (config: gpu_ms per process, kernel that ran): $(awk '{ v[$4] = v[$4] " " $6; k[$4] = $8 } END { for (c in v) print c ":" v[c] " (" k[c] ");" }' "$OUT/contenders.txt" | tr '\n' ' ')"
grep -v "rc=0" "$OUT/bench-rc.txt" >> "$OUT/summary.txt"
for cfg in tensor-3xtf32-w8 tensor-3xtf32-w12 tensor-2xf16-w8; do
  timeout 10 "$BENCH" --no-cpu --case "32x32 x1024" --config "$cfg" --json /dev/null \
    | grep "32x32 x1024" >> "$OUT/variants.txt"
  echo "rc=${PIPESTATUS[0]} $cfg" >> "$OUT/bench-rc.txt"
done
stamp "variants: $(awk '{ print $4 ": " $6 " (" $8 ");" }' "$OUT/variants.txt" | tr '\n' ' ')"

NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2> /dev/null | head -1)
for kernel in tensorTf32:tensor-3xtf32 tensorF16:tensor-2xf16; do
  [ -n "$NCU" ] && room 100 "ncu ${kernel#*:}" || continue
  echo "=== ${kernel#*:}" >> "$OUT/ncu.txt"
  timeout 20 "$NCU" --clock-control none --kernel-name "regex:${kernel%%:*}" --launch-skip 2 \
    --launch-count 1 --section SpeedOfLight --section Occupancy --section LaunchStats \
    --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis \
    --section InstructionStats \
    --metrics smsp__inst_executed.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio,lts__t_sectors_op_write.sum,sass__inst_executed_per_opcode \
    --print-metric-instances details \
    "$BENCH" --no-cpu --case "32x32 x1024" --config "${kernel#*:}" --json /dev/null \
    2>&1 | grep -v "^==PROF==" >> "$OUT/ncu.txt"
  stamp "ncu ${kernel#*:} rc=${PIPESTATUS[0]}: $(sed -n "/=== ${kernel#*:}/,\$p" "$OUT/ncu.txt" | grep -E " Duration|Registers Per|Achieved Occ|Issued Warp Per|inst_executed.sum|Tensor|HMMA|wavefronts|bank_conflicts|stalled_(short|long|math|wait|barrier|mio|not_sel)" | tr -s ' ' | tr '\n' ';')"
done

for tool in memcheck racecheck; do
  room 125 $tool || continue
  timeout 20 compute-sanitizer --tool $tool --error-exitcode 9 \
    "$BUILD/bin/correlation_test_tensor" --gtest_filter='TensorKernels.SanitizerCase' \
    > "$OUT/$tool.log" 2>&1
  stamp "$tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/$tool.log" | tail -1)"
  grep -E "PASSED|FAILED" "$OUT/$tool.log" | tail -2 >> "$OUT/summary.txt"
done
# Other batches (for Auto's rule): one process per case and configuration.
if room 118 "other batches"; then
  for case in "32x32 x128" "32x32 x512" "16x16 x1024" "32x32 50x50"; do
    for cfg in tensor-3xtf32 tensor-2xf16 auto cufft-cached; do
      [ "$SECONDS" -lt 142 ] || break 2
      timeout 6 "$BENCH" --no-cpu --case "$case" --config "$cfg" --json /dev/null \
        | grep -E "^(one-to-many|n-to-m) " >> "$OUT/batches.txt"
    done
  done
  stamp "batches (case config gpu_ms kernel): $(awk '{ print $2 " " $3 " " $4 " " $6 " (" $8 ");" }' "$OUT/batches.txt" | tr '\n' ' ')"
fi
stamp "done"
cd "$OUT" && tar czf logs.tgz --remove-files build.log ctest.log ctest.xml memcheck.log \
  racecheck.log 2> /dev/null
exit 0
