"""Local decode at scale, as counts, in an ordinary (non-symmetric) MPI run:

    mpirun -np N pvbatch test_mpi_decode.py --plugin SparseGrid.so

A 48^3 Wavelet coded in bricks of 16 samples per axis. Checked per rank (Fetch(proxy, k) is rank
k's own output), against the representation's global index:
- what a rank holds after Sparse Grid Hierarchize: its own bricks' stream bytes (whole chunks)
  plus the index (the field data, the same size on every rank, rank 0 included, and small: a
  few hundred bytes per brick), nothing else;
- Resample To Image on the original geometry: each rank decodes exactly the bricks that the
  filters' rule gives (its own bricks, and the neighbours' bricks that hold the planes its piece
  shares with the next pieces, which are coded once, in the next piece) and receives exactly the
  bytes of the neighbours' (SparseGridLocal.BricksDecoded, VoxelsDecoded, BytesReceived);
- a z-slice between two voxel planes decodes only bricks that hold one of those planes;
- the bricks decode in parallel: 1 thread and 4 threads give the same values bit for bit and
  the same counts, on the original geometry and on a resampled lattice whose pieces lie on
  several ranks' bricks (voxels shared by two bricks come from one of them, whatever the
  threads).
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mpi_checks import SIZE, Checker, array_of, field_values
from test_mpi_local import count, index_of, voxel_box

import numpy as np
from paraview import servermanager
from paraview.simple import *  # noqa: F401,F403 (pvpython convention)

WHOLE = [0, 47, 0, 47, 0, 47]
BRICK = 16
CHUNK = 4096  # bytes per point of SparseGrid.StreamChunks
STREAM_ARRAYS = ("SparseGrid.StreamChunks", "SparseGrid.Streams")


def array_bytes(array):
    if array.IsA("vtkStringArray"):
        return sum(len(array.GetValue(i)) for i in range(array.GetNumberOfValues()))
    return array.GetNumberOfValues() * array.GetDataTypeSize()


def held_bytes(data):
    """(stream bytes, every other byte of the output's arrays): point, cell and field data."""
    streams, rest = 0, 0
    for attributes in (data.GetPointData(), data.GetCellData(), data.GetFieldData()):
        for i in range(attributes.GetNumberOfArrays()):
            array = attributes.GetAbstractArray(i)
            size = array_bytes(array)
            if array.GetName() in STREAM_ARRAYS:
                streams += size
            else:
                rest += size
    return streams, rest


def brick_voxels(extent):
    return ((extent[1] - extent[0] + 1) * (extent[3] - extent[2] + 1) *
            (extent[5] - extent[4] + 1))


def expected_bricks(bricks, owners, box, rank):
    """The bricks a rank decodes for the voxels `box` (None: an empty piece), by the filters'
    rule: every voxel comes from the first brick holding it, the rank's own bricks first, then
    the others, each by index."""
    if box is None:
        return []
    order = ([b for b in range(len(bricks)) if owners[b] == rank] +
             [b for b in range(len(bricks)) if owners[b] != rank])
    taken = np.zeros([box[2 * a + 1] - box[2 * a] + 1 for a in (2, 1, 0)], dtype=bool)
    chosen = []
    for b in order:
        e = bricks[b]
        lo = [max(e[2 * a], box[2 * a]) - box[2 * a] for a in range(3)]
        hi = [min(e[2 * a + 1], box[2 * a + 1]) - box[2 * a] for a in range(3)]
        if any(lo[a] > hi[a] for a in range(3)):
            continue
        region = taken[lo[2]:hi[2] + 1, lo[1]:hi[1] + 1, lo[0]:hi[0] + 1]
        if not region.all():
            chosen.append(b)
        region[...] = True
    return chosen


def per_rank(proxy, names):
    """Rank k's output and its counters {name: value} for every rank."""
    out = []
    for k in range(SIZE):
        data = servermanager.Fetch(proxy, k)
        out.append((data, {n: count(data, n) for n in names}))
    return out


COUNTERS = ("SparseGridLocal.BricksDecoded", "SparseGridLocal.VoxelsDecoded",
            "SparseGridLocal.BytesReceived")


def same_with_threads(checker, label, proxy):
    """1 thread against 4: equal values bit for bit and equal counters on every rank."""
    results = {}
    for threads in (1, 4):
        proxy.NumberOfThreads = threads
        proxy.UpdatePipeline()
        results[threads] = [(array_of(d, "RTData").copy(), c)
                            for d, c in per_rank(proxy, COUNTERS)]
    for k in range(SIZE):
        (serial, c1), (parallel, c4) = results[1][k], results[4][k]
        checker.check(serial.shape == parallel.shape and np.array_equal(
            serial.view(np.uint32), parallel.view(np.uint32)),
            "%s: rank %d, 4 threads differ from 1 thread" % (label, k))
        checker.check(c1 == c4, "%s: rank %d counters %s with 1 thread, %s with 4"
                      % (label, k, c1, c4))
    proxy.NumberOfThreads = 0
    return [c for _, c in results[4]]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--plugin", required=True)
    args = parser.parse_args()
    LoadPlugin(args.plugin, remote=False, ns=globals())
    checker = Checker(collective=False)
    print("SparseGrid MPI decode-count test, %d rank(s)" % SIZE)

    w = Wavelet(WholeExtent=WHOLE)
    h = SparseGridHierarchize(Input=w, Scalars=["RTData"], BrickSize=BRICK)
    h.UpdatePipeline()
    bricks, owners, sizes = index_of(servermanager.Fetch(h))
    image = brick_voxels(WHOLE)
    print("  %d bricks, %d stream bytes, image %d voxels" % (len(bricks), sum(sizes), image))
    checker.check(len(bricks) >= 27, "%d bricks, expected at least 27" % len(bricks))

    # 1. After Hierarchize: own bricks + the index, on every rank.
    index_sizes = []
    for k in range(SIZE):
        data = servermanager.Fetch(h, k)
        streams, index = held_bytes(data)
        own = sum(s for s, o in zip(sizes, owners) if o == k)
        expected = -(-own // CHUNK) * CHUNK if SIZE > 1 else own
        checker.check(streams == expected, "rank %d holds %d stream bytes, its own bricks %d"
                      % (k, streams, expected))
        checker.check(index <= 1024 + 512 * len(bricks),
                      "rank %d holds %d bytes besides its streams (%d bricks)"
                      % (k, index, len(bricks)))
        index_sizes.append(index)
    checker.check(max(index_sizes) - min(index_sizes) <= 64,
                  "index bytes per rank %s: not the same index everywhere" % index_sizes)
    print("  after Hierarchize: index bytes per rank %s, streams only the rank's own"
          % index_sizes)

    # 2. Resample on the original geometry: each rank decodes its own bricks and, for the plane
    # its piece shares with the next piece (which Hierarchize codes once, in the next piece),
    # the neighbour's bricks on that plane; nothing else.
    s = SparseGridResampleToImage(Input=h, UseOriginalGeometry=1)
    counters = same_with_threads(checker, "original geometry", s)
    rep = servermanager.Fetch(h)
    voxels = []
    for k, c in enumerate(counters):
        box = voxel_box(servermanager.Fetch(s, k), rep)
        chosen = expected_bricks(bricks, owners, box, k)
        expected = {"SparseGridLocal.BricksDecoded": len(chosen),
                    "SparseGridLocal.VoxelsDecoded": sum(brick_voxels(bricks[b]) for b in chosen),
                    "SparseGridLocal.BytesReceived": sum(sizes[b] for b in chosen
                                                         if owners[b] != k)}
        own = sum(brick_voxels(e) for e, o in zip(bricks, owners) if o == k)
        voxels.append(c["SparseGridLocal.VoxelsDecoded"])
        checker.check(c == expected, "original geometry: rank %d counted %s, expected %s"
                      % (k, c, expected))
        # Its own bricks plus at most one layer of bricks beyond each of its three upper faces.
        limit = own + 3 * image * BRICK // 48
        checker.check(c["SparseGridLocal.VoxelsDecoded"] <= min(image, limit),
                      "original geometry: rank %d decoded %s voxels, its own bricks hold %d"
                      % (k, c["SparseGridLocal.VoxelsDecoded"], own))
    checker.check(SIZE > 1 or voxels == [image], "one rank decoded %s of %d voxels"
                  % (voxels, image))
    print("  original geometry: voxels decoded per rank %s of %d" % (voxels, image))

    # 3. A lattice whose pieces cross other ranks' bricks: still equal with 1 and 4 threads.
    s.UseOriginalGeometry = 0
    s.UseInputBounds = 1
    s.SamplingDimensions = [37, 41, 43]
    counters = same_with_threads(checker, "resampled lattice", s)
    print("  resampled 37 x 41 x 43: bricks decoded per rank %s, bit-identical on 1 and 4 threads"
          % [c["SparseGridLocal.BricksDecoded"] for c in counters])

    # 4. A z-slice between the voxel planes 20 and 21: only bricks holding one of them.
    z = 20.5
    s.UseInputBounds = 0
    s.SamplingBounds = [0, 47, 0, 47, z, z]
    s.SamplingDimensions = [48, 48, 1]
    counters = same_with_threads(checker, "z-slice", s)
    crossing = [b for b, e in enumerate(bricks) if e[4] <= 21 and 20 <= e[5]]
    limit = sum(brick_voxels(bricks[b]) for b in crossing)
    for k, c in enumerate(counters):
        checker.check(c["SparseGridLocal.VoxelsDecoded"] is not None and
                      c["SparseGridLocal.VoxelsDecoded"] <= limit and
                      c["SparseGridLocal.BricksDecoded"] <= len(crossing),
                      "z-slice: rank %d counted %s, %d bricks (%d voxels) cross the slice"
                      % (k, c, len(crossing), limit))
    print("  z-slice: voxels decoded per rank %s, the crossing bricks %d, the image %d"
          % ([c["SparseGridLocal.VoxelsDecoded"] for c in counters], limit, image))
    Delete(s)
    return checker.finish()


if __name__ == "__main__":
    status = main()
    if status:
        sys.exit(status)
