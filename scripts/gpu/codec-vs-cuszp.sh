#!/usr/bin/env bash
# The GPU codec beside cuSZp on the same fields, in the same call, on the GPU machine:
#   usage: CUSZP_SRC=DIR [OUT=DIR] [BOUNDS="1e-2 1e-3 1e-4"] [SPARSEGRID_CODEC_VOLUMES=DIR]
#          scripts/gpu/codec-vs-cuszp.sh
# CUSZP_SRC is a checkout of szcompressor/cuSZp fetched outside this repository (never committed);
# it is built here for sm_90 (a file COMMIT in it, if present, names the commit for the log). Fields: a 512^3 smooth float field, the same with noise (both from
# sparsegrid-codec-bench, written as raw files so that cuSZp's own tool reads the same values),
# the real volumes in SPARSEGRID_CODEC_VOLUMES (raw float32 files named NAME.NXxNYxNZ.f32, made by
# scripts/gpu/prepare-volumes.py), and the smooth field as 512 bricks of 64^3. The bound is
# absolute (relative x value range), computed by our bench and passed to cuSZp as `-eb abs`.
# Ours: median of 5 device-to-device runs after a warm-up. cuSZp: its CLI times one compression
# (after 10 warm-ups) and one decompression per run; three runs in each mode (outlier, plain).
# Results: $OUT/codec-vs-cuszp.md (the table) and $OUT/codec-vs-cuszp.json.
CORE=SparseGridCore
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
: "${CUSZP_SRC:?set CUSZP_SRC to a checkout of szcompressor/cuSZp}"
BOUNDS=${BOUNDS:-1e-2 1e-3 1e-4}
machine

gen=()
command -v ninja > /dev/null && gen=(-G Ninja)
# cuSZp (a copy of its source with the CUDA architecture set to 90, Release) builds in the
# background while our bench builds.
CUSZP_COPY="$BUILD/cuszp-src"
mkdir -p "$BUILD"
rm -rf "$CUSZP_COPY" && cp -r "$CUSZP_SRC" "$CUSZP_COPY"
sed -i -E 's/set\(CMAKE_CUDA_ARCHITECTURES [0-9 ]+\)/set(CMAKE_CUDA_ARCHITECTURES 90)/' \
  "$CUSZP_COPY/CMakeLists.txt"
(cmake -S "$CUSZP_COPY" -B "$BUILD/cuszp" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release &&
  cmake --build "$BUILD/cuszp" -j "$((JOBS / 2 + 1))" --target cuSZp) > "$OUT/cuszp-build.log" 2>&1 &
CUSZP_BUILD=$!
if ! cmake -S "$CORE" -B "$BUILD" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DSPARSEGRID_ENABLE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 > "$OUT/configure.log" 2>&1 ||
  ! cmake --build "$BUILD" -j "$JOBS" --target sparsegrid-codec-bench > "$OUT/build.log" 2>&1; then
  say "building sparsegrid-codec-bench FAILED (configure.log, build.log)"
  exit 1
fi
say "built sparsegrid-codec-bench"
if ! wait "$CUSZP_BUILD"; then
  say "building cuSZp FAILED (cuszp-build.log)"
  exit 1
fi
CUSZP=$(find "$BUILD/cuszp" -type f -name cuSZp -perm -u+x | head -1)
say "built cuSZp ($(cat "$CUSZP_SRC/COMMIT" 2> /dev/null || git -C "$CUSZP_SRC" rev-parse --short HEAD 2> /dev/null || echo 'unknown commit'))"

FIELDS="$BUILD/fields"
mkdir -p "$FIELDS"
RESULTS="$OUT/codec-vs-cuszp.jsonl"
: > "$RESULTS"

# one_field NAME NX NY NZ BENCH-ARGS...: our bench at every bound, then cuSZp on the raw file.
one_field() {
  local name=$1 nx=$2 ny=$3 nz=$4 rel bound line mode run
  shift 4
  for rel in $BOUNDS; do
    "$BUILD/bin/sparsegrid-codec-bench" "$@" --rel "$rel" --backend cuda --threads "$(nproc)" \
      --repeats 5 --no-zfp --json "$OUT/ours-$name-$rel.json" > "$OUT/ours-$name-$rel.txt" 2>&1 ||
      FAILED+=("ours-$name-$rel")
    bound=$(sed -n -E 's/^ *"bound": ([^,]+),/\1/p' "$OUT/ours-$name-$rel.json")
    echo "{\"field\":\"$name\",\"rel\":$rel,\"codec\":\"sparsegrid\",\"json\":\"ours-$name-$rel.json\"}" >> "$RESULTS"
    [ -f "$FIELDS/$name.f32" ] || continue
    for mode in outlier plain; do
      for run in 1 2 3; do
        line=$("$CUSZP" -i "$FIELDS/$name.f32" -t f32 -m "$mode" -d 3 "$nz" "$ny" "$nx" \
          -eb abs "$bound" 2>&1 | sed 's/\x1b\[[0-9;]*m//g' | tr '\n' ' ')
        echo "{\"field\":\"$name\",\"rel\":$rel,\"codec\":\"cuszp-$mode\",\"run\":$run,\"bound\":$bound,\"output\":\"${line//\"/}\"}" >> "$RESULTS"
      done
    done
    say "$name $rel: $(grep -m1 -E 'compress \(device to device\)' "$OUT/ours-$name-$rel.txt" | cut -c1-120)"
  done
}

one_field smooth512 512 512 512 --synthetic 512 --write-raw "$FIELDS/smooth512.f32" --bricks 64
one_field noisy512 512 512 512 --synthetic 512 --noise 0.003 --write-raw "$FIELDS/noisy512.f32"
for f in "${SPARSEGRID_CODEC_VOLUMES:-/nonexistent}"/*.f32; do
  [ -f "$f" ] || continue
  base=$(basename "$f" .f32)
  dims=${base##*.}
  IFS=x read -r nx ny nz <<< "$dims"
  cp "$f" "$FIELDS/${base%%.*}.f32"
  one_field "${base%%.*}" "$nx" "$ny" "$nz" --input "$f" --dims "$nx" "$ny" "$nz"
done
python3 "$ROOT/scripts/gpu/codec-vs-cuszp-table.py" "$OUT" > "$OUT/codec-vs-cuszp.md" ||
  FAILED+=(table)
cat "$OUT/codec-vs-cuszp.md"
finish
