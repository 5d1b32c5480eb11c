"""Writes the real test volumes of ../shared/data as raw float32 files for the GPU codec test.

The device machine has no copy of ../shared/data and SparseGridCore reads no VTK files, so
`CodecGpu.SameStreamAsCpuOnTheRealVolumes` reads raw little-endian float32 files named
NAME.DXxDYxDZ.f32 (axis 0 fastest, as VTK stores an image) from the folder named by
SPARSEGRID_CODEC_VOLUMES. Run with pvpython (or any Python with VTK and numpy):

    pvpython scripts/gpu/prepare-volumes.py ../shared/data build-volumes

`build-volumes/` is git-ignored (/build*/); carry it to the device machine (about 4 MB) and run
    SPARSEGRID_CODEC_VOLUMES=$PWD/build-volumes <build>/bin/sgcore_test_codec_gpu \\
        --gtest_filter='CodecGpu.SameStreamAsCpuOnTheRealVolumes'
Non-float arrays (ironProt's unsigned char) are converted to float32, as the filters do.
"""
import os
import sys

import numpy
from vtkmodules.util.numpy_support import vtk_to_numpy
from vtkmodules.vtkIOLegacy import vtkDataSetReader
from vtkmodules.vtkIOXML import vtkXMLImageDataReader


def read(path):
    reader = vtkXMLImageDataReader() if path.endswith(".vti") else vtkDataSetReader()
    reader.SetFileName(path)
    reader.Update()
    image = reader.GetOutput()
    scalars = image.GetPointData().GetScalars() or image.GetPointData().GetArray(0)
    if scalars is None or scalars.GetNumberOfComponents() != 1:
        raise RuntimeError("%s: no single-component point array" % path)
    return image.GetDimensions(), scalars.GetName(), vtk_to_numpy(scalars)


def main(source, target):
    os.makedirs(target, exist_ok=True)
    written = 0
    for name in sorted(os.listdir(source)):
        if not name.endswith((".vti", ".vtk")):
            continue
        dims, array, values = read(os.path.join(source, name))
        if values.size != dims[0] * dims[1] * dims[2]:
            raise RuntimeError("%s: %d values for dims %s" % (name, values.size, dims))
        out = os.path.join(target, "%s.%dx%dx%d.f32" % (os.path.splitext(name)[0], *dims))
        numpy.ascontiguousarray(values, dtype="<f4").tofile(out)
        print("%s: %s %s -> %s" % (name, array, dims, out))
        written += 1
    if written == 0:
        raise RuntimeError("no .vti or .vtk volume in " + source)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
