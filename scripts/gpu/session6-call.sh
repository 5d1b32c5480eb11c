#!/usr/bin/env bash
# Session 6: one device call for several cores. Runs each named script (scripts/gpu/NAME.sh) in
# turn, each with its own wall limit and its own output folder, and brings back per script a
# summary (NAME-summary.txt) and every file it wrote (NAME.tgz): the device returns at most 8
# files.
#   OUT=... [PREBUILD="stencil codec corr"] bash scripts/gpu/session6-call.sh NAME:SECONDS ...
# PREBUILD configures and builds the named cores at the same time first, with the same arguments
# and build folders as their session-6 scripts, so that those scripts find them up to date: each
# build's wall time is set by one or two large CUDA files, so three together take little more
# than the longest alone. Their logs (ptxas lines included: a script that greps its own build log
# for them finds nothing after a prebuild) come back in prebuild.tgz.
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
prebuild() {
  local ninja=(-G Ninja) root=$PWD
  case $1 in
    stencil) cmake -S StencilCore -B build-stencil6-gpu "${ninja[@]}" -DCMAKE_BUILD_TYPE=Release \
      -DSPARSEGRID_ENABLE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_CUDA_FLAGS="-Xptxas -v" &&
      cmake --build build-stencil6-gpu -j 16 ;;
    codec) cmake -S SparseGridCore -B "$root/build-codec6-gpu" "${ninja[@]}" \
      -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DSPARSEGRID_ENABLE_CUDA=ON &&
      cmake --build "$root/build-codec6-gpu" -j16 ;;
    corr) cmake -S CorrelationCore -B "$root/build-corr-gpu" "${ninja[@]}" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_CUDA_ARCHITECTURES=90 -DCORRELATION_ENABLE_CUDA=ON &&
      cmake --build "$root/build-corr-gpu" -j "$(nproc)" ;;
  esac
}
if [ -n "${PREBUILD:-}" ]; then
  mkdir -p /tmp/session6/prebuild
  for core in $PREBUILD; do
    (timeout 240 bash -c "$(declare -f prebuild); prebuild $core" \
      > "/tmp/session6/prebuild/$core.log" 2>&1; echo "[${SECONDS}s] prebuild $core rc=$?") &
  done
  wait
  tar czf "$OUT/prebuild.tgz" -C /tmp/session6 prebuild
fi
for spec in "$@"; do
  name=${spec%%:*}
  limit=${spec##*:}
  dir=/tmp/session6/$name
  rm -rf "$dir" && mkdir -p "$dir"
  echo "[${SECONDS}s] $name (limit ${limit}s)"
  # The output goes beside the folder, not into it: some scripts pack their folder at the end
  # and delete what they packed.
  OUT=$dir timeout "$limit" bash "scripts/gpu/$name.sh" > "$dir.stdout.txt" 2>&1
  rc=$?
  echo "[${SECONDS}s] $name rc=$rc"
  tail -c 6000 "$dir.stdout.txt"
  cp "$dir.stdout.txt" "$dir/stdout.txt"
  if [ -f "$dir/summary.txt" ]; then cp "$dir/summary.txt" "$OUT/$name-summary.txt"; fi
  tar czf "$OUT/$name.tgz" -C /tmp/session6 "$name"
done
echo "[${SECONDS}s] all done"
