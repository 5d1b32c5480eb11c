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
stamp() { printf '[%4ds] %s\n' "$SECONDS" "$*" | tee -a "$OUT/steps.log"; }

nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.max.memory,driver_version --format=csv > "$OUT/nvidia-smi.csv" 2>&1
which ncu nsys compute-sanitizer > "$OUT/tools.txt" 2>&1
stamp "configure"
cmake -S StencilCore -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSPARSEGRID_ENABLE_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_CUDA_FLAGS="-Xptxas -v" > "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
stamp "build"
cmake --build "$BUILD" -j 16 >> "$OUT/build.log" 2>&1 || { grep -E "error" -A5 "$OUT/build.log" | head -60; exit 1; }
grep -A3 "tiledLaplap.*Compressed.*Li4E" "$OUT/build.log" | grep -E "Used|spill" | head -12 > "$OUT/ptxas-tiled.txt"
stamp "tests"
(cd "$BUILD" && timeout 150 ctest -L stencil --output-on-failure -j 4) > "$OUT/ctest.log" 2>&1
tail -8 "$OUT/ctest.log"
stamp "bench"
timeout 200 "$BUILD/bin/stencil-bench" --size 512x512x64 --repeats 30 --cpu-repeats 3 --threads 16 \
  --stability 5 --json "$OUT/bench.json" > "$OUT/bench.md" 2> "$OUT/bench.err"
echo "bench rc=$?" | tee -a "$OUT/steps.log"
head -1 "$OUT/bench.md"
grep -E "\| CUDA \| (regular|repeat)" "$OUT/bench.md" | grep HorizontalLaplap | cut -c1-170
grep -E "\| CUDA \| z-curve" "$OUT/bench.md" | grep -E "z-loop" | cut -c1-150
# sanitize NAME SECONDS TOOL-ARGS... -- BINARY GTEST-FILTER: one compute-sanitizer pass, logged.
sanitize() {
  local name=$1 seconds=$2
  shift 2
  local args=()
  while [ "$1" != "--" ]; do args+=("$1"); shift; done
  stamp "$name"
  timeout "$seconds" compute-sanitizer "${args[@]}" --error-exitcode 3 "$BUILD/bin/$2" \
    --gtest_filter="$3" > "$OUT/$name.log" 2>&1
  echo "$name rc=$?" | tee -a "$OUT/steps.log"
  tail -3 "$OUT/$name.log"
}
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
# Few files come back (8 at most): keep the tables and the profiles, pack the logs. The archive
# is written outside $OUT (tar fails on an archive inside the folder it reads).
(cd "$OUT" && tar czf /tmp/stencil-logs.tgz --exclude=bench.md --exclude=bench.json \
  --exclude='ncu-*.csv' . && mv /tmp/stencil-logs.tgz logs.tgz && find . -maxdepth 1 -type f \
  ! -name logs.tgz ! -name bench.md ! -name bench.json ! -name 'ncu-*.csv' -delete)
