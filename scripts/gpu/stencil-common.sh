# Helpers of the StencilCore device scripts (sourced; OUT and BUILD set by the caller).

# stamp TEXT: a line with the seconds since the script started, into $OUT/steps.log.
stamp() { printf '[%4ds] %s\n' "$SECONDS" "$*" | tee -a "$OUT/steps.log"; }

# configure_and_build: the device's name and clocks, then StencilCore alone with CUDA for sm_90
# (ptxas register reports in build.log); exits on failure with the end of the log.
configure_and_build() {
  nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.max.memory,driver_version \
    --format=csv > "$OUT/nvidia-smi.csv" 2>&1
  which ncu nsys compute-sanitizer > "$OUT/tools.txt" 2>&1
  stamp "configure"
  cmake -S StencilCore -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DSPARSEGRID_ENABLE_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_CUDA_FLAGS="-Xptxas -v" > "$OUT/build.log" 2>&1 ||
    { tail -40 "$OUT/build.log"; exit 1; }
  stamp "build"
  cmake --build "$BUILD" -j 16 >> "$OUT/build.log" 2>&1 ||
    { grep -E "error" -A5 "$OUT/build.log" | head -60; exit 1; }
}

# sanitize NAME SECONDS TOOL-ARGS... -- BINARY GTEST-FILTER: one compute-sanitizer pass, logged.
sanitize() {
  local name=$1 seconds=$2
  shift 2
  local args=()
  while [ "$1" != "--" ]; do args+=("$1"); shift; done
  stamp "$name"
  timeout "$seconds" compute-sanitizer "${args[@]}" --error-exitcode 3 "$BUILD/bin/$2" \
    --gtest_filter="$3" > "$OUT/$name.log" 2>&1
  echo "$name rc=$?" | tee -a "$OUT/steps.log"
  tail -3 "$OUT/$name.log"
}

# pack_results KEEP...: few files come back from the device (8 at most): the named files stay,
# the others go into logs.tgz (written outside $OUT: tar fails on an archive inside the folder
# it reads).
pack_results() {
  local keep=() excludes=()
  for name in "$@"; do keep+=(! -name "$name"); excludes+=(--exclude="$name"); done
  (cd "$OUT" && tar czf /tmp/stencil-logs.tgz "${excludes[@]}" . && mv /tmp/stencil-logs.tgz logs.tgz &&
    find . -maxdepth 1 -type f ! -name logs.tgz "${keep[@]}" -delete)
}

# profile NAME KERNEL-REGEX SKIP SECONDS: Nsight Compute (the sections below) on launch SKIP + 1
# of the kernels matching the regex in one pass of the benchmark (512x512x64, one repeat, GPU
# only), into $OUT/ncu-NAME.csv.
profile() {
  local name=$1 regex=$2 skip=$3 seconds=$4
  local sections="--section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis --section SchedulerStats --section InstructionStats"
  stamp "ncu $name"
  timeout "$seconds" ncu --kernel-name "regex:$regex" --launch-skip "$skip" --launch-count 1 $sections \
    --csv --page details "$BUILD/bin/stencil-bench" --size 512x512x64 --repeats 1 --gpu-only \
    > "$OUT/ncu-$name.csv" 2> "$OUT/ncu-$name.err"
  echo "ncu $name rc=$?" | tee -a "$OUT/steps.log"
}

# run_tests: every CTest case of the stencil label (CUDA ones run here), into ctest.log.
run_tests() {
  stamp "tests"
  (cd "$BUILD" && timeout 150 ctest -L stencil --output-on-failure -j 4) > "$OUT/ctest.log" 2>&1
  tail -4 "$OUT/ctest.log"
}

# run_bench SECONDS ARGS...: stencil-bench at 512x512x64, medians of 30 kernel runs and five
# alternating stability repeats, into bench.md / bench.json.
run_bench() {
  local seconds=$1
  shift
  stamp "bench"
  timeout "$seconds" "$BUILD/bin/stencil-bench" --size 512x512x64 --repeats 30 --stability 5 "$@" \
    --json "$OUT/bench.json" > "$OUT/bench.md" 2> "$OUT/bench.err"
  echo "bench rc=$?" | tee -a "$OUT/steps.log"
  head -1 "$OUT/bench.md"
}
