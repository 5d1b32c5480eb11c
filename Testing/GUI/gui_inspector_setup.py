"""Start-up script of the inspector test (paraview --script, before the recorded events play):
the plugin and the message recorder of gui_menu_setup.py, then the volume of
$SPARSEGRID_GUI_DATA compressed with Sparse Grid Hierarchize's defaults, shown and active.
"""
import os

exec(open(os.path.join(os.path.dirname(os.environ["SPARSEGRID_GUI_CHECK"]), "gui_menu_setup.py")).read())

from paraview.simple import GetActiveViewOrCreate, OpenDataFile, Render, SetActiveSource, Show  # noqa: E402

volume = OpenDataFile(os.environ["SPARSEGRID_GUI_DATA"])
compressed = SparseGridHierarchize(Input=volume)  # noqa: F821 (LoadPlugin put it in globals)
view = GetActiveViewOrCreate("RenderView")
Show(volume, view)
Show(compressed, view)
Render(view)
SetActiveSource(compressed)
