"""Runs the real ParaView GUI under Xvfb on gui_script.py and checks what it drew.

    pvpython test_gui.py --paraview paraview --xvfb-run xvfb-run --plugin SparseGrid.so --out DIR

Checks: the script ran and found the compression filters under the "Compression" menu category; both
screenshots show the slice (enough non-background pixels); the pixels are colours of the
"Cool to Warm" map over [37, 277] (the reconstruction is drawn with the expected colours); and
the two pictures differ by what the reported RMSE predicts (level 4: visibly, so a filter that
passed the original through would fail).
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np
from paraview.simple import GetColorTransferFunction
from vtkmodules.util.numpy_support import vtk_to_numpy
from vtkmodules.vtkIOImage import vtkPNGReader


def read_png(path):
    reader = vtkPNGReader()
    reader.SetFileName(path)
    reader.Update()
    image = reader.GetOutput()
    w, h, _ = image.GetDimensions()
    return vtk_to_numpy(image.GetPointData().GetScalars()).reshape(h, w, -1)[:, :, :3].astype(np.float64)


def colour_table():
    lut = GetColorTransferFunction("RTData")
    lut.ApplyPreset("Cool to Warm", True)
    lut.RescaleTransferFunction(37.0, 277.0)
    ctf = lut.GetClientSideObject()
    table = []
    for v in np.linspace(37.0, 277.0, 1024):
        rgb = [0.0, 0.0, 0.0]
        ctf.GetColor(v, rgb)
        table.append(rgb)
    return np.array(table) * 255.0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--paraview", required=True)
    parser.add_argument("--xvfb-run", required=True)
    parser.add_argument("--plugin", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for name in ("summary.json", "original.png", "reconstruction.png", "compressed.png"):
        if os.path.exists(os.path.join(args.out, name)):
            os.remove(os.path.join(args.out, name))
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gui_script.py")
    env = dict(os.environ, SPARSEGRID_PLUGIN_FILE=args.plugin, SPARSEGRID_GUI_OUT=args.out)
    # --dr: no user settings; a 24-bit screen: xvfb-run's default depth is 8.
    command = [args.xvfb_run, "-a", "-s", "-screen 0 1280x1024x24", args.paraview, "--dr",
               "--script=" + script, "--exit"]
    print(" ".join(command))
    result = subprocess.run(command, env=env, timeout=240, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    print(result.stdout[-3000:])
    failures = []

    def check(condition, message):
        if not condition:
            failures.append(message)
            print("FAILED:", message)

    summary_path = os.path.join(args.out, "summary.json")
    check(os.path.exists(summary_path), "the GUI script wrote no summary")
    if not os.path.exists(summary_path):
        return 1
    with open(summary_path) as f:
        summary = json.load(f)
    check(summary.get("ok"), "the GUI script failed: %s" % summary.get("error"))
    if not summary.get("ok"):
        return 1
    print("summary:", summary)
    for name, category in summary["categories"].items():
        check(category == "Compression", "%s is in menu category %r" % (name, category))

    original = read_png(os.path.join(args.out, "original.png"))
    reconstruction = read_png(os.path.join(args.out, "reconstruction.png"))
    check(original.shape == reconstruction.shape, "screenshot sizes differ")
    table = colour_table()
    for name, picture in (("original", original), ("reconstruction", reconstruction)):
        pixels = picture.reshape(-1, 3)
        drawn = pixels[np.any(pixels > 8, axis=1)]
        fraction = len(drawn) / len(pixels)
        check(fraction > 0.3, "%s: only %.1f%% of the pixels are drawn" % (name, 100 * fraction))
        if len(drawn) == 0:
            continue
        # Distance of every drawn pixel to the nearest colour of the map.
        distance = np.min(np.linalg.norm(drawn[:, None, :] - table[None, ::4, :], axis=2), axis=1)
        on_map = float(np.mean(distance < 6.0))
        # A slice of the Wavelet spans much of the colour map: many distinct colours, spread
        # across pixels (a saturated or single-colour picture fails here).
        spread = float(np.mean(np.std(drawn, axis=0)))
        colours = len(np.unique(drawn.astype(np.int64) @ np.array([65536, 256, 1])))
        print("%s: %.1f%% drawn, %.2f%% of them on the colour map, %d colours, spread %.1f"
              % (name, 100 * fraction, 100 * on_map, colours, spread))
        check(on_map > 0.97, "%s: only %.1f%% of the pixels are colour-map colours" % (name, 100 * on_map))
        check(spread > 10 and colours > 50, "%s: the picture is nearly uniform" % name)
    compressed = read_png(os.path.join(args.out, "compressed.png"))
    drawn = float(np.mean(np.any(compressed > 8, axis=2)))
    print("compressed points: representation %s, %.2f%% of the pixels drawn"
          % (summary.get("compressed_representation"), 100 * drawn))
    check(summary.get("compressed_representation") == "Points", "the compressed data is not shown as points")
    check(drawn > 0.002, "the compressed points are not drawn")
    if original.shape == reconstruction.shape:
        diff = np.abs(original - reconstruction).max(axis=2)
        # The pictures differ as much as the data do: the RMSE in colour-map units (a range of
        # 240 over 255 levels per channel), within a factor 3 for the map's varying slope.
        expected = 255.0 * summary["rmse"] / 240.0
        print("original vs reconstruction: mean pixel difference %.3f, max %.0f; RMSE %.3g -> %.2f levels"
              % (diff.mean(), diff.max(), summary["rmse"], expected))
        check(diff.mean() > 0.1 * expected, "the reconstruction looks like the original passed through")
        check(diff.mean() < 3.0 * expected, "the reconstruction's picture differs more than its data")
    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
