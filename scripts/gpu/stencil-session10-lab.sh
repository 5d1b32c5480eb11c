#!/usr/bin/env bash
# Session 10: the staged-laplap laboratory (scripts/gpu/stencil-session10-lab.cu, built on the
# development machine and carried as build-carry10/lab10) beside StencilCore's benchmark of the
# same machine (build-carry9/bin.tar.xz: the regular default and the staged z-loop, 4 stability
# repeats), then Nsight Compute on the lab variants named in LAB_NCU (indices). Results in $OUT.
set -u
export CUDA_MODULE_LOADING=EAGER
OUT=${OUT:-/tmp/session10-lab}
B=/tmp/stencil10
mkdir -p "$OUT" "$B"
SECONDS=0
say() { echo "[${SECONDS}s] $*" | tee -a "$OUT/summary.txt"; }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.max.memory,driver_version \
  --format=csv,noheader >> "$OUT/summary.txt" 2>&1
LAB=${LAB:-build-carry10/lab10}
timeout 120 "$LAB" ${LAB_REPEATS:-6} > "$OUT/lab.md" 2>&1
say "lab rc=$?"
cat "$OUT/lab.md" >> "$OUT/summary.txt"
if [ "${BENCH:-1}" = 1 ]; then
  tar xJf build-carry9/bin.tar.xz -C "$B"
  timeout 200 "$B/bin/stencil-bench" --size 512x512x64 --gpu-only --stability ${STABILITY:-4} \
    --json "$OUT/bench.json" > "$OUT/bench.md" 2> "$OUT/bench.err"
  say "bench rc=$?"
  grep -E "HorizontalLaplap" "$OUT/bench.md" | grep -E "\| regular \|" >> "$OUT/summary.txt"
  grep -E "float \| CUDA \| z-curve \| HorizontalLaplap" "$OUT/bench.md" | sort -t'|' -k8 -n | head -3 >> "$OUT/summary.txt"
  grep -E "default median|staged z-loop" "$OUT/bench.err" >> "$OUT/summary.txt"
fi
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2> /dev/null || true)
if [ -n "$NCU" ]; then
  for v in ${LAB_NCU:-}; do
    timeout 120 "$NCU" --set full --metrics l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum --print-details all "$LAB" 0 "$v" > "$OUT/ncu-lab$v.txt" 2>&1
    say "ncu lab variant $v: rc=$?"
    grep -E "^  [a-z]|Duration|L1/TEX Cache Throughput|Lsu Wavefronts|Instructions Executed|Registers Per|Achieved Occ|bank_conflicts|wavefronts_mem_shared|t_sectors_pipe_lsu_mem_global_op_ld.sum|Stall (Barrier|Long|Short|Not Sel|MIO)|Local Memory Spilling|DRAM Throughput|Issued Warp" "$OUT/ncu-lab$v.txt" | head -40 >> "$OUT/summary.txt"
  done
fi
say "done"
cat "$OUT/summary.txt"
