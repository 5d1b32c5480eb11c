#!/usr/bin/env bash
# One device run for StencilCore: build alone with CUDA (sm_90 only, to keep device time short),
# run its tests (CUDA cases run there), the benchmark at 512x512x64 (float and double, every GPU
# image kernel with its columns and rows per thread, every strategy x table layout, slice sizes,
# CPU on 16 threads), then compute-sanitizer memcheck and racecheck on small CUDA cases.
# Results go to $OUT (build log, ctest log, sanitizer logs, bench table + JSON, nvidia-smi).
set -u
OUT=${OUT:-/tmp/stencil-out}
mkdir -p "$OUT"
export CUDA_MODULE_LOADING=EAGER
BUILD=${BUILD:-/tmp/build-stencil}
START=$(date +%s)
stamp() { echo "[$(( $(date +%s) - START ))s] $*" | tee -a "$OUT/steps.log"; }

nvidia-smi --query-gpu=name,memory.total,clocks.max.memory,driver_version --format=csv > "$OUT/nvidia-smi.csv" 2>&1
nproc > "$OUT/nproc.txt"
stamp "configure"
cmake -S StencilCore -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSPARSEGRID_ENABLE_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES=90 > "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
stamp "build"
cmake --build "$BUILD" -j 16 >> "$OUT/build.log" 2>&1 || { grep -E "error" -A5 "$OUT/build.log" | head -60; exit 1; }
stamp "tests"
(cd "$BUILD" && timeout 120 ctest -L stencil --output-on-failure -j 4) > "$OUT/ctest.log" 2>&1
tail -25 "$OUT/ctest.log"
stamp "bench"
timeout 120 "$BUILD/bin/stencil-bench" --size 512x512x64 --repeats 20 --cpu-repeats 3 --threads 16 \
  --json "$OUT/bench.json" > "$OUT/bench.md" 2> "$OUT/bench.err"
echo "bench rc=$?" | tee -a "$OUT/steps.log"
head -3 "$OUT/bench.md"
grep -E "\| (CUDA) \| regular" "$OUT/bench.md"
grep -E "HorizontalLaplap" "$OUT/bench.md" | grep -E "z-loop" | grep CUDA | head -40
stamp "memcheck"
timeout 40 compute-sanitizer --tool memcheck --leak-check full --error-exitcode 3 \
  "$BUILD/bin/stencil_test_columns" --gtest_filter='*EveryStrategyAndTableDoubleHexagon/CUDA:*QuadMeshEqualsImagePath/CUDA:*MultiTileZLoopsFloatTriangle/CUDA' \
  > "$OUT/memcheck-columns.log" 2>&1
echo "memcheck columns rc=$?" | tee -a "$OUT/steps.log"
tail -4 "$OUT/memcheck-columns.log"
timeout 40 compute-sanitizer --tool memcheck --error-exitcode 3 \
  "$BUILD/bin/stencil_test_image" --gtest_filter='*CUDA*' > "$OUT/memcheck-image.log" 2>&1
echo "memcheck image rc=$?" | tee -a "$OUT/steps.log"
tail -4 "$OUT/memcheck-image.log"
# Shared-memory hazards of the tiled z-loop laplap (one barrier per layer, three buffers).
timeout 30 compute-sanitizer --tool racecheck --error-exitcode 3 \
  "$BUILD/bin/stencil_test_columns" --gtest_filter='*MultiTileZLoopsDoubleQuad/CUDA' \
  > "$OUT/racecheck-columns.log" 2>&1
echo "racecheck columns rc=$?" | tee -a "$OUT/steps.log"
tail -4 "$OUT/racecheck-columns.log"
stamp "done"
