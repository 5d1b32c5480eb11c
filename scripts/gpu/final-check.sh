#!/usr/bin/env bash
# Final check on the GPU machine (run from the repository root by the device tool): every
# VTK-free core configured alone with CUDA, built, and its whole test suite run, so the CUDA cases
# really run; compute-sanitizer memcheck on the codec's GPU tests. Results: $OUT/summary.txt and
# one log per step.
set -u
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
export CUDA_MODULE_LOADING=EAGER
CORES="SparseGridCore CorrelationCore StencilCore MeshLoopCore"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$OUT/gpu.txt" 2>&1
for core in $CORES; do
  (cmake -S "$core" -B "build-final-$core" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_CUDA_ARCHITECTURES=90 > "$OUT/$core-configure.log" 2>&1 &&
    cmake --build "build-final-$core" -j 8 > "$OUT/$core-build.log" 2>&1
    echo "$core build rc=$?" >> "$OUT/build.txt") &
done
wait
{
  cat "$OUT/gpu.txt"
  cat "$OUT/build.txt"
  for core in $CORES; do
    (cd "build-final-$core" && ctest -j 8 --timeout 240 > "$OUT/$core-ctest.log" 2>&1)
    echo "== $core ctest rc=$?"
    grep -E "tests passed|tests failed|FAILED|\(Failed\)|SEGFAULT|Timeout" "$OUT/$core-ctest.log" | head -20
    echo "skipped: $(grep -c '(Skipped)' "$OUT/$core-ctest.log")"
  done
  if [ -x build-final-SparseGridCore/bin/sgcore_test_codec_gpu ]; then
    timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 \
      build-final-SparseGridCore/bin/sgcore_test_codec_gpu > "$OUT/codec-memcheck.log" 2>&1
    echo "== codec memcheck rc=$? $(grep -E 'ERROR SUMMARY' "$OUT/codec-memcheck.log")"
  fi
} > "$OUT/summary.txt" 2>&1
cat "$OUT/summary.txt"
