#!/usr/bin/env bash
# CorrelationCore on the GPU machine, session 5: the pair-per-lane kernel against the batched bar
# (one-to-many 32x32 x1024, full maps, best direct vs cached-plan cuFFT). From the repository root:
#   OUT=/some/dir MODE=probe|final|confirm scripts/gpu/corr-session5.sh
# Both modes: build CorrelationCore alone (CUDA sm_90, FFTW), all its tests (ctest), the bar case
# with every configuration, then the bar's contenders (best split tiled, the pair-per-lane
# variants, cuFFT cached with both size rules) in REPEATS separate bench processes (medians of
# 11 calls each; the median of those medians is the reported number), Nsight Compute on the
# pair-per-lane kernel (speed of light, occupancy, stalls, instruction mix), its SASS counts,
# compute-sanitizer memcheck and racecheck on its tests.
# final: + the whole benchmark grid without the CPU columns (one-to-one ratios, crossovers).
# confirm: after the build and ctest only Auto on the bar case, the one-to-one 4x bar, the
# opcode histogram with names and memcheck (the second run of session 5).
# Timing runs use CUDA_MODULE_LOADING=EAGER. Leaves in $OUT: gpu.txt, summary.txt, bar*.txt/json,
# contenders.txt, ncu.txt, [grid.txt/grid.json], logs.tgz.
CORR_NAME=corr-session5
REPEATS=${REPEATS:-3}
. "$(dirname "$0")/corr-common.sh"

timeout 180 ctest --test-dir "$BUILD" -j 8 --output-on-failure --output-junit "$OUT/ctest.xml" \
  > "$OUT/ctest.log" 2>&1
stamp "ctest rc=$? ($(grep -c '(Skipped)' "$OUT/ctest.log") skipped)"
grep -E "tests passed|tests failed|\(Failed\)|\(Timeout\)" "$OUT/ctest.log" | head -30 >> "$OUT/summary.txt"
grep -B2 -A12 "Failure" "$OUT/ctest.log" | head -80 >> "$OUT/summary.txt"

if [ "$MODE" = confirm ]; then
  # Auto on the bar case against its contenders, and the one-to-one 4x bar (baseline vs the best
  # configurations of session 4), REPEATS processes each; the pair-per-lane opcode histogram
  # with names; memcheck on the pair-per-lane tests.
  for i in $(seq 1 "$REPEATS"); do
    for cfg in auto lanes-w24 cufft-cached; do
      timeout 30 "$BENCH" --no-cpu --case "32x32 x1024" --config "$cfg" --json /dev/null \
        | grep "32x32 x1024" >> "$OUT/contenders.txt"
    done
  done
  for size in 32x32 48x48 64x64; do
    for cfg in baseline split-w8 split-w16 ws-tri2 auto; do
      timeout 30 "$BENCH" --no-cpu --case "$size" --config "$cfg" --json /dev/null \
        | grep "^one-to-one" >> "$OUT/one-to-one.txt"
    done
  done
  stamp "contenders: $(awk '{ v[$4] = v[$4] " " $6 " (" $8 ")" } END { for (k in v) print k ":" v[k] ";" }' "$OUT/contenders.txt" | tr '\n' ' ')"
  stamp "one-to-one: $(awk '{ v[$2 " " $3] = v[$2 " " $3] " " $5 } END { for (k in v) print k ":" v[k] ";" }' "$OUT/one-to-one.txt" | sort | tr '\n' ' ')"
  NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2> /dev/null | head -1)
  [ -n "$NCU" ] && timeout 60 "$NCU" --clock-control none --kernel-name regex:pairLanes \
    --launch-skip 2 --launch-count 1 --metrics sass__inst_executed_per_opcode,smsp__inst_executed.sum \
    --print-metric-instances details "$BENCH" --no-cpu --case "32x32 x1024" --config lanes-w24 \
    --json /dev/null 2>&1 | grep -v "^==PROF==" > "$OUT/opcodes.txt"
  stamp "opcodes rc=$?"
  timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 \
    "$BUILD/bin/correlation_test_reference" --gtest_filter='CUDA/*/cuda_lanes*:PairPerLane.*' \
    > "$OUT/memcheck.log" 2>&1
  stamp "memcheck rc=$? $(grep -E 'ERROR SUMMARY' "$OUT/memcheck.log" | tail -1)"
  grep -E "PASSED|FAILED" "$OUT/memcheck.log" | tail -2 >> "$OUT/summary.txt"
  cd "$OUT" && tar czf logs.tgz --remove-files build.log ctest.log ctest.xml memcheck.log 2> /dev/null
  exit 0
fi

# The bar case, every GPU configuration (one process, median of 11 calls each).
timeout 90 "$BENCH" --no-cpu --case "32x32 x1024" --json "$OUT/bar.json" > "$OUT/bar.txt" 2> "$OUT/bar.err"
stamp "bar bench rc=$?"
sort -k6 -n "$OUT/bar.txt" | grep -v failed | head -8 >> "$OUT/summary.txt"

# The contenders again in separate processes: REPEATS medians each.
for i in $(seq 1 "$REPEATS"); do
  for cfg in split-p8-w8-rows4 lanes-w32 lanes-w24 lanes-w16 cufft-cached cufft-cached-pow2; do
    timeout 30 "$BENCH" --no-cpu --case "32x32 x1024" --config "$cfg" --json /dev/null \
      | grep "32x32 x1024" >> "$OUT/contenders.txt"
  done
done
stamp "contenders: $(awk '{ v[$4] = v[$4] " " $6 } END { for (k in v) print k ":" v[k] ";" }' "$OUT/contenders.txt" | tr '\n' ' ')"

NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2> /dev/null | head -1)
if [ -n "$NCU" ]; then
  for cfg in ${NCU_CONFIGS:-lanes-w32 lanes-w24}; do
    echo "=== $cfg" >> "$OUT/ncu.txt"
    timeout 60 "$NCU" --clock-control none --kernel-name regex:pairLanes --launch-skip 2 \
      --launch-count 1 --section SpeedOfLight --section Occupancy --section LaunchStats \
      --section WarpStateStats --section SchedulerStats --section InstructionStats \
      --metrics smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio,smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio,smsp__inst_executed.sum,smsp__inst_executed_pipe_fma.sum,smsp__sass_thread_inst_executed_op_ffma_pred_on.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,lts__t_sectors_op_write.sum,sass__inst_executed_per_opcode \
      --print-metric-instances details \
      "$BENCH" --no-cpu --case "32x32 x1024" --config "$cfg" --json /dev/null \
      2>&1 | grep -v "^==PROF==" >> "$OUT/ncu.txt"
    stamp "ncu $cfg: $(grep -A300 "=== $cfg" "$OUT/ncu.txt" | grep -E " Duration|Registers Per|Achieved Occ|Issued Warp Per|inst_executed.sum|pipe_fma.sum|ffma_pred_on|bank_conflicts|stalled_(short|long|mio|wait|math|not_sel)" | tr -s ' ' | tr '\n' ';')"
  done
fi
if command -v cuobjdump > /dev/null; then
  cuobjdump --dump-sass "$BUILD/CMakeFiles/CorrelationCore.dir/src/cuda/DirectFloat.cu.o" \
    | awk '/Function :/ { name = $3 } { if (name ~ /pairLanes/) { n[name]++;
        if ($0 ~ /FFMA/) f[name]++; if ($0 ~ /LDS/) s[name]++; if ($0 ~ /(LDL|STL)/) l[name]++ } }
        END { for (k in n) printf "sass %s: %d instructions, %d FFMA, %d LDS, %d LDL/STL\n",
              k, n[k], f[k], s[k], l[k] }' >> "$OUT/summary.txt"
fi
if [ "$MODE" = final ]; then
  timeout 200 "$BENCH" --no-cpu --json "$OUT/grid.json" > "$OUT/grid.txt" 2> "$OUT/grid.err"
  stamp "grid bench rc=$?"
fi

corr_sanitize_and_finish 'CUDA/*/cuda_lanes*' 'CUDA/*/cuda_lanes*'
