#!/bin/sh
# Builds and runs the libFuzzer target of the .sgrid reader (fuzz/sgrid_fuzz.cxx) with clang,
# AddressSanitizer and UndefinedBehaviorSanitizer. Kept out of the normal CMake build: it needs
# clang's libFuzzer runtime (Debian: clang, which pulls in libclang-rt-14-dev).
#
#   fuzz/run.sh [SECONDS]     build, then fuzz for SECONDS (default 300) starting from
#                             fuzz/corpus; new inputs go to $BUILD/corpus, crashes to
#                             $BUILD/artifacts
#   fuzz/run.sh --seeds       rebuild the valid seed files fuzz/corpus/valid-*.sgrid
#   fuzz/run.sh --merge       add to fuzz/corpus only the inputs of $BUILD/corpus that reach new
#                             coverage (the regression corpus CTest runs)
#
# Environment: BUILD (default: build-fuzz at the repository root), JOBS (default 2),
# CXX (default clang++).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build=${BUILD:-$root/build-fuzz}
jobs=${JOBS:-2}
cxx=${CXX:-clang++}
hdf5_inc=/usr/include/hdf5/serial
hdf5_lib=/usr/lib/x86_64-linux-gnu/hdf5/serial

if ! command -v "$cxx" > /dev/null 2>&1; then
  echo "fuzz/run.sh: $cxx not found (Debian: apt-get install clang)" >&2
  exit 2
fi
mkdir -p "$build/obj" "$build/corpus" "$build/artifacts"

common="-std=c++17 -g -O1 -fno-omit-frame-pointer -I$root/SparseGridCore/include -I$root/Readers -I$hdf5_inc"
sanitize="-fsanitize=address,undefined -fno-sanitize-recover=undefined"

# Objects: the core and the file layer instrumented for coverage (fuzzer-no-link), built in
# parallel; only what changed is rebuilt.
sources="$root/Readers/SparseGridFile.cxx"
for f in "$root"/SparseGridCore/src/*.cxx; do
  sources="$sources $f"
done
objects=""
pids=""
n=0
for src in $sources; do
  obj="$build/obj/$(basename "$src" .cxx).o"
  objects="$objects $obj"
  if [ ! -f "$obj" ] || [ "$src" -nt "$obj" ] || [ "$root/SparseGridCore/include/sparsegrid/sparsegrid.h" -nt "$obj" ] || [ "$root/Readers/SparseGridFile.h" -nt "$obj" ]; then
    # shellcheck disable=SC2086
    $cxx $common $sanitize -fsanitize=fuzzer-no-link -I"$root/SparseGridCore/src" -c "$src" -o "$obj" &
    pids="$pids $!"
    n=$((n + 1))
    if [ "$n" -ge "$jobs" ]; then
      for p in $pids; do wait "$p"; done
      pids=""
      n=0
    fi
  fi
done
for p in $pids; do wait "$p"; done

# shellcheck disable=SC2086
$cxx $common $sanitize -fsanitize=fuzzer "$here/sgrid_fuzz.cxx" $objects \
  -L"$hdf5_lib" -Wl,-rpath,"$hdf5_lib" -lhdf5 -lpthread -o "$build/sgrid_fuzz"

case "${1:-}" in
  --seeds)
    # shellcheck disable=SC2086
    $cxx $common $sanitize "$here/make_seeds.cxx" $objects -L"$hdf5_lib" -Wl,-rpath,"$hdf5_lib" \
      -lhdf5 -lpthread -o "$build/make_seeds"
    "$build/make_seeds" "$here/corpus"
    exit 0
    ;;
  --merge)
    LSAN_OPTIONS="suppressions=$here/lsan.supp:print_suppressions=0" "$build/sgrid_fuzz" -merge=1 -timeout=20 -rss_limit_mb=2048 "$here/corpus" "$build/corpus"
    exit 0
    ;;
esac

# HDF5's own leaks on corrupted files are suppressed (see lsan.supp); ours are not.
export LSAN_OPTIONS="suppressions=$here/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"

seconds=${1:-300}
echo "fuzzing for $seconds s; log: $build/fuzz.log"
# -timeout: one input may take at most 20 s (a hang in HDF5 would be reported);
# -rss_limit_mb: the reader's own limit for one step is 64 MiB (FuzzMemoryLimit).
"$build/sgrid_fuzz" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 -max_len=32768 \
  -print_final_stats=1 -artifact_prefix="$build/artifacts/" \
  "$build/corpus" "$here/corpus" 2>&1 | tee "$build/fuzz.log" | grep -E "^#|DONE|ERROR|SUMMARY|stat::" | tail -40
