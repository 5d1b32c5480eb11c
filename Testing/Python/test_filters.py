"""pvpython test of the SparseGrid plugin's filters.

Loads the plugin, compresses a volume with Sparse Grid Hierarchize, reconstructs it with Sparse
Grid Reconstruct (on the volume itself and on a structured-grid copy of it, which takes the
point-by-point path) and with Sparse Grid Resample To Image, and checks the numbers against
independent computations: the grid size from the definition of the grid, the compression
ratio from the array sizes, the error metrics in numpy from the original and reconstructed
arrays.

    pvpython test_filters.py --plugin SparseGrid.so --case wavelet|wavelet2d|hydrogen|ironProt|isabel
        [--data DIR]

Exit status 77 (CTest's skip code) when a data file is absent.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sparsegrid_checks import SKIP, Checker, close, count_points, field, level_for_samples, metrics

import numpy as np
from paraview import servermanager
from paraview.simple import *  # noqa: F401,F403 (pvpython convention)
from vtkmodules.util.numpy_support import vtk_to_numpy

DATA_FILES = {
    "hydrogen": "hydrogen.vti",
    "ironProt": "ironProt.vtk",
    "isabel": "isabel02_velocityMag.vti",
}


def array_of(data, name):
    array = data.GetPointData().GetArray(name)
    if array is None:
        raise AssertionError("no point array %s" % name)
    return vtk_to_numpy(array)


def check_compression(checker, label, source, arrays, precision, level=0):
    """Compresses `arrays` of `source`, checks metadata and errors; returns a result row."""
    h = SparseGridHierarchize(ErrorBoundMode="Off", Input=source)
    h.Scalars = arrays
    h.Precision = precision
    h.Level = level
    h.ComputeError = 1
    start = time.time()
    h.UpdatePipeline()
    seconds_compress = time.time() - start
    rep = servermanager.Fetch(h)
    image = servermanager.Fetch(source)
    dims = image.GetDimensions()

    # Metadata against the image and the definition of the grid.
    axes = [a for a in range(3) if dims[a] > 1]
    caps = [level_for_samples(dims[a]) for a in axes]
    full = sum(max(c, 1) for c in caps) - len(caps) + 1
    L = level if level > 0 else min(max(caps) + 2, full)
    N = count_points(L, caps, True)
    checker.check(field(rep, "SparseGrid.Dimensions", 0) == len(axes), label + ": D")
    checker.check(field(rep, "SparseGrid.AxisMap") == [float(a) for a in axes], label + ": axis map")
    checker.check(field(rep, "SparseGrid.LevelCaps") == [float(c) for c in caps], label + ": caps")
    checker.check(field(rep, "SparseGrid.Level", 0) == L, label + ": level")
    checker.check(field(rep, "SparseGrid.NumberOfCoefficients", 0) == N,
                  "%s: %s coefficients, expected %d" % (label, field(rep, "SparseGrid.NumberOfCoefficients", 0), N))
    checker.check(rep.GetNumberOfPoints() == 0, label + ": no per-point geometry by default")
    checker.check(field(rep, "SparseGrid.Precision", 0) == precision, label + ": precision")
    checker.check(field(rep, "SparseGrid.ArrayNames") == list(arrays), label + ": array names")
    bounds = image.GetBounds()
    checker.check(all(close(a, b, 1e-12, 1e-12) for a, b in zip(field(rep, "SparseGrid.Bounds"), bounds)),
                  label + ": bounds")
    input_bytes = 0
    components = 0
    for name in arrays:
        a = image.GetPointData().GetArray(name)
        input_bytes += a.GetNumberOfValues() * a.GetDataTypeSize()
        components += a.GetNumberOfComponents()
        c = rep.GetFieldData().GetArray(name + " Surpluses")
        checker.check(c is not None and c.GetNumberOfComponents() == a.GetNumberOfComponents()
                      and c.GetNumberOfTuples() == N, label + ": coefficient array " + name)
    coefficient_bytes = N * components * (4 if precision == "Float" else 8)
    ratio = input_bytes / coefficient_bytes
    checker.check(close(field(rep, "SparseGrid.CompressionRatio", 0), ratio, 1e-12),
                  "%s: ratio %s, expected %g" % (label, field(rep, "SparseGrid.CompressionRatio", 0), ratio))
    checker.check(field(rep, "SparseGrid.Backend", 0) in ("CPU", "CUDA"), label + ": backend")

    # Reconstruction on the input's own points: the exact image path.
    r = SparseGridReconstruct(Input=source, Source=h)
    start = time.time()
    r.UpdatePipeline()
    seconds_reconstruct = time.time() - start
    out = servermanager.Fetch(r)
    checker.check(np.all(array_of(out, "vtkValidPointMask") == 1), label + ": all points valid")
    rows = []
    for i, name in enumerate(arrays):
        reference = array_of(image, name)
        approx = array_of(out, name)
        checker.check(approx.shape == reference.shape, label + ": reconstructed shape")
        max_abs, rmse, psnr = metrics(reference, approx)
        reported = (field(rep, "SparseGrid.MaxAbsError", i), field(rep, "SparseGrid.RMSE", i),
                    field(rep, "SparseGrid.PSNR", i))
        # The filter measures in the coefficients' precision on its own reconstruction; allow
        # for float rounding between that and this one.
        tol = 1e-5 if precision == "Float" else 1e-9
        scale = float(np.max(reference) - np.min(reference))
        checker.check(close(reported[0], max_abs, tol, tol * scale),
                      "%s/%s: MaxAbsError %g, numpy %g" % (label, name, reported[0], max_abs))
        checker.check(close(reported[1], rmse, tol, tol * scale),
                      "%s/%s: RMSE %g, numpy %g" % (label, name, reported[1], rmse))
        checker.check(close(reported[2], psnr, 1e-4, 1e-4),
                      "%s/%s: PSNR %g, numpy %g" % (label, name, reported[2], psnr))
        rows.append((name, max_abs, rmse, psnr))

    # Resample onto the original geometry: same points, same values.
    s = SparseGridResampleToImage(Input=h)
    s.UseOriginalGeometry = 1
    s.UpdatePipeline()
    resampled = servermanager.Fetch(s)
    checker.check(resampled.GetDimensions() == dims, label + ": resampled dims %s" % (resampled.GetDimensions(),))
    checker.check(all(close(a, b, 1e-12, 1e-9) for a, b in zip(resampled.GetBounds(), bounds)),
                  label + ": resampled bounds")
    for name in arrays:
        diff = np.max(np.abs(array_of(resampled, name).astype(np.float64) - array_of(out, name)))
        checker.check(diff == 0, "%s/%s: resample differs from reconstruct by %g" % (label, name, diff))

    # Resample to 40^3 over the input bounds (or 40^2 x 1 for a flat image).
    s2 = SparseGridResampleToImage(Input=h)
    s2.SamplingDimensions = [40 if d > 1 else 1 for d in dims]
    s2.UpdatePipeline()
    coarse = servermanager.Fetch(s2)
    checker.check(list(coarse.GetDimensions()) == [40 if d > 1 else 1 for d in dims], label + ": sampling dims")
    checker.check(all(close(a, b, 1e-9, 1e-9) for a, b in zip(coarse.GetBounds(), bounds)), label + ": sampling bounds")
    checker.check(np.all(array_of(coarse, "vtkValidPointMask") == 1), label + ": resample mask")

    # A structured-grid copy of the input: evaluated point by point, same values.
    t = Transform(Input=source)
    r2 = SparseGridReconstruct(Input=t, Source=h)
    r2.UpdatePipeline()
    pointwise = servermanager.Fetch(r2)
    checker.check(pointwise.IsA("vtkStructuredGrid"), label + ": structured output")
    for name in arrays:
        a = array_of(pointwise, name).astype(np.float64)
        b = array_of(out, name).astype(np.float64)
        scale = max(1.0, float(np.max(np.abs(b))))
        diff = float(np.max(np.abs(a - b)))
        limit = (2e-5 if precision == "Float" else 1e-9) * scale
        checker.check(diff <= limit, "%s/%s: point path differs by %g (limit %g)" % (label, name, diff, limit))

    for proxy in (r2, t, s2, s, r, h):
        Delete(proxy)
    print("%-10s dims %-14s level %2d coefficients %8d ratio %7.2f compress %.2fs reconstruct %.2fs"
          % (label, "x".join(str(d) for d in dims), L, N, ratio, seconds_compress, seconds_reconstruct))
    for name, max_abs, rmse, psnr in rows:
        print("           %-20s max abs %.4g  RMSE %.4g  PSNR %.2f dB" % (name, max_abs, rmse, psnr))
    return rows


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--plugin", required=True)
    parser.add_argument("--case", required=True)
    parser.add_argument("--data", default="")
    args = parser.parse_args()
    LoadPlugin(args.plugin, remote=False, ns=globals())
    checker = Checker()

    if args.case == "wavelet":
        w = Wavelet()
        w.WholeExtent = [-16, 16, -16, 16, -16, 16]
        c = Calculator(Input=w)
        c.ResultArrayName = "vec"
        c.Function = "RTData*iHat + coordsX*jHat + coordsY*coordsZ*kHat"
        rows = check_compression(checker, "wavelet", c, ["RTData", "vec"], "Double")
        check_compression(checker, "wavelet-L8", c, ["RTData"], "Float", level=8)
        # The 'vec' y component is linear, z bilinear: reproduced exactly with boundary points.
        h = SparseGridHierarchize(ErrorBoundMode="Off", Input=c)
        h.Scalars = ["vec"]
        h.Precision = "Double"
        r = SparseGridReconstruct(Input=c, Source=h)
        r.UpdatePipeline()
        vec = array_of(servermanager.Fetch(r), "vec")
        ref = array_of(servermanager.Fetch(c), "vec")
        err = np.max(np.abs(vec[:, 1:] - ref[:, 1:]))
        checker.check(err < 1e-10, "multilinear components exact (error %g)" % err)
        # A CUDA request falls back to the CPU with a note where no GPU can run.
        h.Backend = "CUDA"
        h.UpdatePipeline()
        rep = servermanager.Fetch(h)
        backend = field(rep, "SparseGrid.Backend", 0)
        note = field(rep, "SparseGrid.BackendNote", 0)
        print("Backend=CUDA ran on %s; note: %s" % (backend, note or "(none)"))
        checker.check(backend == "CUDA" or note != "", "fallback is explained")
    elif args.case == "wavelet2d":
        w = Wavelet()
        w.WholeExtent = [-20, 20, 0, 0, -12, 12]
        check_compression(checker, "wavelet2d", w, ["RTData"], "Double")
    elif args.case in DATA_FILES:
        path = os.path.join(args.data, DATA_FILES[args.case])
        if not os.path.exists(path):
            print("SKIP: %s is absent (set SPARSEGRID_DATA_DIR)" % path)
            return SKIP
        reader = OpenDataFile(path)
        reader.UpdatePipeline()
        name = reader.PointData.keys()[0]
        check_compression(checker, args.case, reader, [name], "Float")
    else:
        print("unknown case", args.case)
        return 2
    return checker.finish()


if __name__ == "__main__":
    sys.exit(main())
