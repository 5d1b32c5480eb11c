#!/usr/bin/env bash
# Session 8, stencil call 3: the laboratory's third round (scripts/gpu/stencil-session8-lab.cu,
# carried as build-lab8/stencil-session8-lab: the warp rows' frame as frame-row warps and side
# blocks, one thread per interior row and side), then Nsight Compute metrics (DRAM bytes, L2 hit
# rate, active warps) of the copy kernel, the walks alone and the float frame variants, each the
# second of three launches of the laboratory's profile mode. Results in $OUT/lab.
set -u
OUT=${OUT:-/tmp/stencil-session8-call3}
mkdir -p "$OUT/lab"
SECONDS=0
export CUDA_MODULE_LOADING=EAGER
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.max.memory,driver_version \
  --format=csv > "$OUT/lab/lab.txt" 2>&1
grep -A3 -E "Compiling entry function .*warpRowKernelI[fd]Li8ELi12E" build-lab8/ptxas.txt |
  grep -E "Compiling|Used|spill" | sed -E 's/.*(warpRowKernel)(I[A-Za-z0-9_]+)EEv.*/\1\2/' >> "$OUT/lab/lab.txt"
timeout 150 build-lab8/stencil-session8-lab 8 >> "$OUT/lab/lab.txt" 2>&1
echo "[${SECONDS}s] lab rc=$?" | tee "$OUT/lab/steps.txt"
grep -E "FAIL" "$OUT/lab/lab.txt" | head -20
sed -n '/rotating order/,$p' "$OUT/lab/lab.txt"
METRICS=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__grid_size,smsp__inst_executed.sum
for name in "copy: bench kernel, 64 MiB" "walks only (interior)" "frame blocks spread (call 2" \
  "frame-row warps and side blocks spread" "frame-row warps first (session 7"; do
  echo "=== $name" >> "$OUT/lab/ncu.txt"
  timeout 60 /usr/local/cuda/bin/ncu --metrics $METRICS --kernel-name regex:"warpRowKernel|copyKernel" \
    --launch-skip 1 --launch-count 1 build-lab8/stencil-session8-lab 0 "$name" >> "$OUT/lab/ncu.txt" 2>&1
  echo "[${SECONDS}s] ncu rc=$?" >> "$OUT/lab/ncu.txt"
done
grep -E "===|profiling|gpu__time|dram__bytes|hit_rate|warps_active|registers|grid_size|inst_exec|rc=" "$OUT/lab/ncu.txt"
echo "[${SECONDS}s] done" | tee -a "$OUT/lab/steps.txt"
