"""pvbatch --symmetric driver of scripts/bench-scaling.sh (every rank runs it).

    mpirun -np N pvbatch --symmetric scripts/bench_scaling.py --plugin SparseGrid.so \
        --piece 128 --out DIR            (weak scaling: a fixed piece per rank)
    mpirun -np N pvbatch --symmetric scripts/bench_scaling.py --plugin SparseGrid.so \
        --image 256 --out DIR            (a fixed image, whatever N)

Weak scaling: each rank holds a fixed piece (PIECE^3 float Wavelet values; the whole image is
PIECE x PIECE x N*PIECE points). Fixed image: the whole image is IMAGE^3 points on any number of
ranks. Either way the pipeline splits it into N pieces. Stages, each updated after the previous
one: compress (Sparse Grid Hierarchize), write (.sgrid SaveData), read (.sgrid reader), resample
(Resample To Image with the original geometry) and slice (Reconstruct on a z plane through the
middle). Before a stage, the rank's peak resident memory is reset ("5" into
/proc/self/clear_refs); after it, VmHWM is the stage's peak. Each rank writes
DIR/rank-<r>.json with, per stage, the peak and the peak above the memory resident when the
stage began, in bytes, and the values of the stage output's SparseGridLocal.* counters (bytes
sent and received, bricks and voxels decoded) where the filter has them; and, after compress,
what the rank holds: the stream bytes in its output, the bytes of its own bricks' streams
(from the global index) and the bytes of every other array (the index and metadata).
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
    """SparseGridLocal.* counters of this rank's output (bytes sent and received, bricks and
    voxels decoded), as {name: value}."""
    data = proxy.GetClientSideObject().GetOutputDataObject(0)
    found = {}
    fd = data.GetFieldData() if data is not None else None
    for i in range(fd.GetNumberOfArrays() if fd is not None else 0):
        array = fd.GetAbstractArray(i)
        name = array.GetName() or ""
        if name.startswith("SparseGridLocal.") and any(
                word in name for word in ("Sent", "Received", "Decoded")):
            found[name] = sum(array.GetVariantValue(j).ToDouble()
                              for j in range(array.GetNumberOfValues()))
    return found


STREAM_ARRAYS = ("SparseGrid.StreamChunks", "SparseGrid.Streams")


def holdings(proxy, rank):
    """What this rank's Hierarchize output holds, in bytes: its stream bytes, its own bricks'
    stream bytes according to the global index, and every other array (index, metadata)."""
    data = proxy.GetClientSideObject().GetOutputDataObject(0)
    streams = rest = 0
    for attributes in (data.GetPointData(), data.GetCellData(), data.GetFieldData()):
        for i in range(attributes.GetNumberOfArrays()):
            array = attributes.GetAbstractArray(i)
            if array.IsA("vtkStringArray"):
                size = sum(len(array.GetValue(j)) for j in range(array.GetNumberOfValues()))
            else:
                size = array.GetNumberOfValues() * array.GetDataTypeSize()
            if array.GetName() in STREAM_ARRAYS:
                streams += size
            else:
                rest += size
    fd = data.GetFieldData()

    def values(name):
        array = fd.GetAbstractArray(name)
        return [] if array is None else [
            int(array.GetVariantValue(j).ToDouble()) for j in range(array.GetNumberOfValues())]

    bricks = len(values("SparseGrid.PieceExtents")) // 6
    owners = values("SparseGrid.PieceOwners") or [0] * bricks
    offsets = values("SparseGrid.StreamOffsets")
    per = (len(offsets) - 1) // bricks if bricks else 0
    own = sum(offsets[(b + 1) * per] - offsets[b * per] for b in range(bricks) if owners[b] == rank)
    return {"stream_bytes": streams, "own_brick_bytes": own, "other_bytes": rest,
            "bricks": bricks}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--plugin", required=True)
    parser.add_argument("--piece", type=int, default=128, help="points per axis of a rank's piece")
    parser.add_argument("--image", type=int, default=0,
                        help="points per axis of the whole image (fixed image; 0: weak scaling)")
    parser.add_argument("--bound", type=float, default=1e-3, help="relative error bound")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    controller = vtkMultiProcessController.GetGlobalController()
    rank = controller.GetLocalProcessId() if controller else 0
    size = controller.GetNumberOfProcesses() if controller else 1
    LoadPlugin(args.plugin, remote=False, ns=globals())

    n = args.image if args.image > 0 else args.piece
    depth = n if args.image > 0 else size * n  # points along z
    source = Wavelet(WholeExtent=[0, n - 1, 0, n - 1, 0, depth - 1])
    source.UpdatePipeline()
    sgrid = os.path.join(args.out, "bench.sgrid")
    if rank == 0 and os.path.exists(sgrid):
        os.remove(sgrid)
    if controller:
        controller.Barrier()

    h = SparseGridHierarchize(Input=source, Scalars=["RTData"], ErrorBoundMode="Relative",
                              ErrorBound=args.bound)
    z = (depth - 1) / 2.0  # the Wavelet's origin is 0 and its spacing 1
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
    results = {"rank": rank, "ranks": size, "image": [n, n, depth], "stages": {}}
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
    results["held_after_compress"] = holdings(h, rank)
    results["peak_reset"] = resettable
    with open(os.path.join(args.out, "rank-%d.json" % rank), "w") as f:
        json.dump(results, f, indent=1)


main()
