#!/usr/bin/env python3
"""Compares the project's error-bounded codec with ZFP (accuracy mode), SZ3 (ABS mode), QoZ 2.0
(ABS mode, -q 4) and SPERR (point-wise error, --pwe) on the volumes of ../shared/data, converted to
float32 (little-endian, x fastest), at the same absolute bounds (relative 1e-2, 1e-3, 1e-4 of each
volume's range, plus more bounds for the PSNR-vs-ratio curves).

Prints, per volume and bound, ratio, max error / bound, PSNR and compress / decompress speed of
every codec found (a table, then the project's ratio against the best of SZ3, QoZ and SPERR and its
PSNR against each codec's PSNR at equal ratio, each curve interpolated in log(ratio)); writes a
JSON file and, when matplotlib is installed, a PNG plot of PSNR against ratio.

    scripts/compare-codecs.py --bench build/bin/sparsegrid-codec-bench \\
        [--sz3 SZ3] [--qoz QOZ] [--sperr SPERR3D] [--zfp zfp] [--out out/compare] [--quick]

The competitors' binaries come from the options or from the environment variables SZ3, QOZ and
SPERR3D (ZFP: `zfp` on the PATH); a codec without a binary is skipped with a line saying so.
Ratio = float32 bytes / bytes of the compressed file (ZFP with its header, -h; the others' files;
the project's stream with its header). PSNR = 20 log10(range / RMSE) in float64 on every voxel.
Speed = MB/s of float32 input: the project (and ZFP's library) from sparsegrid-codec-bench (same
harness, median of --repeats, --threads threads); the other codecs from their command lines, median
wall time of --repeats runs, process start and file I/O included (SPERR with OMP_NUM_THREADS =
--threads; SZ3 and QoZ run serially), so the CLI speeds are lower bounds.
"""
import argparse
import json
import math
import os
import shutil
import statistics
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
# (key, label, plot style); "sparsegrid" first.
CODECS = (("sparsegrid", "sparse-grid codec", "o-"), ("zfp", "ZFP 1.0 -a", "s--"),
          ("sz3", "SZ3 ABS", "^:"), ("qoz", "QoZ 2.0 -q 4", "v-."), ("sperr", "SPERR --pwe", "D--"))
ANCHORS = ("sz3", "qoz", "sperr")


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
               compress_s=ours_c["seconds"], decompress_s=ours_d["seconds"], timing="library")
    zfp_lib = None
    if ("zfp-accuracy", "compress") in rows:
        zc, zd = rows[("zfp-accuracy", "compress")], rows[("zfp-accuracy", "decompress")]
        zfp_lib = dict(compress_s=zc["seconds"], decompress_s=zd["seconds"], ratio=zc["ratio"])
    return out, zfp_lib


def timed(cmd, repeats, env=None):
    """Median wall time of `repeats` runs of a command (it must succeed)."""
    times = []
    for _ in range(max(1, repeats)):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True, env=env)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def cli_commands(key, exe, raw, dims, bound, z, back):
    """(compress command, decompress command) of a competitor's command line."""
    d = [str(v) for v in dims]
    b = repr(bound)
    if key == "zfp":
        return ([exe, "-i", raw, "-z", z, "-f", "-3"] + d + ["-a", b, "-h"],
                [exe, "-h", "-z", z, "-o", back])
    if key == "sz3":
        return ([exe, "-f", "-i", raw, "-z", z, "-3"] + d + ["-M", "ABS", b],
                [exe, "-f", "-z", z, "-o", back, "-3"] + d)
    if key == "qoz":
        return ([exe, "-f", "-i", raw, "-z", z, "-3"] + d + ["-M", "ABS", b, "-q", "4"],
                [exe, "-f", "-z", z, "-o", back, "-3"] + d)
    if key == "sperr":
        return ([exe, "-c", "--ftype", "32", "--dims"] + d + ["--pwe", b, "--bitstream", z, raw],
                [exe, "-d", "--decomp_f", back, z])
    raise ValueError(key)


def run_cli(key, exe, raw, dims, bound, original, tmp, repeats, threads):
    z, back = os.path.join(tmp, "x." + key), os.path.join(tmp, "x.%s.f32" % key)
    for f in (z, back):
        if os.path.exists(f):
            os.remove(f)
    comp, decomp = cli_commands(key, exe, raw, dims, bound, z, back)
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    compress_s = timed(comp, repeats, env)
    decompress_s = timed(decomp, repeats, env)
    decoded = np.fromfile(back, "<f4").reshape(original.shape)
    err, psnr = metrics(original, decoded)
    return dict(ratio=original.nbytes / os.path.getsize(z), max_error=err, psnr=psnr,
                compress_s=compress_s, decompress_s=decompress_s, timing="CLI")


def interpolate_psnr(curve, ratio):
    """PSNR of a codec's curve [(ratio, psnr)] at `ratio`, linear in log(ratio); None outside."""
    pts = sorted((math.log(r), p) for r, p in curve if math.isfinite(p))
    x = math.log(ratio)
    for (x0, p0), (x1, p1) in zip(pts, pts[1:]):
        if x0 <= x <= x1 and x1 > x0:
            return p0 + (p1 - p0) * (x - x0) / (x1 - x0)
    return None


def curve(per, key):
    return [(p[key]["ratio"], p[key]["psnr"]) for p in per["points"] if key in p]


def print_tables(results, found):
    mb = lambda nbytes, s: "%.0f" % (nbytes / s / 1e6) if s and s > 0 else "-"  # noqa: E731
    print("| volume | rel. bound | codec | ratio | max error / bound | PSNR dB | compress MB/s | decompress MB/s |")
    print("|---|---|---|---|---|---|---|---|")
    for name, per in results.items():
        nbytes = 4 * per["dims"][0] * per["dims"][1] * per["dims"][2]
        for p in per["points"]:
            if p["rel"] not in TABLE_BOUNDS:
                continue
            for key, label, _ in CODECS:
                if key not in p:
                    continue
                r = p[key]
                if key == "zfp" and p.get("zfp_library"):
                    cs, ds, how = p["zfp_library"]["compress_s"], p["zfp_library"]["decompress_s"], ""
                else:
                    cs, ds = r["compress_s"], r["decompress_s"]
                    how = " (CLI)" if r.get("timing") == "CLI" else ""
                print("| %s | %.0e | %s | %.2f | %.3f | %.1f | %s%s | %s%s |" % (
                    name, p["rel"], label, r["ratio"], r["max_error"] / p["bound"], r["psnr"],
                    mb(nbytes, cs), how, mb(nbytes, ds), how))
    anchors = [k for k in ANCHORS if k in found]
    print()
    print("| volume | rel. bound | ours | " + " | ".join(dict((k, l) for k, l, _ in CODECS)[k]
                                                     for k in anchors) +
          " | ours / best | PSNR − each at equal ratio (dB) |")
    print("|---|---|---|" + "---|" * len(anchors) + "---|---|")
    for name, per in results.items():
        curves = {k: curve(per, k) for k, _, _ in CODECS if k in found}
        for p in per["points"]:
            if p["rel"] not in TABLE_BOUNDS:
                continue
            o = p["sparsegrid"]
            best = max((p[k]["ratio"] for k in anchors if k in p), default=float("nan"))
            diffs = {}
            for k in curves:
                q = interpolate_psnr(curves[k], o["ratio"])
                diffs[k] = None if q is None else o["psnr"] - q
            p["summary"] = dict(ratio_vs_best_anchor=o["ratio"] / best,
                                psnr_minus_at_equal_ratio=diffs)
            print("| %s | %.0e | %.3g | %s | %.2f | %s |" % (
                name, p["rel"], o["ratio"], " | ".join("%.3g" % p[k]["ratio"] if k in p else "-"
                                                       for k in anchors), o["ratio"] / best,
                ", ".join("%s %s" % (k, "%+.1f" % v if v is not None else "outside")
                          for k, v in diffs.items())))


def plot(results, out):
    try:
        import matplotlib
    except ImportError:
        print("matplotlib not installed: no plot (the table above gives PSNR at equal ratio)")
        return False
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(results), figsize=(5 * len(results), 4.2))
    axes = np.atleast_1d(axes)
    for ax, (name, per) in zip(axes, results.items()):
        for key, label, style in CODECS:
            pts = sorted((r, q) for r, q in curve(per, key) if math.isfinite(q))
            if pts:
                ax.plot([r for r, _ in pts], [q for _, q in pts], style, label=label, markersize=4)
        ax.set_xscale("log")
        ax.set_xlabel("compression ratio (float32 bytes / file bytes)")
        ax.set_ylabel("PSNR (dB)")
        ax.set_title("%s %s" % (name, "x".join(str(d) for d in per["dims"])))
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out + ".png", dpi=110)
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", required=True, help="path of sparsegrid-codec-bench")
    ap.add_argument("--zfp", default=shutil.which("zfp"), help="zfp CLI (Debian package zfp)")
    ap.add_argument("--sz3", default=os.environ.get("SZ3"), help="a built sz3 binary (or $SZ3)")
    ap.add_argument("--qoz", default=os.environ.get("QOZ"), help="a built QoZ 2.0 qoz binary (or $QOZ)")
    ap.add_argument("--sperr", default=os.environ.get("SPERR3D"),
                    help="a built SPERR sperr3d binary (or $SPERR3D)")
    ap.add_argument("--out", default="out/compare", help="prefix of the .json and .png written")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=5, help="timed runs at the table's bounds")
    ap.add_argument("--quick", action="store_true", help="the table's bounds only (no curves)")
    args = ap.parse_args()
    volumes = sharedvolumes.shared_volumes()
    if not volumes:
        print("no volumes: ../shared/data not found (set SPARSEGRID_DATA)")
        return 1
    found = {}
    for key, label, _ in CODECS[1:]:
        exe = getattr(args, key)
        if exe and (os.access(exe, os.X_OK) or shutil.which(exe)):
            found[key] = exe
        else:
            print("skipped: %s (no binary: give --%s%s)" % (
                label, key, "" if key == "zfp" else " or set $" + {"sz3": "SZ3", "qoz": "QOZ",
                                                                  "sperr": "SPERR3D"}[key]))
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    bounds = TABLE_BOUNDS if args.quick else tuple(sorted(set(CURVE_BOUNDS) | set(TABLE_BOUNDS),
                                                          reverse=True))
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, arr, dims in volumes:
            original = arr.astype("<f4")
            raw = os.path.join(tmp, name + ".f32")
            original.tofile(raw)
            value_range = float(original.max()) - float(original.min())
            per = results.setdefault(name, dict(dims=dims, input_type=str(arr.dtype), points=[]))
            for rel in bounds:
                bound = rel * value_range
                repeats = args.repeats if rel in TABLE_BOUNDS else 1
                ours, zfp_lib = run_project(args.bench, raw, dims, bound, args.threads, repeats)
                point = dict(rel=rel, bound=bound, sparsegrid=ours, zfp_library=zfp_lib)
                for key, exe in found.items():
                    point[key] = run_cli(key, exe, raw, dims, bound, original, tmp,
                                         repeats if key != "zfp" or not zfp_lib else 1, args.threads)
                per["points"].append(point)
            if "zfp" in found and not args.quick:
                for rel in ZFP_EXTRA_BOUNDS:
                    bound = rel * value_range
                    per["points"].append(dict(rel=rel, bound=bound, zfp=run_cli(
                        "zfp", found["zfp"], raw, dims, bound, original, tmp, 1, args.threads)))
    print_tables(results, found)
    # sparsegrid-codec-bench prints its max error with 6 significant digits (the codec's tests
    # check the bound on every voxel in long double); the others are measured here in float64.
    for name, per in results.items():
        for p in per["points"]:
            for key, _, _ in CODECS:
                slack = 1 + 5e-6 if key == "sparsegrid" else 1.0
                if key in p and p[key]["max_error"] > p["bound"] * slack:
                    print("BOUND BROKEN: %s %s at %.0e: max error / bound = %.6f" % (
                        name, key, p["rel"], p[key]["max_error"] / p["bound"]))
    json.dump(dict(codecs={k: v for k, v in found.items()}, threads=args.threads,
                   volumes=results), open(args.out + ".json", "w"), indent=1)
    wrote = plot(results, args.out) if not args.quick else False
    print("\nwrote %s.json%s" % (args.out, " and %s.png" % args.out if wrote else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
