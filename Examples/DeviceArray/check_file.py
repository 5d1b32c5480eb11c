"""A .sgrid file written from device memory, decoded by the ParaView plugin's reader.

    pvpython check_file.py --plugin SparseGrid.so --sgrid device_field.sgrid \
        --raw device_field_128x128x128_float32.raw [--relative-bound 1e-3]

compress_device_field (this folder) compresses a field in GPU memory with encodeDevice and also
writes the field itself as raw little-endian float32. This opens the .sgrid with OpenDataFile (the
plugin's Sparse Grid Reader, which decodes on whatever backend it picks here: the CPU on a machine
without a GPU), compares every voxel with the raw field in float64, and checks the error against
the bound the file states (field data SparseGrid.AbsoluteErrorBound) and that bound against the requested
relative bound times the raw field's range, computed here. Exit 0: all hold; 1: a check failed;
77: the files are absent.
"""
import argparse
import os
import sys

import numpy as np
from paraview import servermanager
from paraview.simple import *  # noqa: F401,F403 (pvpython convention)
from vtkmodules.util.numpy_support import vtk_to_numpy


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--plugin", required=True)
    parser.add_argument("--sgrid", required=True)
    parser.add_argument("--raw", required=True)
    parser.add_argument("--array", default="temperature")
    parser.add_argument("--relative-bound", type=float, default=1e-3)
    args = parser.parse_args()
    for path in (args.sgrid, args.raw):
        if not os.path.exists(path):
            print("%s is absent: skipped" % path)
            return 77
    LoadPlugin(args.plugin, remote=False, ns=globals())
    reader = OpenDataFile(args.sgrid)
    reader.UpdatePipeline()
    image = servermanager.Fetch(reader)
    dims = image.GetDimensions()
    array = image.GetPointData().GetArray(args.array)
    if array is None:
        print("FAIL: %s has no array %s" % (args.sgrid, args.array))
        return 1
    decoded = vtk_to_numpy(array).astype(np.float64)
    # Both are x fastest (VTK's point order and the raw file's), so they compare flat.
    original = np.fromfile(args.raw, dtype="<f4").astype(np.float64)
    if original.size != decoded.size or original.size != dims[0] * dims[1] * dims[2]:
        print("FAIL: %d raw values, %d decoded, image %s" % (original.size, decoded.size, dims))
        return 1
    bound = image.GetFieldData().GetArray("SparseGrid.AbsoluteErrorBound").GetValue(0)
    value_range = float(original.max() - original.min())
    requested = args.relative_bound * value_range
    error = np.abs(decoded - original)
    max_error = float(error.max())
    worst = int(error.argmax())
    print("image %s, array %s (%s), range %.6g" % (dims, args.array, array.GetDataTypeAsString(),
                                                  value_range))
    print("max |error| %.6g, file bound %.6g, error/bound %.8f (worst voxel %d), "
          "requested %.3g x range = %.6g"
          % (max_error, bound, max_error / bound, worst, args.relative_bound, requested))
    size = os.path.getsize(args.sgrid)
    print("file %d bytes, ratio raw/file %.2f" % (size, os.path.getsize(args.raw) / size))
    if not (max_error <= bound):
        print("FAIL: the reader's reconstruction misses the file's bound")
        return 1
    if not (bound <= requested * (1 + 1e-12)):
        print("FAIL: the file's bound is looser than the requested relative bound")
        return 1
    print("PASS: every voxel within the file's bound")
    return 0


if __name__ == "__main__":
    sys.exit(main())
