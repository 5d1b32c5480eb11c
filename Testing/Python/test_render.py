"""Image regression test of the reconstruction (run under xvfb-run with pvpython).

Compresses ParaView's Wavelet (33^3, default level), reconstructs it on the Wavelet's own
points, renders a slice coloured by RTData with a fixed colour range and camera, and compares
the picture with a stored baseline pixel by pixel.

    xvfb-run -a pvpython test_render.py --plugin SparseGrid.so --baseline BASELINE.png --out DIR

With --reset (or when the baseline is absent) the picture is written to the baseline path
instead; a missing baseline still fails the test, so that a new one is looked at before it is
committed.
"""
import argparse
import os
import shutil
import sys

import numpy as np
from paraview.simple import *  # noqa: F401,F403
from vtkmodules.util.numpy_support import vtk_to_numpy
from vtkmodules.vtkIOImage import vtkPNGReader

SIZE = [320, 320]


def read_png(path):
    reader = vtkPNGReader()
    reader.SetFileName(path)
    reader.Update()
    image = reader.GetOutput()
    w, h, _ = image.GetDimensions()
    pixels = vtk_to_numpy(image.GetPointData().GetScalars())
    return pixels.reshape(h, w, -1)[:, :, :3].astype(np.int16)


def render_slice(source, array, path):
    view = CreateView("RenderView")
    view.ViewSize = SIZE
    view.OrientationAxesVisibility = 0
    view.UseColorPaletteForBackground = 0
    view.Background = [0.0, 0.0, 0.0]
    s = Slice(Input=source)
    s.SliceType = "Plane"
    s.SliceType.Origin = [0.0, 0.0, 0.0]
    s.SliceType.Normal = [0.0, 0.0, 1.0]
    display = Show(s, view)
    ColorBy(display, ("POINTS", array))
    lut = GetColorTransferFunction(array)
    lut.ApplyPreset("Cool to Warm", True)
    lut.RescaleTransferFunction(37.0, 277.0)
    display.SetScalarBarVisibility(view, False)
    # Unlit colours: the picture shows the colour map, not the lighting model.
    display.Ambient = 1.0
    display.Diffuse = 0.0
    display.Specular = 0.0
    view.CameraPosition = [0.0, 0.0, 60.0]
    view.CameraFocalPoint = [0.0, 0.0, 0.0]
    view.CameraViewUp = [0.0, 1.0, 0.0]
    view.CameraParallelProjection = 1
    view.CameraParallelScale = 17.0
    Render(view)
    SaveScreenshot(path, view, ImageResolution=SIZE)
    Delete(view)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--plugin", required=True)
    parser.add_argument("--baseline", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--reset", action="store_true")
    args = parser.parse_args()
    LoadPlugin(args.plugin, remote=False, ns=globals())
    os.makedirs(args.out, exist_ok=True)

    w = Wavelet()
    w.WholeExtent = [-16, 16, -16, 16, -16, 16]
    h = SparseGridHierarchize(ErrorBoundMode="Off", Input=w)
    h.Level = 5  # the configuration the baseline image was made with
    h.Scalars = ["RTData"]
    r = SparseGridReconstruct(Input=w, Source=h)
    picture = os.path.join(args.out, "SparseGridReconstructSlice.png")
    render_slice(r, "RTData", picture)

    if args.reset or not os.path.exists(args.baseline):
        shutil.copyfile(picture, args.baseline)
        print("wrote baseline %s: inspect it, then run again" % args.baseline)
        return 0 if args.reset else 1

    test = read_png(picture)
    baseline = read_png(args.baseline)
    if test.shape != baseline.shape:
        print("FAILED: picture %s, baseline %s" % (test.shape, baseline.shape))
        return 1
    diff = np.abs(test - baseline).max(axis=2)
    mean = float(diff.mean())
    off = float(np.mean(diff > 16))
    print("mean pixel difference %.3f, fraction of pixels off by more than 16: %.5f" % (mean, off))
    # Rasterisation may move an edge by a pixel between Mesa builds; colours must not change.
    if mean > 1.0 or off > 0.005:
        diff_path = os.path.join(args.out, "SparseGridReconstructSlice.diff.png")
        print("FAILED: the picture differs from the baseline; see %s and %s" % (picture, args.baseline))
        try:
            from vtkmodules.vtkIOImage import vtkPNGWriter
            from vtkmodules.vtkCommonDataModel import vtkImageData
            from vtkmodules.util.numpy_support import numpy_to_vtk

            image = vtkImageData()
            image.SetDimensions(diff.shape[1], diff.shape[0], 1)
            image.GetPointData().SetScalars(numpy_to_vtk(np.clip(diff * 4, 0, 255).astype(np.uint8).ravel()))
            writer = vtkPNGWriter()
            writer.SetFileName(diff_path)
            writer.SetInputData(image)
            writer.Write()
        except Exception as error:  # the diff picture is a courtesy
            print("could not write the difference picture:", error)
        return 1
    print("picture matches the baseline")
    return 0


if __name__ == "__main__":
    sys.exit(main())
