#!/usr/bin/env bash
# Session 8, the lead's last device call: StencilCore at main's final state (binaries built on the
# development machine with stencil-common.sh's configure arguments, carried as
# build-carry8f/bin.tar.xz) after the last default change that had not run on a GPU (staged async
# copies off in float). Every StencilCore test binary (CPU and CUDA cases), then the full GPU
# benchmark at 512x512x64 (every strategy with 'x regular' from the same run). Results in $OUT.
set -u
export CUDA_MODULE_LOADING=EAGER
OUT=${OUT:-/tmp/session8-final}
B=/tmp/stencil8f
mkdir -p "$OUT" "$B"
SECONDS=0
tar xJf build-carry8f/bin.tar.xz -C "$B"
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.max.memory,driver_version \
  --format=csv,noheader > "$OUT/summary.txt" 2>&1
for t in "$B"/bin/stencil_test_*; do
  timeout 200 "$t" > "$OUT/$(basename "$t").log" 2>&1
  echo "[${SECONDS}s] $(basename "$t") rc=$? $(grep -E '^\[  (PASSED|SKIPPED|FAILED) ' "$OUT/$(basename "$t").log" | tr '\n' ' ')" >> "$OUT/summary.txt"
  grep -E "^\[  FAILED  \]" "$OUT/$(basename "$t").log" | head -10 >> "$OUT/summary.txt"
done
timeout 120 "$B/bin/stencil-bench" --size 512x512x64 --gpu-only --json "$OUT/bench.json" \
  > "$OUT/bench.md" 2> "$OUT/bench.err"
echo "[${SECONDS}s] bench rc=$?" >> "$OUT/summary.txt"
head -1 "$OUT/bench.md" >> "$OUT/summary.txt"
grep -E "HorizontalLaplap" "$OUT/bench.md" | grep -E "\| regular \|" >> "$OUT/summary.txt"
for p in float double; do
  grep -E "^\| $p \| CUDA \| (z-curve|row-major) \| HorizontalLaplap" "$OUT/bench.md" |
    sort -t'|' -k8 -n | head -3 >> "$OUT/summary.txt"
done
(cd "$OUT" && tar czf logs.tgz stencil_test_*.log bench.err && rm -f stencil_test_*.log bench.err)
cat "$OUT/summary.txt"
