"""Error-bounded compression in an ordinary (non-symmetric) MPI run:

    mpirun -np N pvbatch test_mpi_bounded.py --plugin SparseGrid.so --sgrid FILE --ratio FILE --out DIR

Checks, against values this script computes itself (numpy, float64):
- each rank codes its own piece: SparseGrid.PieceExtents names one piece per rank, each rank's
  Hierarchize input was its piece only;
- the bound holds on every voxel of the whole image (Resample To Image with the original
  geometry, fetched, against the Wavelet fetched whole), and on a coarser level of detail the
  bound the field data announce holds and is at most twice the error, and the Summary names
  the level;
- the compression ratio is within 10% of the 1-rank run's (the 1-rank run writes it to --ratio);
- the .sgrid file the 1-rank run wrote reads on N ranks and keeps its bound, and the file N
  ranks write reads back with the same bound;
- a lossless representation (PSNR +inf) of a small image, some of whose ranks hold no voxel,
  arrives whole when fetched: VTK's legacy ASCII transport once lost every field array after
  the PSNR ("Unrecognized keyword: sparsegridlocal.inputpoints");
- a NaN in one rank's piece is kept, not refused: every rank succeeds with the same summary,
  which counts it, and the NaN comes back.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mpi_checks import SIZE, Checker, array_of, extent_points, field_values, piece_extent

import numpy as np
from paraview import servermanager
from paraview.simple import *  # noqa: F401,F403 (pvpython convention)

WHOLE = [-32, 32, -32, 32, -32, 32]
REFERENCE = None  # the whole Wavelet, computed in this process


def max_error(proxy, reference=None):
    """Largest error over every rank's piece of an image output (Fetch(proxy, k) is rank k's
    piece), against the reference computed here; also rank 0's piece."""
    worst = 0.0
    first = None
    for k in range(SIZE):
        image = servermanager.Fetch(proxy, k)
        first = first or image
        if image.GetNumberOfPoints() == 0:
            continue
        # Physical positions pick the reference's voxels (the outputs use 0-based extents
        # with the image's origin; the Wavelet uses origin 0 and its own extent).
        ext, origin, spacing = image.GetExtent(), image.GetOrigin(), image.GetSpacing()
        rext = REFERENCE.GetExtent()
        rdims = [rext[2 * a + 1] - rext[2 * a] + 1 for a in range(3)]
        ref = array_of(REFERENCE, "RTData").reshape(rdims[2], rdims[1], rdims[0])
        lo = [int(round(origin[a] + ext[2 * a] * spacing[a])) - rext[2 * a] for a in range(3)]
        n = [ext[2 * a + 1] - ext[2 * a] + 1 for a in range(3)]
        sub = ref[lo[2]:lo[2] + n[2], lo[1]:lo[1] + n[1], lo[0]:lo[0] + n[0]].astype(np.float64)
        mine = array_of(image, "RTData").astype(np.float64).reshape(sub.shape)
        worst = max(worst, float(np.max(np.abs(mine - sub))))
    return worst, first


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--plugin", required=True)
    parser.add_argument("--sgrid", required=True, help="the 1-rank run writes it, others read it")
    parser.add_argument("--ratio", required=True, help="the 1-rank run's ratio, written/read")
    parser.add_argument("--out", required=True, help="folder for this run's own .sgrid file")
    args = parser.parse_args()
    LoadPlugin(args.plugin, remote=False, ns=globals())
    checker = Checker(collective=False)
    print("SparseGrid MPI error-bounded test, %d rank(s)" % SIZE)

    w = Wavelet(WholeExtent=WHOLE)
    # The reference, computed here in one process (not fetched from the distributed pipeline).
    from vtkmodules.vtkImagingCore import vtkRTAnalyticSource
    global REFERENCE
    local = vtkRTAnalyticSource()
    local.SetWholeExtent(*WHOLE)
    local.Update()
    REFERENCE = local.GetOutput()
    original = array_of(REFERENCE, "RTData").astype(np.float64)
    bound = 1e-3 * (original.max() - original.min())
    h = SparseGridHierarchize(Input=w, Scalars=["RTData"])  # default: Relative 1e-3
    h.UpdatePipeline()
    rep = servermanager.Fetch(h)
    pieces = field_values(rep, "SparseGrid.PieceExtents")
    checker.check(pieces is not None and len(pieces) == 6 * SIZE,
                  "PieceExtents %s: expected one piece per rank" % pieces)
    for k in range(SIZE):
        n = field_values(servermanager.Fetch(h, k), "SparseGridLocal.InputPoints")
        share = extent_points(piece_extent(WHOLE, k, SIZE)) if SIZE > 1 else extent_points(WHOLE)
        checker.check(n is not None and int(n[0]) == share,
                      "rank %d's Hierarchize input had %s points, its piece %d" % (k, n, share))
    absolute = field_values(rep, "SparseGrid.AbsoluteErrorBound")[0]
    checker.check(abs(absolute - bound) <= 1e-9 * bound,
                  "absolute bound %g, expected 1e-3 x range = %g" % (absolute, bound))

    s = SparseGridResampleToImage(Input=h, UseOriginalGeometry=1)
    error, _ = max_error(s, original)
    print("  max error %.6g, bound %.6g, ratio %.3f" % (error, bound,
          field_values(rep, "SparseGrid.CompressionRatio")[0]))
    checker.check(error <= bound, "max error %g exceeds the bound %g" % (error, bound))
    s.LevelOfDetail = 2
    coarse_error, coarse = max_error(s, original)
    coarse_bound = field_values(coarse, "SparseGrid.AbsoluteErrorBound")
    checker.check(coarse_bound is not None
                  and coarse_error <= coarse_bound[0] <= 2 * coarse_error,
                  "level of detail 2: error %g, announced bound %s (at most twice the error)"
                  % (coarse_error, coarse_bound))
    summary = field_values(coarse, "SparseGrid.Summary")
    checker.check(summary is not None and summary[0].startswith("level 2 of "),
                  "level of detail 2: summary %s" % summary)
    print("  level of detail 2: error %.6g, announced bound %.6g" % (coarse_error,
          coarse_bound[0] if coarse_bound else float("nan")))

    ratio = field_values(rep, "SparseGrid.CompressionRatio")[0]
    if SIZE == 1:
        with open(args.ratio, "w") as f:
            f.write("%r\n" % ratio)
        if os.path.exists(args.sgrid):
            os.remove(args.sgrid)
        SaveData(args.sgrid, proxy=h)
    else:
        with open(args.ratio) as f:
            serial = float(f.read())
        checker.check(abs(ratio - serial) <= 0.1 * serial,
                      "ratio on %d ranks %.3f, on one rank %.3f (more than 10%% apart)"
                      % (SIZE, ratio, serial))
        # The 1-rank file read on N ranks.
        reader = SparseGridReader(FileName=args.sgrid)
        read_error, _ = max_error(reader, original)
        checker.check(read_error <= bound, "the 1-rank file read on %d ranks: error %g > %g"
                      % (SIZE, read_error, bound))
    # The file N ranks write reads back with the bound (one complete file).
    os.makedirs(args.out, exist_ok=True)
    mine = os.path.join(args.out, "bounded.sgrid")
    if os.path.exists(mine):
        os.remove(mine)
    SaveData(mine, proxy=h)
    checker.check(os.path.exists(mine), "SaveData on %d ranks wrote no file" % SIZE)
    if os.path.exists(mine):
        error, _ = max_error(SparseGridReader(FileName=mine), original)
        checker.check(error <= bound, "the %d-rank file read back: error %g > %g"
                      % (SIZE, error, bound))

    # Lossless, tiny, with pieces of one row: every field array must arrive on the client.
    tiny = Wavelet(WholeExtent=[0, 4, 0, 1, 0, 0])
    exact = SparseGridHierarchize(Input=tiny, Scalars=["RTData"], ErrorBoundMode="Absolute",
                                  ErrorBound=1e-30)
    exact.UpdatePipeline()
    local_rep = exact.GetClientSideObject().GetOutputDataObject(0)
    fetched = servermanager.Fetch(exact)
    names = lambda d: sorted(d.GetFieldData().GetArrayName(i)
                             for i in range(d.GetFieldData().GetNumberOfArrays()))
    checker.check(names(fetched) == names(local_rep),
                  "fetched field arrays %s, the filter's %s" % (names(fetched), names(local_rep)))
    psnr = field_values(fetched, "SparseGrid.PSNR")
    checker.check(psnr is not None and psnr[0] == 1e308,
                  "lossless PSNR travels as 1e308 (read back as +inf): %s" % psnr)

    # A NaN in the last voxel: only the piece holding it sees it; the ranks agree anyway.
    corner = "ext[1] == %d and ext[3] == %d and ext[5] == %d" % (WHOLE[1], WHOLE[3], WHOLE[5])
    nan = ProgrammableFilter(Input=w, Script=(
        "import numpy as np\n"
        "from vtkmodules.util.numpy_support import numpy_to_vtk, vtk_to_numpy\n"
        "inp = self.GetInputDataObject(0, 0)\n"
        "out = self.GetOutputDataObject(0)\n"
        "out.ShallowCopy(inp)\n"
        "ext = inp.GetExtent()\n"
        "if inp.GetNumberOfPoints() > 0 and %s:\n"
        "    a = vtk_to_numpy(inp.GetPointData().GetArray('RTData')).copy()\n"
        "    a[-1] = np.nan\n"
        "    v = numpy_to_vtk(a, deep=1)\n"
        "    v.SetName('RTData')\n"
        "    out.GetPointData().AddArray(v)\n" % corner))
    kept = SparseGridHierarchize(Input=nan, Scalars=["RTData"])
    kept.UpdatePipeline()
    summaries = [field_values(servermanager.Fetch(kept, k), "SparseGrid.Summary")
                 for k in range(SIZE)]
    counted = [x is not None and "; 1 special voxel" in x[0] for x in summaries]
    checker.check(counted.count(True) == SIZE,
                  "NaN in one piece: every rank's summary counts it: %s" % summaries)
    decoded = SparseGridResampleToImage(Input=kept, UseOriginalGeometry=1)
    nans = 0
    for k in range(SIZE):
        image = servermanager.Fetch(decoded, k)
        if image.GetNumberOfPoints() > 0:
            nans += int(np.count_nonzero(np.isnan(array_of(image, "RTData"))))
    checker.check(nans >= 1, "NaN in one piece: it comes back (%d NaN decoded)" % nans)
    return checker.finish()


if __name__ == "__main__":
    status = main()
    if status:  # sys.exit(0) under pvbatch/MPI ends the job "improperly" (no MPI_Finalize)
        sys.exit(status)
