#!/usr/bin/env bash
# Session 5 device run for StencilCore: build alone with CUDA (sm_90 only; the build folder is
# inside the repository and ignored by git, so a second call on a warm machine rebuilds only what
# changed), every CTest case, the benchmark at 512x512x64 (float and double: copy bandwidth, image
# kernels incl. looping blocks, every strategy x table layout incl. the staged z-loop and its
# layers x slice sweep, five alternating repeats of the regular default, the z-loop and the staged
# z-loop; CPU on 16 threads), Nsight Compute on the staged column kernel and the regular float
# strips, then compute-sanitizer racecheck / memcheck on the multi-tile column tests. Results go to
# $OUT (at most 8 files come back: the tables, the profiles and a tarball of the logs).
set -u
export CUDA_MODULE_LOADING=EAGER
OUT=${OUT:-/tmp/stencil-session5} BUILD=${BUILD:-build-stencil5-gpu}
mkdir -p "$OUT"
SECONDS=0
source "$(dirname "$0")/stencil-common.sh"
configure_and_build
# Registers and spills of the staged kernels (4 neighbours) and of the default float strips
# (plain and looping).
grep -A2 -E "stagedLaplapKernelI[fd]NS0_[0-9]+(Plain|Compressed)ChasingI[fd]Li4EEELi|rowStripKernelIfLb1ELb0ELi4ELi2E" \
  "$OUT/build.log" | grep -E "Compiling|Used|spill" \
  | sed -E 's/.*(stagedLaplapKernel|rowStripKernel)(I[A-Za-z0-9_]+)EEEv.*/\1\2/' > "$OUT/ptxas-staged.txt"
head -24 "$OUT/ptxas-staged.txt"
run_tests
grep -E "\*\*\*Failed" "$OUT/ctest.log" | head
# GPU only: the CPU code of the existing strategies is unchanged since session 4 (its table).
run_bench 200 --gpu-only
grep -E "\| CUDA \| (regular|repeat)" "$OUT/bench.md" | grep HorizontalLaplap | cut -c1-150
grep -E "\| CUDA \| z-curve" "$OUT/bench.md" | grep -E "staged|z-loop \(tiled, 4" | cut -c1-150
if command -v ncu > /dev/null; then
  # Launch order with --repeats 1 --gpu-only: staged launches 1-4 are the row-major mesh, launch
  # 5 the z-curve mesh with the chasing compressed table (float, default variant); the first
  # row-strip launch is the float horizontal laplap with the default strips.
  profile staged stagedLaplap 4 70
  profile strips rowStrip 0 60
fi
# The staged laplap's two barriers per step on multi-tile meshes (every variant), and its
# shared-memory and global accesses (shuffled meshes have rings larger than the tile).
sanitize racecheck-staged ${RACECHECK_SECONDS:-60} --tool racecheck -- stencil_test_columns \
  '*MultiTileStagedDoubleQuad/CUDA'
sanitize memcheck-staged ${MEMCHECK_SECONDS:-45} --tool memcheck -- stencil_test_columns \
  '*MultiTileStaged*/CUDA'
stamp "done"
pack_results bench.md bench.json 'ncu-*.csv' steps.log ptxas-staged.txt
