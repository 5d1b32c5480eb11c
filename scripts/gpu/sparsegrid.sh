#!/usr/bin/env bash
# SparseGridCore (sparse grids and the error-bounded codec) on the GPU machine, from any folder:
#   usage: [OUT=DIR] scripts/gpu/sparsegrid.sh [build] [tests] [sanitize] [bench]
# Steps (default: all four, in this order): build SparseGridCore alone with CUDA for sm_90; run
# its CTest suite (the CUDA cases run here); compute-sanitizer memcheck and racecheck on small
# CUDA cases of the grid operations and of the codec; the benchmarks (device bandwidth, the
# sparse-grid operations, the codec on a 512^3 float field). Results in $OUT: summary.txt,
# machine.txt, bandwidth.json, bench.jsonl, codec-{smooth,noisy}.{txt,json} and one log per step.
CORE=SparseGridCore
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
STEPS=${*:-build tests sanitize bench}

# bench_op LABEL ARGS...: one sparsegrid-bench run, its JSON line (with the label) into bench.jsonl.
bench_op() {
  local label=$1 line
  shift
  line=$("$BUILD/bin/sparsegrid-bench" --json --backend cuda "$@" 2>> "$OUT/bench.err" | tail -1) || line=null
  echo "{\"label\":\"$label\",\"args\":\"$*\",\"result\":${line:-null}}" >> "$OUT/bench.jsonl"
  say "bench $label: ${line:0:160}"
}

machine
for step in $STEPS; do
  case $step in
  build) build ;;
  tests) tests ;;
  sanitize)
    sanitize memcheck sgcore_test_errors '*CUDA*'
    sanitize memcheck sgcore_test_prepared '*Reconstruct*/CUDA:*BatchesUploadOnce/CUDA'
    sanitize racecheck sgcore_test_options '*CUDA*:-*AllOptimizationCombinations*'
    sanitize memcheck sgcore_test_codec_gpu 'CodecGpu.StridedAndDamagedStreams:CodecGpu.SanitizerSizedFields'
    sanitize racecheck sgcore_test_codec_gpu 'CodecGpu.SanitizerSizedFields'
    ;;
  bench)
    nvcc -O3 -arch=sm_90 scripts/gpu/bandwidth.cu -o "$BUILD/bandwidth" && "$BUILD/bandwidth" > "$OUT/bandwidth.json"
    say "bandwidth: $(cat "$OUT/bandwidth.json")"
    : > "$OUT/bench.jsonl"
    bench_op hierarchize-3d-l14 --op hierarchize --dims 3 --level 14 --repeat 7
    bench_op evaluate-3d-l10-1e8 --op evaluate --dims 3 --level 10 --points 1e8 --repeat 3
    bench_op evaluate-5d-l8-1e7 --op evaluate --dims 5 --level 8 --points 1e7 --repeat 5
    bench_op evaluate-10d-l6-1e7 --op evaluate --dims 10 --level 6 --points 1e7 --repeat 5
    bench_op reconstruct-513 --op reconstruct --dims 3 --level 9 --boundary 1 --repeat 5
    # The codec's speed depends on the ratio: a smooth field (ratio ~300) and the same field
    # with noise of about 2e-3 of its range (ratio ~15, like real volumes at this bound).
    for case in smooth:0 noisy:0.003; do
      "$BUILD/bin/sparsegrid-codec-bench" --synthetic 512 --noise "${case#*:}" --rel 1e-3 \
        --backend cuda --threads "$(nproc)" --repeats 10 --no-zfp --json "$OUT/codec-${case%%:*}.json" \
        > "$OUT/codec-${case%%:*}.txt" 2>&1 || FAILED+=("codec-bench-${case%%:*}")
      say "codec 512^3 ${case%%:*}: $(grep -m1 -E 'GB/s' "$OUT/codec-${case%%:*}.txt" || echo 'no result')"
    done
    ;;
  *) echo "usage: [OUT=DIR] $0 [build] [tests] [sanitize] [bench]" >&2; exit 2 ;;
  esac
done
finish
