#!/usr/bin/env bash
# Session 7: the float laplap laboratory (scripts/gpu/stencil-laplap-lab.cu) on the GPU: copy
# references, the current strips and the warp-row variants, each checked against a reference
# kernel, then timed (8 rotating repeats, medians of 30). Uses build-lab/stencil-laplap-lab when
# it was carried over (built on the development machine with the command in the .cu file),
# otherwise builds it. Results in $OUT/lab.txt (the device, the ptxas lines, the checks, the
# table).
set -u
OUT=${OUT:-/tmp/stencil-session7-lab}
mkdir -p "$OUT"
SECONDS=0
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.max.memory,driver_version \
  --format=csv > "$OUT/gpu.txt" 2>&1
BIN=build-lab/stencil-laplap-lab
if [ ! -x "$BIN" ]; then
  mkdir -p build-lab
  nvcc -O3 -arch=sm_90 -std=c++17 -IStencilCore/include -Xptxas -v \
    scripts/gpu/stencil-laplap-lab.cu -o "$BIN" 2> build-lab/ptxas.txt || { tail -30 build-lab/ptxas.txt; exit 1; }
fi
echo "[${SECONDS}s] built" >> "$OUT/gpu.txt"
grep -A3 -E "Compiling entry function .*(warpRowKernel|rowStripKernelI[fd]Lb1ELb0ELi4ELi2ELb0ELb0ELb0E)" \
  build-lab/ptxas.txt | grep -E "Compiling|Used|spill" \
  | sed -E 's/.*(warpRowKernel|rowStripKernel)(I[A-Za-z0-9_]+)EEv.*/\1\2/' > "$OUT/ptxas.txt"
timeout 45 "$BIN" 8 > "$OUT/lab-run.txt" 2>&1
echo "lab rc=$? after ${SECONDS}s" >> "$OUT/gpu.txt"
cat "$OUT/gpu.txt" "$OUT/ptxas.txt" "$OUT/lab-run.txt" > "$OUT/lab.txt"
rm -f "$OUT/gpu.txt" "$OUT/ptxas.txt" "$OUT/lab-run.txt"
head -3 "$OUT/lab.txt"
grep -E "FAIL|reference kernel" "$OUT/lab.txt" | head -20
sed -n '/rotating order/,$p' "$OUT/lab.txt"
