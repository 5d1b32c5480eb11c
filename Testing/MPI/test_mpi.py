"""Distributed (MPI) test of the SparseGrid filters, run in symmetric mode so that every rank can
inspect its own piece:

    mpirun -np N pvbatch --symmetric test_mpi.py --plugin SparseGrid.so --case synthetic|volume
        [--data DIR]

Each rank builds the same pipelines. The distributed ones update piece RANK of N (ParaView's
request); a second copy of each pipeline is updated as piece 0 of 1 on every rank, which is
exactly what a 1-process run computes (the filters take their serial path when the request has
one piece), and serves as the reference. Checked on every rank:

- Hierarchize read only its share of the image (SparseGridLocal.InputPoints against VTK's extent
  translator; less than the whole image when N > 1), the representation is on piece 0 only and
  the other pieces carry the same SparseGrid.* field data with no points;
- coefficients equal the 1-process ones bit for bit (each grid point is sampled by exactly one
  rank, the others add exact zeros, and hierarchization is deterministic);
- the error metrics, compression ratio and every other SparseGrid.* value equal the 1-process
  ones (RMSE and PSNR to 1e-12 relative: the sum of squares is added up in another order);
- Reconstruct and Resample To Image give each rank its own piece, equal to the 1-process image
  on those points to float rounding (see TOLERANCE);
- a reader that cannot read pieces (legacy .vtk: the whole image on rank 0, nothing elsewhere)
  still gives the 1-process result;
- ranks with an empty piece (a 2x2x2 image on 2 or 3 ranks), or with a piece that owns no grid
  point (a 3-sample line on 3 ranks), take part and get the same results;
- errors found on some ranks only (NaN in one piece, an array missing from one piece) fail on
  every rank, with no rank left waiting, and the pipeline works again afterwards.

Exit status 77 (CTest's skip code) when a data file is absent.
"""
import argparse
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mpi_checks import (RANK, SIZE, SKIP, TOLERANCE, Checker, array_of, close, extent_points,
                        field_values, gather_ints, local_piece_values, piece_extent, reduce_max,
                        say, surpluses_of)

import traceback

import numpy as np
from paraview.simple import *  # noqa: F401,F403 (pvpython convention)
from vtkmodules.util.misc import calldata_type
from vtkmodules.util.vtkConstants import VTK_STRING


# Field data that may legitimately differ between runs: wall time, and the per-rank diagnostic.
# TimeSeconds: measured; MemoryBytes: of the piece that holds the payload only.
VOLATILE = {"SparseGrid.TimeSeconds", "SparseGrid.MemoryBytes"}
SUMMED_IN_ANOTHER_ORDER = {"SparseGrid.RMSE", "SparseGrid.PSNR"}


def serial(proxy):
    """The proxy's output computed as piece 0 of 1 on this rank alone (the 1-process result)."""
    algorithm = proxy.GetClientSideObject()
    algorithm.UpdatePiece(0, 1, 0)
    return algorithm.GetOutputDataObject(0)


def local(proxy):
    """This rank's piece of the proxy's output, after a distributed update (collective)."""
    proxy.UpdatePipeline()
    return proxy.GetClientSideObject().GetOutputDataObject(0)


class ErrorLog:
    """Collects the errors a filter reports on this rank (the observer also keeps them quiet)."""

    def __init__(self, proxy):
        self.messages = []
        self.algorithm = proxy.GetClientSideObject()

        @calldata_type(VTK_STRING)
        def on_error(obj, event, message):
            self.messages.append(message)

        self.tag = self.algorithm.AddObserver("ErrorEvent", on_error)

    def close(self):
        self.algorithm.RemoveObserver(self.tag)


def compare_representation(checker, label, mine, ref):
    """The distributed representation (this rank's piece) against the 1-process one."""
    names = field_values(ref, "SparseGrid.ArrayNames") or []
    checker.check(mine.GetNumberOfPoints() == 0, "%s: rank %d's representation has points"
                  % (label, RANK))
    for name in names:
        a, b = surpluses_of(mine, name), surpluses_of(ref, name)
        if RANK == 0:
            checker.check(a is not None and a.shape == b.shape and a.dtype == b.dtype and
                          np.array_equal(a, b),
                          "%s: coefficients of %s differ from the 1-process ones (max %g)"
                          % (label, name, np.max(np.abs(a.astype(float) - b))
                             if a is not None and a.shape == b.shape else -1))
        else:
            checker.check(a is None, "%s: piece %d holds surpluses of %s; only piece 0 carries "
                          "the representation" % (label, RANK, name))
    fd = ref.GetFieldData()
    for i in range(fd.GetNumberOfArrays()):
        name = fd.GetAbstractArray(i).GetName()
        if not name.startswith("SparseGrid.") or name in VOLATILE:
            continue
        a, b = field_values(mine, name), field_values(ref, name)
        if a is None or len(a) != len(b):
            checker.check(False, "%s: field %s missing or of another size on rank %d"
                          % (label, name, RANK))
            continue
        rel = 1e-12 if name in SUMMED_IN_ANOTHER_ORDER else 0.0
        same = all((x == y) if isinstance(x, str) else close(x, y, rel) for x, y in zip(a, b))
        checker.check(same,
                      "%s: field %s is %s, 1-process %s" % (label, name, a, b))
    received = field_values(mine, "SparseGridLocal.InputPoints")
    checker.check(received is not None, "%s: no SparseGridLocal.InputPoints" % label)
    return int(received[0]) if received else -1


def compare_image(checker, label, mine, ref, names):
    """This rank's piece of a reconstructed image against the 1-process image."""
    worst = 0.0
    scale = 0.0
    for name in names:
        scale = max(scale, float(np.max(np.abs(array_of(ref, name)))))
        if mine.GetNumberOfPoints() == 0:
            continue
        a, b = local_piece_values(mine, ref, name)
        worst = max(worst, float(np.max(np.abs(a - b))))
    worst = reduce_max(worst)[0]
    say("  %-40s max |distributed - 1-process| = %.3g (tolerance %.3g)"
        % (label, worst, TOLERANCE * scale))
    checker.check(worst <= TOLERANCE * scale,
                  "%s: reconstruction differs from the 1-process one by %g" % (label, worst))
    return mine.GetNumberOfPoints()


def check_pipeline(checker, label, make_source, names, precision="Float", resample_dims=None,
                   splits=True, options=None):
    """Distributed Hierarchize, Reconstruct and Resample To Image against their 1-process run.
    `splits`: whether the source delivers only the requested piece (a legacy .vtk reader
    sends the whole image to every rank, which Hierarchize then cuts to the rank's piece)."""
    source, ref_source = make_source(), make_source()
    whole = list(serial(ref_source).GetExtent())
    whole_points = extent_points(whole)

    settings = dict(Scalars=names, Precision=precision, ComputeError=1)
    settings.update(options or {})
    h = SparseGridHierarchize(ErrorBoundMode="Off", Input=source, **settings)
    h_ref = SparseGridHierarchize(ErrorBoundMode="Off", Input=ref_source, **settings)
    mine = local(h)
    ref = serial(h_ref)
    received = compare_representation(checker, label, mine, ref)
    if splits:
        expected = extent_points(piece_extent(whole)) if SIZE > 1 else whole_points
        checker.check(received == expected,
                      "%s: rank %d's Hierarchize input had %d points, its piece has %d"
                      % (label, RANK, received, expected))
        if SIZE > 1 and expected < whole_points:
            checker.check(received < whole_points,
                          "%s: rank %d received the whole image (%d points)"
                          % (label, RANK, received))
    counts = [row[0] for row in gather_ints([received])]
    say("  %-40s grid %d points; Hierarchize input points per rank %s of %d"
        % (label, int(field_values(ref, "SparseGrid.NumberOfCoefficients")[0]), counts,
           whole_points))

    # Reconstruct on the distributed image itself; Resample on the original geometry and on a
    # grid of its own (points between the image's samples).
    r = SparseGridReconstruct(Input=source, Source=h)
    r_ref = SparseGridReconstruct(Input=ref_source, Source=h_ref)
    compare_image(checker, label + " reconstruct", local(r), serial(r_ref), names)
    s = SparseGridResampleToImage(Input=h, UseOriginalGeometry=1)
    s_ref = SparseGridResampleToImage(Input=h_ref, UseOriginalGeometry=1)
    compare_image(checker, label + " resample (original)", local(s), serial(s_ref), names)
    if resample_dims:
        s2 = SparseGridResampleToImage(Input=h, SamplingDimensions=resample_dims)
        s2_ref = SparseGridResampleToImage(Input=h_ref, SamplingDimensions=resample_dims)
        compare_image(checker, label + " resample %s" % resample_dims, local(s2), serial(s2_ref),
                      names)
    for proxy in (h, h_ref, r, r_ref, s, s_ref):
        Delete(proxy)


def check_collective_errors(checker):
    """Failures found on some ranks only must stop every rank (no hang, empty output)."""
    corner = "(ext[1] == 10 and ext[3] == 10 and ext[5] == 10)"
    cases = {
        # NaN in the last sample of the image: only the pieces holding it find it.
        "NaN in one piece": (
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
            "    out.GetPointData().AddArray(v)\n" % corner, "non-finite"),
        # The array is missing from the pieces that hold the last sample.
        "array missing from one piece": (
            "inp = self.GetInputDataObject(0, 0)\n"
            "out = self.GetOutputDataObject(0)\n"
            "out.ShallowCopy(inp)\n"
            "ext = inp.GetExtent()\n"
            "if %s:\n"
            "    out.GetPointData().RemoveArray('RTData')\n" % corner,
            "RTData"),
    }
    for label, (script, expected) in cases.items():
        w = Wavelet()
        p = ProgrammableFilter(Input=w, Script=script)
        h = SparseGridHierarchize(ErrorBoundMode="Off", Input=p, Scalars=["RTData"])
        log = ErrorLog(h)
        out = local(h)
        log.close()
        checker.check(out.GetNumberOfPoints() == 0 and out.GetFieldData().GetNumberOfArrays() == 0,
                      "%s: rank %d produced output (%d points, %d field arrays)"
                      % (label, RANK, out.GetNumberOfPoints(),
                         out.GetFieldData().GetNumberOfArrays()))
        checker.check(any(expected in m for m in log.messages),
                      "%s: rank %d reported no error mentioning '%s' (%s)"
                      % (label, RANK, expected, log.messages))
        say("  %-40s every rank failed; rank 0 said: %s"
            % (label, log.messages[0].strip().splitlines()[-1] if log.messages else "nothing"))
        # The same filter works again once the cause is gone.
        p.Script = "self.GetOutputDataObject(0).ShallowCopy(self.GetInputDataObject(0, 0))"
        out = local(h)
        checker.check(field_values(out, "SparseGrid.Level") is not None,
                      "%s: rank %d did not recover" % (label, RANK))
        for proxy in (h, p, w):
            Delete(proxy)

    # Missing everywhere (the common mistake) fails everywhere too.
    w = Wavelet()
    h = SparseGridHierarchize(ErrorBoundMode="Off", Input=w, Scalars=["nope"])
    log = ErrorLog(h)
    out = local(h)
    log.close()
    checker.check(out.GetNumberOfPoints() == 0 and any("'nope'" in m for m in log.messages),
                  "missing array: rank %d did not fail as expected (%s)" % (RANK, log.messages))
    for proxy in (h, w):
        Delete(proxy)


def run_synthetic(checker):
    def wavelet(extent):
        return lambda: Wavelet(WholeExtent=extent)

    check_pipeline(checker, "wavelet 21^3", wavelet([-10, 10, -10, 10, -10, 10]), ["RTData"],
                   resample_dims=[17, 13, 9])

    def vectors():
        w = Wavelet(WholeExtent=[-8, 8, -8, 8, -8, 8])
        return Calculator(Input=w, ResultArrayName="vec",
                          Function="RTData*iHat + coordsX*jHat + coordsY*coordsZ*kHat")

    check_pipeline(checker, "wavelet 17^3 scalar+vector double", vectors, ["RTData", "vec"],
                   precision="Double")
    check_pipeline(checker, "no boundary, L 4, caps 3 2 3, no error",
                   wavelet([-8, 8, -8, 8, -8, 8]), ["RTData"],
                   options=dict(Boundary=0, Level=4, LevelLimitsXYZ=[3, 2, 3], ComputeError=0))
    check_pipeline(checker, "slab 33x33x2", wavelet([-16, 16, -16, 16, 0, 1]), ["RTData"])
    check_pipeline(checker, "2-D 33x33", wavelet([-16, 16, -16, 16, 0, 0]), ["RTData"],
                   resample_dims=[20, 30, 1])
    # Pieces with nothing: on 2 or 3 ranks all but one piece of a 2x2x2 image are empty...
    check_pipeline(checker, "2x2x2 (empty pieces)", wavelet([0, 1, 0, 1, 0, 1]), ["RTData"])
    # ...and a 3-sample line on 3 ranks gives rank 0 a single sample, which owns no grid point.
    check_pipeline(checker, "line of 3 (a piece owning nothing)", wavelet([0, 2, 0, 0, 0, 0]),
                   ["RTData"])
    check_collective_errors(checker)


VOLUMES = (("hydrogen.vti", "probability_density", True),
           ("isabel02_velocityMag.vti", "velocityMag", True),
           ("ironProt.vtk", "scalars", False))


def run_volume(checker, data):
    for name, array, splits in VOLUMES:
        path = os.path.join(data, name)
        # XML image readers read only the requested piece of the file; the legacy reader reads
        # all of it on every rank, and Hierarchize keeps the rank's piece.
        check_pipeline(checker, name, lambda: OpenDataFile(path), [array],
                       resample_dims=[40, 40, 12], splits=splits)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--plugin", required=True)
    parser.add_argument("--case", choices=["synthetic", "volume"], required=True)
    parser.add_argument("--data", default="")
    args = parser.parse_args()
    if args.case == "volume":
        missing = [v[0] for v in VOLUMES if not os.path.exists(os.path.join(args.data, v[0]))]
        if missing:
            say("SKIP: data files absent in '%s': %s" % (args.data, ", ".join(missing)))
            return SKIP
    LoadPlugin(args.plugin, remote=False, ns=globals())
    say("SparseGrid MPI test, case %s, %d rank(s)" % (args.case, SIZE))
    checker = Checker()
    if args.case == "synthetic":
        run_synthetic(checker)
    else:
        run_volume(checker, args.data)
    return checker.finish()


def abort_on_exception(kind, value, tb):
    """A Python error on one rank would leave the others waiting in the next collective call:
    end this process at once, which makes mpirun end the others."""
    traceback.print_exception(kind, value, tb)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(1)


if __name__ == "__main__":
    sys.excepthook = abort_on_exception
    # Only a failure exits explicitly: in symmetric mode sys.exit(0) ends the ranks without
    # MPI_Finalize, which mpirun reports as a failure.
    status = main()
    if status:
        sys.exit(status)
