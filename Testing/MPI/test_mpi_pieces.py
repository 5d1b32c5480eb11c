"""Pieces a simulation hands over as they are (not VTK's split), under the error-bounded encoding:

    mpirun -np N pvbatch --symmetric test_mpi_pieces.py --plugin SparseGrid.so

Each rank's piece is a slab of planes chosen here (a programmable filter replaces the Wavelet's
piece). Checks, on every rank:
- pieces of different types (the last rank's double with detail of 1e-4, the others float;
  the lowest rank, which leads, holds float) agree on a
  precision that keeps everyone's bound: Absolute 1e-6 holds on every voxel against the
  original values (float64 here), and the reported MaxAbsError is at least the error measured;
- slabs that share a boundary plane with the same values are accepted and keep the bound;
- a plane in no piece, two slabs that overlap by more than one plane, and shared planes with
  different values (in both encodings) are refused on every rank with a message saying so, and
  nothing is emitted.
"""
import argparse
import os
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mpi_checks import RANK, SIZE, Checker, array_of, field_values, say

import numpy as np
from paraview.simple import *  # noqa: F401,F403 (pvpython convention)
from test_mpi import ErrorLog, local

PLANES = 4  # per rank
WHOLE = [0, 8, 0, 6, 0, PLANES * SIZE - 1]
BOUND = 1e-6

# (Names below avoid numpy's, and any/min/max are not used: the programmable filter runs its
# script in this module's namespace and imports numpy's algorithms there.)
# The programmable filter's script: this rank's slab [lo, hi] of planes, values of
# reference_values() in the rank's type. LAYOUT: name -> (lo, hi, plane offset, double?) per rank.
SCRIPT = """
import numpy as np
from vtkmodules.util.numpy_support import numpy_to_vtk
from vtkmodules.vtkParallelCore import vtkMultiProcessController
c = vtkMultiProcessController.GetGlobalController()
rank = c.GetLocalProcessId() if c else 0
lo, hi, shift, double = %r[rank]
out = self.GetOutputDataObject(0)
out.Initialize()
out.SetExtent(0, 8, 0, 6, lo, hi)
z, y, x = np.meshgrid(np.arange(lo, hi + 1), np.arange(7), np.arange(9), indexing="ij")
v = 100 + np.sin(0.3 * x) + np.cos(0.2 * y) + 0.1 * z + shift
v += 1e-4 * ((7 * x + 13 * y + 17 * z) %% 10)
a = numpy_to_vtk(v.ravel().astype(np.float64 if double else np.float32), deep=1)
a.SetName("f")
out.GetPointData().AddArray(a)
"""


def original_planes(z, owner_double, shift=0.0):
    """The original values of the planes z (float64), as the owning piece holds them."""
    zz, y, x = np.meshgrid(z, np.arange(7), np.arange(9), indexing="ij")
    # Near 100 float rounds by up to 3.8e-6: coded in float, the double piece would miss 1e-6.
    v = (100 + np.sin(0.3 * x) + np.cos(0.2 * y) + 0.1 * zz
         + 1e-4 * ((7 * x + 13 * y + 17 * zz) % 10) + shift)
    return v if owner_double else v.astype(np.float32).astype(np.float64)


def slab_layout(shared=0, gap=False, overlap=0, differ=False, mixed=False):
    layout = []
    for r in range(SIZE):
        lo = PLANES * r
        # (A thicker overlap reaches into the next slab from below, so that no process holds
        # VTK's piece and the filter takes the slabs as they are.)
        hi = PLANES * r + PLANES - 1 + (shared if r < SIZE - 1 else 0) + (overlap if r == 0 else 0)
        if gap and r == SIZE - 1:
            lo += 1
        layout.append((lo, hi, 0.5 * r if differ else 0.0, mixed and r == SIZE - 1))
    return layout


def build_pipeline(layout, mode="Absolute"):
    w = Wavelet(WholeExtent=WHOLE)
    p = ProgrammableFilter(Input=w, Script=SCRIPT % (layout,))
    h = SparseGridHierarchize(Input=p, Scalars=["f"], ErrorBoundMode=mode, ErrorBound=BOUND)
    return w, p, h


def check_accepted(checker, label, layout):
    w, p, h = build_pipeline(layout)
    log = ErrorLog(h)
    rep = local(h)
    log.close()
    checker.check(not log.messages, "%s: rank %d refused: %s" % (label, RANK, log.messages))
    precision = field_values(rep, "SparseGrid.Precision")
    double = True in [piece[3] for piece in layout]
    checker.check(precision == ["Double" if double else "Float"],
                  "%s: precision %s" % (label, precision))
    s = SparseGridResampleToImage(Input=h, UseOriginalGeometry=1)
    image = local(s)
    worst = 0.0
    if image.GetNumberOfPoints() > 0:
        ext = image.GetExtent()
        # Each plane as its owner holds it (shared planes hold the same values in both).
        # (paraview.simple's own min and max shadow the builtins here.)
        owner = lambda k: layout[k // PLANES if k // PLANES < SIZE else SIZE - 1]
        expected = np.concatenate([original_planes(np.array([k]), owner(k)[3]) for k in range(
            ext[4], ext[5] + 1)])
        expected = expected[:, ext[2]:ext[3] + 1, ext[0]:ext[1] + 1]
        mine = array_of(image, "f").astype(np.float64).reshape(expected.shape)
        worst = float(np.max(np.abs(mine - expected)))
    reported = field_values(rep, "SparseGrid.MaxAbsError")
    checker.check(worst <= BOUND, "%s: rank %d: error %g > bound %g" % (label, RANK, worst, BOUND))
    checker.check(reported is not None and reported[0] >= worst,
                  "%s: rank %d: reported max error %s < measured %g"
                  % (label, RANK, reported, worst))
    say("  %-34s accepted, precision %s, error %.3g <= %g (reported %.3g)"
        % (label, precision[0] if precision else "?", worst, BOUND,
           reported[0] if reported else float("nan")))
    for proxy in (s, h, p, w):
        Delete(proxy)


def check_refused(checker, label, layout, expected, mode="Absolute"):
    w, p, h = build_pipeline(layout, mode)
    log = ErrorLog(h)
    out = local(h)
    log.close()
    checker.check(out.GetNumberOfPoints() == 0 and out.GetFieldData().GetNumberOfArrays() == 0,
                  "%s: rank %d emitted something" % (label, RANK))
    checker.check([m for m in log.messages if expected in m] != [],
                  "%s: rank %d reported no error mentioning '%s' (%s)"
                  % (label, RANK, expected, log.messages))
    say("  %-34s refused: %s" % (label, log.messages[0].strip().splitlines()[-1]
                                 if log.messages else "nothing"))
    for proxy in (h, p, w):
        Delete(proxy)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--plugin", required=True)
    args = parser.parse_args()
    LoadPlugin(args.plugin, remote=False, ns=globals())
    say("SparseGrid MPI pieces test, %d rank(s)" % SIZE)
    checker = Checker()
    check_accepted(checker, "disjoint slabs, mixed types", slab_layout(mixed=True))
    if SIZE > 1:
        check_accepted(checker, "slabs sharing a plane", slab_layout(shared=1))
        check_refused(checker, "a plane in no piece", slab_layout(gap=True),
                      "no piece holds the point")
        check_refused(checker, "slabs overlapping by 2 planes", slab_layout(overlap=2),
                      "more than the one layer")
        check_refused(checker, "shared planes that differ", slab_layout(shared=1, differ=True),
                      "hold different values")
        check_refused(checker, "the same, fixed level", slab_layout(shared=1, differ=True),
                      "hold different values", mode="Off")
    return checker.finish()


def abort_on_exception(kind, value, tb):
    traceback.print_exception(kind, value, tb)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(1)


if __name__ == "__main__":
    sys.excepthook = abort_on_exception
    status = main()
    if status:
        sys.exit(status)
