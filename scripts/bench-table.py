#!/usr/bin/env python3
"""Prints markdown tables from sparsegrid-bench JSON lines (one object per line)."""
import json
import sys

rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip().startswith("{")]


def unit(op):
    return {"evaluate": "points/s", "reconstruct": "voxels/s"}.get(op, "coefficients/s")


print("| op | D | L | boundary | precision | backend | threads | coefficients | items | opts | chunk | median [ms] | throughput | GFlop/s |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
baseline = {}
for r in rows:
    key = (r["op"], r["dims"], r["level"], r["points"])
    if r["opts"] == "none":
        baseline[key] = r["median_s"]
    speedup = ""
    if key in baseline and r["opts"] != "none":
        speedup = " (x%.1f vs none)" % (baseline[key] / r["median_s"])
    print("| %s | %d | %d | %d | %s | %s | %d | %d | %d | %s | %d | %.3f | %.3g %s%s | %.2f |" % (
        r["op"], r["dims"], r["level"], r["boundary"], r["precision"], r["backend"], r["threads"],
        r["coefficients"], r["points"], r["opts"], r["chunk"], r["median_s"] * 1e3,
        r["throughput"], unit(r["op"]), speedup, r["gflops"]))
