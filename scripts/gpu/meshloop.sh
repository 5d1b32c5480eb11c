#!/bin/bash
# MeshLoopCore on the GPU machine, in one go: build alone with CUDA (no METIS there), all core
# tests (CUDA cases run), compute-sanitizer memcheck on small CUDA cases, then the benchmark on
# 10^6 (all backends) and 10^7 (CUDA + the VTK-like CPU gather) generated hexahedra (cells -> points) and their dual edges (Airfoil-like loop).
# Results go to $OUT. Run from the repository root: bash scripts/gpu/meshloop.sh
set -u
OUT=${OUT:-$PWD/out-meshloop}
mkdir -p "$OUT"
export CUDA_MODULE_LOADING=EAGER
BUILD=build-meshloop-gpu
{
  date -u
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv
  lscpu | grep -E "Model name|^CPU\(s\)|Thread"
  nproc
} > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"

t0=$(date +%s)
cmake -S MeshLoopCore -B $BUILD -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CUDA_ARCHITECTURES=90 > "$OUT/configure.log" 2>&1
if ! cmake --build $BUILD -j16 > "$OUT/build.log" 2>&1; then
  tail -40 "$OUT/build.log"
  exit 1
fi
grep -E "MeshLoopCore:" "$OUT/configure.log"
echo "build: $(( $(date +%s) - t0 )) s"

# MESHLOOP_ONLY=c2p: a second, shorter pass that re-measures Cell Data to Point Data only.
if [ "${MESHLOOP_ONLY:-}" = c2p ]; then
  for cells in 1000000 10000000; do
    timeout 70 $BUILD/bin/meshloop-bench --cells $cells --components 4 --reps 3 --threads 16 \
      --loops c2p --backends GATHER,CUDA --json "$OUT/bench-c2p.jsonl" > "$OUT/bench-c2p-$cells.txt" 2>&1
    cat "$OUT/bench-c2p-$cells.txt"
    echo "c2p $cells: $(( $(date +%s) - t0 )) s"
  done
  exit 0
fi

(cd $BUILD && timeout 120 ctest -j8 --output-on-failure > "$OUT/ctest.log" 2>&1)
grep -E "tests passed|tests failed|FAILED|Failed" "$OUT/ctest.log" | head -20
grep -c "Skipped" "$OUT/ctest.log" | sed 's/^/skipped: /'
echo "tests: $(( $(date +%s) - t0 )) s"

timeout 90 compute-sanitizer --tool memcheck --leak-check full \
  $BUILD/bin/meshloop_test_loops \
  --gtest_filter='*ScatterDouble/CUDA_*_AoS_None:*EdgeFluxDouble/CUDA_*_SoA_GPS:*AverageFloat/CUDA_Hier*' > "$OUT/memcheck.log" 2>&1
echo "memcheck rc=$?"
grep -E "ERROR SUMMARY|PASSED|FAILED" "$OUT/memcheck.log" | tail -3
echo "memcheck: $(( $(date +%s) - t0 )) s"

timeout 40 $BUILD/bin/meshloop-bench --cells 1000000 --components 4 --reps 5 --threads 16 \
  --json "$OUT/bench.jsonl" > "$OUT/bench-1e6.txt" 2>&1
cat "$OUT/bench-1e6.txt"
echo "bench 1e6: $(( $(date +%s) - t0 )) s"
timeout 110 $BUILD/bin/meshloop-bench --cells 10000000 --components 4 --reps 3 --threads 16 \
  --backends GATHER,CUDA \
  --json "$OUT/bench.jsonl" > "$OUT/bench-1e7.txt" 2>&1
echo "bench 1e7 rc=$?"
cat "$OUT/bench-1e7.txt"
echo "total: $(( $(date +%s) - t0 )) s"
