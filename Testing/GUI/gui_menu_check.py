"""Runs in ParaView's Python Shell after the recorded events of ReconstructFromMenu.xml (the
last event executes this file): reports what the user's clicks produced, in
$SPARSEGRID_GUI_OUT/menu_summary.json, for test_gui_menu.py to check. It only collects; the
checks are in test_gui_menu.py.
"""
import json
import os
import sys
import traceback

import paraview
from paraview import servermanager
from paraview.simple import GetActiveSource
from vtkmodules.util.numpy_support import vtk_to_numpy


def _inputs(proxy, name):
    """(XML name, registration name) of the proxies connected to an input property."""
    prop = proxy.SMProxy.GetProperty(name)
    found = []
    for i in range(prop.GetNumberOfProxies()):
        p = prop.GetProxy(i)
        found.append((p.GetXMLName(), servermanager.ProxyManager().GetProxyName("sources", p)))
    return found


def _sparsegrid_gui_check():
    out = os.environ["SPARSEGRID_GUI_OUT"]
    summary = {"ok": False}
    try:
        active = GetActiveSource()
        summary["active"] = active.GetXMLName() if active else None
        summary["messages"] = list(getattr(paraview, "sparsegrid_gui_messages", []))
        if summary["active"] == "SparseGridResampleToImage":
            image = servermanager.Fetch(active)
            summary["dimensions"] = list(image.GetDimensions())
            summary["points"] = image.GetNumberOfPoints()
            summary["ok"] = True
            return _write(out, summary)
        summary["source_port"] = _inputs(active, "Source")
        summary["input_port"] = _inputs(active, "Input")
        reconstruction = servermanager.Fetch(active)
        probe = servermanager.Fetch(servermanager._getPyProxy(
            active.SMProxy.GetProperty("Input").GetProxy(0)))
        values = reconstruction.GetPointData().GetArray("RTData")
        mask = reconstruction.GetPointData().GetArray("vtkValidPointMask")
        original = probe.GetPointData().GetArray("RTData")
        summary["points"] = reconstruction.GetNumberOfPoints()
        summary["probe_points"] = probe.GetNumberOfPoints()
        if values is not None and original is not None:
            a = vtk_to_numpy(values).astype("float64")
            b = vtk_to_numpy(original).astype("float64")
            summary["max_abs_difference"] = float(abs(a - b).max())
            summary["original_range"] = [float(b.min()), float(b.max())]
        summary["mask_all_valid"] = mask is not None and int(vtk_to_numpy(mask).min()) == 1
        sys.path.insert(0, os.path.dirname(os.environ["SPARSEGRID_GUI_CHECK"]))
        import x11_windows

        manager = x11_windows.window_manager()
        summary["window_manager"] = manager[0] if manager else None
        summary["managed_windows"] = [title for _, title in manager[1]] if manager else []
        summary["ok"] = True
    except Exception:
        summary["error"] = traceback.format_exc()
    _write(out, summary)


def _write(out, summary):
    with open(os.path.join(out, "menu_summary.json"), "w") as f:
        json.dump(summary, f, indent=1, default=str)


_sparsegrid_gui_check()
