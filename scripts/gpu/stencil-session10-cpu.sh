#!/usr/bin/env bash
# Session 10: the CPU column of issue 15's table on the GPU machine's 16 cores: stencil-bench
# --cpu-only (every strategy with the chasing compressed table, every table with the z-loop,
# z-curve numbering; the staged variants including the ring groups), binaries carried as
# build-carry10/bin.tar.xz. Results in $OUT.
set -u
OUT=${OUT:-/tmp/session10-cpu}
B=/tmp/stencil10cpu
mkdir -p "$OUT" "$B"
SECONDS=0
tar xJf build-carry10/bin.tar.xz -C "$B"
lscpu | grep -E "Model name|^CPU\(s\)|Thread|Socket" > "$OUT/summary.txt"
timeout 500 "$B/bin/stencil-bench" --size 512x512x64 --cpu-only --threads 16 --cpu-repeats 3 \
  --json "$OUT/bench-cpu.json" > "$OUT/bench-cpu.md" 2> "$OUT/bench-cpu.err"
echo "[${SECONDS}s] bench rc=$?" >> "$OUT/summary.txt"
grep -E "HorizontalLaplap" "$OUT/bench-cpu.md" | grep -E "\| CPU \| (regular|z-curve) \|" >> "$OUT/summary.txt"
cat "$OUT/summary.txt"
