"""The error-bounded default on the real volumes of SPARSEGRID_DATA_DIR, checked in numpy.

    pvpython test_volumes_bounded.py --plugin SparseGrid.so --data DIR --volume NAME

For relative bounds 1e-2, 1e-3 and 1e-4: every voxel of the reconstruction (Resample To Image on
the original geometry) is within bound x (max - min) of the original (float64, computed here),
and the compression ratio and PSNR stay above floors set from measured values (ratio 3 % below,
PSNR 1 dB below, measured values in MEASURED), so that a regression of the codec's
quality fails. Exit code 77 (skipped) when the volume is absent.
"""
import argparse
import math
import os
import sys

import numpy as np
from paraview import servermanager
from paraview.simple import *  # noqa: F401,F403 (pvpython convention)
from vtkmodules.util.numpy_support import vtk_to_numpy

VOLUMES = {
    "isabel": ("isabel02_velocityMag.vti", "velocityMag"),
    "hydrogen": ("hydrogen.vti", "probability_density"),
    "ironProt": ("ironProt.vtk", "scalars"),
}
# (relative bound) -> (ratio measured, PSNR measured in dB), measured 2026-11-29 with the
# per-stream level-wise quantisation schedule (one quantiser for every level where trial coding of
# sampled blocks finds it smaller: hydrogen at 1e-4 and the iron protein, which trade 0.7-1.6 dB of
# PSNR at the same bound for 1-21 % more ratio); ratio = input array bytes / coded bytes (Isabel's
# file holds doubles, the iron protein uint8, hydrogen float).
MEASURED = {
    "isabel": {1e-2: (109.83, 47.34), 1e-3: (31.02, 66.26), 1e-4: (13.07, 84.85)},
    "hydrogen": {1e-2: (379.37, 52.35), 1e-3: (101.96, 70.54), 1e-4: (28.91, 87.09)},
    "ironProt": {1e-2: (11.50, 48.56), 1e-3: (3.83, 70.47), 1e-4: (3.27, 87.85)},
}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--plugin", required=True)
    parser.add_argument("--data", required=True)
    parser.add_argument("--volume", required=True, choices=sorted(VOLUMES))
    parser.add_argument("--measure", action="store_true", help="print the values, check only the bound")
    args = parser.parse_args()
    name, array = VOLUMES[args.volume]
    path = os.path.join(args.data, name)
    if not os.path.exists(path):
        print("%s is absent: skipped" % path)
        return 77
    LoadPlugin(args.plugin, remote=False, ns=globals())
    source = OpenDataFile(path)
    source.UpdatePipeline()
    original = vtk_to_numpy(servermanager.Fetch(source).GetPointData().GetArray(array)).astype(np.float64)
    value_range = float(original.max() - original.min())
    failures = 0
    for bound, (ratio_measured, psnr_measured) in sorted(MEASURED[args.volume].items()):
        h = SparseGridHierarchize(Input=source, Scalars=[array], ErrorBoundMode="Relative",
                                  ErrorBound=bound)
        volume = SparseGridResampleToImage(Input=h, UseOriginalGeometry=1)
        volume.UpdatePipeline()
        rep = servermanager.Fetch(h).GetFieldData()
        ratio = rep.GetArray("SparseGrid.CompressionRatio").GetValue(0)
        decoded = vtk_to_numpy(servermanager.Fetch(volume).GetPointData().GetArray(array)).astype(np.float64)
        error = np.abs(decoded - original)
        rmse = float(np.sqrt(np.mean(error * error)))
        psnr = math.inf if rmse == 0 else 20 * math.log10(value_range / rmse)
        limit = bound * value_range
        print("%s rel %g: ratio %.2f (floor %.2f), max error %.6g (bound %.6g), PSNR %.2f dB (floor %.1f)"
              % (args.volume, bound, ratio, 0.97 * ratio_measured, float(error.max()), limit, psnr,
                 psnr_measured - 1))
        checks = [(float(error.max()) <= limit, "the bound is kept on every voxel")]
        if not args.measure:
            checks += [(ratio >= 0.97 * ratio_measured, "ratio above its floor"),
                       (psnr >= psnr_measured - 1, "PSNR above its floor")]
        for ok, what in checks:
            if not ok:
                print("FAILED: %s rel %g: %s" % (args.volume, bound, what))
                failures += 1
        Delete(volume)
        Delete(h)
    return 1 if failures else 0


if __name__ == "__main__":
    status = main()
    if status:
        sys.exit(status)
