#!/usr/bin/env bash
# CorrelationCore on the GPU machine, aimed at the batched bar (one-to-many 32x32 x1024, full
# maps, direct vs cached-plan cuFFT). From the repository root:
#   OUT=/some/dir MODE=probe|final scripts/gpu/corr-bar.sh
# Both modes: build CorrelationCore alone (CUDA sm_90, FFTW), ctest, the x1024 cases of
# correlation-bench (every direct variant, cuFFT with 2^a3^b5^c7^d and power-of-two sizes),
# Nsight Compute on the best split-tiled configurations (NCU_CONFIGS) and on one cuFFT call
# (per-kernel durations: pad, transforms, product, inverse, extraction), the SASS size of the
# sliding kernels, compute-sanitizer memcheck and racecheck on the split-tiled variants.
# final: + the whole benchmark grid. diag: only the build, the opcode histogram (ncu) and the
# SASS of one kernel (DIAG_CONFIG, DIAG_KERNEL).
# Leaves in $OUT: gpu.txt, summary.txt, bar.txt/bar.json, ncu.txt, [grid.txt/grid.json],
# logs.tgz. Timing runs use CUDA_MODULE_LOADING=EAGER.
CORR_NAME=corr-bar
. "$(dirname "$0")/corr-common.sh"

if [ "$MODE" = diag ]; then
  # The hot kernel's instruction mix: executed instructions per opcode (ncu) and its SASS.
  timeout 60 ncu --clock-control none --kernel-name regex:splitTiled --launch-skip 2 \
    --launch-count 1 --metrics sass__inst_executed_per_opcode,smsp__inst_executed.sum \
    --print-metric-instances values "$BENCH" --no-cpu --case "32x32 x1024" \
    --config "${DIAG_CONFIG:-split-p8-w8-rows4}" --json /dev/null 2>&1 | grep -v "^==PROF==" \
    > "$OUT/opcodes.txt"
  stamp "opcodes rc=$?"
  cuobjdump --dump-sass --function "${DIAG_KERNEL:-_ZN11correlation6detail16splitTiledKernelIfLi4ELb1ELi4EEEvNS0_8GeometryENS0_11SplitLayoutEPKiPKT_S8_PS6_}" \
    "$BUILD/CMakeFiles/CorrelationCore.dir/src/cuda/DirectFloat.cu.o" > "$OUT/sass.txt" 2>&1
  stamp "sass rc=$? $(grep -c '/\*[0-9a-f]*\*/' "$OUT/sass.txt") instructions"
  exit 0
fi

timeout 150 ctest --test-dir "$BUILD" -j 8 --output-on-failure --output-junit "$OUT/ctest.xml" \
  > "$OUT/ctest.log" 2>&1
stamp "ctest rc=$? ($(grep -c '(Skipped)' "$OUT/ctest.log") skipped)"
grep -E "tests passed|tests failed|\(Failed\)|\(Timeout\)" "$OUT/ctest.log" | head -30 >> "$OUT/summary.txt"
grep -B2 -A12 "Failure" "$OUT/ctest.log" | head -80 >> "$OUT/summary.txt"

# The bar's cases (and the other x1024 batches), every GPU configuration, median of 11.
timeout 120 "$BENCH" --no-cpu --case x1024 --json "$OUT/bar.json" > "$OUT/bar.txt" 2> "$OUT/bar.err"
stamp "bar bench rc=$?"
grep -E "32x32 x1024" "$OUT/bar.txt" | sort -k6 -n | head -8 >> "$OUT/summary.txt"
grep -E "32x32 x1024 +cufft" "$OUT/bar.txt" >> "$OUT/summary.txt"

# Nsight Compute on the bar case: the best split-tiled configurations (stall reasons,
# occupancy, instruction mix) and one cuFFT call's kernels (per-kernel durations).
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2> /dev/null | head -1)
if [ -n "$NCU" ]; then
  for cfg in ${NCU_CONFIGS:-split-p8-w8-rows4 split-p16-w16}; do
    echo "=== $cfg" >> "$OUT/ncu.txt"
    timeout 60 "$NCU" --clock-control none --kernel-name regex:splitTiled --launch-skip 2 \
      --launch-count 1 --section SpeedOfLight --section Occupancy --section LaunchStats \
      --section WarpStateStats --section SchedulerStats --section InstructionStats \
      --metrics smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio,smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio,smsp__inst_executed_pipe_fma.sum,smsp__sass_thread_inst_executed_op_ffma_pred_on.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,lts__t_sectors_op_write.sum \
      "$BENCH" --no-cpu --case "32x32 x1024" --config "$cfg" --json /dev/null \
      2>&1 | grep -v "^==PROF==" >> "$OUT/ncu.txt"
    stamp "ncu $cfg: $(grep -A200 "=== $cfg" "$OUT/ncu.txt" | grep -E " Duration|Registers Per|Achieved Occ|Issued Warp Per|no_instruction|short_score|mio_thr" | tr -s ' ' | tr '\n' ';')"
  done
  echo "=== cufft-cached" >> "$OUT/ncu.txt"
  timeout 60 "$NCU" --clock-control none --launch-count 8 --metrics gpu__time_duration.sum \
    "$BENCH" --no-cpu --case "32x32 x1024" --config cufft-cached --json /dev/null 2>&1 \
    | grep -v "^==PROF==" >> "$OUT/ncu.txt"
  stamp "ncu cufft: $(grep -A100 "=== cufft" "$OUT/ncu.txt" | grep -E "duration" | tr -s ' ' | tr '\n' ';')"
fi
if command -v cuobjdump > /dev/null; then
  # Instruction mix of the sliding kernels: code size (instruction fetch), FFMA, spills.
  cuobjdump --dump-sass "$BUILD/CMakeFiles/CorrelationCore.dir/src/cuda/DirectFloat.cu.o" \
    | awk '/Function :/ { name = $3 } { if (name ~ /splitTiled.*Lb1/) { n[name]++;
        if ($0 ~ /FFMA/) f[name]++; if ($0 ~ /(LDL|STL)/) l[name]++ } }
        END { for (k in n) printf "sass %s: %d instructions, %d FFMA, %d LDL/STL\n",
              substr(k, 36, 14), n[k], f[k], l[k] }' >> "$OUT/summary.txt"
fi
if [ "$MODE" = final ]; then
  timeout 240 "$BENCH" --json "$OUT/grid.json" > "$OUT/grid.txt" 2> "$OUT/grid.err"
  stamp "grid bench rc=$?"
fi

# Sanitizers on the split-tiled variants (racecheck on those that share staging between warps).
corr_sanitize_and_finish \
  'CUDA/ReferenceLarger.*/cuda_split*:CUDA/ReferenceLarger.*/cuda_fft*:CUDA/Reference.*/cuda_fft_cached:SplitTiled.*' \
  'CUDA/ReferenceLarger.*/cuda_split_p16*:CUDA/ReferenceLarger.*/cuda_split_p32_w8*'
