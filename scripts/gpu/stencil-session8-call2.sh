#!/usr/bin/env bash
# Session 8, stencil call 2: StencilCore with the frame placements and the session-8 defaults
# (built on the development machine, carried as build-carry8/bin.tar.xz) through
# scripts/gpu/stencil-session8.sh (CTest, compute-sanitizer, the image benchmark with 8 rotating
# repeats), then the laboratory's second round (scripts/gpu/stencil-session8-lab.cu, carried as
# build-lab8/stencil-session8-lab: frame values per thread, walk shapes with spread frame
# blocks). Results in $OUT/s8 and $OUT/lab.
set -u
OUT=${OUT:-/tmp/stencil-session8-call2}
mkdir -p "$OUT/s8" "$OUT/lab"
SECONDS=0
OUT="$OUT/s8" bash scripts/gpu/stencil-session8.sh > "$OUT/s8.out" 2>&1
echo "[${SECONDS}s] session 8 script rc=$?" | tee "$OUT/lab/steps.txt"
tail -40 "$OUT/s8.out"
export CUDA_MODULE_LOADING=EAGER
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.max.memory,driver_version \
  --format=csv > "$OUT/lab/lab.txt" 2>&1
timeout 150 build-lab8/stencil-session8-lab 8 >> "$OUT/lab/lab.txt" 2>&1
echo "[${SECONDS}s] lab rc=$?" | tee -a "$OUT/lab/steps.txt"
grep -E "FAIL" "$OUT/lab/lab.txt" | head -20
sed -n '/rotating order/,$p' "$OUT/lab/lab.txt"
