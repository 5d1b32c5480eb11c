"""Runs ParaView's Catalyst wavelet mini-app with catalyst_sgrid_extractor.py and checks that
the SGRID extractor wrote one readable .sgrid file per time step, each holding its step's time.

Usage: pvpython TestSparseGridCatalyst.py PVBATCH PLUGIN OUTPUT_FOLDER
"""
import os
import shutil
import subprocess
import sys

pvbatch, plugin, folder = sys.argv[1], sys.argv[2], sys.argv[3]
shutil.rmtree(folder, ignore_errors=True)
os.makedirs(folder)
script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "catalyst_sgrid_extractor.py")
env = dict(os.environ, SPARSEGRID_PLUGIN_FILE=plugin, SPARSEGRID_CATALYST_OUT=folder)
run = subprocess.run([pvbatch, "--sym", "-m", "paraview.demos.wavelet_miniapp", "-t", "3",
                      "--size", "17", "-s", script], env=env, stdout=subprocess.PIPE,
                     stderr=subprocess.STDOUT, universal_newlines=True, timeout=240)
print(run.stdout[-3000:])
if run.returncode != 0:
    print("FAIL the mini-app exited with %d" % run.returncode)
    sys.exit(1)

from paraview.simple import *  # noqa: E402,F401,F403

LoadPlugin(plugin, remote=False, ns=globals())
files = sorted(n for n in os.listdir(folder) if n.endswith(".sgrid"))
failures = 0
if files != ["wavelet_000000.sgrid", "wavelet_000001.sgrid", "wavelet_000002.sgrid"]:
    print("FAIL expected one file per time step, found %s" % files)
    sys.exit(1)
for i, name in enumerate(files):
    reader = SparseGridReader(FileName=[os.path.join(folder, name)])
    reader.UpdatePipeline()
    values = reader.TimestepValues
    times = list(values) if hasattr(values, "__len__") else [values]
    info = reader.GetDataInformation()
    # The mini-app runs t = 0, 1/3, 2/3 on a 17^3 wavelet.
    ok = (len(times) == 1 and abs(times[0] - i / 3.0) < 1e-12
          and info.GetNumberOfPoints() == 17 ** 3
          and reader.PointData["RTData"].GetRange()[1] > reader.PointData["RTData"].GetRange()[0])
    print("%s %s: time %s, %d points, RTData range %s" % ("ok  " if ok else "FAIL", name, times,
          info.GetNumberOfPoints(), reader.PointData["RTData"].GetRange()))
    failures += 0 if ok else 1
    Delete(reader)
sys.exit(1 if failures else 0)
