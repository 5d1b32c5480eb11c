"""pvbatch --symmetric driver of scripts/bench-scaling.sh (every rank runs it).

    mpirun -np N pvbatch --symmetric scripts/bench_scaling.py --plugin SparseGrid.so \
        --piece 128 --out DIR

Each rank holds a fixed piece (PIECE^3 float Wavelet values; the whole image is PIECE x PIECE x
N*PIECE points split along z). Stages, each updated after the previous one: compress (Sparse
Grid Hierarchize), write (.sgrid SaveData), read (.sgrid reader), resample (Resample To Image
with the original geometry) and slice (Reconstruct on a z plane through the middle). Before a
stage, the rank's peak resident memory is reset ("5" into /proc/self/clear_refs); after it,
VmHWM is the stage's peak. Each rank writes DIR/rank-<r>.json with, per stage, the peak and
the peak above the memory resident when the stage began, in bytes, and the values of the
stage output's field-data counters SparseGridLocal.*Sent* / *Received* (bytes a rank sent and
received) where the filter has them.
"""
import argparse
import json
import os

from paraview import servermanager
from paraview.simple import *  # noqa: F401,F403 (pvpython convention)
from vtkmodules.vtkParallelCore import vtkMultiProcessController


def status_kib(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return -1


def reset_peak():
    """Resets VmHWM to the current resident size; False where the kernel refuses."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def counters(proxy):
    """SparseGridLocal.* traffic counters of this rank's output, as {name: bytes}."""
    data = proxy.GetClientSideObject().GetOutputDataObject(0)
    found = {}
    fd = data.GetFieldData() if data is not None else None
    for i in range(fd.GetNumberOfArrays() if fd is not None else 0):
        array = fd.GetAbstractArray(i)
        name = array.GetName() or ""
        if name.startswith("SparseGridLocal.") and ("Sent" in name or "Received" in name):
            found[name] = sum(array.GetVariantValue(j).ToDouble()
                              for j in range(array.GetNumberOfValues()))
    return found


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--plugin", required=True)
    parser.add_argument("--piece", type=int, default=128, help="points per axis of a rank's piece")
    parser.add_argument("--bound", type=float, default=1e-3, help="relative error bound")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    controller = vtkMultiProcessController.GetGlobalController()
    rank = controller.GetLocalProcessId() if controller else 0
    size = controller.GetNumberOfProcesses() if controller else 1
    LoadPlugin(args.plugin, remote=False, ns=globals())

    n = args.piece
    source = Wavelet(WholeExtent=[0, n - 1, 0, n - 1, 0, size * n - 1])
    source.UpdatePipeline()
    sgrid = os.path.join(args.out, "bench.sgrid")
    if rank == 0 and os.path.exists(sgrid):
        os.remove(sgrid)
    if controller:
        controller.Barrier()

    h = SparseGridHierarchize(Input=source, Scalars=["RTData"], ErrorBoundMode="Relative",
                              ErrorBound=args.bound)
    z = (size * n - 1) / 2.0  # the Wavelet's origin is 0 and its spacing 1
    plane = Plane(Origin=[0.0, 0.0, z], Point1=[n - 1.0, 0.0, z], Point2=[0.0, n - 1.0, z],
                  XResolution=n - 1, YResolution=n - 1)
    plane.UpdatePipeline()
    proxies = {}

    def compress():
        h.UpdatePipeline()
        proxies["compress"] = h

    def write():
        SaveData(sgrid, proxy=h)

    def read():
        proxies["read"] = SparseGridReader(FileName=[sgrid])
        proxies["read"].UpdatePipeline()

    def resample():
        proxies["resample"] = SparseGridResampleToImage(Input=h, UseOriginalGeometry=1)
        proxies["resample"].UpdatePipeline()

    def slice_probe():
        proxies["slice"] = SparseGridReconstruct(Input=plane, Source=h)
        proxies["slice"].UpdatePipeline()

    stages = [("compress", compress), ("write", write), ("read", read),
              ("resample", resample), ("slice", slice_probe)]
    results = {"rank": rank, "ranks": size, "piece": n, "stages": {}}
    resettable = True
    for name, run in stages:
        if controller:
            controller.Barrier()
        resettable = reset_peak() and resettable
        start = status_kib("VmRSS")
        run()
        peak = status_kib("VmHWM")
        results["stages"][name] = {
            "peak_bytes": peak * 1024,
            "above_start_bytes": max(0, peak - start) * 1024,
            "counters": counters(proxies[name]) if name in proxies else {},
        }
    results["peak_reset"] = resettable
    with open(os.path.join(args.out, "rank-%d.json" % rank), "w") as f:
        json.dump(results, f, indent=1)


main()
