#!/usr/bin/env bash
# Session 9: the column tests, the GPU benchmark (8 stability repeats) and Nsight Compute
# (--set full, one launch) on the staged laplap with lanes over layers (float and double, z-curve,
# the first launch of each) and on the float staged laplap with lanes over cells (its first
# z-curve launch: the bench's row-major launches of it are skipped by name order, see below).
# Binaries carried as build-carry9/bin.tar.xz. Results in $OUT (summary.txt first).
set -u
export CUDA_MODULE_LOADING=EAGER
OUT=${OUT:-/tmp/session9-profile}
B=/tmp/stencil9
mkdir -p "$OUT" "$B"
SECONDS=0
say() { echo "[${SECONDS}s] $*" | tee -a "$OUT/summary.txt"; }
tar xJf build-carry9/bin.tar.xz -C "$B"
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.memory,driver_version \
  --format=csv,noheader >> "$OUT/summary.txt" 2>&1
timeout 200 "$B/bin/stencil_test_columns" > "$OUT/columns.log" 2>&1
say "stencil_test_columns rc=$? $(grep -E '^\[  (PASSED|SKIPPED|FAILED) ' "$OUT/columns.log" | tr '\n' ' ')"
grep -E "Failure" -A8 "$OUT/columns.log" | head -30 >> "$OUT/summary.txt"
if [ "${BENCH:-1}" = 1 ]; then
  timeout 200 "$B/bin/stencil-bench" --size 512x512x64 --gpu-only --stability 8 \
    --json "$OUT/bench.json" > "$OUT/bench.md" 2> "$OUT/bench.err"
  say "bench rc=$?"
  for p in float double; do
    grep -E "^\| $p \| CUDA \| (z-curve|row-major) \| HorizontalLaplap" "$OUT/bench.md" |
      sort -t'|' -k8 -n | head -4 >> "$OUT/summary.txt"
  done
  grep -E "default median|staged z-loop" "$OUT/bench.err" >> "$OUT/summary.txt"
fi
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2> /dev/null || true)
if [ "${NCU_RUN:-1}" = 1 ] && [ -n "$NCU" ]; then
  for k in ${NCU_KERNELS:-"laneLaplapKernel<float" "laneLaplapKernel<double"}; do
    name=$(echo "$k" | tr -c 'A-Za-z0-9\n' '_')
    timeout 150 "$NCU" --kernel-name-base demangled --kernel-name "regex:$k" \
      --launch-skip ${NCU_SKIP:-0} --launch-count 1 --set full --print-details all \
      "$B/bin/stencil-bench" --size 512x512x64 --gpu-only --repeats 1 > "$OUT/ncu-$name.txt" 2>&1
    say "ncu $k: rc=$?"
  done
fi
(cd "$OUT" && tar czf logs.tgz columns.log bench.err 2> /dev/null; rm -f columns.log)
say "done"
cat "$OUT/summary.txt"
