#!/usr/bin/env bash
# The CPU benchmark set of docs/benchmarks.md. Usage: bench-cpu.sh PATH/TO/sparsegrid-bench [THREADS]
# Writes one JSON object per run to out/bench-cpu.jsonl and prints the markdown tables.
set -euo pipefail
BENCH="$1"
T="${2:-2}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="$ROOT/out/bench-cpu.jsonl"
mkdir -p "$ROOT/out"
: >"$OUT"
run() { "$BENCH" --json --threads "$T" "$@" | tee -a "$OUT" >/dev/null; }

# The goals of docs/benchmarks.md (float, no boundary unless stated).
run --op evaluate --dims 3 --level 10 --points 1e6 --precision float --repeat 7
run --op evaluate --dims 3 --level 10 --points 1e6 --precision double --repeat 7
run --op hierarchize --dims 3 --level 12 --precision float --repeat 21
run --op hierarchize --dims 3 --level 12 --precision double --repeat 21
run --op dehierarchize --dims 3 --level 12 --precision float --repeat 21
run --op reconstruct --dims 3 --level 8 --boundary 1 --image 257,257,257 --precision float --repeat 7
run --op reconstruct --dims 3 --level 8 --boundary 1 --image 200,180,160 --precision float --repeat 7
run --op hierarchize --dims 3 --level 8 --boundary 1 --precision float --repeat 21
run --op evaluate --dims 3 --level 8 --boundary 1 --points 1e6 --precision float --repeat 5
# High dimensions.
run --op hierarchize --dims 10 --level 6 --precision float --repeat 11
run --op evaluate --dims 10 --level 6 --points 1e5 --precision float --repeat 5
run --op hierarchize --dims 16 --level 4 --precision float --repeat 11
run --op evaluate --dims 16 --level 4 --points 1e5 --precision float --repeat 5
run --op hierarchize --dims 5 --level 8 --precision float --repeat 11
run --op evaluate --dims 5 --level 8 --points 1e5 --precision float --repeat 5

# Speed-up of each optimisation, added one at a time in the papers' order.
for o in none inv1 inv1,inv2 inv1,inv2,inv3 inv1,inv2,inv3,inv4 inv1,inv2,inv3,inv4,ichg1; do
  run --op hierarchize --dims 3 --level 12 --precision float --repeat 7 --opts "$o"
done
for o in none inv1 inv1,ichg2 inv1,ichg2,vec1 inv1,ichg2,vec1,sred1; do
  run --op evaluate --dims 3 --level 10 --points 1e5 --precision float --repeat 5 --opts "$o"
done
for c in 32 64 128 256 512 1024; do
  run --op evaluate --dims 3 --level 10 --points 1e6 --precision float --repeat 5 --chunk "$c"
done
python3 "$ROOT/scripts/bench-table.py" "$OUT"
