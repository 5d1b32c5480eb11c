#!/usr/bin/env bash
# Session 5, streaming stores: StencilCore built alone with CUDA (sm_90), every CTest case, then
# the image benchmark at 512x512x64 (GPU only, no column meshes): copy bandwidth, every image
# kernel variant incl. the default strips with evict-first stores, and eight alternating repeats
# of the default strips and the streaming-store strips (float and double, each a median of 30
# kernel runs, the one taking the lead swapping every repeat). Results go to $OUT.
set -u
export CUDA_MODULE_LOADING=EAGER
OUT=${OUT:-/tmp/stencil-session5-stores} BUILD=${BUILD:-build-stencil5-gpu}
mkdir -p "$OUT"
SECONDS=0
source "$(dirname "$0")/stencil-common.sh"
configure_and_build
# Registers of the float horizontal-laplap strips, default and streaming (last template flag).
grep -A2 -E "rowStripKernelIfLb1ELb0ELi4ELi2E(Lb0ELb0ELb[01]E)?" "$OUT/build.log" \
  | grep -E "Compiling|Used|spill" \
  | sed -E 's/.*(rowStripKernel)(I[A-Za-z0-9_]+)EEv.*/\1\2/' > "$OUT/ptxas-strips.txt"
cat "$OUT/ptxas-strips.txt"
run_tests
grep -E "\*\*\*Failed" "$OUT/ctest.log" | head
run_bench 90 --gpu-only --image-only --stability 8
grep -E "repeat|Stream|streaming" "$OUT/bench.err" | head -20
grep -E "\| CUDA \| (regular|repeat)" "$OUT/bench.md" | grep HorizontalLaplap | grep -E "default|streaming" | cut -c1-160
stamp "done"
pack_results bench.md bench.json steps.log ptxas-strips.txt ctest.log
