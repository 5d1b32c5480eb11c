#!/usr/bin/env bash
# The codec on the GPU machine, session 6 (issue 13: the encoder's Huffman table, chunk sizes and
# offsets on the device with one read-back before the writer, block bits from vector loads; scheme
# sample with cached indices, pinned download and counting entropy; Huffman decoder lanes decode
# their window once before the final decode), in one device call from the repository root:
#   OUT=/some/dir [BUDGET=200] [BIN=dir-with-prebuilt-binaries] scripts/gpu/codec-session6.sh
# Without BIN, SparseGridCore is configured alone with CUDA (sm_90, Release) and built whole; then
# every SparseGridCore test runs (ctest: GPU stream == CPU stream byte for byte on realistic,
# random, noisy and constant fields, odd sizes, the device Huffman table == the host table on
# empty, single-token, tied, Fibonacci and random histograms, the bound per voxel), the benchmark
# (512^3 float, relative bound 1e-3, eager module loading, median of 10 after a warm-up, smooth and
# noisy field, with the per-kernel profile; the noisy field again with session 5's analysis,
# sizing, writer and Huffman decoding: SPARSEGRID_CODEC_CUDA_SIZING=session5
# SPARSEGRID_CODEC_CUDA_HUFFMAN=rescan), then compute-sanitizer memcheck on the sanitizer-sized GPU
# tests, the table tests and the decoder switches, the smooth field with session 5's paths and the
# decoder without groups, and racecheck on the table test. Each step is skipped once the budget
# is spent.
# Leaves in $OUT: summary.txt and results.tgz (bench-*.json/txt, tests/*.json, logs/).
set -u
ROOT=$(pwd)
OUT=${OUT:-$ROOT/gpu-codec6-out}
BUDGET=${BUDGET:-200}
START=$(date +%s)
mkdir -p "$OUT/tests" "$OUT/logs"
left() { echo $((BUDGET - ($(date +%s) - START))); }
say() { echo "[$(($(date +%s) - START))s] $*" | tee -a "$OUT/summary.txt"; }
# Everything but the summary in one archive (the device tool brings back only a few files).
finish() {
  (cd "$OUT" && tar czf /tmp/codec6-results.tgz --exclude=./summary.txt . &&
    find . -mindepth 1 ! -name summary.txt -delete && mv /tmp/codec6-results.tgz results.tgz)
}
trap finish EXIT

say "machine: $(nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader 2>&1 | head -1); $(nproc) cores"
say "commit: $(git rev-parse --short HEAD 2> /dev/null) (+ working tree)"
BUILD=$ROOT/build-codec6-gpu
if [ -n "${BIN:-}" ] && [ -x "$BIN/sparsegrid-codec-bench" ]; then
  BIN=$(cd "$BIN" && pwd)
  say "prebuilt binaries: $BIN"
  ALLTESTS=0
else
  GEN=""
  command -v ninja > /dev/null && GEN="-G Ninja"
  timeout 60 cmake -S SparseGridCore -B "$BUILD" $GEN -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DSPARSEGRID_ENABLE_CUDA=ON > "$OUT/logs/configure.log" 2>&1
  rc=$?
  [ $rc = 0 ] || { say "configure FAILED rc=$rc"; tail -30 "$OUT/logs/configure.log" >> "$OUT/summary.txt"; exit 1; }
  timeout 150 cmake --build "$BUILD" -j16 > "$OUT/logs/build.log" 2>&1
  rc=$?
  [ $rc = 0 ] || { say "build FAILED rc=$rc"; grep -E "error" -A3 "$OUT/logs/build.log" | head -60 >> "$OUT/summary.txt"; exit 1; }
  say "build ok"
  BIN=$BUILD/bin
fi
export CUDA_MODULE_LOADING=EAGER
SAN=/usr/local/cuda/bin/compute-sanitizer
command -v compute-sanitizer > /dev/null && SAN=compute-sanitizer

if [ "${ALLTESTS:-1}" = 1 ]; then
  (cd "$BUILD" && timeout 90 ctest -j 8 --timeout 80 > "$OUT/logs/ctest.log" 2>&1)
  say "ctest (all SparseGridCore tests): rc=$? $(grep -E 'tests passed|tests failed' "$OUT/logs/ctest.log")"
  grep -E "\(Failed\)|SEGFAULT|Timeout|\(Skipped\)|Not Run" "$OUT/logs/ctest.log" | sort -u | head -20 >> "$OUT/summary.txt"
  # Details of a failing codec executable.
  for t in test_codec test_codec_robustness test_codec_gpu; do
    if grep -E "SparseGridCore\.Codec\..*\((Failed|SEGFAULT|Timeout)" "$OUT/logs/ctest.log" > /dev/null &&
      [ "$(left)" -gt 80 ]; then
      timeout 60 "$BIN/sgcore_$t" --gtest_output="json:$OUT/tests/$t.json" > "$OUT/logs/$t.log" 2>&1
      say "$t: rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$OUT/logs/$t.log" | tr '\n' ' ')"
      grep -E "Failure|FAILED|Expected|Which is|differs|token" "$OUT/logs/$t.log" | head -30 >> "$OUT/summary.txt"
    fi
  done
else
  timeout 90 "$BIN/sgcore_test_codec_gpu" > "$OUT/logs/test_codec_gpu.log" 2>&1
  say "test_codec_gpu: rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$OUT/logs/test_codec_gpu.log" | tr '\n' ' ')"
fi

bench() { # name noise env...
  local name=$1 noise=$2
  shift 2
  if [ "$(left)" -gt 25 ]; then
    env "$@" timeout 40 "$BIN/sparsegrid-codec-bench" --synthetic 512 --noise "$noise" --rel 1e-3 \
      --backend cuda --threads "$(nproc)" --repeats 10 --no-zfp --json "$OUT/bench-$name.json" \
      > "$OUT/bench-$name.txt" 2>&1
    say "bench $name ($*): rc=$?"
    grep -E "^device:|\| sparsegrid-gpu \|" "$OUT/bench-$name.txt" >> "$OUT/summary.txt"
    grep -E "^profile:|encode host|Huffman|analyse|block bits|chunk sizes|write chunks|coarse|pass L9|sum of kernels" \
      "$OUT/bench-$name.txt" >> "$OUT/summary.txt"
  else
    say "bench $name skipped ($(left)s left)"
  fi
}
bench noisy 0.003 SPARSEGRID_CODEC_CUDA_TABLE=
bench smooth 0 SPARSEGRID_CODEC_CUDA_TABLE=
# Session 5's sizing (host table, walking bits kernel) and Huffman decoding (rescanning lanes) in
# the same binary, for the before/after on one machine.
bench noisy-session5 0.003 SPARSEGRID_CODEC_CUDA_SIZING=session5 SPARSEGRID_CODEC_CUDA_HUFFMAN=rescan

FILTER='CodecGpu.SanitizerSizedFields:CodecGpu.DeviceHuffmanTableSanitizerCases:CodecGpu.HostAndDeviceTablesGiveTheCpuStream:CodecGpu.StridedAndDamagedStreams:CodecGpu.LinePassesAndSparseStoresMatchTheCpu'
if [ "$(left)" -gt 30 ]; then
  lim=$(($(left) - 20))
  [ $lim -gt 60 ] && lim=60
  timeout $lim "$SAN" --tool memcheck --error-exitcode 3 "$BIN/sgcore_test_codec_gpu" \
    --gtest_filter="$FILTER" > "$OUT/logs/memcheck.log" 2>&1
  say "memcheck: rc=$? $(grep -E 'ERROR SUMMARY|PASSED|FAILED' "$OUT/logs/memcheck.log" | tr '\n' ' ')"
  grep -E "Invalid|Address" -A4 "$OUT/logs/memcheck.log" | head -20 >> "$OUT/summary.txt"
else
  say "memcheck skipped ($(left)s left)"
fi
# While time is left: session 5's paths on the smooth field too (its Huffman stage is mostly
# zero runs), and the decoder without groups.
bench smooth-session5 0 SPARSEGRID_CODEC_CUDA_SIZING=session5 SPARSEGRID_CODEC_CUDA_HUFFMAN=rescan
bench noisy-single 0.003 SPARSEGRID_CODEC_CUDA_HUFFMAN=single
if [ "$(left)" -gt 15 ]; then
  timeout $(($(left) - 5)) "$SAN" --tool racecheck --error-exitcode 3 "$BIN/sgcore_test_codec_gpu" \
    --gtest_filter='CodecGpu.DeviceHuffmanTableSanitizerCases' > "$OUT/logs/racecheck.log" 2>&1
  say "racecheck (device table): rc=$? $(grep -E 'RACECHECK SUMMARY|PASSED|FAILED' "$OUT/logs/racecheck.log" | tr '\n' ' ')"
  grep -E "Race|hazard" -A4 "$OUT/logs/racecheck.log" | head -20 >> "$OUT/summary.txt"
else
  say "racecheck skipped ($(left)s left)"
fi
say "done"
