#!/usr/bin/env bash
# Session 10: the staged laplap with ring groups (StencilCore/src/GroupedColumns.h) on the GPU.
# Binaries built on the development machine with stencil-common.sh's configure arguments and
# carried as build-carry10/bin.tar.xz (stencil_test_columns, stencil_test_errors, stencil-bench).
# Steps: the column and error tests (every CPU and CUDA case), memcheck and racecheck on the
# grouped tests, the GPU benchmark at 512x512x64 with 8 stability repeats (the staged default
# against the same repeat's regular default), and the laboratory when LAB=1. Results in $OUT.
set -u
export CUDA_MODULE_LOADING=EAGER
OUT=${OUT:-/tmp/session10-groups}
B=/tmp/stencil10
mkdir -p "$OUT" "$B"
SECONDS=0
say() { echo "[${SECONDS}s] $*" | tee -a "$OUT/summary.txt"; }
tar xJf build-carry10/bin.tar.xz -C "$B"
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.max.memory,driver_version \
  --format=csv,noheader >> "$OUT/summary.txt" 2>&1
timeout 240 "$B/bin/stencil_test_columns" > "$OUT/columns.log" 2>&1
say "stencil_test_columns rc=$? $(grep -E '^\[  (PASSED|SKIPPED|FAILED) ' "$OUT/columns.log" | tr '\n' ' ')"
grep -E "^\[  FAILED  \]|Failure|Expected|Which is" "$OUT/columns.log" | head -24 >> "$OUT/summary.txt"
timeout 120 "$B/bin/stencil_test_errors" > "$OUT/errors.log" 2>&1
say "stencil_test_errors rc=$? $(grep -E '^\[  (PASSED|SKIPPED|FAILED) ' "$OUT/errors.log" | tr '\n' ' ')"
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2> /dev/null || true)
if [ -n "$SAN" ] && [ "${SANITIZE:-1}" = 1 ]; then
  timeout 150 "$SAN" --tool memcheck --error-exitcode 3 "$B/bin/stencil_test_columns" \
    --gtest_filter='*MultiTileStagedGroups*/CUDA' > "$OUT/memcheck.log" 2>&1
  say "memcheck (grouped tests): rc=$? $(grep -E 'ERROR SUMMARY|PASSED|FAILED' "$OUT/memcheck.log" | tr '\n' ' ')"
  timeout 150 "$SAN" --tool racecheck --error-exitcode 3 "$B/bin/stencil_test_columns" \
    --gtest_filter='*MultiTileStagedGroupsFloatTriangle/CUDA' > "$OUT/racecheck.log" 2>&1
  say "racecheck (grouped triangles): rc=$? $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY|PASSED|FAILED' "$OUT/racecheck.log" | tr '\n' ' ')"
fi
timeout 240 "$B/bin/stencil-bench" --size 512x512x64 --gpu-only --stability ${STABILITY:-8} \
  --json "$OUT/bench.json" > "$OUT/bench.md" 2> "$OUT/bench.err"
say "bench rc=$?"
grep -E "HorizontalLaplap" "$OUT/bench.md" | grep -E "\| regular \|" >> "$OUT/summary.txt"
for p in float double; do
  grep -E "^\| $p \| CUDA \| (z-curve|row-major) \| HorizontalLaplap" "$OUT/bench.md" |
    sort -t'|' -k8 -n | head -6 >> "$OUT/summary.txt"
done
grep -E "default median|staged z-loop" "$OUT/bench.err" >> "$OUT/summary.txt"
if [ "${LAB:-0}" = 1 ]; then
  timeout 120 build-carry10/lab10 6 > "$OUT/lab.md" 2>&1
  say "lab rc=$?"
  grep -E "^\|" "$OUT/lab.md" >> "$OUT/summary.txt"
fi
(cd "$OUT" && tar czf logs.tgz ./*.log bench.err 2> /dev/null; rm -f ./*.log)
say "done"
cat "$OUT/summary.txt"
