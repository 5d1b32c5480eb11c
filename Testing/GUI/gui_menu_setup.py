"""Start-up script of the menu test (paraview --script=gui_menu_setup.py, before the recorded
events play): loads the plugin, as Tools > Manage Plugins would, and records every error and
warning that reaches ParaView's output window (what the Output Messages window shows a user), so
that gui_menu_check.py can report them.
"""
import os

import paraview
from paraview.simple import LoadPlugin
from vtkmodules.util.misc import calldata_type
from vtkmodules.util.vtkConstants import VTK_STRING
from vtkmodules.vtkCommonCore import vtkCommand, vtkOutputWindow

# A module attribute: the Python Shell, where the check runs, shares modules with this script
# but not its globals.
paraview.sparsegrid_gui_messages = []


def _record(kind):
    @calldata_type(VTK_STRING)  # the message text arrives as `data`
    def observer(caller, event, data=None):
        paraview.sparsegrid_gui_messages.append((kind, str(data)))
    return observer


_window = vtkOutputWindow.GetInstance()
_window.AddObserver(vtkCommand.ErrorEvent, _record("error"))
_window.AddObserver(vtkCommand.WarningEvent, _record("warning"))
LoadPlugin(os.environ["SPARSEGRID_PLUGIN_FILE"], remote=False, ns=globals())
