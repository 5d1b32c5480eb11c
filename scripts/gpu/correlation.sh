#!/usr/bin/env bash
# CorrelationCore (cross-correlation of image windows) on the GPU machine, from any folder:
#   usage: [OUT=DIR] scripts/gpu/correlation.sh [build] [tests] [sanitize] [bench]
# Steps (default: all four, in this order): build CorrelationCore alone with CUDA for sm_90 (FFTW
# when installed); run its CTest suite (the CUDA cases run here); compute-sanitizer memcheck on
# small cases of every kernel family and racecheck on the kernels that share memory between
# warps; correlation-bench over its grid of cases (a table and JSON). Results in $OUT:
# summary.txt, machine.txt, bench.txt, bench.json and one log per step.
CORE=CorrelationCore
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
STEPS=${*:-build tests sanitize bench}

machine
for step in $STEPS; do
  case $step in
  build) build -DCORRELATION_ENABLE_CUDA=ON ;;
  tests) tests ;;
  sanitize)
    sanitize memcheck correlation_test_reference \
      'CUDA/ReferenceLarger.*:CUDA/Reference.*/cuda_ws_s2r4_tri:CUDA/Reference.*/cuda_split_p4_w1:SplitTiled.*'
    sanitize racecheck correlation_test_reference \
      'CUDA/ReferenceLarger.*/cuda_tiled*:CUDA/ReferenceLarger.*/cuda_split*'
    ;;
  bench)
    "$BUILD/bin/correlation-bench" --json "$OUT/bench.json" > "$OUT/bench.txt" 2> "$OUT/bench.err" \
      || FAILED+=(bench)
    say "bench: $(wc -l < "$OUT/bench.txt") lines in bench.txt"
    ;;
  *) echo "usage: [OUT=DIR] $0 [build] [tests] [sanitize] [bench]" >&2; exit 2 ;;
  esac
done
finish
