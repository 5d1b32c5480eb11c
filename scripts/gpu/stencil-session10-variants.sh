#!/usr/bin/env bash
# Session 10: times variants of the grouped staged laplap (scripts/gpu/stencil-session10-variants.cu,
# one binary per variant of StencilCore/src, built on the development machine and carried as
# build-carry10/var.tar.xz), in rotating order, twice; MODES="float double" times the float
# default (grouped) and the double default (async staged) of each. Results in $OUT.
set -u
export CUDA_MODULE_LOADING=EAGER
OUT=${OUT:-/tmp/session10-variants}
B=/tmp/variants10
mkdir -p "$OUT" "$B"
tar xJf build-carry10/var.tar.xz -C "$B"
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.memory,driver_version --format=csv,noheader > "$OUT/summary.txt" 2>&1
echo "| variant | median of 6 (us) | range | check |" >> "$OUT/summary.txt"
echo "|---|---|---|---|" >> "$OUT/summary.txt"
for round in 1 2; do
  for mode in ${MODES:-float}; do
    for v in $(ls "$B"/var | sort); do
      timeout 60 "$B/var/$v" "$v $mode (round $round)" $mode >> "$OUT/summary.txt" 2>&1 ||
        echo "| $v $mode | failed rc=$? |" >> "$OUT/summary.txt"
    done
  done
done
cat "$OUT/summary.txt"
