#!/usr/bin/env bash
# Session 8, stencil call 8: stencil-bench alone (carried as build-carry8b/bench.tar.xz: the
# benchmark with the boundary placement variants for every operator), three runs of the GPU-only
# image sweep at 512x512x64 (medians of 30), to compare the strips' boundary first, spread and
# last for the 3-D laplap and the Laplacians in the same run. Results in $OUT.
set -u
export CUDA_MODULE_LOADING=EAGER
OUT=${OUT:-/tmp/stencil-session8-call8}
mkdir -p "$OUT" build-stencil8-gpu
tar xJf build-carry8b/bench.tar.xz -C build-stencil8-gpu
for run in 1 2 3; do
  timeout 60 build-stencil8-gpu/bin/stencil-bench --size 512x512x64 --repeats 30 --gpu-only \
    --image-only > "$OUT/bench$run.md" 2> "$OUT/bench$run.err"
  echo "run $run rc=$?"
  head -1 "$OUT/bench$run.md" | cut -c1-200
  grep -E "\| CUDA \| regular(-variant)? \| (Laplap|Laplacian|HorizontalLaplacian|HorizontalLaplap) \|" "$OUT/bench$run.md" |
    grep -E "default|frame (first|spread|last)\) \|" | grep -v "warp rows" | grep -E "4 x 32 threads per block(, frame (first|spread|last))?\)? \|" | cut -c1-190
done
