#!/usr/bin/env bash
# Session 8, stencil call 1: the session-7 warp rows as in
# scripts/gpu/pending/stencil-session7-warp-rows.patch (applied; binaries built on the development
# machine from the patch alone and carried as build-carry7/bin.tar.xz) through
# scripts/gpu/stencil-session7.sh (CTest, compute-sanitizer, the image benchmark with 8 rotating
# repeats), then the session-8 laboratory (scripts/gpu/stencil-session8-lab.cu, carried as
# build-lab8/stencil-session8-lab: where the frame goes in the launch, float and double). Results
# in $OUT/s7 and $OUT/lab.
set -u
OUT=${OUT:-/tmp/stencil-session8-call1}
mkdir -p "$OUT/s7" "$OUT/lab"
SECONDS=0
OUT="$OUT/s7" bash scripts/gpu/stencil-session7.sh > "$OUT/s7.out" 2>&1
echo "[${SECONDS}s] session 7 script rc=$?" | tee "$OUT/lab/steps.txt"
tail -30 "$OUT/s7.out"
export CUDA_MODULE_LOADING=EAGER
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.max.memory,driver_version \
  --format=csv > "$OUT/lab/lab.txt" 2>&1
grep -A3 -E "Compiling entry function .*(warpRowKernel|rowStripKernelI[fd]Lb1ELb0ELi[248]ELi2ELb0ELb0ELb0E)" \
  build-lab8/ptxas.txt | grep -E "Compiling|Used|spill" \
  | sed -E 's/.*(warpRowKernel|rowStripKernel)(I[A-Za-z0-9_]+)EEv.*/\1\2/' >> "$OUT/lab/lab.txt"
timeout 120 build-lab8/stencil-session8-lab 8 >> "$OUT/lab/lab.txt" 2>&1
echo "[${SECONDS}s] lab rc=$?" | tee -a "$OUT/lab/steps.txt"
grep -E "FAIL|reference kernel" "$OUT/lab/lab.txt" | head -20
sed -n '/rotating order/,$p' "$OUT/lab/lab.txt"
