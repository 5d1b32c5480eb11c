#!/usr/bin/env bash
# Session 8, column meshes: the staged laplap with async copies of the next step (cp.async into a
# second set of raw slots). Carried binaries (build-carry8c/columns.tar.xz: stencil_test_columns
# and stencil-bench, built on the development machine with stencil-common.sh's configure
# arguments): the column tests (CPU and CUDA), compute-sanitizer memcheck and racecheck on the
# staged multi-tile tests, then the full GPU benchmark at 512x512x64 (every strategy with
# 'x regular', the staged sweep with and without async copies). Results in $OUT.
set -u
export CUDA_MODULE_LOADING=EAGER
OUT=${OUT:-/tmp/stencil-session8-columns} BUILD=${BUILD:-build-stencil8-gpu}
mkdir -p "$OUT" "$BUILD"
SECONDS=0
source "$(dirname "$0")/stencil-common.sh"
tar xJf build-carry8c/columns.tar.xz -C "$BUILD"
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.max.memory,driver_version \
  --format=csv > "$OUT/nvidia-smi.csv" 2>&1
stamp "tests"
timeout 200 "$BUILD/bin/stencil_test_columns" > "$OUT/test_columns.log" 2>&1
echo "stencil_test_columns rc=$?" | tee -a "$OUT/steps.log"
grep -E "^\[  (PASSED|SKIPPED|FAILED) |tests ran" "$OUT/test_columns.log" | tee -a "$OUT/steps.log"
grep -E "FAILED|Failure" "$OUT/test_columns.log" | head -20
sanitize memcheck-staged ${MEMCHECK_SECONDS:-90} --tool memcheck -- stencil_test_columns \
  '*MultiTileStagedFloatTriangle/CUDA'
sanitize racecheck-staged ${RACECHECK_SECONDS:-90} --tool racecheck -- stencil_test_columns \
  '*MultiTileStagedDoubleQuad/CUDA'
stamp "bench"
timeout 120 "$BUILD/bin/stencil-bench" --size 512x512x64 --gpu-only --json "$OUT/bench.json" \
  > "$OUT/bench.md" 2> "$OUT/bench.err"
echo "bench rc=$?" | tee -a "$OUT/steps.log"
stamp "done"
head -3 "$OUT/bench.md" | cut -c1-220
grep -E "\| (regular \| HorizontalLaplap \| default|z-curve \| HorizontalLaplap \| (staged|z-loop \())" \
  "$OUT/bench.md" | cut -c1-200 | head -60
grep -A12 -i "repeat" "$OUT/bench.md" | grep -i "staged" | cut -c1-200 | head -12
