"""Error-bounded compression kept distributed, in an ordinary (non-symmetric) MPI run:

    mpirun -np N pvbatch test_mpi_local.py --plugin SparseGrid.so --out DIR [--read FILE]

A 48^3 Wavelet coded in bricks of 16 samples per axis. Checked, per rank (Fetch(proxy, k) is rank
k's own output), against counts computed here from the representation's global index
(SparseGrid.PieceExtents, PieceOwners, StreamOffsets) and values computed here (numpy):
- ownership: each rank's Hierarchize output holds the streams of its own bricks and nothing else
  (its SparseGrid.StreamChunks are exactly its bytes rounded up to whole chunks); the whole
  representation (Fetch, which appends the ranks' outputs) holds every brick once, and decoded
  elsewhere (through a legacy .vtk file) it keeps the bound on every voxel;
- local decode: Resample To Image on the original geometry and on a z-slice decodes on each rank
  exactly the bricks under its piece of the output (SparseGridLocal.BricksDecoded) and receives
  exactly the bytes of those it does not own (SparseGridLocal.BytesReceived); the slice decodes
  only bricks that cross it; the bound holds on every voxel;
- files: the file written by N ranks (DIR/local.sgrid) reads back with the bound; --read FILE
  reads a file written by another number of ranks on this run's ranks with the bound on every
  voxel, and the reader's pieces decode only the bricks under them.
"""
import argparse
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mpi_checks import SIZE, Checker, array_of, field_values

import numpy as np
from paraview import servermanager
from paraview.simple import *  # noqa: F401,F403 (pvpython convention)
from vtkmodules.util.numpy_support import vtk_to_numpy

WHOLE = [0, 47, 0, 47, 0, 47]
BRICK = 16
CHUNK = 4096  # bytes per point of SparseGrid.StreamChunks
REFERENCE = None


def index_of(rep):
    """(brick extents, owners, bytes per brick) of the global index."""
    extents = [int(v) for v in field_values(rep, "SparseGrid.PieceExtents")]
    bricks = len(extents) // 6
    owners = field_values(rep, "SparseGrid.PieceOwners")
    owners = [int(v) for v in owners] if owners else [0] * bricks
    offsets = [int(v) for v in field_values(rep, "SparseGrid.StreamOffsets")]
    per = (len(offsets) - 1) // bricks
    sizes = [offsets[(b + 1) * per] - offsets[b * per] for b in range(bricks)]
    return [extents[6 * b:6 * b + 6] for b in range(bricks)], owners, sizes


def chunk_bytes(data):
    array = data.GetPointData().GetArray("SparseGrid.StreamChunks")
    return 0 if array is None else array.GetNumberOfTuples() * array.GetNumberOfComponents()


def count(data, name):
    values = field_values(data, name)
    return int(values[0]) if values else None


def voxel_box(image, rep):
    """The voxels of the compressed image under a piece of an image output, as the filters
    compute it (probe points snapped to voxels), or None when the piece is empty."""
    if image.GetNumberOfPoints() == 0:
        return None
    origin0 = field_values(rep, "SparseGrid.ImageOrigin")
    spacing0 = field_values(rep, "SparseGrid.ImageSpacing")
    dims0 = [int(v) for v in field_values(rep, "SparseGrid.ImageDimensions")]
    ext, origin, spacing = image.GetExtent(), image.GetOrigin(), image.GetSpacing()
    box = []
    for a in range(3):
        ends = [origin[a] + ext[2 * a] * spacing[a], origin[a] + ext[2 * a + 1] * spacing[a]]
        u = [min(dims0[a] - 1, max(0.0, (x - origin0[a]) / spacing0[a])) for x in ends]
        u = [round(v) if abs(v - round(v)) < 1e-9 else v for v in u]
        box += [max(0, math.floor(u[0])), min(dims0[a] - 1, math.ceil(u[1]))]
    return box


def meets(extent, box):
    return all(extent[2 * a] <= box[2 * a + 1] and box[2 * a] <= extent[2 * a + 1]
               for a in range(3))


def max_error(image):
    """Largest error of an image piece against the reference Wavelet (physical positions)."""
    if image.GetNumberOfPoints() == 0:
        return 0.0
    ext, origin, spacing = image.GetExtent(), image.GetOrigin(), image.GetSpacing()
    ref = array_of(REFERENCE, "RTData").reshape(48, 48, 48).astype(np.float64)
    lo = [int(round(origin[a] + ext[2 * a] * spacing[a])) for a in range(3)]
    n = [ext[2 * a + 1] - ext[2 * a] + 1 for a in range(3)]
    sub = ref[lo[2]:lo[2] + n[2], lo[1]:lo[1] + n[1], lo[0]:lo[0] + n[0]]
    mine = array_of(image, "RTData").astype(np.float64).reshape(sub.shape)
    return float(np.max(np.abs(mine - sub)))


def check_local_decode(checker, label, proxy, rep, owners_known=True):
    """Per rank: bricks decoded = bricks under its output piece; bytes received = those of
    them that it does not own; error within the bound. Returns (decoded per rank, worst error)."""
    bricks, owners, sizes = index_of(rep)
    decoded, worst = [], 0.0
    for k in range(SIZE):
        image = servermanager.Fetch(proxy, k)
        box = voxel_box(image, rep)
        under = [b for b, e in enumerate(bricks) if box is not None and meets(e, box)]
        got = count(image, "SparseGridLocal.BricksDecoded")
        received = count(image, "SparseGridLocal.BytesReceived")
        decoded.append(got)
        checker.check(got == len(under),
                      "%s: rank %d decoded %s bricks, %d lie under its piece %s"
                      % (label, k, got, len(under), box))
        if owners_known:
            expected = sum(sizes[b] for b in under if owners[b] != k)
            checker.check(received == expected,
                          "%s: rank %d received %s bytes, expected %d (bricks it does not own)"
                          % (label, k, received, expected))
        worst = max(worst, max_error(image))
    return decoded, worst


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--plugin", required=True)
    parser.add_argument("--out", required=True, help="folder for this run's files")
    parser.add_argument("--read", help="a file written by another number of ranks")
    args = parser.parse_args()
    LoadPlugin(args.plugin, remote=False, ns=globals())
    checker = Checker(collective=False)
    print("SparseGrid MPI local-decode test, %d rank(s)" % SIZE)
    os.makedirs(args.out, exist_ok=True)

    from vtkmodules.vtkImagingCore import vtkRTAnalyticSource
    global REFERENCE
    local = vtkRTAnalyticSource()
    local.SetWholeExtent(*WHOLE)
    local.Update()
    REFERENCE = local.GetOutput()
    values = array_of(REFERENCE, "RTData").astype(np.float64)
    bound = 1e-3 * (values.max() - values.min())

    w = Wavelet(WholeExtent=WHOLE)
    h = SparseGridHierarchize(Input=w, Scalars=["RTData"], BrickSize=BRICK)
    h.UpdatePipeline()
    whole = servermanager.Fetch(h)
    bricks, owners, sizes = index_of(whole)
    print("  %d bricks, owners %s, %d bytes" % (len(bricks), sorted(set(owners)), sum(sizes)))
    checker.check(len(bricks) >= 27, "%d bricks, expected at least 27" % len(bricks))

    # 1. Ownership: each rank holds its own bricks' streams, nothing else.
    if SIZE > 1:
        checker.check(sorted(set(owners)) == list(range(SIZE)),
                      "owners %s: every rank codes its own bricks" % sorted(set(owners)))
        total = 0
        for k in range(SIZE):
            mine = sum(s for s, o in zip(sizes, owners) if o == k)
            held = chunk_bytes(servermanager.Fetch(h, k))
            padded = -(-mine // CHUNK) * CHUNK
            total += held
            checker.check(held == padded,
                          "rank %d holds %d stream bytes, its own bricks %d (%d in chunks)"
                          % (k, held, mine, padded))
        checker.check(chunk_bytes(whole) == total and total >= sum(sizes),
                      "Fetch holds %d stream bytes, the ranks %d, the streams %d"
                      % (chunk_bytes(whole), total, sum(sizes)))
        # The fetched representation is whole: decoded through a file, elsewhere.
        from vtkmodules.vtkIOLegacy import vtkPolyDataWriter
        path = os.path.join(args.out, "fetched.vtk")
        writer = vtkPolyDataWriter()
        writer.SetInputData(whole)
        writer.SetFileName(path)
        writer.SetFileTypeToBinary()
        writer.Write()
        fetched = LegacyVTKReader(FileNames=[path])
        resampled = SparseGridResampleToImage(Input=fetched, UseOriginalGeometry=1)
        _, worst = check_local_decode(checker, "fetched", resampled, whole, owners_known=False)
        checker.check(worst <= bound, "the fetched representation decoded: error %g > %g"
                      % (worst, bound))
        print("  Fetch: the whole representation, decoded elsewhere within the bound (%.4g)"
              % worst)
        Delete(resampled)
        Delete(fetched)
    else:
        checker.check(chunk_bytes(whole) == 0 and
                      whole.GetFieldData().GetArray("SparseGrid.Streams") is not None,
                      "one process: the streams in SparseGrid.Streams")

    # 2. Local decode: the whole image on the original geometry.
    s = SparseGridResampleToImage(Input=h, UseOriginalGeometry=1)
    decoded, worst = check_local_decode(checker, "original geometry", s, whole)
    checker.check(worst <= bound, "original geometry: error %g > bound %g" % (worst, bound))
    print("  original geometry: bricks decoded per rank %s of %d, error %.4g <= %.4g"
          % (decoded, len(bricks), worst, bound))

    # ... and a z-slice on a voxel plane: only the bricks crossing it.
    z = 20
    s.UseOriginalGeometry = 0
    s.UseInputBounds = 0
    s.SamplingBounds = [0, 47, 0, 47, z, z]
    s.SamplingDimensions = [48, 48, 1]
    decoded, worst = check_local_decode(checker, "z-slice", s, whole)
    crossing = [b for b, e in enumerate(bricks) if e[4] <= z <= e[5]]
    checker.check(worst <= bound, "z-slice: error %g > bound %g" % (worst, bound))
    checker.check(all(d is not None and d <= len(crossing) for d in decoded),
                  "z-slice: bricks decoded per rank %s, %d cross the slice"
                  % (decoded, len(crossing)))
    print("  z-slice: bricks decoded per rank %s (%d cross it, %d in all)"
          % (decoded, len(crossing), len(bricks)))
    Delete(s)

    # 3. Files.
    path = os.path.join(args.out, "local.sgrid")
    if os.path.exists(path):
        os.remove(path)
    SaveData(path, proxy=h)
    checker.check(os.path.exists(path), "SaveData on %d ranks wrote no file" % SIZE)
    files = [path] + ([args.read] if args.read else [])
    for name in files:
        if not os.path.exists(name):
            checker.check(False, "no file %s" % name)
            continue
        reader = SparseGridReader(FileName=name)
        rep = servermanager.Fetch(SparseGridReader(FileName=name, OutputReconstructedImage=0))
        decoded, worst = check_local_decode(checker, os.path.basename(name), reader, rep,
                                            owners_known=False)
        checker.check(worst <= bound, "%s read on %d ranks: error %g > %g"
                      % (name, SIZE, worst, bound))
        print("  %s read on %d rank(s): bricks decoded per rank %s, error %.4g"
              % (name, SIZE, decoded, worst))
        Delete(reader)
    return checker.finish()


if __name__ == "__main__":
    status = main()
    if status:
        sys.exit(status)
