#!/usr/bin/env bash
# The lead's last GPU run of a session: scripts/gpu/final-check.sh (every core alone with CUDA,
# all tests, codec memcheck), then the codec's 512^3 benchmark with those binaries
# (scripts/gpu/codec.sh MODE=profile) and racecheck on the codec's GPU tests.
set -u
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
bash scripts/gpu/final-check.sh
if [ -x build-final-SparseGridCore/bin/sparsegrid-codec-bench ]; then
  OUT="$OUT/codec" BUDGET=150 MODE=profile BIN=build-final-SparseGridCore/bin \
    bash scripts/gpu/codec.sh > /dev/null 2>&1
  grep -E "bench|GB/s|\| sparsegrid" "$OUT/codec/summary.txt" | head -40
fi
if [ -x build-final-SparseGridCore/bin/sgcore_test_codec_gpu ]; then
  # The sanitizer-sized case alone: the whole suite does not finish under racecheck in 150 s.
  timeout 150 compute-sanitizer --tool racecheck --error-exitcode 9 \
    build-final-SparseGridCore/bin/sgcore_test_codec_gpu --gtest_filter='CodecGpu.SanitizerSizedFields' \
    > "$OUT/codec-racecheck.log" 2>&1
  echo "== codec racecheck rc=$? $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$OUT/codec-racecheck.log" | head -2)"
fi
