#!/usr/bin/env bash
# One entry point for a fresh Debian 12 machine:
#   ./run.sh demo [FILE]   install what is missing, build, compress + reconstruct a volume
#   ./run.sh test          install what is missing, build, run the whole CTest suite
#   ./run.sh build         install what is missing and build only
#   ./run.sh bench [ARGS]  build, then run the CPU benchmark set (scripts/bench-cpu.sh)
# Every step is idempotent and quiet when there is nothing to do; logs go to build/logs/.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BUILD="${SPARSEGRID_BUILD_DIR:-$ROOT/build}"
LOGS="$BUILD/logs"
JOBS="${SPARSEGRID_JOBS:-$(nproc)}"

# What find_package(ParaView) on Debian really needs (../shared/notes/paraview-on-debian.md),
# plus the tools the tests use.
PACKAGES=(
  build-essential cmake ninja-build pkg-config libgtest-dev
  paraview paraview-dev python3-paraview python3-numpy python3-matplotlib
  qtbase5-dev qttools5-dev qttools5-dev-tools libqt5svg5-dev qtxmlpatterns5-dev-tools
  libqt5x11extras5-dev libqt5opengl5-dev libhdf5-dev libhdf5-mpi-dev hdf5-tools python3-h5py clang
  libutfcpp-dev libeigen3-dev
  libexpat1-dev libfreetype-dev libjpeg-dev libpng-dev libtiff-dev liblz4-dev liblzma-dev
  libnetcdf-dev libnetcdf-cxx-legacy-dev libpugixml-dev libjsoncpp-dev libgl2ps-dev libglew-dev
  libprotobuf-dev protobuf-compiler libcgns-dev libogg-dev libtheora-dev libsqlite3-dev
  libproj-dev libdouble-conversion-dev libfmt-dev libxml2-dev zlib1g-dev libavcodec-dev
  libavformat-dev libavutil-dev libswscale-dev libgl-dev libglu1-mesa-dev libtbb-dev libx11-dev
  libxt-dev mpi-default-dev libpython3-dev libgdal-dev nlohmann-json3-dev libcli11-dev
  xvfb xauth openmpi-bin
  # a window manager for the GUI menu tests and GNU time for the memory-estimate test
  openbox time
  # codecs and the GPU filter families: zstd (lossless stage), ZFP (comparison), FFTW (CPU FFT
  # of Image Correlation), METIS (partition reordering of the mesh loops)
  libzstd-dev zfp libzfp-dev libfftw3-dev libmetis-dev
)

say() { printf '[run.sh] %s\n' "$*"; }

install_packages() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$p")
    fi
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  mkdir -p "$LOGS"
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  say "installing ${#missing[@]} Debian packages (log: $LOGS/apt.log): ${missing[*]}"
  if ! { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
    --no-install-recommends "${missing[@]}"; } >"$LOGS/apt.log" 2>&1; then
    tail -n 30 "$LOGS/apt.log"
    say "package installation failed"
    exit 1
  fi
}

build() {
  mkdir -p "$LOGS"
  if [ ! -f "$BUILD/CMakeCache.txt" ]; then
    say "configuring into $BUILD (log: $LOGS/configure.log)"
    # Without a GPU here, CUDA code is compiled for one architecture only (it is compiled to
    # prove it builds; its tests skip): every architecture from sm_75 up (the CMake default)
    # would multiply the CUDA build time by five on a 2-core machine.
    local cuda_args=()
    if ! command -v nvidia-smi >/dev/null 2>&1; then
      cuda_args=(-DCMAKE_CUDA_ARCHITECTURES=90)
    fi
    if ! cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DSPARSEGRID_BUILD_PLUGIN=ON "${cuda_args[@]}" ${SPARSEGRID_CMAKE_ARGS:-} \
      >"$LOGS/configure.log" 2>&1; then
      tail -n 40 "$LOGS/configure.log"
      say "configure failed"
      exit 1
    fi
  fi
  if ! cmake --build "$BUILD" -j "$JOBS" >"$LOGS/build.log" 2>&1; then
    grep -E "error|Error" -A3 "$LOGS/build.log" | head -n 60 || tail -n 60 "$LOGS/build.log"
    say "build failed (full log: $LOGS/build.log)"
    exit 1
  fi
  if grep -q "no work to do" "$LOGS/build.log"; then
    say "build is up to date"
  else
    say "built (log: $LOGS/build.log)"
  fi
}

plugin_path() {
  local f
  f=$(find "$BUILD/lib" -name SparseGrid.so 2>/dev/null | head -n 1)
  if [ -z "$f" ]; then
    say "the plugin was not built; see $LOGS/configure.log"
    exit 1
  fi
  echo "$f"
}

cmd="${1:-}"
[ $# -gt 0 ] && shift
case "$cmd" in
  demo)
    install_packages
    build
    mkdir -p "$ROOT/out"
    plugin="$(plugin_path)"
    # The X set-up of `test` (Testing/with-display.sh): the display that is set, or one Xvfb
    # started with -noreset (see below). The demo checks that it can connect before it renders
    # and says so in one line when it cannot; nothing is retried.
    if [ -z "${DISPLAY:-}" ] && ! command -v xvfb-run >/dev/null 2>&1; then
      say "no X display and no xvfb-run: cannot render (apt-get install xvfb xauth)"
      exit 1
    fi
    exec "$ROOT/Testing/with-display.sh" -a -s "-screen 0 1920x1080x24 -noreset" \
      pvpython --force-offscreen-rendering "$ROOT/scripts/demo.py" --plugin "$plugin" \
      --out "$ROOT/out" "$@"
    ;;
  test)
    install_packages
    build
    # Rendering tests need X; ctest's own summary line ends the output, and its exit status is
    # ours: CI fails when any test fails. -noreset: by default Xvfb resets when its last client
    # leaves, and a test connecting during the reset failed with "bad X server connection".
    cd "$BUILD"
    exec xvfb-run -a -s "-screen 0 1920x1080x24 -noreset" ctest --output-on-failure -j "$JOBS" "$@"
    ;;
  build)
    install_packages
    build
    ;;
  bench)
    install_packages
    build
    exec "$ROOT/scripts/bench-cpu.sh" "$BUILD/bin/sparsegrid-bench" "$@"
    ;;
  *)
    echo "usage: ./run.sh demo [FILE] | test [ctest args] | build | bench" >&2
    exit 2
    ;;
esac
