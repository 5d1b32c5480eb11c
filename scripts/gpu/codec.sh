#!/usr/bin/env bash
# The error-bounded codec on the GPU machine (issue 13), in one batch from the repository root:
#   OUT=/some/dir BUDGET=420 [MODE=full|profile] [BIN=build-codec-cuda/bin] scripts/gpu/codec.sh
# BIN: binaries built elsewhere (e.g. here with nvcc, carried to the device machine); without it
# SparseGridCore is built alone with CUDA (sm_90). MODE=full (default): the codec's GoogleTest
# executables (GPU stream == CPU stream byte for byte, GPU decode == CPU decode, bound, device
# pointers, damaged streams), compute-sanitizer memcheck + racecheck, and the benchmark;
# MODE=profile: the benchmark only; SANITIZE=0 leaves the sanitizers out. Benchmark: 512^3 float,
# relative bound 1e-3, eager module loading, median of repeats after a warm-up (kernel and
# end-to-end throughput, the device copy bandwidth for the fractions), then per-kernel GPU times
# (CUDA events around every launch) and the host work between them. When the GPU test fails, it
# is repeated with each family of new kernels replaced by its predecessor (SPARSEGRID_CODEC_CUDA_LEGACY).
# Leaves in $OUT: summary.txt, bench512-{smooth,noisy}.{json,txt}, tests/*.json, logs.tgz.
set -u
ROOT=$(pwd)
OUT=${OUT:-$ROOT/gpu-codec-out}
BUDGET=${BUDGET:-420}
MODE=${MODE:-full}
START=$(date +%s)
mkdir -p "$OUT/tests" "$OUT/logs"
left() { echo $((BUDGET - ($(date +%s) - START))); }
say() { echo "[$(($(date +%s) - START))s] $*" | tee -a "$OUT/summary.txt"; }
finish() {
  tar czf "$OUT/logs.tgz" -C "$OUT" logs 2>/dev/null && rm -rf "$OUT/logs"
}
trap finish EXIT

say "machine: $(nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader 2>&1 | head -1); $(nproc) cores; mode $MODE"
if [ -n "${BIN:-}" ] && [ -x "$BIN/sparsegrid-codec-bench" ]; then
  BIN=$(cd "$BIN" && pwd)
  say "using prebuilt binaries in $BIN"
else
  BUILD=${BUILD:-$ROOT/build-gpu-codec}
  GEN=""
  command -v ninja > /dev/null && GEN="-G Ninja"
  cmake -S SparseGridCore -B "$BUILD" $GEN -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DSPARSEGRID_ENABLE_CUDA=ON > "$OUT/logs/configure.log" 2>&1 || { say "configure FAILED"; tail -30 "$OUT/logs/configure.log" >> "$OUT/summary.txt"; exit 1; }
  cmake --build "$BUILD" -j"$(nproc)" --target sgcore_test_codec sgcore_test_codec_robustness \
    sgcore_test_codec_gpu sparsegrid-codec-bench > "$OUT/logs/build.log" 2>&1 \
    || { say "build FAILED"; grep -E "error" -A3 "$OUT/logs/build.log" | head -60 >> "$OUT/summary.txt"; exit 1; }
  say "build ok"
  BIN=$BUILD/bin
fi
export CUDA_MODULE_LOADING=EAGER

if [ "$MODE" = full ]; then
  for t in test_codec test_codec_robustness test_codec_gpu; do
    timeout 240 "$BIN/sgcore_$t" --gtest_output="json:$OUT/tests/$t.json" > "$OUT/logs/$t.log" 2>&1
    rc=$?
    say "$t: rc=$rc $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$OUT/logs/$t.log" | tr '\n' ' ')"
    grep -E "Failure|FAILED|error|Expected|Which is|differs" "$OUT/logs/$t.log" | head -30 >> "$OUT/summary.txt"
    if [ "$t" = test_codec_gpu ] && [ $rc != 0 ]; then
      # Which of the new kernel families is at fault: each one replaced by its predecessor.
      for part in passes analyse write huffman all; do
        SPARSEGRID_CODEC_CUDA_LEGACY=$part timeout 120 "$BIN/sgcore_$t" > "$OUT/logs/$t-legacy-$part.log" 2>&1
        say "$t with SPARSEGRID_CODEC_CUDA_LEGACY=$part: rc=$?"
      done
    fi
  done
fi

# Throughput depends on the ratio: a smooth field (ratio ~300) and the same field with noise of
# about 2e-3 of its range (ratio ~15, like the real volumes at this bound).
for case in "smooth:0" "noisy:0.003"; do
  name=${case%%:*}
  noise=${case##*:}
  if [ "$(left)" -gt 45 ]; then
    timeout $(( $(left) - 10 )) "$BIN/sparsegrid-codec-bench" --synthetic 512 --noise "$noise" --rel 1e-3 \
      --backend cuda --threads "$(nproc)" --repeats 10 --no-zfp --json "$OUT/bench512-$name.json" \
      > "$OUT/bench512-$name.txt" 2>&1
    say "bench 512^3 $name: rc=$?"
    cat "$OUT/bench512-$name.txt" >> "$OUT/summary.txt"
  fi
done

if [ "$MODE" = full ] && [ "${SANITIZE:-1}" = 1 ]; then
  SAN=/usr/local/cuda/bin/compute-sanitizer
  command -v compute-sanitizer > /dev/null && SAN=compute-sanitizer
  if [ "$(left)" -gt 60 ]; then
    for tool in memcheck racecheck; do
      timeout $(( $(left) / 2 - 5 )) "$SAN" --tool $tool --error-exitcode 3 "$BIN/sgcore_test_codec_gpu" \
        --gtest_filter='CodecGpu.StridedAndDamagedStreams:CodecGpu.SanitizerSizedFields' \
        > "$OUT/logs/sanitize-$tool.log" 2>&1
      say "compute-sanitizer $tool: rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED' "$OUT/logs/sanitize-$tool.log" | tr '\n' ' ')"
      grep -E "Invalid|Race|hazard" -A4 "$OUT/logs/sanitize-$tool.log" | head -30 >> "$OUT/summary.txt"
    done
  else
    say "sanitizers skipped ($(left)s left)"
  fi
fi
say "done"
