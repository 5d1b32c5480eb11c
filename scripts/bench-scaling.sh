#!/usr/bin/env bash
# Scaling of the distributed pipeline: memory per rank and bytes moved (docs/distributed.md,
# "Scaling"). Not a timed benchmark: ranks may be oversubscribed.
#
#   scripts/bench-scaling.sh [BUILD_DIR]      (default: $SPARSEGRID_BUILD_DIR or ./build)
#
# For each rank count, `mpirun --oversubscribe -np N pvbatch --symmetric scripts/bench_scaling.py`
# runs compress, write, read, resample and slice on a float Wavelet image and measures, per rank,
# the peak resident memory of each stage (scripts/bench_scaling.py says how), the counters the
# filters report in field data (SparseGridLocal.*: bytes sent and received, bricks and voxels
# decoded; "n/a" where none exist) and what each rank holds after compress. Prints a markdown
# table (the largest value over the ranks, per stage and rank count) and writes every rank's
# numbers as JSON. Two modes:
#   weak scaling (default): a fixed PIECE^3 piece per rank (the image grows with N);
#   fixed image (IMAGE set): one IMAGE^3 image on every rank count, and the checks of local
#     decode at scale: Resample's peak per rank on 4 ranks at most half of 1 rank's, the slice
#     at most a quarter of the image per rank, and no rank holding more stream bytes than its
#     own bricks' (whole chunks) besides the index.
# Settings through the environment:
#   RANKS="1 2 4 8"  PIECE=128  IMAGE=  BOUND=1e-3
# Output goes to out/bench-scaling/ (results.json there).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${1:-${SPARSEGRID_BUILD_DIR:-$ROOT/build}}"
RANKS="${RANKS:-1 2 4 8}"
PIECE="${PIECE:-128}"
IMAGE="${IMAGE:-}"
BOUND="${BOUND:-1e-3}"
OUT="$ROOT/out/bench-scaling"
PLUGIN="$(find "$BUILD/lib" -name SparseGrid.so 2>/dev/null | head -n 1)"
if [ -z "$PLUGIN" ]; then
  echo "no SparseGrid.so under $BUILD/lib: build the project first (./run.sh build)" >&2
  exit 1
fi
for tool in mpirun pvbatch python3; do
  command -v "$tool" >/dev/null || { echo "$tool not found" >&2; exit 1; }
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
rm -rf "$OUT"
mkdir -p "$OUT"

for n in $RANKS; do
  dir="$OUT/np$n"
  mkdir -p "$dir"
  if [ -n "$IMAGE" ]; then
    echo "running $n rank(s), image ${IMAGE}^3" >&2
    size=(--image "$IMAGE")
  else
    echo "running $n rank(s), piece ${PIECE}^3" >&2
    size=(--piece "$PIECE")
  fi
  if ! mpirun --oversubscribe -np "$n" pvbatch --symmetric "$ROOT/scripts/bench_scaling.py" \
    --plugin "$PLUGIN" "${size[@]}" --bound "$BOUND" --out "$dir" >"$dir/log.txt" 2>&1; then
    tail -n 20 "$dir/log.txt" >&2
    echo "the $n-rank run failed (log: $dir/log.txt)" >&2
    exit 1
  fi
done

python3 - "$OUT" "$PIECE" "${IMAGE:-0}" $RANKS <<'PY'
import glob
import json
import os
import sys

out, piece, image = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ranks = [int(r) for r in sys.argv[4:]]
STAGES = ["compress", "write", "read", "resample", "slice"]
runs = {}
for n in ranks:
    runs[n] = [json.load(open(p)) for p in sorted(glob.glob(os.path.join(out, "np%d" % n, "rank-*.json")))]
    if len(runs[n]) != n:
        sys.exit("np%d: %d of %d ranks reported" % (n, len(runs[n]), n))
json.dump({"piece": piece, "image": image, "runs": {str(n): runs[n] for n in ranks}},
          open(os.path.join(out, "results.json"), "w"), indent=1)

MB = 1e6
CHUNK = 4096  # bytes per point of SparseGrid.StreamChunks


def largest(n, stage, word):
    """Largest value over the ranks of the counters whose name holds `word`, or None."""
    values = [sum(v for k, v in r["stages"][stage]["counters"].items() if word in k)
              for r in runs[n] if any(word in k for k in r["stages"][stage]["counters"])]
    return max(values) if values else None


def traffic(n, stage, word):
    value = largest(n, stage, word)
    return "n/a" if value is None else "%.1f" % (value / MB)


def above(n, stage):
    return max(r["stages"][stage]["above_start_bytes"] for r in runs[n]) / MB


def beyond_own(n):
    """Largest stream bytes a rank holds beyond its own bricks' (in whole chunks), or None."""
    held = [r.get("held_after_compress") for r in runs[n]]
    if not all(held):
        return None
    return max(h["stream_bytes"] - (-(-h["own_brick_bytes"] // CHUNK) * CHUNK if n > 1
                                    else h["own_brick_bytes"]) for h in held)


if not all(r["peak_reset"] for n in ranks for r in runs[n]):
    print("note: /proc/self/clear_refs refused; peaks are since process start")
if image:
    image_mb = image ** 3 * 4 / MB
    print("Image %d^3 float (%.1f MB) on every rank count. Peak resident memory per rank above "
          "the start of the stage, MB, largest over the ranks (peak VmHWM in brackets); "
          "sent/received MB, largest over the ranks.\n" % (image, image_mb))
else:
    print("Piece per rank: %d^3 float (%.1f MB). Peak resident memory per rank above the start "
          "of the stage, MB, largest over the ranks (peak VmHWM in brackets); sent/received MB, "
          "largest over the ranks.\n" % (piece, piece ** 3 * 4 / MB))
print("| stage | " + " | ".join("%d rank%s" % (n, "" if n == 1 else "s") for n in ranks) + " |")
print("|---|" + "---|" * len(ranks))
for stage in STAGES:
    cells = []
    for n in ranks:
        peak = max(r["stages"][stage]["peak_bytes"] for r in runs[n]) / MB
        cells.append("%.0f (%.0f)" % (above(n, stage), peak))
    print("| %s | %s |" % (stage, " | ".join(cells)))
for word, label in (("Sent", "sent"), ("Received", "received")):
    for stage in STAGES:
        cells = [traffic(n, stage, word) for n in ranks]
        if any(c != "n/a" for c in cells) or stage == "compress":
            print("| %s %s | %s |" % (stage, label, " | ".join(cells)))
for stage in ("read", "resample", "slice"):
    cells = [largest(n, stage, "VoxelsDecoded") for n in ranks]
    if any(c is not None for c in cells):
        print("| %s voxels decoded (M) | %s |" % (stage, " | ".join(
            "n/a" if c is None else "%.2f" % (c / 1e6) for c in cells)))
if all(beyond_own(n) is not None for n in ranks):
    print("| compress: stream bytes held beyond own bricks | %s |"
          % " | ".join("%d" % beyond_own(n) for n in ranks))
    print("| compress: streams / index and metadata held (MB) | %s |" % " | ".join(
        "%.2f / %.3f" % (max(r["held_after_compress"]["stream_bytes"] for r in runs[n]) / MB,
                         max(r["held_after_compress"]["other_bytes"] for r in runs[n]) / MB)
        for n in ranks))
if image:
    print()
    one = above(1, "resample") if 1 in ranks else None
    for n in ranks:
        verdicts = []
        if one and n == 4:
            verdicts.append("resample %.0f MB against %.0f MB on 1 rank: %s (at most half)" % (
                above(n, "resample"), one,
                "met" if above(n, "resample") <= one / 2 else "NOT met"))
        verdicts.append("slice %.0f MB: %s (at most a quarter of the image, %.0f MB)" % (
            above(n, "slice"), "met" if above(n, "slice") <= image_mb / 4 else "NOT met",
            image_mb / 4))
        beyond = beyond_own(n)
        if beyond is not None:
            verdicts.append("stream bytes beyond own bricks: %d (%s)" % (
                beyond, "met" if beyond <= 0 else "NOT met"))
        print("%d rank%s: %s" % (n, "" if n == 1 else "s", "; ".join(verdicts)))
print("\nJSON: %s" % os.path.join(out, "results.json"))
PY
