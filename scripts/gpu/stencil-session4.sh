#!/usr/bin/env bash
# Session 4 device run for StencilCore: build alone with CUDA (sm_90 only), the CTest cases
# (CUDA ones run there), the benchmark at 512x512x64 (float and double: image kernels incl. block
# rows, every strategy x table layout, tile layers per step, five alternating repeats of the
# regular default and the default z-loop; CPU on 16 threads), compute-sanitizer racecheck and
# memcheck on the tiled laplap and images, then an Nsight Compute profile of the z-loop and the
# regular kernels when ncu exists. Results go to $OUT.
set -u
export CUDA_MODULE_LOADING=EAGER
OUT=${OUT:-/tmp/stencil-session4} BUILD=${BUILD:-/tmp/build-stencil-session4}
mkdir -p "$OUT"
SECONDS=0 # bash counts from here
source "$(dirname "$0")/stencil-common.sh"
configure_and_build
grep -A3 "tiledLaplap.*Compressed.*Li4E" "$OUT/build.log" | grep -E "Used|spill" | head -12 > "$OUT/ptxas-tiled.txt"
run_tests
run_bench 200 --cpu-repeats 3 --threads 16
grep -E "\| CUDA \| (regular|repeat)" "$OUT/bench.md" | grep HorizontalLaplap | cut -c1-170
grep -E "\| CUDA \| z-curve" "$OUT/bench.md" | grep -E "z-loop" | cut -c1-150
# The tiled laplap's barriers and rotating buffers (every layers-per-step count on quads).
sanitize racecheck-columns 100 --tool racecheck -- stencil_test_columns \
  '*MultiTileZLoopsDoubleQuad/CUDA'
sanitize memcheck-columns 80 --tool memcheck --leak-check full -- stencil_test_columns \
  '*MultiTileZLoopsDoubleQuad/CUDA:*MultiTileZLoopsDoubleHexagon/CUDA:*QuadMeshEqualsImagePath/CUDA'
sanitize memcheck-image 40 --tool memcheck -- stencil_test_image '*EveryImageKernelMatchesBruteForce/CUDA'
if command -v ncu > /dev/null; then
  stamp "ncu"
  # Launch order with --repeats 1 --gpu-only: the first row-strip launch is the float horizontal
  # laplap default; tiled launches 9 and 10 are float z-curve z-loop chasing compressed / plain.
  SECTIONS="--section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis --section SchedulerStats"
  timeout 80 ncu --kernel-name regex:tiledLaplap --launch-skip 8 --launch-count 2 $SECTIONS \
    --csv --page details "$BUILD/bin/stencil-bench" --size 512x512x64 --repeats 1 --gpu-only \
    > "$OUT/ncu-tiled.csv" 2> "$OUT/ncu-tiled.err"
  echo "ncu tiled rc=$?" | tee -a "$OUT/steps.log"
  timeout 60 ncu --kernel-name regex:rowStrip --launch-count 1 $SECTIONS \
    --csv --page details "$BUILD/bin/stencil-bench" --size 512x512x64 --repeats 1 --gpu-only \
    > "$OUT/ncu-strips.csv" 2> "$OUT/ncu-strips.err"
  echo "ncu strips rc=$?" | tee -a "$OUT/steps.log"
fi
stamp "done"
pack_results bench.md bench.json 'ncu-*.csv'
