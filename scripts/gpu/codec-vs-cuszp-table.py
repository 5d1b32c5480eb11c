#!/usr/bin/env python3
"""The table of scripts/gpu/codec-vs-cuszp.sh: reads OUT/codec-vs-cuszp.jsonl and the bench's
JSON files it names, prints a Markdown table and writes OUT/codec-vs-cuszp.json.

Throughput is GB/s (1e9 bytes per second) of the uncompressed input, device to device. cuSZp's CLI
prints 2^20 bytes per millisecond, converted here (x 1.048576). Ours: median of the bench's runs;
cuSZp: median of its runs (one timed call each)."""
import json
import os
import re
import statistics
import sys

MIB_PER_MS = 1.048576  # GB/s per (2^20 bytes / ms)


def cuszp_numbers(text):
    comp = re.search(r"compression\s+end-to-end speed:\s*([0-9.]+)", text)
    dec = re.search(r"decompression end-to-end speed:\s*([0-9.]+)", text)
    ratio = re.search(r"compression ratio:\s*([0-9.]+)", text)
    failed = re.search(r"Exceeding data count:\s*([0-9]+)", text)
    if not (comp and dec and ratio):
        return None
    return {
        "compressGBps": float(comp.group(1)) * MIB_PER_MS,
        "decompressGBps": float(dec.group(1)) * MIB_PER_MS,
        "ratio": float(ratio.group(1)),
        "outsideBoundx1.1": int(failed.group(1)) if failed else 0,
    }


def ours_numbers(path):
    with open(path) as f:
        data = json.load(f)
    rows = {r["op"]: r for r in data["results"]}
    out = {"bound": data["bound"]}
    for key, op in (("compress", "compress (device to device)"),
                    ("decompress", "decompress (device to device)"),
                    ("bricksCompress", "compress bricks (device to device)"),
                    ("bricksDecompress", "decompress bricks (device to device)"),
                    ("batchCompress", "compress bricks batched (device to device)"),
                    ("batchDecompress", "decompress bricks batched (device to device)")):
        if op in rows:
            r = rows[op]
            out[key + "GBps"] = r["MBps"] / 1e3
            out[key + "Ratio"] = r["ratio"]
            out[key + "MaxErrorOverBound"] = r["maxError"] / data["bound"]
            out[key + "Note"] = r["note"]
    return out


def main(out_dir):
    cases = {}
    with open(os.path.join(out_dir, "codec-vs-cuszp.jsonl")) as f:
        for line in f:
            rec = json.loads(line)
            case = cases.setdefault((rec["field"], rec["rel"]), {"cuszp-outlier": [], "cuszp-plain": []})
            if rec["codec"] == "sparsegrid":
                try:
                    case["ours"] = ours_numbers(os.path.join(out_dir, rec["json"]))
                except (OSError, ValueError, KeyError):
                    case["ours"] = None
            else:
                case[rec["codec"]].append(cuszp_numbers(rec["output"]))

    def med(runs, key):
        vals = [r[key] for r in runs if r]
        return statistics.median(vals) if vals else float("nan")

    print("| field | relative bound | ours ratio | cuSZp ratio outlier / plain "
          "| ours GB/s compress / decompress | cuSZp outlier GB/s | cuSZp plain GB/s "
          "| ours max error / bound | cuSZp voxels beyond 1.1 x bound |")
    print("|---|---|---|---|---|---|---|---|---|")
    summary = []
    for (field, rel), case in sorted(cases.items(), key=lambda kv: (kv[0][0], -kv[0][1])):
        ours = case.get("ours") or {}
        o, p = case["cuszp-outlier"], case["cuszp-plain"]
        beyond = max([r["outsideBoundx1.1"] for r in o + p if r] or [0])
        print("| %s | %g | %.1f | %.1f / %.1f | %.0f / %.0f | %.0f / %.0f | %.0f / %.0f | %.3f | %d |" % (
            field, rel, ours.get("compressRatio", float("nan")),
            med(o, "ratio"), med(p, "ratio"),
            ours.get("compressGBps", float("nan")), ours.get("decompressGBps", float("nan")),
            med(o, "compressGBps"), med(o, "decompressGBps"),
            med(p, "compressGBps"), med(p, "decompressGBps"),
            ours.get("compressMaxErrorOverBound", float("nan")), beyond))
        summary.append({"field": field, "relative": rel, "ours": ours,
                        "cuszpOutlier": o, "cuszpPlain": p})
    bricks = [(f, r, c["ours"]) for (f, r), c in cases.items()
              if c.get("ours") and "bricksCompressGBps" in c["ours"]]
    if bricks:
        print()
        print("| field (bricks) | relative bound | ratio | GB/s compress / decompress | note |")
        print("|---|---|---|---|---|")
        for field, rel, ours in sorted(bricks, key=lambda t: -t[1]):
            for key in ("bricks", "batch"):
                if key + "CompressGBps" not in ours:
                    continue
                print("| %s | %g | %.1f | %.1f / %.1f | %s; %s |" % (
                    field, rel, ours[key + "CompressRatio"], ours[key + "CompressGBps"],
                    ours[key + "DecompressGBps"], ours[key + "CompressNote"],
                    ours[key + "DecompressNote"].split("; ")[-1]))
    with open(os.path.join(out_dir, "codec-vs-cuszp.json"), "w") as f:
        json.dump(summary, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
