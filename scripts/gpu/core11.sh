#!/usr/bin/env bash
# Issue 11 (SparseGridCore part): SparseGridCore configured alone with CUDA on the GPU machine,
# built, and its whole test suite run there, so that the CUDA cases (PreparedGrid's resident
# reconstruction among them) really run; compute-sanitizer memcheck on the prepared-grid tests.
# Results: $OUT/summary.txt and one log per step.
set -u
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
export CUDA_MODULE_LOADING=EAGER
B=build-core11-gpu
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  cmake -S SparseGridCore -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_ARCHITECTURES=90 > "$OUT/configure.log" 2>&1
  echo "configure rc=$?"
  cmake --build "$B" -j 16 > "$OUT/build.log" 2>&1
  echo "build rc=$?"
  grep -E "error" "$OUT/build.log" | head -20
  (cd "$B" && ctest -j 8 --timeout 240 > "$OUT/ctest.log" 2>&1)
  echo "== ctest rc=$?"
  grep -E "tests passed|tests failed|\(Failed\)|SEGFAULT|Timeout" "$OUT/ctest.log" | head -30
  echo "skipped: $(grep -c '(Skipped)' "$OUT/ctest.log") (the list at the end repeats each)"
  grep '(Skipped)' "$OUT/ctest.log" | tail -n 20
  if [ -x "$B/bin/sgcore_test_prepared" ]; then
    timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 \
      "$B/bin/sgcore_test_prepared" --gtest_filter='*Reconstruct*:*BatchesUploadOnce*' \
      > "$OUT/prepared-memcheck.log" 2>&1
    echo "== prepared memcheck rc=$? $(grep -E 'ERROR SUMMARY' "$OUT/prepared-memcheck.log")"
    grep -E "uploads|PASSED|FAILED" "$OUT/prepared-memcheck.log" | head -10
  fi
} > "$OUT/summary.txt" 2>&1
cat "$OUT/summary.txt"
