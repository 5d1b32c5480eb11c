#!/usr/bin/env bash
# Session 6, row tiles: StencilCore built alone with CUDA (sm_90), every CTest case, then the
# image benchmark at 512x512x64 (GPU only, no column meshes): copy bandwidth, every image kernel
# variant incl. the row tiles (threads per block x rows per block, 2-D operators), and eight
# repeats rotating the default strips, the streaming-store strips and the row tiles (float and
# double, each a median of 30 kernel runs, the one going first changing every repeat). Prints the
# ptxas registers/spills of the row-tile kernels. Results go to $OUT (summary.txt first).
set -u
export CUDA_MODULE_LOADING=EAGER
OUT=${OUT:-/tmp/stencil-session6} BUILD=${BUILD:-build-stencil6-gpu}
mkdir -p "$OUT"
SECONDS=0
source "$(dirname "$0")/stencil-common.sh"
# In a subshell: configure_and_build exits on failure; the rc and the log's errors still come back.
(configure_and_build)
rc=$?
echo "build rc=$rc" | tee -a "$OUT/steps.log"
if [ $rc -ne 0 ]; then
  { cat "$OUT/steps.log"; grep -E "error" -A5 "$OUT/build.log" | head -80; } > "$OUT/summary.txt"
  pack_results summary.txt steps.log build.log
  exit 1
fi
# Registers and spills of the row tiles (float/double x Laplacian/laplap) and of the default
# float horizontal-laplap strips beside them.
grep -A3 -E "Compiling entry function .*(rowTileKernelI[fd]Lb[01]E|rowStripKernelIfLb1ELb0ELi4ELi2ELb0ELb0ELb0E)" \
  "$OUT/build.log" | grep -E "Compiling|Used|spill" \
  | sed -E 's/.*(rowTileKernel|rowStripKernel)(I[A-Za-z0-9_]+)EEv.*/\1\2/' > "$OUT/ptxas-tiles.txt"
cat "$OUT/ptxas-tiles.txt"
run_tests
grep -E "\*\*\*Failed|FAILED" "$OUT/ctest.log" | head -20
run_bench 90 --gpu-only --image-only --stability 8
grep -E "repeat" "$OUT/bench.err" > "$OUT/repeats.txt"
cat "$OUT/repeats.txt"
# Medians over the repeats: default strips, streaming strips, row tiles (us).
medians() {
  for precision in float double; do
    for field in 5 9 13; do
      grep "^$precision repeat" "$OUT/repeats.txt" | awk -v f=$field '{print $f}' | sort -n \
        | awk -v p=$precision -v f=$field '{v[NR]=$1} END {if (NR) printf "%s field %d median %.1f us (%d repeats)\n", p, f, (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2), NR}'
    done
  done | sed -e 's/field 5/default strips/' -e 's/field 9/streaming strips/' -e 's/field 13/row tiles/'
}
medians > "$OUT/medians.txt"
cat "$OUT/medians.txt"
stamp "done"
{
  cat "$OUT/nvidia-smi.csv"
  cat "$OUT/steps.log"
  echo "--- ptxas (row tiles, default strips)"
  cat "$OUT/ptxas-tiles.txt"
  echo "--- ctest"
  tail -4 "$OUT/ctest.log"
  grep -E "\*\*\*Failed|FAILED" "$OUT/ctest.log" | head -20
  echo "--- bench"
  head -1 "$OUT/bench.md"
  cat "$OUT/medians.txt"
  grep -E "\| CUDA \| regular(-variant)? \| Horizontal" "$OUT/bench.md" | grep -E "default|tiles" | cut -c1-200
} > "$OUT/summary.txt" 2>&1
pack_results summary.txt bench.md bench.json steps.log ptxas-tiles.txt ctest.log repeats.txt
