#!/usr/bin/env bash
# Session 9: the staged laplap with lanes over layers (StencilCore/src/LaneColumns.h) on the GPU.
# Binaries built on the development machine with stencil-common.sh's configure arguments and
# carried as build-carry9/bin.tar.xz (stencil_test_columns, stencil-bench). Steps: the column
# tests (every CPU and CUDA case), memcheck and racecheck on the lane tests, the GPU benchmark at
# 512x512x64 with 8 stability repeats (the staged default against the same repeat's regular
# default), then Nsight Compute on the first float and double lane kernels when ncu is there
# (NCU_RUN=0 leaves it out). Results in $OUT (summary.txt first). The last call of session 9 ran
# it with NCU_RUN=0 after the slots moved to the host (scripts/gpu/results/session9-final/).
set -u
export CUDA_MODULE_LOADING=EAGER
OUT=${OUT:-/tmp/session9-lanes}
B=/tmp/stencil9
mkdir -p "$OUT" "$B"
SECONDS=0
say() { echo "[${SECONDS}s] $*" | tee -a "$OUT/summary.txt"; }
tar xJf build-carry9/bin.tar.xz -C "$B"
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.max.memory,driver_version \
  --format=csv,noheader >> "$OUT/summary.txt" 2>&1
timeout 200 "$B/bin/stencil_test_columns" > "$OUT/columns.log" 2>&1
say "stencil_test_columns rc=$? $(grep -E '^\[  (PASSED|SKIPPED|FAILED) ' "$OUT/columns.log" | tr '\n' ' ')"
grep -E "^\[  FAILED  \]|Failure|Expected" "$OUT/columns.log" | head -20 >> "$OUT/summary.txt"
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2> /dev/null || true)
if [ -n "$SAN" ]; then
  timeout 120 "$SAN" --tool memcheck --error-exitcode 3 "$B/bin/stencil_test_columns" \
    --gtest_filter='*MultiTileLayerLanes*/CUDA:*MultiTileStagedFloatTriangle/CUDA' > "$OUT/memcheck.log" 2>&1
  say "memcheck (lane tests, staged float triangles): rc=$? $(grep -E 'ERROR SUMMARY|PASSED|FAILED' "$OUT/memcheck.log" | tr '\n' ' ')"
  timeout 150 "$SAN" --tool racecheck --error-exitcode 3 "$B/bin/stencil_test_columns" \
    --gtest_filter='*MultiTileLayerLanesFloatQuad/CUDA' > "$OUT/racecheck.log" 2>&1
  say "racecheck (float lane test): rc=$? $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY|PASSED|FAILED' "$OUT/racecheck.log" | tr '\n' ' ')"
  timeout 150 "$SAN" --tool racecheck --error-exitcode 3 "$B/bin/stencil_test_columns" \
    --gtest_filter='*MultiTileStagedDoubleQuad/CUDA' > "$OUT/racecheck2.log" 2>&1
  say "racecheck (staged double quads): rc=$? $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY|PASSED|FAILED' "$OUT/racecheck2.log" | tr '\n' ' ')"
fi
timeout 200 "$B/bin/stencil-bench" --size 512x512x64 --gpu-only --stability 8 \
  --json "$OUT/bench.json" > "$OUT/bench.md" 2> "$OUT/bench.err"
say "bench rc=$?"
head -1 "$OUT/bench.md" >> "$OUT/summary.txt"
grep -E "HorizontalLaplap" "$OUT/bench.md" | grep -E "\| regular \|" >> "$OUT/summary.txt"
for p in float double; do
  grep -E "^\| $p \| CUDA \| (z-curve|row-major) \| HorizontalLaplap" "$OUT/bench.md" |
    sort -t'|' -k8 -n | head -6 >> "$OUT/summary.txt"
done
grep -E "median of|staged z-loop" "$OUT/bench.err" | grep -E "default median|staged z-loop" >> "$OUT/summary.txt"
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2> /dev/null || true)
if [ "${NCU_RUN:-1}" = 1 ] && [ -n "$NCU" ]; then
  for p in float double; do
    timeout 120 "$NCU" --kernel-name-base demangled --kernel-name "regex:laneLaplapKernel<$p" \
      --launch-skip 0 --launch-count 1 --section SpeedOfLight --section Occupancy \
      --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis \
      "$B/bin/stencil-bench" --size 512x512x64 --gpu-only --repeats 1 > "$OUT/ncu-$p.txt" 2>&1
    say "ncu $p: rc=$?"
    grep -E "Duration|DRAM Throughput|Memory Throughput|Compute \(SM\) Throughput|Achieved Occupancy|Registers Per|Theoretical Occupancy|Warp Cycles Per Issued|Block Limit|Shared Memory Configuration|L1/TEX Hit|L2 Hit|Bank" \
      "$OUT/ncu-$p.txt" | sed -E 's/ +/ /g' | head -40 >> "$OUT/summary.txt"
  done
fi
(cd "$OUT" && tar czf logs.tgz columns.log bench.err ./*.log 2> /dev/null; rm -f columns.log memcheck.log racecheck.log racecheck2.log)
say "done"
cat "$OUT/summary.txt"
