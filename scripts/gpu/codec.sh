#!/usr/bin/env bash
# The error-bounded codec on the GPU machine (issue 13), in one batch from the repository root:
#   OUT=/some/dir BUDGET=420 scripts/gpu/codec.sh
# build: SparseGridCore alone with CUDA (sm_90); tests: the codec's GoogleTest executables (GPU
# stream == CPU stream byte for byte, GPU decode == CPU decode, bound, device pointers, damaged
# streams); compute-sanitizer memcheck + racecheck on the small strided/damaged-stream case;
# bench: 512^3 float, relative bound 1e-3, eager module loading, median of repeats after a warm-up:
# kernel and end-to-end throughput, and the device copy bandwidth for the fractions.
# Leaves in $OUT: summary.txt, bench512-{smooth,noisy}.{json,txt}, tests/*.json, logs.tgz.
set -u
ROOT=$(pwd)
OUT=${OUT:-$ROOT/gpu-codec-out}
BUDGET=${BUDGET:-420}
START=$(date +%s)
BUILD=${BUILD:-$ROOT/build-gpu-codec}
mkdir -p "$OUT/tests" "$OUT/logs"
left() { echo $((BUDGET - ($(date +%s) - START))); }
say() { echo "[$(($(date +%s) - START))s] $*" | tee -a "$OUT/summary.txt"; }
finish() {
  tar czf "$OUT/logs.tgz" -C "$OUT" logs 2>/dev/null && rm -rf "$OUT/logs"
}
trap finish EXIT

say "machine: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | head -1); $(nproc) cores"
GEN=""
command -v ninja > /dev/null && GEN="-G Ninja"
cmake -S SparseGridCore -B "$BUILD" $GEN -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DSPARSEGRID_ENABLE_CUDA=ON > "$OUT/logs/configure.log" 2>&1 || { say "configure FAILED"; tail -30 "$OUT/logs/configure.log" >> "$OUT/summary.txt"; exit 1; }
cmake --build "$BUILD" -j"$(nproc)" --target sgcore_test_codec sgcore_test_codec_robustness \
  sgcore_test_codec_gpu sgcore_codec_writer sparsegrid-codec-bench > "$OUT/logs/build.log" 2>&1 \
  || { say "build FAILED"; grep -E "error" -A3 "$OUT/logs/build.log" | head -60 >> "$OUT/summary.txt"; exit 1; }
say "build ok"
BIN=$BUILD/bin
export CUDA_MODULE_LOADING=EAGER

for t in test_codec test_codec_robustness test_codec_gpu; do
  timeout 240 "$BIN/sgcore_$t" --gtest_output="json:$OUT/tests/$t.json" > "$OUT/logs/$t.log" 2>&1
  say "$t: rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$OUT/logs/$t.log" | tr '\n' ' ')"
  grep -E "Failure|FAILED|error" "$OUT/logs/$t.log" | head -20 >> "$OUT/summary.txt"
done

SAN=/usr/local/cuda/bin/compute-sanitizer
command -v compute-sanitizer > /dev/null && SAN=compute-sanitizer
if [ "$(left)" -gt 150 ] && [ -x "$SAN" -o "$SAN" = compute-sanitizer ]; then
  for tool in memcheck racecheck; do
    timeout 120 "$SAN" --tool $tool --error-exitcode 3 "$BIN/sgcore_test_codec_gpu" \
      --gtest_filter='CodecGpu.StridedAndDamagedStreams' > "$OUT/logs/sanitize-$tool.log" 2>&1
    say "compute-sanitizer $tool: rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/logs/sanitize-$tool.log" | tr '\n' ' ')"
  done
else
  say "sanitizers skipped ($(left)s left)"
fi

# Throughput depends on the ratio: a smooth field (ratio ~300) and the same field with noise of
# about 2e-3 of its range (ratio ~14, like the real volumes at this bound).
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
# Per-kernel times (where Nsight Systems is installed) to see where the time goes.
NSYS=$(command -v nsys || ls /usr/local/cuda/bin/nsys 2>/dev/null || true)
if [ -n "$NSYS" ] && [ "$(left)" -gt 60 ]; then
  (cd "$OUT/logs" && timeout $(( $(left) - 10 )) "$NSYS" profile -o codec --force-overwrite true --stats=false \
    "$BIN/sparsegrid-codec-bench" --synthetic 512 --noise 0.003 --rel 1e-3 --backend cuda --repeats 2 \
    --no-zfp --op decompress > nsys.log 2>&1 && "$NSYS" stats -r cuda_gpu_kern_sum,cuda_gpu_mem_time_sum codec.nsys-rep \
    > "$OUT/kernels.txt" 2>&1)
  say "nsys: rc=$?"
  head -40 "$OUT/kernels.txt" >> "$OUT/summary.txt"
fi
say "done"
