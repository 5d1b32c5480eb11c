"""pvpython test: the plugin's .sgrid files go through the libhdf5 that ParaView's VTK uses.

Usage: pvpython TestSparseGridOneHdf5.py PLUGIN OUTPUT_FOLDER

The plugin's file layer must link the HDF5 build that ParaView's own VTK links (on Debian the MPI
build): two HDF5 builds serving ParaView's data keep two sets of global state (open files, error
stacks, caches). The test loads the plugin, writes an .sgrid file with SaveData and reads it back
with OpenDataFile (within the bound), loads VTK's HDF5 reader module, takes both libraries from
/proc/self/maps and asks the dynamic linker which file H5Fopen resolves to from each: it must
be the same file. (On Debian, ParaView also maps the serial libhdf5 through its netCDF and GDAL
libraries, which Debian builds against it; those do not serve VTK's or the plugin's HDF5 calls,
so the test does not count the libhdf5 files mapped.)
"""
import ctypes
import os
import re
import sys

from paraview.simple import *  # noqa: F401,F403
from paraview import servermanager
from vtkmodules.numpy_interface import dataset_adapter as dsa
import numpy as np
import vtkmodules.vtkIOHDF  # noqa: F401  (VTK's HDF5 reader module: its libhdf5 is mapped too)

plugin, folder = sys.argv[1], sys.argv[2]
os.makedirs(folder, exist_ok=True)
path = os.path.join(folder, "one_hdf5.sgrid")
if os.path.exists(path):
    os.remove(path)
LoadPlugin(plugin, remote=False, ns=globals())

failures = []


def check(condition, message):
    print(("ok   " if condition else "FAIL ") + message)
    if not condition:
        failures.append(message)


source = Wavelet(WholeExtent=[0, 15, 0, 15, 0, 15])
coded = SparseGridHierarchize(Input=source, Scalars=["RTData"], ErrorBoundMode="Absolute",
                              ErrorBound=1e-2)
SaveData(path, proxy=coded)
check(os.path.isfile(path), "SaveData wrote " + path)

original = dsa.WrapDataObject(servermanager.Fetch(source)).PointData["RTData"]
reader = OpenDataFile(path)
check(reader is not None, "OpenDataFile opened the .sgrid file")
if reader is not None:
    # The reader's image output: the decoded volume.
    values = dsa.WrapDataObject(servermanager.Fetch(reader)).PointData["RTData"]
    ok = isinstance(values, np.ndarray) and len(values) == len(original)
    error = float(np.max(np.abs(np.asarray(values) - np.asarray(original)))) if ok else -1.0
    check(ok and error <= 1e-2 * 1.001,
          "the file reads back within its bound (max error %g, bound 1e-2)" % error)



class DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]


libc = ctypes.CDLL(None)
libc.dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(DlInfo)]


def mapped(pattern):
    """Real paths of the mapped files whose name matches pattern."""
    found = set()
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split()
            if len(fields) >= 6 and re.match(pattern, os.path.basename(fields[5])):
                found.add(os.path.realpath(fields[5]))
    return sorted(found)


def hdf5_of(library):
    """The file that H5Fopen resolves to from library (its own dependencies first)."""
    address = ctypes.cast(ctypes.CDLL(library).H5Fopen, ctypes.c_void_p).value
    info = DlInfo()
    if not libc.dladdr(address, ctypes.byref(info)) or not info.dli_fname:
        return None
    return os.path.realpath(info.dli_fname.decode())


plugin_io = mapped(r"libSparseGridIO\.so")
vtk_hdf = mapped(r"libvtkIOHDF")
check(len(plugin_io) == 1 and len(vtk_hdf) == 1,
      "the plugin's file library and VTK's HDF5 reader module are loaded (%s, %s)"
      % (plugin_io, vtk_hdf))
if len(plugin_io) == 1 and len(vtk_hdf) == 1:
    ours, vtks = hdf5_of(plugin_io[0]), hdf5_of(vtk_hdf[0])
    print("H5Fopen: the plugin's file library calls %s, VTK calls %s" % (ours, vtks))
    check(ours is not None and ours == vtks,
          "the plugin's file library and VTK use one libhdf5 (%s, %s)" % (ours, vtks))
    mapped_hdf5 = mapped(r"libhdf5(_[a-z]+)?\.so")
    print("every libhdf5 mapped:", mapped_hdf5)
    check(ours in mapped_hdf5, "that libhdf5 is the one mapped from its file")

if failures:
    print("%d check(s) failed" % len(failures))
    sys.exit(1)
print("all checks passed")
