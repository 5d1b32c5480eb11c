#!/usr/bin/env bash
# Session 8, stencil call 5: the laboratory's fifth round (scripts/gpu/stencil-session8-lab.cu,
# carried as build-lab8/stencil-session8-lab): the frame rows' points in the side blocks, the
# frame-row warps first beside spread side blocks, and spread frames ending early; two runs.
# Results in $OUT/lab.
set -u
OUT=${OUT:-/tmp/stencil-session8-call5}
mkdir -p "$OUT/lab"
SECONDS=0
export CUDA_MODULE_LOADING=EAGER
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.max.memory,driver_version \
  --format=csv > "$OUT/lab/lab.txt" 2>&1
grep -A3 -E "Compiling entry function .*(warpRowKernelI[fd]Li8ELi(12|8)E|frameKernel)" build-lab8/ptxas.txt |
  grep -E "Compiling|Used|spill" | sed -E 's/.*(warpRowKernel|frameKernel)(I[A-Za-z0-9_]+)EEv.*/\1\2/' >> "$OUT/lab/lab.txt"
for round in 1 2; do
  timeout 100 build-lab8/stencil-session8-lab 8 > "$OUT/lab/run$round.txt" 2>&1
  echo "[${SECONDS}s] lab run $round rc=$?" | tee -a "$OUT/lab/steps.txt"
done
cat "$OUT/lab/run1.txt" >> "$OUT/lab/lab.txt"
grep -E "FAIL" "$OUT/lab/lab.txt" | head -20
sed -n '/rotating order/,$p' "$OUT/lab/run1.txt"
echo "--- second run"
sed -n '/rotating order/,$p' "$OUT/lab/run2.txt"
