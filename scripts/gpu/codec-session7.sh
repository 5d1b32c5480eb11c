#!/usr/bin/env bash
# The codec on the GPU machine, session 7 (issue 13: the Huffman decoder's lane steps with
# multi-token LUT entries, CodecHuffmanLanes.h), in one device call from the repository root:
#   OUT=/some/dir [MODE=final|probe] [BUDGET=230] scripts/gpu/codec-session7.sh
# SparseGridCore is configured alone with CUDA (sm_90, Release, -lineinfo for Nsight Compute's
# source view, -Xptxas -v: register lines in the summary) and built on the machine; the SASS of
# the default Huffman kernel (float) is kept.
# MODE=final (the default): every SparseGridCore test (ctest: GPU stream == CPU stream byte for
# byte, GPU decode == CPU decode, the bound per voxel, damaged streams, every decoder switch), the
# benchmark (512^3 float, relative bound 1e-3, eager module loading, median of 10 after a warm-up,
# noisy and smooth field, per-kernel profile), compute-sanitizer memcheck on the sanitizer-sized
# GPU tests, damaged streams, the decoder switches and the table tests, racecheck on the
# sanitizer-sized fields and the table cases; then the noisy field with session 6's kernel
# (SPARSEGRID_CODEC_CUDA_HUFFMAN=groups) in the same binary, test_codec_gpu with session 7's
# first version (=lanes1), and Nsight Compute on the default Huffman kernel (noisy,
# smooth). Each step is skipped once the budget is spent.
# MODE=probe (session 7, call 1): builds only the GPU test and the benchmark, runs
# test_codec_gpu, the noisy benchmark, memcheck and Nsight Compute.
# Leaves in $OUT: summary.txt and results.tgz (bench-*.txt/json, ncu-*.txt, sass-*.txt, logs/).
set -u
ROOT=$(pwd)
OUT=${OUT:-$ROOT/gpu-codec7-out}
BUDGET=${BUDGET:-230}
MODE=${MODE:-final}
START=$(date +%s)
mkdir -p "$OUT/tests" "$OUT/logs"
left() { echo $((BUDGET - ($(date +%s) - START))); }
say() { echo "[$(($(date +%s) - START))s] $*" | tee -a "$OUT/summary.txt"; }
finish() {
  (cd "$OUT" && tar czf /tmp/codec7-results.tgz --exclude=./summary.txt . &&
    find . -mindepth 1 ! -name summary.txt -delete && mv /tmp/codec7-results.tgz results.tgz)
}
trap finish EXIT

say "machine: $(nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader 2>&1 | head -1); $(nproc) cores; mode $MODE"
say "commit: $(git rev-parse --short HEAD 2> /dev/null) (+ working tree)"
BUILD=$ROOT/build-codec7-gpu
GEN=""
command -v ninja > /dev/null && GEN="-G Ninja"
timeout 60 cmake -S SparseGridCore -B "$BUILD" $GEN -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DSPARSEGRID_ENABLE_CUDA=ON \
  -DCMAKE_CUDA_FLAGS="-lineinfo -Xptxas -v" > "$OUT/logs/configure.log" 2>&1
rc=$?
[ $rc = 0 ] || { say "configure FAILED rc=$rc"; tail -30 "$OUT/logs/configure.log" >> "$OUT/summary.txt"; exit 1; }
TARGETS=""
[ "$MODE" = probe ] && TARGETS="--target sgcore_test_codec_gpu sparsegrid-codec-bench"
timeout 150 cmake --build "$BUILD" -j16 $TARGETS > "$OUT/logs/build.log" 2>&1
rc=$?
[ $rc = 0 ] || { say "build FAILED rc=$rc"; grep -E "error" -A3 "$OUT/logs/build.log" | head -60 >> "$OUT/summary.txt"; exit 1; }
say "build ok"
grep -A2 "decodeChunks" "$OUT/logs/build.log" | grep -E "registers|spill" | head -8 >> "$OUT/summary.txt"
BIN=$BUILD/bin
# The SASS of the session-7 Huffman kernel (float), for instruction counts per loop.
CUOBJ=/usr/local/cuda/bin/cuobjdump
command -v cuobjdump > /dev/null && CUOBJ=cuobjdump
"$CUOBJ" -sass "$BUILD/CMakeFiles/SparseGridCore.dir/src/cuda/codec/CodecCuda.cu.o" 2> /dev/null |
  awk '/Function : /{p = ($0 ~ /decodeChunksSpanKernelIfE/)} p' > "$OUT/sass-span.txt"
say "sass: $(wc -l < "$OUT/sass-span.txt") lines"
export CUDA_MODULE_LOADING=EAGER
SAN=/usr/local/cuda/bin/compute-sanitizer
command -v compute-sanitizer > /dev/null && SAN=compute-sanitizer
NCU=/usr/local/cuda/bin/ncu
command -v ncu > /dev/null && NCU=ncu

if [ "$MODE" = final ]; then
  (cd "$BUILD" && timeout 90 ctest -j 8 --timeout 80 > "$OUT/logs/ctest.log" 2>&1)
  say "ctest (all SparseGridCore tests): rc=$? $(grep -E 'tests passed|tests failed' "$OUT/logs/ctest.log")"
  grep -E "\(Failed\)|SEGFAULT|Timeout|\(Skipped\)|Not Run" "$OUT/logs/ctest.log" | sort -u | head -20 >> "$OUT/summary.txt"
  if grep -E "SparseGridCore\.Codec.*\((Failed|SEGFAULT|Timeout)" "$OUT/logs/ctest.log" > /dev/null; then
    timeout 60 "$BIN/sgcore_test_codec_gpu" > "$OUT/logs/test_codec_gpu.log" 2>&1
    grep -E "Failure|FAILED|Expected|Which is|differs" "$OUT/logs/test_codec_gpu.log" | head -30 >> "$OUT/summary.txt"
  fi
else
  timeout 90 "$BIN/sgcore_test_codec_gpu" > "$OUT/logs/test_codec_gpu.log" 2>&1
  say "test_codec_gpu: rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$OUT/logs/test_codec_gpu.log" | tr '\n' ' ')"
  grep -E "Failure|FAILED|Expected|Which is|differs" "$OUT/logs/test_codec_gpu.log" | head -30 >> "$OUT/summary.txt"
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
    grep -E "^profile: decompress" -A8 "$OUT/bench-$name.txt" | grep -E "Huffman|coarse|pass L9|sum of kernels" >> "$OUT/summary.txt"
  else
    say "bench $name skipped ($(left)s left)"
  fi
}
ncu_huffman() { # name kernel-regex noise env...
  local name=$1 kernel=$2 noise=$3
  shift 3
  if [ "$(left)" -gt 22 ]; then
    env "$@" timeout 30 "$NCU" --clock-control none --kernel-name "regex:$kernel" --launch-skip 1 \
      --launch-count 1 --section SpeedOfLight --section Occupancy --section LaunchStats \
      --section WarpStateStats --section InstructionStats --section SchedulerStats \
      --section MemoryWorkloadAnalysis --section SourceCounters \
      --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio" \
      "$BIN/sparsegrid-codec-bench" --synthetic 512 --noise "$noise" --rel 1e-3 --backend cuda \
      --threads "$(nproc)" --repeats 1 --no-zfp > "$OUT/ncu-$name.txt" 2>&1
    say "ncu $name: rc=$?"
    grep -E "Duration|Elapsed Cycles|SM Active Cycles|Compute \(SM\) Throughput|Memory Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per|Issued Ipc Active|No Eligible|Warp Cycles Per Issued|Executed Instructions  |Branch Efficiency|Avg. Active Threads" \
      "$OUT/ncu-$name.txt" | head -16 >> "$OUT/summary.txt"
  else
    say "ncu $name skipped ($(left)s left)"
  fi
}

bench noisy 0.003 SPARSEGRID_CODEC_CUDA_HUFFMAN=
[ "$MODE" = final ] && bench smooth 0 SPARSEGRID_CODEC_CUDA_HUFFMAN=

FILTER='CodecGpu.SanitizerSizedFields:CodecGpu.StridedAndDamagedStreams:CodecGpu.LinePassesAndSparseStoresMatchTheCpu'
[ "$MODE" = final ] && FILTER="$FILTER:CodecGpu.DeviceHuffmanTableSanitizerCases:CodecGpu.HostAndDeviceTablesGiveTheCpuStream"
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
if [ "$MODE" = final ] && [ "$(left)" -gt 15 ]; then
  lim=$(($(left) - 5))
  [ $lim -gt 100 ] && lim=100
  # Session 7 (calls 2 and 3): racecheck on every kernel of SanitizerSizedFields ran out of 45
  # and 58 s (each encoding also runs the table kernels); the decoder's kernels alone, then the
  # table cases.
  timeout $lim "$SAN" --tool racecheck --error-exitcode 3 --kernel-name kns=decodeChunks \
    "$BIN/sgcore_test_codec_gpu" --gtest_filter='CodecGpu.SanitizerSizedFields' \
    > "$OUT/logs/racecheck.log" 2>&1
  say "racecheck (Huffman decoder kernels, sanitizer-sized fields): rc=$? $(grep -E 'RACECHECK SUMMARY|PASSED|FAILED' "$OUT/logs/racecheck.log" | tr '\n' ' ')"
  grep -E "Race|hazard" -A4 "$OUT/logs/racecheck.log" | head -20 >> "$OUT/summary.txt"
  lim=$(($(left) - 5))
  [ $lim -gt 30 ] && lim=30
  timeout $lim "$SAN" --tool racecheck --error-exitcode 3 "$BIN/sgcore_test_codec_gpu" \
    --gtest_filter='CodecGpu.DeviceHuffmanTableSanitizerCases' > "$OUT/logs/racecheck-table.log" 2>&1
  say "racecheck (device table): rc=$? $(grep -E 'RACECHECK SUMMARY|PASSED|FAILED' "$OUT/logs/racecheck-table.log" | tr '\n' ' ')"
  grep -E "Race|hazard" -A4 "$OUT/logs/racecheck-table.log" | head -20 >> "$OUT/summary.txt"
fi
if [ "$MODE" = final ]; then
  # Before/after in one binary: session 6's kernel, then session 7's first version (also under
  # the GPU tests, as the fall-back should the default fail).
  bench noisy-groups 0.003 SPARSEGRID_CODEC_CUDA_HUFFMAN=groups
  if [ "$(left)" -gt 40 ]; then
    SPARSEGRID_CODEC_CUDA_HUFFMAN=lanes1 timeout 60 "$BIN/sgcore_test_codec_gpu" > "$OUT/logs/test_codec_gpu-lanes1.log" 2>&1
    say "test_codec_gpu (HUFFMAN=lanes1): rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$OUT/logs/test_codec_gpu-lanes1.log" | tr '\n' ' ')"
  fi
fi
ncu_huffman span-noisy decodeChunksSpan 0.003 SPARSEGRID_CODEC_CUDA_HUFFMAN=
ncu_huffman span-smooth decodeChunksSpan 0 SPARSEGRID_CODEC_CUDA_HUFFMAN=
say "done"
