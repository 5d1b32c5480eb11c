#!/usr/bin/env bash
# Weak scaling of the distributed pipeline: memory per rank and bytes moved (docs/distributed.md,
# "Weak scaling"). Not a timed benchmark: ranks may be oversubscribed.
#
#   scripts/bench-scaling.sh [BUILD_DIR]      (default: $SPARSEGRID_BUILD_DIR or ./build)
#
# For each rank count, `mpirun --oversubscribe -np N pvbatch --symmetric scripts/bench_scaling.py`
# gives every rank a fixed PIECE^3 float Wavelet piece and measures, per rank, the peak resident
# memory of compress, write, read, resample and slice (scripts/bench_scaling.py says how), and
# the bytes each rank sent and received where the filters report them in field data
# (SparseGridLocal.*Sent* / *Received*; "n/a" otherwise). Prints a markdown table (the largest
# value over the ranks, per stage and rank count) and writes every rank's numbers as JSON.
# Settings through the environment:
#   RANKS="1 2 4 8"  PIECE=128  BOUND=1e-3
# Output goes to out/bench-scaling/ (results.json there).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${1:-${SPARSEGRID_BUILD_DIR:-$ROOT/build}}"
RANKS="${RANKS:-1 2 4 8}"
PIECE="${PIECE:-128}"
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
  echo "running $n rank(s), piece ${PIECE}^3" >&2
  if ! mpirun --oversubscribe -np "$n" pvbatch --symmetric "$ROOT/scripts/bench_scaling.py" \
    --plugin "$PLUGIN" --piece "$PIECE" --bound "$BOUND" --out "$dir" >"$dir/log.txt" 2>&1; then
    tail -n 20 "$dir/log.txt" >&2
    echo "the $n-rank run failed (log: $dir/log.txt)" >&2
    exit 1
  fi
done

python3 - "$OUT" "$PIECE" $RANKS <<'PY'
import glob
import json
import os
import sys

out, piece, ranks = sys.argv[1], int(sys.argv[2]), [int(r) for r in sys.argv[3:]]
STAGES = ["compress", "write", "read", "resample", "slice"]
runs = {}
for n in ranks:
    runs[n] = [json.load(open(p)) for p in sorted(glob.glob(os.path.join(out, "np%d" % n, "rank-*.json")))]
    if len(runs[n]) != n:
        sys.exit("np%d: %d of %d ranks reported" % (n, len(runs[n]), n))
json.dump({"piece": piece, "runs": {str(n): runs[n] for n in ranks}},
          open(os.path.join(out, "results.json"), "w"), indent=1)

MB = 1e6
piece_mb = piece ** 3 * 4 / MB


def traffic(n, stage, word):
    values = [sum(v for k, v in r["stages"][stage]["counters"].items() if word in k)
              for r in runs[n] if any(word in k for k in r["stages"][stage]["counters"])]
    return "%.1f" % (max(values) / MB) if values else "n/a"


if not all(r["peak_reset"] for n in ranks for r in runs[n]):
    print("note: /proc/self/clear_refs refused; peaks are since process start")
print("Piece per rank: %d^3 float (%.1f MB). Peak resident memory per rank above the start of "
      "the stage, MB, largest over the ranks (peak VmHWM in brackets); sent/received MB, "
      "largest over the ranks.\n" % (piece, piece_mb))
print("| stage | " + " | ".join("%d rank%s" % (n, "" if n == 1 else "s") for n in ranks) + " |")
print("|---|" + "---|" * len(ranks))
for stage in STAGES:
    cells = []
    for n in ranks:
        above = max(r["stages"][stage]["above_start_bytes"] for r in runs[n]) / MB
        peak = max(r["stages"][stage]["peak_bytes"] for r in runs[n]) / MB
        cells.append("%.0f (%.0f)" % (above, peak))
    print("| %s | %s |" % (stage, " | ".join(cells)))
for word, label in (("Sent", "sent"), ("Received", "received")):
    for stage in STAGES:
        cells = [traffic(n, stage, word) for n in ranks]
        if any(c != "n/a" for c in cells) or stage == "compress":
            print("| %s %s | %s |" % (stage, label, " | ".join(cells)))
print("\nJSON: %s" % os.path.join(out, "results.json"))
PY
