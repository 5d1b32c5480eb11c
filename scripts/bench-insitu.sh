#!/usr/bin/env bash
# What in-situ compression costs per step, relative to the simulation step (docs/insitu.md).
#
#   scripts/bench-insitu.sh [BUILD_DIR]        (default: $SPARSEGRID_BUILD_DIR or ./build)
#
# Runs the Catalyst example (Examples/Catalyst, SparseGridHeatExample) on larger grids for a few
# steps, on 1 and 2 MPI ranks, once without Catalyst (the simulation alone) and once with the
# SparseGrid Catalyst script, and prints a markdown table of medians over the steps after the
# first (the first one also pays for Python, the pipeline set-up and the plugin loading, shown
# apart). Settings through the environment:
#   SIZES="129,129,129 257,257,257"  RANKS="1 2"  STEPS=6  SUBSTEPS=10
# Logs and .sgrid files go to out/bench-insitu/.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${1:-${SPARSEGRID_BUILD_DIR:-$ROOT/build}}"
EXAMPLE="$BUILD/bin/SparseGridHeatExample"
SIZES="${SIZES:-129,129,129 257,257,257}"
RANKS="${RANKS:-1 2}"
STEPS="${STEPS:-6}"
SUBSTEPS="${SUBSTEPS:-10}"
OUT="$ROOT/out/bench-insitu"
if [ ! -x "$EXAMPLE" ]; then
  echo "no $EXAMPLE: build the project first (cmake --build $BUILD)" >&2
  exit 1
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
rm -rf "$OUT"
mkdir -p "$OUT"
# Other work on the machine shows in every number: keep the load next to the table.
LOAD_BEFORE="$(cut -d' ' -f1-3 /proc/loadavg)"

for size in $SIZES; do
  for ranks in $RANKS; do
    dims="${size//,/ }"
    for mode in alone catalyst; do
      dir="$OUT/${size//,/x}-${ranks}-${mode}"
      mkdir -p "$dir"
      extra=(--no-catalyst)
      [ "$mode" = catalyst ] && extra=(--output "$dir/sgrid")
      echo "running ${size//,/ x } on $ranks rank(s), $mode" >&2
      # shellcheck disable=SC2086 # dims is three words on purpose
      mpiexec --oversubscribe -np "$ranks" "$EXAMPLE" --dims $dims --steps "$STEPS" \
        --substeps "$SUBSTEPS" "${extra[@]}" >"$dir/log.txt" 2>&1 || {
        tail -n 30 "$dir/log.txt" >&2
        exit 1
      }
    done
  done
done

LOAD_AFTER="$(cut -d' ' -f1-3 /proc/loadavg)"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)," \
  "$(. /etc/os-release && echo "$PRETTY_NAME"); load average before: $LOAD_BEFORE, after: $LOAD_AFTER"
echo
python3 - "$OUT" "$SUBSTEPS" <<'EOF'
import os
import re
import statistics
import sys

out, substeps = sys.argv[1], int(sys.argv[2])


def parse(path):
    heat, sg = [], []
    with open(path) as f:
        for line in f:
            for tag, rows in (("heat", heat), ("SparseGrid", sg)):
                m = re.search(r"\[%s\] step=(\d+) (.*)" % tag, line)
                if m and "=" in m.group(2):
                    row = {"step": int(m.group(1))}
                    for kv in m.group(2).split():
                        if "=" in kv:
                            k, v = kv.split("=", 1)
                            try:
                                row[k] = float(v)
                            except ValueError:
                                row[k] = v
                    rows.append(row)
    return heat, sg


def med(rows, key):
    values = [r[key] for r in rows if r["step"] > 0 and key in r]
    return statistics.median(values) if values else float("nan")


runs = {}
for name in sorted(os.listdir(out)):
    size, ranks, mode = name.rsplit("-", 2)
    runs.setdefault((size, int(ranks)), {})[mode] = parse(os.path.join(out, name, "log.txt"))

print("| grid | ranks | sim step (%d sweeps), alone | sim step, with Catalyst | Catalyst per step "
      "| hierarchize | update (all of the filter) | write | Catalyst / sim step | first step "
      "(set-up) | raw field (float64) | file | ratio (filter) | raw / file |" % substeps)
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for (size, ranks), modes in sorted(runs.items(), key=lambda kv: (kv[0][0], kv[0][1])):
    alone, _ = modes["alone"]
    heat, sg = modes["catalyst"]
    dims = [int(v) for v in size.split("x")]
    raw = dims[0] * dims[1] * dims[2] * 8
    sim_alone = med(alone, "sim_s")
    sim = med(heat, "sim_s")
    cat = med([h for h in heat if h.get("catalyst_ran") == 1], "catalyst_s")
    first = [h["catalyst_s"] for h in heat if h["step"] == 0][0]
    size_bytes = med(sg, "bytes")
    print("| %s | %d | %.3f s | %.3f s | %.3f s | %.3f s | %.3f s | %.3f s | %.2f | %.2f s "
          "| %.1f MiB | %.0f KiB | %.1f | %.0f |"
          % (size.replace("x", " x "), ranks, sim_alone, sim, cat, med(sg, "hierarchize_s"),
             med(sg, "update_s"), med(sg, "write_s"), cat / sim_alone, first, raw / 2**20,
             size_bytes / 1024, med(sg, "ratio"), raw / size_bytes))
print()
print("Medians over steps 1..%d; times are the slowest rank's (sim, Catalyst) or rank 0's "
      "(hierarchize = SparseGrid.TimeSeconds, update = wall time of the filter's update, "
      "write = the .sgrid writer)." % (max(h["step"] for h in heat)))
EOF
