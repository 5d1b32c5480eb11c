#!/usr/bin/env bash
# The codec on the GPU machine with one kernel per level (issue 13, session 4), in one device call
# from the repository root, with binaries built here (nvcc, sm_90) and carried:
#   OUT=/some/dir BUDGET=560 BIN=build-codecgpu/bin [BASE=build-codecgpu/base] [TESTS=0] \
#     [TILES="32,8,8 64,8,8"] [LEVELS=0] [NCU_RUN=0] scripts/gpu/codec-levels.sh
# Steps, each skipped when the budget is spent: the codec's GoogleTest executables (GPU stream ==
# CPU stream byte for byte, GPU decode == CPU decode, bound), the GPU test twice: with the default
# kernels and with the level kernels on (SPARSEGRID_CODEC_CUDA_TILE=32,16,16); the benchmark
# (512^3 float, relative bound 1e-3, eager module loading, median of 10 after a warm-up) on the
# smooth and the noisy field with the default kernels and with the level kernels (LEVELS=0 leaves
# those out), the previous code's benchmark binary (BASE) for a same-machine before/after, and
# other tile shapes (TILES); compute-sanitizer memcheck on the sanitizer-sized and damaged-stream
# tests, racecheck on the sanitizer-sized test alone; an Nsight Compute summary of the decoder's
# Huffman and level kernels if ncu is there (NCU_RUN=0 leaves it out). Leaves in $OUT:
# summary.txt and results.tgz (bench-*, tests/, ncu.txt, logs/).
set -u
ROOT=$(pwd)
OUT=${OUT:-$ROOT/gpu-codec-out}
BUDGET=${BUDGET:-560}
BIN=$(cd "${BIN:-build-codecgpu/bin}" && pwd)
BASE=${BASE:-build-codecgpu/base}
START=$(date +%s)
mkdir -p "$OUT/tests" "$OUT/logs"
left() { echo $((BUDGET - ($(date +%s) - START))); }
say() { echo "[$(($(date +%s) - START))s] $*" | tee -a "$OUT/summary.txt"; }
# Everything but the summary in one archive (the device tool brings back only a few files).
finish() {
  (cd "$OUT" && tar czf /tmp/codec-results.tgz --exclude=./summary.txt . &&
    find . -mindepth 1 ! -name summary.txt -delete && mv /tmp/codec-results.tgz results.tgz)
}
trap finish EXIT
export CUDA_MODULE_LOADING=EAGER
# The benchmark binaries built here link Debian's libzfp (carried in build-codecgpu/lib).
export LD_LIBRARY_PATH="$ROOT/build-codecgpu/lib:${LD_LIBRARY_PATH:-}"
SAN=/usr/local/cuda/bin/compute-sanitizer
command -v compute-sanitizer > /dev/null && SAN=compute-sanitizer
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2> /dev/null || true)
say "machine: $(nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader 2>&1 | head -1); $(nproc) cores"
say "tools: nsys=$(command -v nsys || echo none) ncu=${NCU:-none} sanitizer=$SAN"

# The GPU test runs with the default kernels and again with the level kernels on everywhere
# (SPARSEGRID_CODEC_CUDA_TILE), so that both paths are checked byte for byte against the CPU.
[ "${TESTS:-1}" = 0 ] || for t in test_codec_gpu test_codec_gpu-levels test_codec test_codec_robustness; do
  tile=""
  [ "$t" = test_codec_gpu-levels ] && tile=32,16,16
  SPARSEGRID_CODEC_CUDA_TILE=$tile timeout 200 "$BIN/sgcore_${t%-levels}" \
    --gtest_output="json:$OUT/tests/$t.json" > "$OUT/logs/$t.log" 2>&1
  rc=$?
  say "$t: rc=$rc $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$OUT/logs/$t.log" | tr '\n' ' ')"
  grep -E "^\[  FAILED|Failure|Expected|Which is|differs|DIFFERS" "$OUT/logs/$t.log" | head -30 >> "$OUT/summary.txt"
done

bench() { # name noise tile binary
  local name=$1 noise=$2 tile=$3 bin=$4
  if [ "$(left)" -gt 60 ]; then
    SPARSEGRID_CODEC_CUDA_TILE=$tile timeout 90 "$bin" --synthetic 512 --noise "$noise" --rel 1e-3 \
      --backend cuda --threads "$(nproc)" --repeats 10 --no-zfp --json "$OUT/bench-$name.json" \
      > "$OUT/bench-$name.txt" 2>&1
    say "bench $name (tile '$tile'): rc=$?"
    grep -E "sparsegrid-gpu|device|L8|L9|Huffman|sum of" "$OUT/bench-$name.txt" | grep -vE "^profile" >> "$OUT/summary.txt"
  fi
}
bench smooth 0 "" "$BIN/sparsegrid-codec-bench"
bench noisy 0.003 "" "$BIN/sparsegrid-codec-bench"
[ "${LEVELS:-1}" = 0 ] || bench smooth-levels 0 "32,16,16" "$BIN/sparsegrid-codec-bench"
[ "${LEVELS:-1}" = 0 ] || bench noisy-levels 0.003 "32,16,16" "$BIN/sparsegrid-codec-bench"
if [ -x "$BASE/sparsegrid-codec-bench" ]; then
  bench smooth-before 0 "" "$BASE/sparsegrid-codec-bench"
  bench noisy-before 0.003 "" "$BASE/sparsegrid-codec-bench"
fi
for tile in ${TILES:-}; do
  bench "smooth-tile-$tile" 0 "$tile" "$BIN/sparsegrid-codec-bench"
done

if [ "${TESTS:-1}" != 0 ] && [ "$(left)" -gt 60 ]; then
  timeout $(($(left) / 3)) "$SAN" --tool memcheck --error-exitcode 3 "$BIN/sgcore_test_codec_gpu" \
    --gtest_filter='CodecGpu.StridedAndDamagedStreams:CodecGpu.SanitizerSizedFields' \
    > "$OUT/logs/memcheck.log" 2>&1
  say "memcheck: rc=$? $(grep -E 'ERROR SUMMARY|PASSED|FAILED' "$OUT/logs/memcheck.log" | tr '\n' ' ')"
  grep -E "Invalid|Address" -A4 "$OUT/logs/memcheck.log" | head -20 >> "$OUT/summary.txt"
fi
if [ "${TESTS:-1}" != 0 ] && [ "$(left)" -gt 60 ]; then
  timeout $(($(left) * 2 / 3)) "$SAN" --tool racecheck --error-exitcode 3 "$BIN/sgcore_test_codec_gpu" \
    --gtest_filter='CodecGpu.SanitizerSizedFields' > "$OUT/logs/racecheck.log" 2>&1
  say "racecheck (SanitizerSizedFields): rc=$? $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY|PASSED|FAILED' "$OUT/logs/racecheck.log" | tr '\n' ' ')"
  grep -E "Race|hazard" -A4 "$OUT/logs/racecheck.log" | head -20 >> "$OUT/summary.txt"
fi
if [ "${NCU_RUN:-1}" != 0 ] && [ -n "$NCU" ] && [ "$(left)" -gt 45 ]; then
  # The first decoding's Huffman stage and level kernels L1-L9 (encoding launches none of them).
  timeout $(($(left) - 15)) "$NCU" --kernel-name regex:'decodeLevelKernel|decodeChunksWarpKernel' \
    --launch-skip 0 --launch-count 10 --section SpeedOfLight --section Occupancy \
    --section LaunchStats "$BIN/sparsegrid-codec-bench" --synthetic 512 --noise 0.003 \
    --rel 1e-3 --backend cuda --threads "$(nproc)" --repeats 1 --no-zfp > "$OUT/ncu.txt" 2>&1
  say "ncu: rc=$?"
  grep -E "^  [a-zA-Z].*Kernel|decode|Duration|DRAM Throughput|Memory Throughput|Compute \(SM\) Throughput|Achieved Occupancy|Registers Per|Theoretical Occupancy|Grid Size" "$OUT/ncu.txt" | head -80 >> "$OUT/summary.txt"
fi
say "done"
