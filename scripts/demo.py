"""SparseGrid demo: compress a volume, save it as .sgrid, reconstruct it, report and picture it.

    pvpython scripts/demo.py --plugin SparseGrid.so [FILE] --out DIR
        [--array NAME] [--level L] [--precision Float|Double]

Without FILE the volume is ParaView's Wavelet source at 65^3; FILE may be any image data
ParaView reads (.vti, legacy .vtk structured points, ...). The picture needs an X display (Debian's
ParaView renders through GLX): ./run.sh demo runs it under Xvfb; --no-picture prints the numbers
only. When no display can be opened the demo says so in one line and exits with status 1 (the
numbers are printed first) instead of letting VTK abort with a stack trace.

Steps: Sparse Grid Hierarchize; SaveData('DIR/<name>.sgrid') when the plugin has the .sgrid
writer, then the file is read back; Sparse Grid Reconstruct onto the original points; the error
measured in numpy. Prints a table and writes DIR/demo.png: the original, the reconstruction
(same colour map and range) and the absolute error, each as a middle slice.
"""
import argparse
import ctypes
import ctypes.util
import math
import os
import sys
import time

import numpy as np
from paraview import servermanager
from paraview.simple import *  # noqa: F401,F403 (pvpython convention)
from vtkmodules.util.numpy_support import numpy_to_vtk, vtk_to_numpy
from vtkmodules.vtkCommonDataModel import vtkImageData


def field(data, name, default=None):
    array = data.GetFieldData().GetAbstractArray(name)
    if array is None:
        return default
    values = []
    for i in range(array.GetNumberOfValues()):
        v = array.GetVariantValue(i)
        values.append(v.ToString() if v.IsString() else v.ToDouble())
    return values[0] if len(values) == 1 else values


def display_problem():
    """None when an X display can be opened, else one line saying why not. VTK's X render window
    aborts the process (SIGABRT and a stack trace) when it cannot connect; this asks first."""
    name = os.environ.get("DISPLAY")
    if not name:
        return "no X display (DISPLAY is not set); run it under xvfb-run, or pass --no-picture"
    library = ctypes.util.find_library("X11")
    if not library:
        return "libX11 not found"
    x11 = ctypes.CDLL(library)
    x11.XOpenDisplay.restype = ctypes.c_void_p
    x11.XOpenDisplay.argtypes = [ctypes.c_char_p]
    x11.XCloseDisplay.argtypes = [ctypes.c_void_p]
    display = x11.XOpenDisplay(name.encode())
    if not display:
        return "cannot connect to the X display %s" % name
    x11.XCloseDisplay(display)
    return None


def human_bytes(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return "%.1f %s" % (n, unit) if unit != "B" else "%d B" % n
        n /= 1024.0


def slice_axis(dims):
    """Normal of the slice to show: a flat axis if there is one, otherwise z."""
    for a in (2, 1, 0):
        if dims[a] == 1:
            return a
    return 2


def show_slice(view, source, array, dims, preset, value_range, title):
    display = Show(source, view)
    display.SetRepresentationType("Slice")
    axis = slice_axis(dims)
    display.SliceMode = ("YZ Plane", "XZ Plane", "XY Plane")[axis]
    display.Slice = dims[axis] // 2
    ColorBy(display, ("POINTS", array))
    lut = GetColorTransferFunction(array)
    lut.ApplyPreset(preset, True)
    lut.RescaleTransferFunction(*value_range)
    lut.AutomaticRescaleRangeMode = "Never"
    display.SetScalarBarVisibility(view, True)
    bar = GetScalarBar(lut, view)
    bar.Title = array
    bar.ComponentTitle = ""
    bar.Orientation = "Horizontal"
    bar.WindowLocation = "Lower Center"
    bar.TitleFontSize = 14
    bar.LabelFontSize = 13
    text = Text(Text=title)
    label = Show(text, view)
    label.WindowLocation = "Upper Center"
    label.FontSize = 18
    view.OrientationAxesVisibility = 0
    view.CameraParallelProjection = 1
    if axis == 2:
        view.ResetActiveCameraToNegativeZ()
    elif axis == 1:
        view.ResetActiveCameraToPositiveY()
    else:
        view.ResetActiveCameraToNegativeX()
    view.ResetCamera()
    # Room above and below the slice for the title and the colour legend.
    view.GetActiveCamera().Zoom(1.0 / 1.2)
    return display


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file", nargs="?", help="image data to compress (default: Wavelet 65^3)")
    parser.add_argument("--plugin", required=True, help="path of SparseGrid.so")
    parser.add_argument("--out", required=True, help="output folder")
    parser.add_argument("--array", help="point array to compress (default: the first one)")
    parser.add_argument("--bound", type=float, default=1e-3,
                        help="error bound relative to the value range (default 1e-3, the filter's default)")
    parser.add_argument("--absolute", action="store_true", help="--bound is absolute, in the array's units")
    parser.add_argument("--fixed-level", action="store_true",
                        help="the fixed-level sparse grid (no bound) instead of error-bounded coding")
    parser.add_argument("--level", type=int, default=0,
                        help="with --fixed-level: sparse-grid level (default 0: automatic)")
    parser.add_argument("--precision", choices=("Float", "Double"), default="Float")
    parser.add_argument("--no-picture", action="store_true", help="print the numbers only (no X display needed)")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    LoadPlugin(args.plugin, remote=False, ns=globals())

    # --- the input ---------------------------------------------------------------------------
    if args.file:
        source = OpenDataFile(args.file)
        if source is None:
            print("ParaView cannot read %s" % args.file)
            return 1
        label = os.path.basename(args.file)
    else:
        source = Wavelet()
        source.WholeExtent = [-32, 32, -32, 32, -32, 32]
        label = "Wavelet 65^3"
    source.UpdatePipeline()
    original = servermanager.Fetch(source)
    if not original.IsA("vtkImageData"):
        print("%s holds a %s; the demo compresses image data (use Resample To Image first)"
              % (label, original.GetClassName()))
        return 1
    names = [original.GetPointData().GetArrayName(i) for i in range(original.GetPointData().GetNumberOfArrays())]
    array = args.array or (names[0] if names else None)
    if array not in names:
        print("no point array %r in %s (point arrays: %s)" % (array, label, ", ".join(names) or "none"))
        return 1
    dims = original.GetDimensions()
    base = os.path.splitext(os.path.basename(args.file))[0] if args.file else "wavelet"

    # --- compress ----------------------------------------------------------------------------
    compressed = SparseGridHierarchize(Input=source)
    compressed.Scalars = [array]
    coded = not args.fixed_level
    if coded:
        compressed.ErrorBoundMode = "Absolute" if args.absolute else "Relative"
        compressed.ErrorBound = args.bound
    else:
        compressed.ErrorBoundMode = "Off"
        compressed.Level = args.level
        compressed.ComputeError = 0  # measured below, in numpy, from the reconstruction
    compressed.Precision = args.precision
    start = time.time()
    compressed.UpdatePipeline()
    seconds_filter = time.time() - start
    rep = servermanager.Fetch(compressed)
    if field(rep, "SparseGrid.FormatVersion") is None:
        print("compression failed (see the messages above)")
        return 1

    # --- write and read back ------------------------------------------------------------------
    writer_note = ""
    seconds_write = seconds_read = None
    file_size = None
    reconstruct_from = compressed
    has_writer = servermanager.ProxyManager().SMProxyManager.GetPrototypeProxy("writers", "SparseGridWriter")
    if has_writer:
        path = os.path.join(args.out, base + ".sgrid")
        start = time.time()
        SaveData(path, proxy=compressed)
        seconds_write = time.time() - start
        file_size = os.path.getsize(path) if os.path.exists(path) else None
        start = time.time()
        reader = OpenDataFile(path)
        # The compressed representation itself, not the reader's own reconstructed volume.
        reader.OutputReconstructedImage = 0
        reader.UpdatePipeline()
        seconds_read = time.time() - start
        reconstruct_from = reader
        writer_note = path
    else:
        writer_note = "skipped: this build of the plugin has no .sgrid writer"

    # --- reconstruct ---------------------------------------------------------------------------
    reconstruction = SparseGridReconstruct(Input=source, Source=reconstruct_from)
    start = time.time()
    reconstruction.UpdatePipeline()
    seconds_reconstruct = time.time() - start
    result = servermanager.Fetch(reconstruction)
    reference = vtk_to_numpy(original.GetPointData().GetArray(array)).astype(np.float64)
    approx = vtk_to_numpy(result.GetPointData().GetArray(array)).astype(np.float64)
    error = np.abs(approx - reference)
    max_abs = float(error.max())
    rmse = float(np.sqrt(np.mean(error * error)))
    value_range = (float(reference.min()), float(reference.max()))
    psnr = math.inf if rmse == 0 else 20 * math.log10((value_range[1] - value_range[0]) / rmse)

    # --- table ---------------------------------------------------------------------------------
    input_array = original.GetPointData().GetArray(array)
    input_bytes = input_array.GetNumberOfValues() * input_array.GetDataTypeSize()
    backend = field(rep, "SparseGrid.Backend", "?")
    note = field(rep, "SparseGrid.BackendNote", "")
    rows = [
        ("input", "%s, array %s (%d component(s), %s)" % (label, array, input_array.GetNumberOfComponents(),
                                                           input_array.GetDataTypeAsString())),
        ("dimensions", "%s (%d points)" % (" x ".join(str(d) for d in dims), original.GetNumberOfPoints())),
    ]
    if coded:
        bound = field(rep, "SparseGrid.AbsoluteErrorBound")
        bound = bound[0] if isinstance(bound, list) else bound
        stored = int(field(rep, "SparseGrid.StoredBytes"))
        rows += [
            ("error bound", "%g %s -> %.6g absolute (every voxel)"
             % (args.bound, "absolute" if args.absolute else "x value range", bound)),
            ("coded streams", "%s -> %s" % (human_bytes(input_bytes), human_bytes(stored))),
            ("compression ratio", "%.2f : 1 (input bytes / coded bytes)" % field(rep, "SparseGrid.CompressionRatio")),
            ("max abs error", "%.6g = %.3f x bound: %s (measured here on every voxel; the filter says %.6g)"
             % (max_abs, max_abs / bound, "bound kept" if max_abs <= bound else "BOUND MISSED",
                field(rep, "SparseGrid.MaxAbsError"))),
        ]
    else:
        n = int(field(rep, "SparseGrid.NumberOfCoefficients"))
        coefficient_bytes = n * input_array.GetNumberOfComponents() * (4 if args.precision == "Float" else 8)
        caps = field(rep, "SparseGrid.LevelCaps")
        caps = caps if isinstance(caps, list) else [caps]
        rows += [
            ("level / caps", "%d / %s, boundary, %s" % (field(rep, "SparseGrid.Level"),
                                                        " ".join(str(int(c)) for c in caps), args.precision)),
            ("coefficients", "%d (%s -> %s)" % (n, human_bytes(input_bytes), human_bytes(coefficient_bytes))),
            ("compression ratio", "%.2f : 1 (no error bound)" % field(rep, "SparseGrid.CompressionRatio")),
            ("max abs error", "%.6g (value range %.6g .. %.6g)" % (max_abs, value_range[0], value_range[1])),
        ]
    rows += [
        ("RMSE", "%.6g" % rmse),
        ("PSNR", "%.2f dB" % psnr),
        ("backend", backend + (" (%s)" % note if note else "")),
        ("time: compress", "%.3f s (filter total %.3f s)"
         % (field(rep, "SparseGrid.TimeSeconds"), seconds_filter)),
    ]
    if seconds_write is not None:
        rows.append(("time: write .sgrid", "%.3f s (%s)" % (seconds_write, human_bytes(file_size or 0))))
        if file_size:
            rows.append(("ratio of the file", "%.2f : 1 (input bytes / file bytes, HDF5 header included)"
                         % (input_bytes / file_size)))
        rows.append(("time: read .sgrid", "%.3f s" % seconds_read))
    rows.append(("time: reconstruct", "%.3f s" % seconds_reconstruct))
    rows.append((".sgrid file", writer_note))

    # --- picture: original | reconstruction | absolute error ----------------------------------
    picture = os.path.join(args.out, "demo.png")
    render_error = None if args.no_picture else display_problem()
    if args.no_picture:
        rows.append(("picture", "not drawn (--no-picture)"))
    elif render_error:
        rows.append(("picture", "not drawn: cannot render"))
    else:
        render_error = draw_picture(picture, source, reconstruction, original, array, dims, label,
                                    error, max_abs, rmse, psnr, value_range, rep)
        rows.append(("picture", picture if not render_error else "not written"))

    width = max(len(k) for k, _ in rows)
    print()
    print("SparseGrid demo")
    for key, value in rows:
        print("  %-*s  %s" % (width, key, value))
    if render_error:
        print("demo: cannot render the picture: %s" % render_error)
        return 1
    return 0


def draw_picture(picture, source, reconstruction, original, array, dims, label, error, max_abs,
                 rmse, psnr, value_range, rep):
    """Original | reconstruction | absolute error as middle slices in DIR/demo.png; None, or
    one line saying why the picture could not be drawn."""
    try:
        errors = vtkImageData()
        errors.CopyStructure(original)
        error_array = numpy_to_vtk(error.reshape(error.shape[0], -1).max(axis=1) if error.ndim > 1 else error, deep=1)
        error_array.SetName("AbsoluteError")
        errors.GetPointData().AddArray(error_array)
        error_source = TrivialProducer()
        error_source.GetClientSideObject().SetOutput(errors)
        error_source.UpdatePipeline()

        layout = CreateLayout("SparseGrid demo")
        layout.SplitHorizontal(0, 1.0 / 3.0)
        layout.SplitHorizontal(2, 0.5)
        views = []
        for cell in (1, 5, 6):
            view = CreateView("RenderView")
            view.UseColorPaletteForBackground = 0
            view.Background = [0.32, 0.34, 0.43]
            layout.AssignView(cell, view)
            views.append(view)
        shown_range = value_range if value_range[1] > value_range[0] else (value_range[0], value_range[0] + 1)
        show_slice(views[0], source, array, dims, "Cool to Warm", shown_range, "Original\n%s" % label)
        # The reconstruction's array has the original's name, so it shares its colour map.
        show_slice(views[1], reconstruction, array, dims, "Cool to Warm", shown_range,
                   "Reconstruction\n%.1f : 1, PSNR %.1f dB" % (field(rep, "SparseGrid.CompressionRatio"), psnr))
        show_slice(views[2], error_source, "AbsoluteError", dims, "Inferno (matplotlib)",
                   (0.0, max(max_abs, 1e-30)), "Absolute error\nmax %.3g, RMSE %.3g" % (max_abs, rmse))
        SaveScreenshot(picture, layout, SaveAllViews=1, ImageResolution=[1800, 600])
        # Views left alive until interpreter exit make GLX fail during teardown (exit status 1).
        for view in views:
            Delete(view)
        RemoveLayout(layout)
    except Exception as failure:  # the numbers stand without the picture
        return str(failure).splitlines()[0] if str(failure) else type(failure).__name__
    if not os.path.exists(picture):
        return "ParaView wrote no %s" % picture
    return None


if __name__ == "__main__":
    sys.exit(main())
