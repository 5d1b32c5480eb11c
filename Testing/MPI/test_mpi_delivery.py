"""Delivery of the compressed representation in an ordinary (non-symmetric) MPI run, as a user
drives it: rank 0 runs this script and the other ranks serve it, as pvserver's ranks would.

    mpirun -np N pvbatch test_mpi_delivery.py --plugin SparseGrid.so --sgrid FILE --out DIR

Checks:
- Fetch (which appends the pieces) gives exactly one representation (the surpluses once), and
  with Output Grid Points ParaView's data information counts the grid points once (the grid
  size, not N times);
- piece 0 holds the coefficients, the others none but the same SparseGrid.* field data, and
  each rank's Hierarchize input was its piece only;
- Reconstruct and Resample To Image deliver one piece per rank (the image once);
- the .sgrid file: with 1 rank, SaveData writes FILE (later runs compare against it); with N
  ranks the representation read back from FILE equals the distributed one bit for bit, and
  Reconstruct fed by the .sgrid reader (whose other pieces are empty, with no field data at all)
  gives the same image as when fed by Hierarchize; SaveData with N ranks must leave exactly one
  complete file that reads back the same, or, where the writer does not run in parallel, say so.
"""
import argparse
import glob
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mpi_checks import (SIZE, Checker, array_of, extent_points, field_values, piece_extent,
                        surpluses_of)

import numpy as np
from paraview import servermanager
from paraview.simple import *  # noqa: F401,F403 (pvpython convention)

WHOLE = [-10, 10, -10, 10, -10, 10]


def same_arrays(a, b, names):
    for name in names:
        x, y = array_of(a, name), array_of(b, name)
        if x.shape != y.shape or not np.array_equal(x, y):
            return False
    return True


def check_file(checker, path, reference, label):
    """The representation read back from `path` equals `reference` (coefficients, metadata)."""
    reader = SparseGridReader(FileName=path, OutputReconstructedImage=0)
    read = servermanager.Fetch(reader)
    a, b = surpluses_of(read, "RTData"), surpluses_of(reference, "RTData")
    checker.check(a is not None and b is not None and a.shape == b.shape,
                  "%s: %s coefficients read back, expected %s"
                  % (label, None if a is None else a.shape, None if b is None else b.shape))
    if a is not None and b is not None and a.shape == b.shape:
        checker.check(np.array_equal(a, b),
                      "%s: coefficients read back differ from the distributed ones" % label)
        for name in ("SparseGrid.Level", "SparseGrid.LevelCaps", "SparseGrid.Bounds",
                     "SparseGrid.CompressionRatio", "SparseGrid.MaxAbsError"):
            checker.check(field_values(read, name) == field_values(reference, name),
                          "%s: %s read back %s, expected %s" % (label, name,
                          field_values(read, name), field_values(reference, name)))
    return reader


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--plugin", required=True)
    parser.add_argument("--sgrid", required=True, help="the 1-rank run writes it, others read it")
    parser.add_argument("--out", required=True, help="folder for this run's own .sgrid file")
    args = parser.parse_args()
    LoadPlugin(args.plugin, remote=False, ns=globals())
    checker = Checker(collective=False)
    print("SparseGrid MPI delivery test, %d rank(s)" % SIZE)

    w = Wavelet(WholeExtent=WHOLE)
    h = SparseGridHierarchize(ErrorBoundMode="Off", Input=w, Scalars=["RTData"], ComputeError=1)
    h.UpdatePipeline()
    whole = servermanager.Fetch(h)  # pieces appended: the representation once
    grid = int(field_values(whole, "SparseGrid.NumberOfCoefficients")[0])
    fetched = surpluses_of(whole, "RTData")
    print("  Fetch: %s surpluses (grid %d), %d points"
          % (None if fetched is None else fetched.shape[0], grid, whole.GetNumberOfPoints()))
    checker.check(fetched is not None and fetched.shape[0] == grid and
                  whole.GetNumberOfPoints() == 0 and
                  field_values(whole, "SparseGrid.Level") is not None,
                  "Fetch gave %s surpluses for a grid of %d"
                  % (None if fetched is None else fetched.shape[0], grid))
    # With the grid points as output, they are counted once over the ranks.
    hp = SparseGridHierarchize(ErrorBoundMode="Off", Input=w, Scalars=["RTData"], ComputeError=0,
                               OutputGridPoints=1)
    hp.UpdatePipeline()
    info = hp.GetDataInformation()
    points = servermanager.Fetch(hp).GetNumberOfPoints()
    print("  Output Grid Points: data information %d points, Fetch %d points (grid %d)"
          % (info.GetNumberOfPoints(), points, grid))
    checker.check(info.GetNumberOfPoints() == grid and points == grid,
                  "with grid points: data information counts %d points, Fetch %d, for a grid "
                  "of %d" % (info.GetNumberOfPoints(), points, grid))
    Delete(hp)

    whole_points = extent_points(WHOLE)
    received = []
    for k in range(SIZE):
        piece = servermanager.Fetch(h, k)  # rank k's own output
        n = field_values(piece, "SparseGridLocal.InputPoints")
        received.append(int(n[0]) if n else -1)
        held = surpluses_of(piece, "RTData")
        held = 0 if held is None else held.shape[0]
        expected = grid if k == 0 else 0
        checker.check(held == expected and piece.GetNumberOfPoints() == 0,
                      "rank %d's output holds %d surpluses and %d points, expected %d and 0"
                      % (k, held, piece.GetNumberOfPoints(), expected))
        checker.check(field_values(piece, "SparseGrid.Level") ==
                      field_values(whole, "SparseGrid.Level") and
                      field_values(piece, "SparseGrid.ArrayNames") == ["RTData"],
                      "rank %d's output lacks the representation's field data" % k)
        share = extent_points(piece_extent(WHOLE, k, SIZE)) if SIZE > 1 else whole_points
        checker.check(received[-1] == share,
                      "rank %d's Hierarchize input had %d points, its piece %d"
                      % (k, received[-1], share))
    print("  Hierarchize input points per rank: %s (whole image %d)" % (received, whole_points))

    # The reconstructed images come once: one piece per rank, as the image itself does.
    r = SparseGridReconstruct(Input=w, Source=h)
    r.UpdatePipeline()
    s = SparseGridResampleToImage(Input=h, UseOriginalGeometry=1)
    s.UpdatePipeline()
    pieces = sum(extent_points(piece_extent(WHOLE, k, SIZE)) for k in range(SIZE))
    for label, proxy in (("Reconstruct", r), ("Resample To Image", s)):
        n = proxy.GetDataInformation().GetNumberOfPoints()
        print("  %s: %d points over the ranks (pieces of the image: %d)" % (label, n, pieces))
        checker.check(n == pieces, "%s delivers %d points, the pieces hold %d"
                      % (label, n, pieces))

    # The .sgrid file.
    if SIZE == 1:
        if os.path.exists(args.sgrid):
            os.remove(args.sgrid)
        SaveData(args.sgrid, proxy=h)
        checker.check(os.path.exists(args.sgrid), "SaveData wrote no file with 1 rank")
    if not os.path.exists(args.sgrid):
        checker.check(False, "no 1-rank file %s to compare with" % args.sgrid)
        return checker.finish()
    reader = check_file(checker, args.sgrid, whole, "1-rank file against this run")
    # Reconstruct fed by the reader: the representation is on piece 0 only, the other pieces
    # are empty without field data, so every rank gets it through the broadcast.
    r2 = SparseGridReconstruct(Input=w, Source=reader)
    r2.UpdatePipeline()
    for k in range(SIZE):
        a, b = servermanager.Fetch(r, k), servermanager.Fetch(r2, k)
        checker.check(a.GetNumberOfPoints() == b.GetNumberOfPoints() and
                      same_arrays(a, b, ["RTData"]),
                      "rank %d: Reconstruct from the .sgrid reader differs from Reconstruct "
                      "from Hierarchize" % k)

    if SIZE > 1:
        os.makedirs(args.out, exist_ok=True)
        for old in glob.glob(os.path.join(args.out, "*")):
            os.remove(old)
        path = os.path.join(args.out, "distributed.sgrid")
        try:
            SaveData(path, proxy=h)
        except Exception as error:  # the writer factory offers no writer: SaveData fails
            print("  SaveData raised: %s" % error)
        files = sorted(os.listdir(args.out))
        if not files:
            print("  NOTE: the .sgrid writer did not write with %d ranks (it does not declare "
                  "parallel support); see docs/distributed.md" % SIZE)
        else:
            checker.check(files == ["distributed.sgrid"],
                          "SaveData with %d ranks left %s, expected one file" % (SIZE, files))
            check_file(checker, path, whole, "file written by %d ranks" % SIZE)
            # Writing must not have made Hierarchize compress the whole image on every rank
            # (a writer asking for piece 0 of 1 would).
            after = []
            for k in range(SIZE):
                n = field_values(servermanager.Fetch(h, k), "SparseGridLocal.InputPoints")
                after.append(int(n[0]) if n else -1)
            checker.check(after == received,
                          "after SaveData the Hierarchize inputs were %s points, before %s"
                          % (after, received))
            print("  SaveData with %d ranks: one file, equal to the 1-rank one; Hierarchize "
                  "inputs stayed %s" % (SIZE, after))
    return checker.finish()


if __name__ == "__main__":
    status = main()
    if status:
        sys.exit(status)
