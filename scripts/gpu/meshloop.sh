#!/usr/bin/env bash
# MeshLoopCore (indirect loops over unstructured meshes) on the GPU machine, from any folder:
#   usage: [OUT=DIR] scripts/gpu/meshloop.sh [build] [tests] [sanitize] [bench]
# Steps (default: all four, in this order): build MeshLoopCore alone with CUDA for sm_90 (METIS
# when installed); run its CTest suite (the CUDA cases run here); compute-sanitizer memcheck on
# small CUDA cases of every strategy; meshloop-bench on 10^6 generated hexahedra (every backend)
# and 10^7 (the CUDA backend and the VTK-like CPU gather), cells -> points and the edge loop.
# Results in $OUT: summary.txt, machine.txt, bench-1e6.txt, bench-1e7.txt, bench.jsonl (tables:
# MeshLoopCore/bench/table.py bench.jsonl) and one log per step.
CORE=MeshLoopCore
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
STEPS=${*:-build tests sanitize bench}

machine
for step in $STEPS; do
  case $step in
  build) build -DMESHLOOP_ENABLE_CUDA=ON ;;
  tests) tests ;;
  sanitize)
    sanitize memcheck meshloop_test_loops \
      '*ScatterDouble/CUDA_*_AoS_None:*EdgeFluxDouble/CUDA_*_SoA_GPS:*AverageFloat/CUDA_Hier*'
    ;;
  bench)
    : > "$OUT/bench.jsonl"
    "$BUILD/bin/meshloop-bench" --cells 1000000 --components 4 --reps 5 --threads "$(nproc)" \
      --json "$OUT/bench.jsonl" > "$OUT/bench-1e6.txt" 2>&1 || FAILED+=(bench-1e6)
    "$BUILD/bin/meshloop-bench" --cells 10000000 --components 4 --reps 3 --threads "$(nproc)" \
      --backends GATHER,CUDA --json "$OUT/bench.jsonl" > "$OUT/bench-1e7.txt" 2>&1 || FAILED+=(bench-1e7)
    python3 MeshLoopCore/bench/table.py "$OUT/bench.jsonl" > "$OUT/bench.md" || true
    say "bench: $(wc -l < "$OUT/bench.jsonl") results, tables in bench.md"
    ;;
  *) echo "usage: [OUT=DIR] $0 [build] [tests] [sanitize] [bench]" >&2; exit 2 ;;
  esac
done
finish
