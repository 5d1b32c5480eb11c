#!/usr/bin/env bash
# ZFP's CUDA fixed-rate mode beside the error-bounded codec on the GPU machine (issue 13), in one
# device call from the repository root:
#   OUT=/some/dir [BUDGET=240] [RATES=1,2,4,8,12,16] scripts/gpu/zfp-session5.sh
# Needs zfp's release source in build-zfp-src/ (git-ignored, never committed; carried to the device
# machine, which has no network):
#   git --git-dir=<mirror of LLNL/zfp> archive 1.0.1 | tar -x -C build-zfp-src
# Builds zfp with -DZFP_WITH_CUDA=ON for sm_90 (zfp's own CMake, which uses the old FindCUDA
# module; if that fails, once more with the policy flags CMake 4 needs for it, then the same
# sources compiled directly with nvcc and gcc, and the summary says which one built), and in
# parallel SparseGridCore alone with CUDA (only sparsegrid-codec-bench). Then, with eager module
# loading, median of 10 after a warm-up, 512^3 float, smooth field and noisy field (+-0.003):
# scripts/gpu/zfp-bench.cpp (zfp fixed rate, device pointers) and sparsegrid-codec-bench --rel 1e-3
# --backend cuda --no-zfp. Leaves in $OUT: summary.txt (all tables), zfp-*.json, codec-*.json and
# results.tgz (zfp-*.txt, codec-*.txt with the codec's per-kernel profiles, logs/).
# Session 8: PHASE=build builds zfp only and stops (to overlap it with other work of the call);
# a later run reuses a zfp build and a codec build ($CODEC_BUILD) that are already there.
set -u
ROOT=$(pwd)
OUT=${OUT:-$ROOT/gpu-zfp5-out}
BUDGET=${BUDGET:-240}
RATES=${RATES:-1,2,4,8,12,16}
START=$(date +%s)
mkdir -p "$OUT/logs"
left() { echo $((BUDGET - ($(date +%s) - START))); }
say() { echo "[$(($(date +%s) - START))s] $*" | tee -a "$OUT/summary.txt"; }

say "machine: $(nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader 2>&1 | head -1); $(nproc) cores; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
say "commit: $(git rev-parse --short HEAD 2> /dev/null) (+ working tree); $(date -u '+%F %T UTC')"
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
CUDA_HOME=$(dirname "$(dirname "$NVCC")")
say "nvcc: $("$NVCC" --version | tail -1); $(cmake --version | head -1); $(g++ --version | head -1)"
SRC=$ROOT/build-zfp-src
[ -f "$SRC/include/zfp.h" ] || { say "no zfp source in $SRC (carry build-zfp-src)"; exit 1; }
say "zfp source: $(grep -m1 -E '^## ' "$SRC/CHANGELOG.md" 2> /dev/null)"
GEN=""
command -v ninja > /dev/null && GEN="-G Ninja"

# zfp: its CMake first; the way that built is recorded.
ZB=$ROOT/build-zfp-gpu
zfp_cmake() { # extra cmake flags...
  rm -rf "$ZB"
  cmake -S "$SRC" -B "$ZB" $GEN -DCMAKE_BUILD_TYPE=Release -DZFP_WITH_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DCUDA_NVCC_FLAGS="-gencode=arch=compute_90,code=sm_90" \
    -DCUDA_TOOLKIT_ROOT_DIR="$CUDA_HOME" -DBUILD_TESTING=OFF -DBUILD_UTILITIES=OFF \
    -DBUILD_EXAMPLES=OFF "$@" > "$OUT/logs/zfp-configure.log" 2>&1 &&
    cmake --build "$ZB" -j6 > "$OUT/logs/zfp-build.log" 2>&1 && ls "$ZB"/lib*/libzfp.so > /dev/null 2>&1
}
zfp_manual() { # the same sources without zfp's CMake
  rm -rf "$ZB" && mkdir -p "$ZB/lib" "$ZB/obj"
  {
    "$NVCC" -O3 -std=c++17 -gencode arch=compute_90,code=sm_90 -Xcompiler -fPIC -I"$SRC/include" \
      -c "$SRC/src/cuda_zfp/cuZFP.cu" -o "$ZB/obj/cuZFP.o" &&
      for c in "$SRC"/src/*.c; do
        gcc -O3 -fPIC -std=gnu99 -DZFP_WITH_CUDA -I"$SRC/include" -c "$c" \
          -o "$ZB/obj/$(basename "$c" .c).o" || exit 1
      done &&
      gcc -shared -o "$ZB/lib/libzfp.so" "$ZB"/obj/*.o -L"$CUDA_HOME/lib64" -lcudart -lstdc++ -lm
  } > "$OUT/logs/zfp-manual.log" 2>&1
}
build_zfp() {
  if zfp_cmake; then
    echo "zfp's CMake (-DZFP_WITH_CUDA=ON)"
  elif cp "$OUT/logs/zfp-configure.log" "$OUT/logs/zfp-configure-1.log" &&
    cp "$OUT/logs/zfp-build.log" "$OUT/logs/zfp-build-1.log" 2> /dev/null;
    zfp_cmake -DCMAKE_POLICY_VERSION_MINIMUM=3.5 -DCMAKE_POLICY_DEFAULT_CMP0146=OLD; then
    echo "zfp's CMake with -DCMAKE_POLICY_VERSION_MINIMUM=3.5 -DCMAKE_POLICY_DEFAULT_CMP0146=OLD (first try failed: logs/zfp-*-1.log)"
  elif zfp_manual; then
    echo "nvcc + gcc on zfp's sources (zfp's CMake failed twice: logs/zfp-*.log)"
  else
    echo "FAILED"
  fi
}
if ls "$ZB"/lib*/libzfp.so > /dev/null 2>&1 && [ -f "$ZB/how.txt" ]; then
  cp "$ZB/how.txt" "$OUT/logs/zfp-how.txt"
  ZPID=""
else
  { build_zfp > "$OUT/logs/zfp-how.txt" 2>&1; cp "$OUT/logs/zfp-how.txt" "$ZB/how.txt"; } &
  ZPID=$!
fi
if [ "${PHASE:-}" = build ]; then
  wait $ZPID
  say "zfp build: $(cat "$OUT/logs/zfp-how.txt")"
  exit 0
fi
CB=${CODEC_BUILD:-$ROOT/build-zfp5-codec}
if [ -x "$CB/bin/sparsegrid-codec-bench" ]; then
  CODEC_RC=0
else
  (cmake -S SparseGridCore -B "$CB" $GEN -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DSPARSEGRID_ENABLE_CUDA=ON > "$OUT/logs/codec-configure.log" 2>&1 &&
    cmake --build "$CB" --target sparsegrid-codec-bench -j10 > "$OUT/logs/codec-build.log" 2>&1)
  CODEC_RC=$?
fi
say "codec bench build: rc=$CODEC_RC"
[ $CODEC_RC = 0 ] || grep -E "error" -A3 "$OUT/logs/codec-build.log" | head -30 >> "$OUT/summary.txt"
[ -n "$ZPID" ] && wait $ZPID
HOW=$(cat "$OUT/logs/zfp-how.txt")
say "zfp build: $HOW"
for f in zfp-configure-1 zfp-build-1 zfp-configure zfp-build zfp-manual; do
  [ -f "$OUT/logs/$f.log" ] && grep -iE "error|CMake Error|fatal" -A2 "$OUT/logs/$f.log" | head -12 |
    sed "s/^/  $f: /" >> "$OUT/summary.txt"
done
ZLIB=$(dirname "$(ls "$ZB"/lib*/libzfp.so 2> /dev/null | head -1)" 2> /dev/null)
HARNESS=""
if [ "$HOW" != FAILED ] && [ -n "$ZLIB" ]; then
  g++ -O3 -std=c++17 -fopenmp "$ROOT/scripts/gpu/zfp-bench.cpp" -I"$SRC/include" \
    -I"$CUDA_HOME/include" -L"$ZLIB" -Wl,-rpath,"$ZLIB" -L"$CUDA_HOME/lib64" -lzfp -lcudart \
    -o "$ZB/zfp-bench" > "$OUT/logs/harness-build.log" 2>&1 && HARNESS=$ZB/zfp-bench
  say "harness build: ${HARNESS:-FAILED $(head -5 "$OUT/logs/harness-build.log")}"
fi

export CUDA_MODULE_LOADING=EAGER
for field in smooth:0 noisy:0.003; do
  name=${field%%:*}
  noise=${field#*:}
  if [ -n "$HARNESS" ] && [ "$(left)" -gt 20 ]; then
    timeout 90 "$HARNESS" --n 512 --noise "$noise" --rates "$RATES" --repeats 10 --rel 1e-3 \
      --check-rate 8 --json "$OUT/zfp-$name.json" > "$OUT/zfp-$name.txt" 2>&1
    say "zfp $name: rc=$?"
    cat "$OUT/zfp-$name.txt" >> "$OUT/summary.txt"
  fi
  if [ $CODEC_RC = 0 ] && [ "$(left)" -gt 25 ]; then
    timeout 90 "$CB/bin/sparsegrid-codec-bench" --synthetic 512 --noise "$noise" --rel 1e-3 \
      --backend cuda --threads "$(nproc)" --repeats 10 --no-zfp --json "$OUT/codec-$name.json" \
      > "$OUT/codec-$name.txt" 2>&1
    say "codec $name: rc=$?"
    grep -E "^device:|\| sparsegrid-gpu \|" "$OUT/codec-$name.txt" >> "$OUT/summary.txt"
  fi
done
say "done"
# The device tool brings back a few files: the summary and the JSON as they are, the rest packed.
(cd "$OUT" && tar czf /tmp/zfp5-results.tgz --exclude=./summary.txt --exclude='./*.json' . &&
  find . -mindepth 1 ! -name summary.txt ! -name '*.json' -delete && mv /tmp/zfp5-results.tgz results.tgz)
cat "$OUT/summary.txt"
