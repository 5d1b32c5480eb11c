#!/usr/bin/env python3
"""Compares the project's error-bounded codec with ZFP (accuracy mode) and SZ3 (ABS mode) on the
volumes of ../shared/data, converted to float32 (little-endian, x fastest), at the same absolute
bounds (relative 1e-2, 1e-3, 1e-4 of each volume's range, plus more bounds for the curves).

Prints ratio, max error / bound, PSNR and time per codec, the project's ratio relative to ZFP's and
SZ3's at each bound and its PSNR against ZFP's at equal ratio (ZFP's curve interpolated in
log(ratio)); writes a JSON file and a PNG plot of PSNR against ratio.

    scripts/compare-codecs.py --bench build-codec/bin/sparsegrid-codec-bench \\
        [--sz3 /work/sz3-build/b/tools/sz3/sz3] [--zfp zfp] [--out out/compare]

Ratio = float32 bytes / bytes of the compressed file (ZFP with its header, -h; SZ3's file; the
project's stream with its header). PSNR = 20 log10(range / RMSE) in float64 on every voxel. Times:
the project and ZFP's *library* from sparsegrid-codec-bench (same harness, median of 5, 2 threads;
ZFP decompresses serially); SZ3 from its CLI (wall time of the process, I/O included).
"""
import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "Testing", "Codec"))
import sharedvolumes  # noqa: E402

TABLE_BOUNDS = (1e-2, 1e-3, 1e-4)
CURVE_BOUNDS = (1e-1, 3e-2, 1e-2, 3e-3, 1e-3, 3e-4, 1e-4, 3e-5, 1e-5)
# ZFP only, so that its PSNR curve reaches the project's ratios at 1e-2 and 1e-3 (ZFP's accuracy
# mode stays far inside its tolerance, so it needs tolerances of the order of the range for that).
ZFP_EXTRA_BOUNDS = (3e-1, 1.0, 3.0, 10.0)


def metrics(original, decoded):
    a = original.astype(np.float64).ravel()
    b = decoded.astype(np.float64).ravel()
    err = np.abs(a - b)
    rmse = math.sqrt(float(np.mean(err * err)))
    value_range = float(a.max() - a.min())
    psnr = 20 * math.log10(value_range / rmse) if rmse > 0 else float("inf")
    return float(err.max()), psnr


def run_project(bench, raw, dims, bound, threads, repeats):
    with tempfile.NamedTemporaryFile(suffix=".json") as js:
        cmd = [bench, "--input", raw, "--dims"] + [str(d) for d in dims] + [
            "--abs", repr(bound), "--threads", str(threads), "--repeats", str(repeats),
            "--json", js.name]
        subprocess.run(cmd, check=True, capture_output=True, text=True)
        result = json.load(open(js.name))
    rows = {(r["codec"], r["op"]): r for r in result["results"]}
    ours_c, ours_d = rows[("sparsegrid", "compress")], rows[("sparsegrid", "decompress")]
    out = dict(ratio=ours_c["ratio"], max_error=ours_d["maxError"], psnr=ours_d["psnr"],
               compress_s=ours_c["seconds"], decompress_s=ours_d["seconds"])
    zfp_lib = None
    if ("zfp-accuracy", "compress") in rows:
        zc, zd = rows[("zfp-accuracy", "compress")], rows[("zfp-accuracy", "decompress")]
        zfp_lib = dict(compress_s=zc["seconds"], decompress_s=zd["seconds"], ratio=zc["ratio"])
    return out, zfp_lib


def run_zfp(zfp, raw, dims, bound, original, tmp):
    z, back = os.path.join(tmp, "x.zfp"), os.path.join(tmp, "x.zfp.f32")
    t0 = time.perf_counter()
    subprocess.run([zfp, "-i", raw, "-z", z, "-o", back, "-f", "-3"] + [str(d) for d in dims] +
                   ["-a", repr(bound), "-h"], check=True, capture_output=True)
    wall = time.perf_counter() - t0
    decoded = np.fromfile(back, "<f4").reshape(original.shape)
    err, psnr = metrics(original, decoded)
    return dict(ratio=original.nbytes / os.path.getsize(z), max_error=err, psnr=psnr, cli_s=wall)


def run_sz3(sz3, raw, dims, bound, original, tmp):
    z, back = os.path.join(tmp, "x.sz"), os.path.join(tmp, "x.sz.f32")
    t0 = time.perf_counter()
    subprocess.run([sz3, "-f", "-i", raw, "-z", z, "-o", back, "-3"] + [str(d) for d in dims] +
                   ["-M", "ABS", repr(bound)], check=True, capture_output=True)
    wall = time.perf_counter() - t0
    decoded = np.fromfile(back, "<f4").reshape(original.shape)
    err, psnr = metrics(original, decoded)
    return dict(ratio=original.nbytes / os.path.getsize(z), max_error=err, psnr=psnr, cli_s=wall)


def interpolate_psnr(curve, ratio):
    """PSNR of a codec's curve [(ratio, psnr)] at `ratio`, linear in log(ratio); None outside."""
    pts = sorted((math.log(r), p) for r, p in curve if math.isfinite(p))
    x = math.log(ratio)
    for (x0, p0), (x1, p1) in zip(pts, pts[1:]):
        if x0 <= x <= x1 and x1 > x0:
            return p0 + (p1 - p0) * (x - x0) / (x1 - x0)
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", required=True, help="path of sparsegrid-codec-bench")
    ap.add_argument("--zfp", default=shutil.which("zfp"), help="zfp CLI (Debian package zfp)")
    ap.add_argument("--sz3", default=None, help="a built sz3 binary (optional)")
    ap.add_argument("--out", default="out/compare", help="prefix of the .json and .png written")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    volumes = sharedvolumes.shared_volumes()
    if not volumes:
        print("no volumes: ../shared/data not found (set SPARSEGRID_DATA)")
        return 1
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, arr, dims in volumes:
            original = arr.astype("<f4")
            raw = os.path.join(tmp, name + ".f32")
            original.tofile(raw)
            value_range = float(original.max()) - float(original.min())
            per = results.setdefault(name, dict(dims=dims, input_type=str(arr.dtype), points=[]))
            for rel in sorted(set(CURVE_BOUNDS) | set(TABLE_BOUNDS), reverse=True):
                bound = rel * value_range
                ours, zfp_lib = run_project(args.bench, raw, dims, bound, args.threads,
                                            args.repeats if rel in TABLE_BOUNDS else 1)
                point = dict(rel=rel, bound=bound, sparsegrid=ours, zfp_library=zfp_lib)
                if args.zfp:
                    point["zfp"] = run_zfp(args.zfp, raw, dims, bound, original, tmp)
                if args.sz3:
                    point["sz3"] = run_sz3(args.sz3, raw, dims, bound, original, tmp)
                per["points"].append(point)
            if args.zfp:
                for rel in ZFP_EXTRA_BOUNDS:
                    bound = rel * value_range
                    per["points"].append(dict(rel=rel, bound=bound, zfp=run_zfp(
                        args.zfp, raw, dims, bound, original, tmp)))
    # Tables.
    print("| volume | rel. bound | codec | ratio | max error / bound | PSNR dB | compress s | decompress s |")
    print("|---|---|---|---|---|---|---|---|")
    for name, per in results.items():
        for p in per["points"]:
            if p["rel"] not in TABLE_BOUNDS:
                continue
            o = p["sparsegrid"]
            print("| %s | %.0e | sparsegrid | %.2f | %.3f | %.1f | %.4f | %.4f |" % (
                name, p["rel"], o["ratio"], o["max_error"] / p["bound"], o["psnr"], o["compress_s"],
                o["decompress_s"]))
            if "zfp" in p:
                z, zl = p["zfp"], p.get("zfp_library") or {}
                print("| %s | %.0e | zfp -a | %.2f | %.3f | %.1f | %s | %s |" % (
                    name, p["rel"], z["ratio"], z["max_error"] / p["bound"], z["psnr"],
                    "%.4f" % zl["compress_s"] if zl else "-", "%.4f" % zl["decompress_s"] if zl else "-"))
            if "sz3" in p:
                s = p["sz3"]
                print("| %s | %.0e | SZ3 ABS | %.2f | %.3f | %.1f | %.4f (CLI) | - |" % (
                    name, p["rel"], s["ratio"], s["max_error"] / p["bound"], s["psnr"], s["cli_s"]))
    print()
    print("| volume | rel. bound | ratio / ZFP's | ratio / SZ3's | PSNR − ZFP's PSNR at equal ratio (dB) |")
    print("|---|---|---|---|---|")
    for name, per in results.items():
        zcurve = [(p["zfp"]["ratio"], p["zfp"]["psnr"]) for p in per["points"] if "zfp" in p]
        for p in per["points"]:
            if p["rel"] not in TABLE_BOUNDS:
                continue
            o = p["sparsegrid"]
            vs_zfp = o["ratio"] / p["zfp"]["ratio"] if "zfp" in p else float("nan")
            vs_sz3 = o["ratio"] / p["sz3"]["ratio"] if "sz3" in p else float("nan")
            zp = interpolate_psnr(zcurve, o["ratio"])
            p["summary"] = dict(ratio_vs_zfp=vs_zfp, ratio_vs_sz3=vs_sz3,
                                psnr_minus_zfp_at_equal_ratio=None if zp is None else o["psnr"] - zp)
            print("| %s | %.0e | %.2f | %.2f | %s |" % (
                name, p["rel"], vs_zfp, vs_sz3,
                "%+.1f" % (o["psnr"] - zp) if zp is not None else "outside ZFP's curve"))
    json.dump(results, open(args.out + ".json", "w"), indent=1)
    # Plot.
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(results), figsize=(5 * len(results), 4.2))
    axes = np.atleast_1d(axes)
    for ax, (name, per) in zip(axes, results.items()):
        for key, label, style in (("sparsegrid", "sparse-grid codec", "o-"), ("zfp", "ZFP 1.0 -a", "s--"),
                                  ("sz3", "SZ3 ABS", "^:")):
            pts = [(p[key]["ratio"], p[key]["psnr"]) for p in per["points"] if key in p]
            pts = [(r, q) for r, q in pts if math.isfinite(q)]
            if pts:
                pts.sort()
                ax.plot([r for r, _ in pts], [q for _, q in pts], style, label=label)
        ax.set_xscale("log")
        ax.set_xlabel("compression ratio (float32 bytes / file bytes)")
        ax.set_ylabel("PSNR (dB)")
        ax.set_title("%s %s" % (name, "x".join(str(d) for d in per["dims"])))
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(args.out + ".png", dpi=110)
    print("\nwrote %s.json and %s.png" % (args.out, args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
