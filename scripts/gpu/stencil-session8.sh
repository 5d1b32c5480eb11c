#!/usr/bin/env bash
# Session 8, where the frame goes: StencilCore with CUDA (sm_90), every CTest case,
# compute-sanitizer memcheck and racecheck on the frame-placement test and the small warp-row
# case, then the image benchmark at 512x512x64 (GPU only): the copy references, every image
# kernel variant incl. the frame placements, and eight repeats rotating the default, the strips
# with the frame first and spread, the warp rows of 8 rows and the copy references (each a median
# of 30 runs; per repeat also the ratio to the same repeat's faster copy). Uses the build folder
# $BUILD as carried over (build-carry8/bin.tar.xz, built on the development machine with
# stencil-common.sh's configure arguments), else configures and builds it. Results in $OUT.
set -u
export CUDA_MODULE_LOADING=EAGER
OUT=${OUT:-/tmp/stencil-session8} BUILD=${BUILD:-build-stencil8-gpu}
mkdir -p "$OUT"
SECONDS=0
source "$(dirname "$0")/stencil-common.sh"
if [ ! -x "$BUILD/bin/stencil-bench" ] && [ -f build-carry8/bin.tar.xz ]; then
  mkdir -p "$BUILD" && tar xJf build-carry8/bin.tar.xz -C "$BUILD"
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
# cannot use them, the GoogleTest binaries run directly (the same cases).
if ! grep -q "tests passed" "$OUT/ctest.log"; then
  stamp "ctest ran no tests: the test binaries directly"
  for t in "$BUILD"/bin/stencil_test_*; do
    timeout 150 "$t" >> "$OUT/ctest.log" 2>&1
    echo "$t rc=$?" | tee -a "$OUT/ctest.log" "$OUT/steps.log"
  done
  grep -E "^\[  (PASSED|SKIPPED|FAILED) " "$OUT/ctest.log" | sort | uniq -c | tee -a "$OUT/steps.log"
fi
grep -E "\*\*\*Failed|FAILED" "$OUT/ctest.log" | head -20
sanitize memcheck-frames ${MEMCHECK_SECONDS:-90} --tool memcheck -- stencil_test_image \
  '*FramePlacementsMatchTheReference/CUDA:*WarpRowsSmallImages/CUDA'
sanitize racecheck-frames ${RACECHECK_SECONDS:-90} --tool racecheck -- stencil_test_image \
  '*FramePlacementsMatchTheReference/CUDA'
run_bench 120 --gpu-only --image-only --stability 8
grep -E "repeat|median of" "$OUT/bench.err" > "$OUT/repeats.txt"
stamp "done"
{
  cat "$OUT/nvidia-smi.csv"
  cat "$OUT/steps.log"
  echo "--- ctest"
  tail -4 "$OUT/ctest.log"
  grep -E "\*\*\*Failed|FAILED" "$OUT/ctest.log" | head -20
  echo "--- sanitizers"
  for f in memcheck-frames racecheck-frames; do echo "$f:"; tail -2 "$OUT/$f.log"; done
  echo "--- bench"
  head -1 "$OUT/bench.md"
  grep "median of" "$OUT/repeats.txt"
  grep -E "\| CUDA \| regular(-variant)? \| HorizontalLaplap" "$OUT/bench.md" |
    grep -E "default|warp rows|frame" | cut -c1-240
} > "$OUT/summary.txt" 2>&1
cat "$OUT/summary.txt"
pack_results summary.txt bench.md bench.json steps.log ctest.log repeats.txt
