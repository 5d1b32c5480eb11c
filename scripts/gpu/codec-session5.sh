#!/usr/bin/env bash
# The codec on the GPU machine, session 5 (issue 13: decoder and encoder passes on lines along the
# pass axis, coarse decoder levels in one CTA, half-chunk Huffman staging, sparse symbol stores),
# in one device call from the repository root:
#   OUT=/some/dir [BUDGET=400] [BIN=dir-with-prebuilt-binaries] [ALLTESTS=1] [VARIANTS=1] \
#     [NCU_RUN=1] [NCU_FIELDS="0 0.003"] scripts/gpu/codec-session5.sh
# Without BIN, SparseGridCore is configured alone with CUDA (sm_90, Release) and built whole; then
# every SparseGridCore test runs (ctest; ALLTESTS=0: only the codec's executables),
# compute-sanitizer memcheck on the codec GPU tests that exercise the device paths (damaged
# streams, sanitizer-sized fields, the session-5 kernels and their switches), racecheck on
# CodecGpu.SanitizerSizedFields, and the benchmark: 512^3 float, relative bound 1e-3, eager module
# loading, median of 10 after a warm-up, smooth and noisy field, with this session's kernels
# (default) and session 4's pass kernels in the same binary (SPARSEGRID_CODEC_CUDA_DECODE=pass
# SPARSEGRID_CODEC_CUDA_ENCODE=pass: the before/after on one machine), then variants (16-point
# walking segments, whole-chunk Huffman staging; VARIANTS=0 leaves them out) and an Nsight
# Compute summary of the Huffman kernel. Each step is skipped once the budget is spent. Leaves in
# $OUT: summary.txt and results.tgz (bench-*.json and bench-*.txt with the tables and per-kernel
# profiles, tests/*.json, ncu-*.txt, logs/).
set -u
ROOT=$(pwd)
OUT=${OUT:-$ROOT/gpu-codec5-out}
BUDGET=${BUDGET:-400}
START=$(date +%s)
mkdir -p "$OUT/tests" "$OUT/logs"
left() { echo $((BUDGET - ($(date +%s) - START))); }
say() { echo "[$(($(date +%s) - START))s] $*" | tee -a "$OUT/summary.txt"; }
# Everything but the summary in one archive (the device tool brings back only a few files).
finish() {
  (cd "$OUT" && tar czf /tmp/codec5-results.tgz --exclude=./summary.txt . &&
    find . -mindepth 1 ! -name summary.txt -delete && mv /tmp/codec5-results.tgz results.tgz)
}
trap finish EXIT

say "machine: $(nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader 2>&1 | head -1); $(nproc) cores"
say "commit: $(git rev-parse --short HEAD 2> /dev/null) (+ working tree)"
BUILD=$ROOT/build-codec5-gpu
if [ -n "${BIN:-}" ] && [ -x "$BIN/sparsegrid-codec-bench" ]; then
  BIN=$(cd "$BIN" && pwd)
  say "prebuilt binaries: $BIN"
  ALLTESTS=0
else
  GEN=""
  command -v ninja > /dev/null && GEN="-G Ninja"
  cmake -S SparseGridCore -B "$BUILD" $GEN -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DSPARSEGRID_ENABLE_CUDA=ON > "$OUT/logs/configure.log" 2>&1 ||
    { say "configure FAILED"; tail -30 "$OUT/logs/configure.log" >> "$OUT/summary.txt"; exit 1; }
  cmake --build "$BUILD" -j"$(nproc)" > "$OUT/logs/build.log" 2>&1 ||
    { say "build FAILED"; grep -E "error" -A3 "$OUT/logs/build.log" | head -60 >> "$OUT/summary.txt"; exit 1; }
  say "build ok"
  BIN=$BUILD/bin
fi
export CUDA_MODULE_LOADING=EAGER
SAN=/usr/local/cuda/bin/compute-sanitizer
command -v compute-sanitizer > /dev/null && SAN=compute-sanitizer

if [ "${ALLTESTS:-1}" = 1 ]; then
  (cd "$BUILD" && timeout 300 ctest -j 8 --timeout 240 > "$OUT/logs/ctest.log" 2>&1)
  say "ctest (all SparseGridCore tests): rc=$? $(grep -E 'tests passed|tests failed' "$OUT/logs/ctest.log")"
  grep -E "\(Failed\)|SEGFAULT|Timeout|\(Skipped\)" "$OUT/logs/ctest.log" | sort -u | head -20 >> "$OUT/summary.txt"
fi
for t in test_codec test_codec_robustness test_codec_gpu; do
  timeout 240 "$BIN/sgcore_$t" --gtest_output="json:$OUT/tests/$t.json" > "$OUT/logs/$t.log" 2>&1
  say "$t: rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$OUT/logs/$t.log" | tr '\n' ' ')"
  grep -E "Failure|FAILED|Expected|Which is|differs" "$OUT/logs/$t.log" | head -30 >> "$OUT/summary.txt"
done

bench() { # name noise env...
  local name=$1 noise=$2
  shift 2
  if [ "$(left)" -gt 40 ]; then
    env "$@" timeout 90 "$BIN/sparsegrid-codec-bench" --synthetic 512 --noise "$noise" --rel 1e-3 \
      --backend cuda --threads "$(nproc)" --repeats 10 --no-zfp --json "$OUT/bench-$name.json" \
      > "$OUT/bench-$name.txt" 2>&1
    say "bench $name ($*): rc=$?"
    grep -E "^device:|\| sparsegrid-gpu \|" "$OUT/bench-$name.txt" >> "$OUT/summary.txt"
    grep -E "^profile:|Huffman|coarse|pass L[89]|sum of kernels" "$OUT/bench-$name.txt" >> "$OUT/summary.txt"
  fi
}
bench smooth 0 SPARSEGRID_CODEC_CUDA_DECODE=
bench smooth-session4 0 SPARSEGRID_CODEC_CUDA_DECODE=pass SPARSEGRID_CODEC_CUDA_ENCODE=pass
bench noisy 0.003 SPARSEGRID_CODEC_CUDA_DECODE=
bench noisy-session4 0.003 SPARSEGRID_CODEC_CUDA_DECODE=pass SPARSEGRID_CODEC_CUDA_ENCODE=pass
if [ "${VARIANTS:-1}" = 1 ]; then
  bench smooth-walk16 0 SPARSEGRID_CODEC_CUDA_WALK=16
  bench smooth-wholechunks 0 SPARSEGRID_CODEC_CUDA_HUFFMAN=whole
  bench noisy-wholechunks 0.003 SPARSEGRID_CODEC_CUDA_HUFFMAN=whole
fi

if [ "$(left)" -gt 60 ]; then
  timeout $(($(left) / 2)) "$SAN" --tool memcheck --error-exitcode 3 "$BIN/sgcore_test_codec_gpu" \
    --gtest_filter='CodecGpu.StridedAndDamagedStreams:CodecGpu.SanitizerSizedFields:CodecGpu.LinePassesAndSparseStoresMatchTheCpu' \
    > "$OUT/logs/memcheck.log" 2>&1
  say "memcheck: rc=$? $(grep -E 'ERROR SUMMARY|PASSED|FAILED' "$OUT/logs/memcheck.log" | tr '\n' ' ')"
  grep -E "Invalid|Address" -A4 "$OUT/logs/memcheck.log" | head -20 >> "$OUT/summary.txt"
fi
if [ "$(left)" -gt 30 ]; then
  timeout $(($(left) - 10)) "$SAN" --tool racecheck --error-exitcode 3 "$BIN/sgcore_test_codec_gpu" \
    --gtest_filter='CodecGpu.SanitizerSizedFields' > "$OUT/logs/racecheck.log" 2>&1
  say "racecheck (SanitizerSizedFields): rc=$? $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY|PASSED|FAILED' "$OUT/logs/racecheck.log" | tr '\n' ' ')"
  grep -E "Race|hazard" -A4 "$OUT/logs/racecheck.log" | head -20 >> "$OUT/summary.txt"
fi
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2> /dev/null || true)
if [ "${NCU_RUN:-1}" = 1 ] && [ -n "$NCU" ] && [ "$(left)" -gt 45 ]; then
  # The first decoding's Huffman stage (encoding launches none): where it stalls, how full the
  # SMs are (NCU_FIELDS: the noise levels, 0 = smooth).
  for noise in ${NCU_FIELDS:-0}; do
    timeout $(($(left) / 2)) "$NCU" --kernel-name regex:'decodeChunksWarpKernel' \
      --launch-skip 0 --launch-count 1 --section SpeedOfLight --section Occupancy \
      --section LaunchStats --section WarpStateStats "$BIN/sparsegrid-codec-bench" --synthetic 512 \
      --noise $noise --rel 1e-3 --backend cuda --threads "$(nproc)" --repeats 1 --no-zfp \
      > "$OUT/ncu-$noise.txt" 2>&1
    say "ncu noise $noise: rc=$?"
    grep -E "Duration|DRAM Throughput|Compute \(SM\) Throughput|Achieved Occupancy|Registers Per|Theoretical Occupancy|Warp Cycles Per Issued|Block Limit Shared" \
      "$OUT/ncu-$noise.txt" | sed -E 's/ +/ /g' | head -120 >> "$OUT/summary.txt"
  done
fi
say "done"
cat "$OUT/summary.txt"
