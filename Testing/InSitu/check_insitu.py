"""pvpython checks of the in-situ example's output (Examples/Catalyst).

    pvpython check_insitu.py heat    --plugin SparseGrid.so --dir RUN --steps 0,2,4 --skipped 1,3
    pvpython check_insitu.py compare --plugin SparseGrid.so --dir RUN1 --other RUN2 --steps 0,2,4
    pvpython check_insitu.py wavelet --plugin SparseGrid.so --dir RUN --steps 4 --size 33

heat: RUN holds what the heat example wrote (sgrid/field_NNNNNN.sgrid, dump/exact_NNNNNN.raw +
.json, log.txt). For each step, the .sgrid file is read back with the plugin's reader,
reconstructed on the image's own points and compared with the simulation's exact field; the same
exact field is compressed offline (Sparse Grid Hierarchize with the script's default settings)
and the in-situ error must be within what the offline compression gives. The log's per-step
line must match the file, and the steps the trigger skipped must have no file.

compare: the files of two runs (1 and 2 ranks) hold the same sparse grid with the same
coefficients (see COEFFICIENT_TOLERANCE), and the simulations' exact fields are identical.

bounded: RUN holds what the heat example wrote with the script's error-bounded setting; every
value read back is within the file's bound of the exact field (and the bound is the requested one).

wavelet: RUN holds what the Catalyst script wrote under ParaView's wavelet mini-app; the field is
recomputed here (vtkRTAnalyticSource with the mini-app's parameters) and checked as for heat.
"""
import argparse
import json
import math
import os
import re
import sys

import numpy as np
from paraview import servermanager
from paraview.simple import *  # noqa: F401,F403 (pvpython convention)
from vtkmodules.util.numpy_support import numpy_to_vtk, vtk_to_numpy
from vtkmodules.vtkCommonDataModel import vtkImageData

# The in-situ file and the offline compression see the same values and run the same code, so
# their errors agree to rounding. Allowed: 0.1 % of the offline error plus 1e-7 of the value
# range (float32 coefficients carry about 7 digits).
ERROR_RELATIVE_TOLERANCE = 1e-3
ERROR_RANGE_TOLERANCE = 1e-7

# 1 rank and 2 ranks: the simulations' fields are bit for bit equal (checked), each grid point is
# sampled from exactly one rank's piece and the others add exact zeros, so the hierarchization
# sees the same numbers and the coefficients come out equal. The tolerance, 1e-6 of the largest
# coefficient (a few float32 ulps), only leaves room for a summation order that a future
# distributed implementation might change; the test reports how many are bit-identical.
COEFFICIENT_TOLERANCE = 1e-6

# Sanity bound, so that a broken pipeline that is equally broken offline still fails: the
# default level must give at least this PSNR (dB) on these smooth fields.
MIN_PSNR = 30.0

FAILURES = []


def check(condition, message):
    status = "ok  " if condition else "FAIL"
    print("%s %s" % (status, message), flush=True)
    if not condition:
        FAILURES.append(message)


def metrics(reference, approx):
    ref = np.asarray(reference, dtype=np.float64).ravel()
    err = np.asarray(approx, dtype=np.float64).ravel() - ref
    max_abs = float(np.max(np.abs(err)))
    rmse = float(np.sqrt(np.mean(err * err)))
    value_range = float(ref.max() - ref.min())
    psnr = math.inf if rmse == 0 else 20 * math.log10(value_range / rmse)
    return {"max_abs": max_abs, "rmse": rmse, "range": value_range, "psnr": psnr}


def field(data, name, as_list=False):
    array = data.GetFieldData().GetAbstractArray("SparseGrid." + name)
    if array is None:
        raise AssertionError("no field data SparseGrid." + name)
    values = [array.GetVariantValue(i) for i in range(array.GetNumberOfValues())]
    values = [v.ToString() if v.IsString() else v.ToDouble() for v in values]
    return values if as_list or len(values) != 1 else values[0]


def make_image(values, dims, origin, spacing, name):
    """vtkImageData of values (x fastest) with the given geometry."""
    image = vtkImageData()
    image.SetDimensions(*dims)
    image.SetOrigin(*origin)
    image.SetSpacing(*spacing)
    array = numpy_to_vtk(np.ascontiguousarray(values, dtype=np.float64).ravel(), deep=1)
    array.SetName(name)
    image.GetPointData().AddArray(array)
    image.GetPointData().SetActiveScalars(name)
    return image


def surpluses(representation, name):
    """The hierarchical surpluses of array `name`: field data of the fixed-level
    representation, under "<name> Surpluses" (never under the data's own name)."""
    array = representation.GetFieldData().GetArray(name + " Surpluses")
    if array is None:
        raise AssertionError("the representation has no field array '%s Surpluses'" % name)
    return vtk_to_numpy(array)


def compress_offline(image, name):
    """The dumped field through the same filter, with the Catalyst script's default settings
    (Level 0 = automatic, Float, Boundary 1): coefficients, representation and reconstruction."""
    source = PVTrivialProducer()
    source.GetClientSideObject().SetOutput(image)
    compressed = SparseGridHierarchize(ErrorBoundMode="Off", Input=source)
    compressed.Scalars = [name]
    compressed.Level = 0
    compressed.Precision = "Float"
    compressed.Boundary = 1
    compressed.UpdatePipeline()
    representation = servermanager.Fetch(compressed)
    volume = SparseGridResampleToImage(Input=compressed)
    volume.UseOriginalGeometry = 1
    volume.UpdatePipeline()
    reconstructed = servermanager.Fetch(volume)
    values = vtk_to_numpy(reconstructed.GetPointData().GetArray(name))
    coefficients = surpluses(representation, name)
    for proxy in (volume, compressed, source):
        Delete(proxy)
    return representation, coefficients, values


def read_file(path, name):
    """The .sgrid file through the plugin's reader: its representation (coefficients and
    SparseGrid.* field data) and its reconstruction on the image's own points."""
    reader = OpenDataFile(path)
    if reader is None:
        raise AssertionError("no reader for " + path)
    reader.OutputReconstructedImage = 0
    reader.UpdatePipeline()
    representation = servermanager.Fetch(reader)
    coefficients = surpluses(representation, name).copy()
    reader.OutputReconstructedImage = 1
    reader.SamplingDimensions = [0, 0, 0]
    reader.UpdatePipeline()
    image = servermanager.Fetch(reader)
    values = vtk_to_numpy(image.GetPointData().GetArray(name)).copy()
    dims = image.GetDimensions()
    Delete(reader)
    return representation, coefficients, values, dims


def check_step(label, path, exact, dims, origin, spacing, name, logged=None):
    """Reads one in-situ file and checks it against the exact field and the offline
    compression of the same field."""
    check(os.path.exists(path), "%s: %s exists" % (label, path))
    if not os.path.exists(path):
        return
    representation, coefficients, values, read_dims = read_file(path, name)
    check(tuple(read_dims) == tuple(dims), "%s: reconstructed on %s points (image %s)"
          % (label, tuple(read_dims), tuple(dims)))
    insitu = metrics(exact, values)
    offline_rep, offline_coefficients, offline_values = compress_offline(
        make_image(exact, dims, origin, spacing, name), name)
    offline = metrics(exact, offline_values)
    print("     %s: in situ max|e| %.6g rmse %.6g psnr %.2f dB; offline max|e| %.6g rmse %.6g "
          "psnr %.2f dB; range %.6g" % (label, insitu["max_abs"], insitu["rmse"], insitu["psnr"],
                                        offline["max_abs"], offline["rmse"], offline["psnr"],
                                        insitu["range"]))
    slack = ERROR_RANGE_TOLERANCE * insitu["range"]
    for key in ("max_abs", "rmse"):
        check(insitu[key] <= offline[key] * (1 + ERROR_RELATIVE_TOLERANCE) + slack,
              "%s: in-situ %s %.6g within offline %.6g" % (label, key, insitu[key], offline[key]))
    check(insitu["psnr"] >= MIN_PSNR, "%s: PSNR %.2f dB >= %g dB" % (label, insitu["psnr"],
                                                                    MIN_PSNR))
    for key in ("Level", "LevelCaps", "Boundary", "Precision", "NumberOfCoefficients",
                "ImageDimensions"):
        check(field(representation, key) == field(offline_rep, key),
              "%s: %s %s as offline" % (label, key, field(representation, key)))
    if coefficients.shape == offline_coefficients.shape:
        scale = max(float(np.max(np.abs(offline_coefficients))), 1e-300)
        diff = float(np.max(np.abs(coefficients.astype(np.float64) - offline_coefficients)))
        check(diff <= COEFFICIENT_TOLERANCE * scale,
              "%s: coefficients as offline (max diff %.3g, %d of %d identical)"
              % (label, diff, int(np.sum(coefficients == offline_coefficients)),
                 coefficients.size))
    if logged is not None:
        ratio = field(representation, "CompressionRatio")
        check(abs(logged["ratio"] - ratio) <= 1e-3 * ratio,
              "%s: logged ratio %.4g = file's %.4g" % (label, logged["ratio"], ratio))
        check(logged["coefficients"] == int(field(representation, "NumberOfCoefficients")),
              "%s: logged coefficient count %d" % (label, logged["coefficients"]))
        check(logged["bytes"] == os.path.getsize(path),
              "%s: logged size %d bytes" % (label, logged["bytes"]))
        check(logged["hierarchize_s"] >= 0 and logged["update_s"] >= 0,
              "%s: logged times %.4g s (hierarchize), %.4g s (update)"
              % (label, logged["hierarchize_s"], logged["update_s"]))


def parse_log(path):
    """The Catalyst script's per-step lines: {step: {key: value}}."""
    steps = {}
    ran = {}
    with open(path) as log:
        for line in log:
            match = re.search(r"\[SparseGrid\] step=(\d+) (.*)", line)
            if match and "=" in match.group(2):
                values = dict(kv.split("=", 1) for kv in match.group(2).split() if "=" in kv)
                record = {}
                for key, value in values.items():
                    try:
                        record[key] = float(value)
                    except ValueError:
                        record[key] = value
                if "coefficients" in record:
                    record["coefficients"] = int(record["coefficients"])
                    record["bytes"] = int(record["bytes"])
                    steps[int(match.group(1))] = record
            match = re.search(r"\[heat\] step=(\d+) .*catalyst_ran=(\d)", line)
            if match:
                ran[int(match.group(1))] = int(match.group(2))
    return steps, ran


def steps_of(text):
    return [int(s) for s in text.split(",") if s != ""]


def run_heat(args):
    logged, ran = parse_log(os.path.join(args.dir, "log.txt"))
    for step in steps_of(args.steps):
        with open(os.path.join(args.dir, "dump", "exact_%06d.json" % step)) as f:
            meta = json.load(f)
        exact = np.fromfile(os.path.join(args.dir, "dump", meta["raw"]), dtype="<f8")
        dims = meta["dims"]
        check(exact.size == dims[0] * dims[1] * dims[2], "step %d: exact field of %s points"
              % (step, dims))
        check(step in logged, "step %d: the script reported it" % step)
        check_step("step %d" % step, os.path.join(args.dir, "sgrid", "field_%06d.sgrid" % step),
                   exact, dims, meta["origin"], meta["spacing"], meta["array"],
                   logged.get(step))
    for step in steps_of(args.skipped):
        check(not os.path.exists(os.path.join(args.dir, "sgrid", "field_%06d.sgrid" % step)),
              "step %d: skipped by the trigger, no file" % step)
        check(ran.get(step) == 0, "step %d: the adaptor built nothing (catalyst_ran=0)" % step)


def run_bounded(args):
    """Error-bounded files: every value read back (the reader's volume on the image's own
    points) is within the file's absolute bound of the exact field, and that bound is the
    requested relative bound times the field's value range."""
    for step in steps_of(args.steps):
        with open(os.path.join(args.dir, "dump", "exact_%06d.json" % step)) as f:
            meta = json.load(f)
        exact = np.fromfile(os.path.join(args.dir, "dump", meta["raw"]), dtype="<f8")
        path = os.path.join(args.dir, "sgrid", "field_%06d.sgrid" % step)
        check(os.path.exists(path), "step %d: %s exists" % (step, path))
        if not os.path.exists(path):
            continue
        reader = OpenDataFile(path)
        reader.UpdatePipeline()
        image = servermanager.Fetch(reader)
        values = vtk_to_numpy(image.GetPointData().GetArray(meta["array"])).astype(np.float64)
        Delete(reader)
        reader = OpenDataFile(path)
        reader.OutputReconstructedImage = 0
        reader.UpdatePipeline()
        representation = servermanager.Fetch(reader)
        Delete(reader)
        bound = field(representation, "AbsoluteErrorBound")
        expected = args.bound * float(exact.max() - exact.min())
        error = float(np.max(np.abs(values - exact))) if values.size == exact.size else math.inf
        print("     step %d: max|e| %.6g, bound %.6g (%g x range), ratio %.4g, pieces %d"
              % (step, error, bound, args.bound, field(representation, "CompressionRatio"),
                 len(field(representation, "PieceExtents", True)) // 6))
        check(abs(bound - expected) <= 1e-9 * expected, "step %d: bound %.6g = %g x range"
              % (step, bound, args.bound))
        check(error <= bound, "step %d: max error %.6g within the bound %.6g" % (step, error, bound))


def run_compare(args):
    for step in steps_of(args.steps):
        name = "field_%06d.sgrid" % step
        a = np.fromfile(os.path.join(args.dir, "dump", "exact_%06d.raw" % step), dtype="<f8")
        b = np.fromfile(os.path.join(args.other, "dump", "exact_%06d.raw" % step), dtype="<f8")
        check(a.shape == b.shape and np.array_equal(a, b),
              "step %d: the simulations' fields are bit for bit equal" % step)
        rep_a, coef_a, values_a, _ = read_file(os.path.join(args.dir, "sgrid", name),
                                               "temperature")
        rep_b, coef_b, values_b, _ = read_file(os.path.join(args.other, "sgrid", name),
                                               "temperature")
        for key in ("Level", "LevelCaps", "Boundary", "Precision", "NumberOfCoefficients",
                    "ImageDimensions", "Bounds"):
            check(field(rep_a, key) == field(rep_b, key),
                  "step %d: %s %s on both" % (step, key, field(rep_a, key)))
        if coef_a.shape != coef_b.shape:
            check(False, "step %d: coefficient arrays %s vs %s" % (step, coef_a.shape,
                                                                  coef_b.shape))
            continue
        scale = max(float(np.max(np.abs(coef_a))), 1e-300)
        diff = float(np.max(np.abs(coef_a.astype(np.float64) - coef_b)))
        check(diff <= COEFFICIENT_TOLERANCE * scale,
              "step %d: %d coefficients agree (max diff %.3g <= %.1g x %.4g; %d bit-identical)"
              % (step, coef_a.size, diff, COEFFICIENT_TOLERANCE, scale,
                 int(np.sum(coef_a == coef_b))))


def run_wavelet(args):
    from vtkmodules.vtkImagingCore import vtkRTAnalyticSource

    logged, _ = parse_log(os.path.join(args.dir, "log.txt"))
    for step in steps_of(args.steps):
        # What paraview.demos.wavelet_miniapp hands to Catalyst at this step.
        source = vtkRTAnalyticSource()
        half = (args.size - 1) // 2
        source.SetWholeExtent(-half, half, -half, half, -half, half)
        source.SetMaximum(255 + 200 * math.sin(step))
        source.Update()
        image = source.GetOutput()
        exact = vtk_to_numpy(image.GetPointData().GetArray("RTData")).astype(np.float64)
        dims = image.GetDimensions()
        origin = [image.GetOrigin()[a] + image.GetExtent()[2 * a] * image.GetSpacing()[a]
                  for a in range(3)]
        check(step in logged, "step %d: the script reported it" % step)
        check_step("step %d" % step, os.path.join(args.dir, "sgrid", "field_%06d.sgrid" % step),
                   exact, dims, origin, image.GetSpacing(), "RTData", logged.get(step))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("mode", choices=("heat", "compare", "wavelet", "bounded"))
    parser.add_argument("--plugin", required=True)
    parser.add_argument("--dir", required=True)
    parser.add_argument("--other")
    parser.add_argument("--steps", default="0")
    parser.add_argument("--skipped", default="")
    parser.add_argument("--size", type=int, default=33)
    parser.add_argument("--bound", type=float, default=1e-3, help="bounded: the relative bound")
    args = parser.parse_args()
    LoadPlugin(args.plugin, remote=False, ns=globals())
    {"heat": run_heat, "compare": run_compare, "wavelet": run_wavelet,
     "bounded": run_bounded}[args.mode](args)
    if FAILURES:
        print("%d check(s) failed" % len(FAILURES))
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
