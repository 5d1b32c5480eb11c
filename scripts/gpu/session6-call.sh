#!/usr/bin/env bash
# Session 6: one device call for several cores. Runs each named script (scripts/gpu/NAME.sh) in
# turn, each with its own wall limit and its own output folder, and brings back per script a
# summary (NAME-summary.txt) and every file it wrote (NAME.tgz): the device returns at most 8
# files.
#   OUT=... bash scripts/gpu/session6-call.sh NAME:SECONDS [NAME:SECONDS...]
set -u
export CUDA_MODULE_LOADING=EAGER
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
SECONDS=0
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,driver_version --format=csv,noheader \
  > "$OUT/machine.txt" 2>&1
echo "commit $(git rev-parse --short HEAD 2>/dev/null) ($(git status --short 2>/dev/null | wc -l) changed files)" \
  >> "$OUT/machine.txt"
cat "$OUT/machine.txt"
for spec in "$@"; do
  name=${spec%%:*}
  limit=${spec##*:}
  dir=/tmp/session6/$name
  rm -rf "$dir" && mkdir -p "$dir"
  echo "[${SECONDS}s] $name (limit ${limit}s)"
  OUT=$dir timeout "$limit" bash "scripts/gpu/$name.sh" > "$dir/stdout.txt" 2>&1
  rc=$?
  echo "[${SECONDS}s] $name rc=$rc"
  tail -c 6000 "$dir/stdout.txt"
  if [ -f "$dir/summary.txt" ]; then cp "$dir/summary.txt" "$OUT/$name-summary.txt"; fi
  tar czf "$OUT/$name.tgz" -C /tmp/session6 "$name"
done
echo "[${SECONDS}s] all done"
