"""Runs inside the real ParaView GUI (paraview --script=gui_script.py --exit).

Loads the SparseGrid plugin, applies Sparse Grid Hierarchize and Sparse Grid Reconstruct to a
Wavelet by script, renders a slice of the original and of the reconstruction the same way in
two views of one layout (and the compressed points in a third), and saves screenshots plus a JSON summary for test_gui.py to check.
Inputs come from the environment: SPARSEGRID_PLUGIN_FILE and SPARSEGRID_GUI_OUT.
"""
import json
import os
import traceback

import paraview.simple

from paraview import servermanager
from paraview.simple import *  # noqa: F401,F403

out = os.environ["SPARSEGRID_GUI_OUT"]
summary = {"ok": False}
try:
    LoadPlugin(os.environ["SPARSEGRID_PLUGIN_FILE"], remote=False, ns=globals())
    # The menu category the GUI files the filters under.
    categories = {}
    for name in ("SparseGridHierarchize", "SparseGridReconstruct", "SparseGridResampleToImage"):
        prototype = servermanager.ProxyManager().SMProxyManager.GetPrototypeProxy("filters", name)
        hints = prototype.GetHints() if prototype else None
        menu = hints.FindNestedElementByName("ShowInMenu") if hints else None
        categories[name] = menu.GetAttribute("category") if menu else None
    summary["categories"] = categories

    wavelet = Wavelet()
    wavelet.WholeExtent = [-16, 16, -16, 16, -16, 16]
    compressed = SparseGridHierarchize(ErrorBoundMode="Off", Input=wavelet)
    compressed.Scalars = ["RTData"]
    # A coarse level (PSNR about 30 dB): the reconstruction differs visibly from the original,
    # so that a filter passing the input through unchanged fails the test.
    compressed.Level = 4
    compressed.OutputGridPoints = 1  # the third view shows the grid points
    reconstruction = SparseGridReconstruct(Input=wavelet, Source=compressed)
    reconstruction.UpdatePipeline()
    rep = servermanager.Fetch(compressed)
    summary["psnr"] = rep.GetFieldData().GetArray("SparseGrid.PSNR").GetValue(0)
    summary["rmse"] = rep.GetFieldData().GetArray("SparseGrid.RMSE").GetValue(0)
    summary["coefficients"] = rep.GetFieldData().GetArray("SparseGrid.NumberOfCoefficients").GetValue(0)

    # The GUI resets the camera on a view's first render; this test sets it explicitly.
    paraview.simple._DisableFirstRenderCameraReset()
    layout = GetLayout() or CreateLayout("SparseGrid")
    views = []
    for index, source in enumerate((wavelet, reconstruction)):
        view = CreateView("RenderView")
        AssignViewToLayout(view=view, layout=layout, hint=index)
        view.OrientationAxesVisibility = 0
        view.UseColorPaletteForBackground = 0
        view.Background = [0.0, 0.0, 0.0]
        # A slice representation rather than a Slice filter: no interactive plane widget
        # appears in the GUI's view.
        display = Show(source, view)
        display.SetRepresentationType("Slice")
        display.SliceMode = "XY Plane"
        display.Slice = 16
        ColorBy(display, ("POINTS", "RTData"))
        display.SetScalarBarVisibility(view, False)
        display.Ambient = 1.0
        display.Diffuse = 0.0
        display.Specular = 0.0
        view.CameraPosition = [0.0, 0.0, 60.0]
        view.CameraFocalPoint = [0.0, 0.0, 0.0]
        view.CameraViewUp = [0.0, 1.0, 0.0]
        view.CameraParallelProjection = 1
        view.CameraParallelScale = 17.0
        views.append(view)
    lut = GetColorTransferFunction("RTData")
    lut.ApplyPreset("Cool to Warm", True)
    lut.RescaleTransferFunction(37.0, 277.0)
    # The compressed representation's grid points (Output Grid Points), as points.
    points_view = CreateView("RenderView")
    AssignViewToLayout(view=points_view, layout=layout, hint=2)
    points_view.OrientationAxesVisibility = 0
    points_view.UseColorPaletteForBackground = 0
    points_view.Background = [0.0, 0.0, 0.0]
    points_display = Show(compressed, points_view)
    summary["compressed_representation"] = points_display.GetProperty("Representation").GetElement(0)
    points_display.PointSize = 3.0
    # Solid colour: the picture checks that the points are drawn, not their surpluses.
    ColorBy(points_display, None)
    points_display.AmbientColor = [1.0, 1.0, 1.0]
    points_display.DiffuseColor = [1.0, 1.0, 1.0]
    points_view.ResetCamera()
    views.append(points_view)
    SetActiveSource(None)
    for name, view in zip(("original", "reconstruction", "compressed"), views):
        Render(view)
        SaveScreenshot(os.path.join(out, name + ".png"), view, ImageResolution=[300, 300])
    summary["ok"] = True
except Exception:
    summary["error"] = traceback.format_exc()
text = json.dumps(summary, indent=1, default=str)
with open(os.path.join(out, "summary.json"), "w") as f:
    f.write(text)
