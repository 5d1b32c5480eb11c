# shellcheck shell=bash
# Shared steps of the per-core GPU scripts in this folder (sparsegrid.sh, correlation.sh,
# stencil.sh, meshloop.sh); sourced by them, not run on its own. A core script sets CORE (the
# core's folder) before sourcing this file and then calls the steps it needs.
#
# Environment: OUT (where logs and results go; default gpu-out/<core> under the repository root),
# BUILD (the build folder; default build-gpu-<core>), JOBS (parallel build jobs; default nproc).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
OUT=${OUT:-$ROOT/gpu-out/$CORE}
BUILD=${BUILD:-$ROOT/build-gpu-$CORE}
JOBS=${JOBS:-$(nproc)}
mkdir -p "$OUT"
# Kernels load when the program starts, so the first timed call does not pay for it.
export CUDA_MODULE_LOADING=EAGER
FAILED=()
START=$(date +%s)

# say TEXT: one line on the terminal and in $OUT/summary.txt, with the seconds since the start.
say() { echo "[$(($(date +%s) - START)) s] $*" | tee -a "$OUT/summary.txt"; }

# machine: the GPU, driver, CPU and toolchain into $OUT/machine.txt.
machine() {
  {
    date -u '+%Y-%m-%d %H:%M UTC'
    nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.max.memory,driver_version \
      --format=csv,noheader 2> /dev/null || echo "no GPU: nvidia-smi failed"
    echo "$(nproc) CPU cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
    nvcc --version | tail -1 || true
    cmake --version | head -1
  } > "$OUT/machine.txt" 2>&1
  say "machine: $(sed -n 2p "$OUT/machine.txt")"
}

# build [CMAKE-ARGS...]: configure $CORE alone with CUDA for sm_90 (H100/H200), then build it.
build() {
  local gen=()
  command -v ninja > /dev/null && gen=(-G Ninja)
  if ! cmake -S "$CORE" -B "$BUILD" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DSPARSEGRID_ENABLE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 "$@" > "$OUT/configure.log" 2>&1; then
    say "configure FAILED (configure.log)"
    tail -30 "$OUT/configure.log"
    exit 1
  fi
  if ! cmake --build "$BUILD" -j "$JOBS" > "$OUT/build.log" 2>&1; then
    say "build FAILED (build.log)"
    grep -E "error" -A3 "$OUT/build.log" | head -40
    exit 1
  fi
  say "built $CORE in $BUILD"
}

# tests: the core's whole CTest suite (its CUDA cases run on this machine).
tests() {
  local rc=0
  (cd "$BUILD" && ctest -j 8 --timeout 300 --output-on-failure \
    --output-junit "$OUT/ctest-junit.xml") > "$OUT/ctest.log" 2>&1 || rc=$?
  say "ctest rc=$rc: $(grep -E 'tests passed|tests failed' "$OUT/ctest.log" | tail -1)"
  say "skipped: $(grep -c '(Skipped)' "$OUT/ctest.log" || true)"
  grep -E "\(Failed\)|\(SEGFAULT\)|\(Timeout\)" "$OUT/ctest.log" | head -20 | tee -a "$OUT/summary.txt" || true
  [ "$rc" = 0 ] || FAILED+=(ctest)
}

# sanitize TOOL PROGRAM GTEST-FILTER: compute-sanitizer (memcheck, racecheck, synccheck) on the
# named test program's cases; a filter that matches no case counts as a failure.
sanitize() {
  local tool=$1 program=$2 filter=$3 rc=0 san log
  san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  log="$OUT/$tool-$program.log"
  # No leak check: the codec and the probe keep their device workspaces for the life of the
  # process (reused by every call), which a leak check reports as leaked.
  timeout 300 "$san" --tool "$tool" --error-exitcode 9 \
    "$BUILD/bin/$program" --gtest_filter="$filter" > "$log" 2>&1 || rc=$?
  if grep -q -E '^\[  PASSED  \] 0 tests' "$log"; then
    say "$tool $program: the filter matched no test"
    FAILED+=("$tool-$program")
    return
  fi
  say "$tool $program rc=$rc: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$log" | tail -1)"
  [ "$rc" = 0 ] || FAILED+=("$tool-$program")
}

# finish: the list of failed steps; the exit status is 1 when one failed.
finish() {
  if [ ${#FAILED[@]} -eq 0 ]; then
    say "$CORE: every step passed; results in $OUT"
  else
    say "$CORE: FAILED: ${FAILED[*]}; logs in $OUT"
    exit 1
  fi
}
