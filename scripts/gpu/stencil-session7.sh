#!/usr/bin/env bash
# Session 7, warp rows: StencilCore with CUDA (sm_90), every CTest case, compute-sanitizer
# memcheck and racecheck on the small warp-row case, then the image benchmark at 512x512x64 (GPU
# only): the copy references (copy kernel and cudaMemcpy at the float and the double image's
# size), every image kernel variant incl. the warp-row shapes, and eight repeats rotating the
# default (warp rows), the strips, the streaming-store strips and the row tiles (float and double,
# each a median of 30 kernel runs, the one going first changing every repeat). Uses the build
# folder $BUILD as carried over when it holds stencil-bench (built on the development machine
# with stencil-common.sh's configure arguments), else configures and builds it. Results in $OUT.
# Needs scripts/gpu/pending/stencil-session7-warp-rows.patch applied until it is on main.
set -u
export CUDA_MODULE_LOADING=EAGER
OUT=${OUT:-/tmp/stencil-session7} BUILD=${BUILD:-build-stencil7-gpu}
mkdir -p "$OUT"
SECONDS=0
source "$(dirname "$0")/stencil-common.sh"
# The development machine's binaries travel compressed (the 5 of them are 125 MB).
if [ ! -x "$BUILD/bin/stencil-bench" ] && [ -f build-carry7/bin.tar.xz ]; then
  mkdir -p "$BUILD" && tar xJf build-carry7/bin.tar.xz -C "$BUILD"
fi
if [ -x "$BUILD/bin/stencil-bench" ]; then
  nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.max.memory,driver_version \
    --format=csv > "$OUT/nvidia-smi.csv" 2>&1
  stamp "prebuilt $BUILD"
else
  (configure_and_build)
  rc=$?
  echo "build rc=$rc" | tee -a "$OUT/steps.log"
  if [ $rc -ne 0 ]; then
    { cat "$OUT/steps.log"; grep -E "error" -A5 "$OUT/build.log" | head -80; } > "$OUT/summary.txt"
    pack_results summary.txt steps.log build.log
    exit 1
  fi
fi
run_tests
# A carried build folder's test lists were discovered on the development machine; where ctest
# cannot use them (another CMake), the GoogleTest binaries run directly (the same cases).
if ! grep -q "tests passed" "$OUT/ctest.log"; then
  stamp "ctest ran no tests: the test binaries directly"
  for t in "$BUILD"/bin/stencil_test_*; do
    timeout 120 "$t" >> "$OUT/ctest.log" 2>&1
    echo "$t rc=$?" | tee -a "$OUT/ctest.log" "$OUT/steps.log"
  done
  grep -E "^\[  (PASSED|SKIPPED|FAILED) " "$OUT/ctest.log" | sort | uniq -c | tee -a "$OUT/steps.log"
fi
grep -E "\*\*\*Failed|FAILED" "$OUT/ctest.log" | head -20
sanitize memcheck-warprows ${MEMCHECK_SECONDS:-45} --tool memcheck -- stencil_test_image \
  '*WarpRowsSmallImages/CUDA'
sanitize racecheck-warprows ${RACECHECK_SECONDS:-45} --tool racecheck -- stencil_test_image \
  '*WarpRowsSmallImages/CUDA'
run_bench 75 --gpu-only --image-only --stability 8
grep -E "repeat|median of" "$OUT/bench.err" > "$OUT/repeats.txt"
stamp "done"
{
  cat "$OUT/nvidia-smi.csv"
  cat "$OUT/steps.log"
  echo "--- ctest"
  tail -4 "$OUT/ctest.log"
  grep -E "\*\*\*Failed|FAILED" "$OUT/ctest.log" | head -20
  echo "--- sanitizers"
  for f in memcheck-warprows racecheck-warprows; do echo "$f:"; tail -2 "$OUT/$f.log"; done
  echo "--- bench"
  head -1 "$OUT/bench.md"
  grep "median of" "$OUT/repeats.txt"
  grep -E "\| CUDA \| regular(-variant)? \| HorizontalLaplap" "$OUT/bench.md" |
    grep -E "default|warp rows|\(row strips, 2 columns x 4 rows, 4 x 32 threads per block\)" |
    cut -c1-220
} > "$OUT/summary.txt" 2>&1
cat "$OUT/summary.txt"
pack_results summary.txt bench.md bench.json steps.log ctest.log repeats.txt
