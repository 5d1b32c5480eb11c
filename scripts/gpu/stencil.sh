#!/usr/bin/env bash
# StencilCore (Laplacian and bilaplacian on images and column meshes) on the GPU machine:
#   usage: [OUT=DIR] scripts/gpu/stencil.sh [build] [tests] [sanitize] [bench]
# Steps (default: all four, in this order): build StencilCore alone with CUDA for sm_90; run its
# CTest suite (the CUDA cases run here); compute-sanitizer memcheck on small CUDA cases of the
# image and column kernels and racecheck on the tiled z-loop kernel (shared-memory layers);
# stencil-bench at 512x512x64 (every GPU kernel and table layout, float and double, the CPU on
# every core). Results in $OUT: summary.txt, machine.txt, bench.md, bench.json and one log per step.
CORE=StencilCore
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
STEPS=${*:-build tests sanitize bench}

machine
for step in $STEPS; do
  case $step in
  build) build ;;
  tests) tests ;;
  sanitize)
    sanitize memcheck stencil_test_image '*CUDA*'
    sanitize memcheck stencil_test_columns \
      '*EveryStrategyAndTableDoubleHexagon/CUDA:*QuadMeshEqualsImagePath/CUDA:*MultiTileZLoopsFloatTriangle/CUDA'
    sanitize racecheck stencil_test_columns '*MultiTileZLoopsDoubleQuad/CUDA'
    ;;
  bench)
    "$BUILD/bin/stencil-bench" --size 512x512x64 --stability 8 --cpu-repeats 3 --threads "$(nproc)" \
      --json "$OUT/bench.json" > "$OUT/bench.md" 2> "$OUT/bench.err" || FAILED+=(bench)
    say "bench: $(head -1 "$OUT/bench.md")"
    grep -E "\| CUDA \| regular" "$OUT/bench.md" | tee -a "$OUT/summary.txt" || true
    ;;
  *) echo "usage: [OUT=DIR] $0 [build] [tests] [sanitize] [bench]" >&2; exit 2 ;;
  esac
done
finish
