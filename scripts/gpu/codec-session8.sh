#!/usr/bin/env bash
# The codec on the GPU machine, session 8 (issue 13's last items), in one device call from the
# repository root:
#   OUT=/some/dir [BUDGET=330] scripts/gpu/codec-session8.sh
# Needs build-volumes/ (scripts/gpu/prepare-volumes.py: the real volumes of ../shared/data as raw
# float32) and build-zfp-src/ (zfp 1.0.1's release source, see zfp-session5.sh), both git-ignored
# and carried. Steps, each skipped once the budget is spent:
# 1. zfp's CUDA build in the background (zfp-session5.sh PHASE=build) while SparseGridCore is
#    configured alone with CUDA (sm_90, Release) and built;
# 2. every SparseGridCore test (ctest), then CodecGpu.SameStreamAsCpuOnTheRealVolumes with
#    SPARSEGRID_CODEC_VOLUMES set (GPU stream == CPU stream byte for byte on the real volumes at
#    three bounds, host and device pointers, the bound on every voxel);
# 3. compute-sanitizer memcheck (sanitizer-sized fields, damaged streams, the decoder switches,
#    the table cases) and racecheck (the Huffman decoder kernels; the table cases);
# 4. zfp-session5.sh with this build: zfp's CUDA fixed-rate mode and our codec side by side
#    (512^3 float, smooth and noisy, median of 10 after a warm-up, eager module loading).
# Leaves in $OUT: summary.txt, zfp/ (zfp-session5.sh's summary and JSON) and results.tgz.
set -u
ROOT=$(pwd)
OUT=${OUT:-$ROOT/gpu-codec8-out}
BUDGET=${BUDGET:-330}
START=$(date +%s)
mkdir -p "$OUT/logs" "$OUT/zfp"
left() { echo $((BUDGET - ($(date +%s) - START))); }
say() { echo "[$(($(date +%s) - START))s] $*" | tee -a "$OUT/summary.txt"; }
finish() {
  (cd "$OUT" && tar czf /tmp/codec8-results.tgz logs && rm -rf logs &&
    mv /tmp/codec8-results.tgz results.tgz)
}
trap finish EXIT

say "machine: $(nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader 2>&1 | head -1); $(nproc) cores"
say "commit: $(git rev-parse --short HEAD 2> /dev/null) (+ working tree); $(date -u '+%F %T UTC')"
OUT=$OUT/zfp-build PHASE=build bash scripts/gpu/zfp-session5.sh > "$OUT/logs/zfp-build.txt" 2>&1 &
ZFP_BUILD=$!
BUILD=$ROOT/build-codec8-gpu
GEN=""
command -v ninja > /dev/null && GEN="-G Ninja"
timeout 60 cmake -S SparseGridCore -B "$BUILD" $GEN -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DSPARSEGRID_ENABLE_CUDA=ON > "$OUT/logs/configure.log" 2>&1 &&
  timeout 200 cmake --build "$BUILD" -j14 > "$OUT/logs/build.log" 2>&1
rc=$?
[ $rc = 0 ] || { say "build FAILED rc=$rc"; grep -E "error" -A3 "$OUT/logs/build.log" | head -60 >> "$OUT/summary.txt"; exit 1; }
say "build ok"
BIN=$BUILD/bin
export CUDA_MODULE_LOADING=EAGER
SAN=/usr/local/cuda/bin/compute-sanitizer
command -v compute-sanitizer > /dev/null && SAN=compute-sanitizer

(cd "$BUILD" && timeout 100 ctest -j 8 --timeout 90 > "$OUT/logs/ctest.log" 2>&1)
say "ctest (all SparseGridCore tests): rc=$? $(grep -E 'tests passed|tests failed' "$OUT/logs/ctest.log")"
grep -E "\(Failed\)|SEGFAULT|Timeout|\(Skipped\)|Not Run" "$OUT/logs/ctest.log" | sort -u | head -20 >> "$OUT/summary.txt"

SPARSEGRID_CODEC_VOLUMES=$ROOT/build-volumes timeout 120 "$BIN/sgcore_test_codec_gpu" \
  --gtest_filter='CodecGpu.SameStreamAsCpuOnTheRealVolumes' > "$OUT/logs/real-volumes.log" 2>&1
say "real volumes: rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) |^\[       OK' "$OUT/logs/real-volumes.log" | tr '\n' ' ')"
grep -E "Failure|Expected|Which is|differs|volume|Skipped" "$OUT/logs/real-volumes.log" | head -30 >> "$OUT/summary.txt"
cp "$OUT/logs/real-volumes.log" "$OUT/real-volumes.log"

FILTER='CodecGpu.SanitizerSizedFields:CodecGpu.StridedAndDamagedStreams:CodecGpu.LinePassesAndSparseStoresMatchTheCpu:CodecGpu.DeviceHuffmanTableSanitizerCases:CodecGpu.HostAndDeviceTablesGiveTheCpuStream'
if [ "$(left)" -gt 150 ]; then
  timeout 70 "$SAN" --tool memcheck --error-exitcode 3 "$BIN/sgcore_test_codec_gpu" \
    --gtest_filter="$FILTER" > "$OUT/logs/memcheck.log" 2>&1
  say "memcheck: rc=$? $(grep -E 'ERROR SUMMARY|PASSED|FAILED' "$OUT/logs/memcheck.log" | tr '\n' ' ')"
  grep -E "Invalid|Address" -A4 "$OUT/logs/memcheck.log" | head -20 >> "$OUT/summary.txt"
  timeout 40 "$SAN" --tool racecheck --error-exitcode 3 --kernel-name kns=decodeChunks \
    "$BIN/sgcore_test_codec_gpu" --gtest_filter='CodecGpu.SanitizerSizedFields' \
    > "$OUT/logs/racecheck.log" 2>&1
  say "racecheck (Huffman decoder kernels, sanitizer-sized fields): rc=$? $(grep -E 'RACECHECK SUMMARY|PASSED|FAILED' "$OUT/logs/racecheck.log" | tr '\n' ' ')"
  timeout 30 "$SAN" --tool racecheck --error-exitcode 3 "$BIN/sgcore_test_codec_gpu" \
    --gtest_filter='CodecGpu.DeviceHuffmanTableSanitizerCases' > "$OUT/logs/racecheck-table.log" 2>&1
  say "racecheck (device table): rc=$? $(grep -E 'RACECHECK SUMMARY|PASSED|FAILED' "$OUT/logs/racecheck-table.log" | tr '\n' ' ')"
  grep -E "Race|hazard" -A4 "$OUT/logs/racecheck"*.log | head -20 >> "$OUT/summary.txt"
else
  say "sanitizers skipped ($(left)s left)"
fi
wait $ZFP_BUILD
say "zfp build: $(grep 'zfp build' "$OUT/zfp-build/summary.txt" 2> /dev/null | tail -1)"
if [ "$(left)" -gt 60 ]; then
  OUT=$OUT/zfp CODEC_BUILD=$BUILD BUDGET=$(($(left) - 5)) bash scripts/gpu/zfp-session5.sh \
    > "$OUT/logs/zfp-stdout.txt" 2>&1
  say "zfp-session5 (side by side): rc=$?"
  grep -E "^\[|\| sparsegrid-gpu \||zfp|rate" "$OUT/zfp/summary.txt" | head -60 >> "$OUT/summary.txt"
else
  say "zfp side by side skipped ($(left)s left)"
fi
mv "$OUT/zfp-build" "$OUT/logs/" 2> /dev/null
say "done"
