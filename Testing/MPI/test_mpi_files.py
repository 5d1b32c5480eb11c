""".sgrid files written by every rank at once and read on any number of ranks, in a symmetric
MPI run (every rank runs this script and checks its own process's objects):

    mpirun -np N pvbatch --symmetric test_mpi_files.py --plugin SparseGrid.so --out DIR
        [--write] [--read FILE]

--write: a 48^3 Wavelet is coded in bricks of 16 samples per axis and saved by the writer on
every rank. Checked per rank against the global index of its own Hierarchize output
(SparseGrid.PieceExtents, PieceOwners, StreamOffsets): the bytes it wrote are exactly the
streams of the bricks it owns and it received none (the writer's BytesWritten, BytesReceived);
the file is complete under its name with no temporary file beside it. A parallel write that
fails at the end (a folder in the way of the name) leaves no file and no temporary file, and
every rank reports the error. WriteAllTimeSteps over a transient image writes its 3 steps into
one file the same way. DIR/original.npy receives the image for the h5py check.

--read FILE: each rank reads its piece of the image from FILE and decodes exactly the bricks
its voxels come from (each voxel from the first brick holding it; SparseGridLocal.BricksDecoded),
reads from the file exactly those bricks' streams (SparseGridLocal.BytesRead), not the whole
array, and keeps the bound on every voxel against the original Wavelet.
"""
import argparse
import builtins  # paraview.simple may rebind sum in the namespace LoadPlugin fills
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mpi_checks import RANK, SIZE, Checker, array_of, field_values, reduce_max, reduce_sum, say

import numpy as np
from paraview import servermanager
from paraview.simple import *  # noqa: F401,F403 (pvpython convention)

WHOLE = [0, 47, 0, 47, 0, 47]
BRICK = 16


def reference():
    """The Wavelet as one process computes it: (image, its RTData as float64, x fastest)."""
    from vtkmodules.vtkImagingCore import vtkRTAnalyticSource
    source = vtkRTAnalyticSource()
    source.SetWholeExtent(*WHOLE)
    source.Update()
    image = source.GetOutput()
    return image, array_of(image, "RTData").astype(np.float64)


def local_output(proxy):
    proxy.UpdatePipeline()
    return proxy.GetClientSideObject().GetOutputDataObject(0)


def ints(data, name):
    values = field_values(data, name)
    return [int(round(v)) for v in values] if values else []


def brick_index(extents, owners, offsets):
    """(brick extents, owners, stream bytes of each brick) from the flat index arrays."""
    bricks = len(extents) // 6
    per = (len(offsets) - 1) // bricks
    sizes = [offsets[(b + 1) * per] - offsets[b * per] for b in range(bricks)]
    owners = owners if owners else [0] * bricks
    return [extents[6 * b:6 * b + 6] for b in range(bricks)], owners, sizes


def shared_index(data):
    """The index that piece 0 holds (the reader's representation), on every rank."""
    mine = [ints(data, "SparseGrid.PieceExtents"), ints(data, "SparseGrid.StreamOffsets")]
    lengths = [int(v) for v in reduce_max(*[len(m) for m in mine])]
    flat = []
    for values, n in zip(mine, lengths):
        flat += (values if RANK == 0 else []) + [0] * (n - (len(values) if RANK == 0 else 0))
    total = [int(round(v)) for v in reduce_sum(*flat)]
    return brick_index(total[:lengths[0]], [], total[lengths[0]:])


def bricks_decoded(bricks, box):
    """The bricks a reader decodes for the voxels `box` (x0, x1, ..., z1): each voxel comes from
    the first brick (by index) that holds it, as the probe decodes a reader's bricks."""
    first = np.full((48, 48, 48), -1, dtype=np.int64)  # z, y, x
    for b in reversed(range(len(bricks))):
        e = bricks[b]
        first[e[4]:e[5] + 1, e[2]:e[3] + 1, e[0]:e[1] + 1] = b
    under = first[box[4]:box[5] + 1, box[2]:box[3] + 1, box[0]:box[1] + 1]
    return sorted(int(b) for b in np.unique(under))


def property_value(proxy, name):
    proxy.UpdatePropertyInformation()
    return int(proxy.GetProperty(name).GetElement(0))


def check_write(checker, folder):
    path = os.path.join(folder, "files.sgrid")
    if RANK == 0:
        for name in os.listdir(folder):
            if name.split(".sgrid")[0] in ("files", "blocked", "series"):
                target = os.path.join(folder, name)
                os.rmdir(target) if os.path.isdir(target) else os.remove(target)
        _, values = reference()
        np.save(os.path.join(folder, "original.npy"), values)
    reduce_sum(0)  # every rank waits for the folder to be clean

    w = Wavelet(WholeExtent=WHOLE)
    h = SparseGridHierarchize(Input=w, Scalars=["RTData"], BrickSize=BRICK)
    rep = local_output(h)
    bricks, owners, sizes = brick_index(ints(rep, "SparseGrid.PieceExtents"),
                                        ints(rep, "SparseGrid.PieceOwners"),
                                        ints(rep, "SparseGrid.StreamOffsets"))
    mine = builtins.sum(s for s, o in zip(sizes, owners) if o == RANK)
    say("  %d bricks over owners %s, %d stream bytes" % (len(bricks), sorted(set(owners)),
                                                        builtins.sum(sizes)))

    writer = servermanager.writers.SparseGridWriter(Input=h, FileName=path)
    writer.UpdatePipeline()
    code = writer.GetClientSideObject().GetErrorCode()
    written = property_value(writer, "BytesWritten")
    received = property_value(writer, "BytesReceived")
    checker.check(code == 0, "rank %d: the parallel write failed (error code %d)" % (RANK, code))
    checker.check(written == mine, "rank %d wrote %d stream bytes, its own bricks hold %d"
                  % (RANK, written, mine))
    checker.check(received == 0, "rank %d received %d stream bytes to write" % (RANK, received))
    checker.check(int(reduce_sum(written)[0]) == builtins.sum(sizes),
                  "the ranks wrote %d bytes together, the streams are %d"
                  % (int(reduce_sum(written)[0]), builtins.sum(sizes)))
    say("  written by %d rank(s): each its own bricks' bytes, none received" % SIZE)
    reduce_sum(0)
    left = sorted(os.listdir(folder))
    checker.check(os.path.isfile(path) and not any(".tmp" in n for n in left),
                  "after the write the folder holds %s" % left)

    # A write that fails when the file is moved into place (a folder holds the name): the
    # temporary file goes, every rank reports the error, the folder stays as it was.
    blocked = os.path.join(folder, "blocked.sgrid")
    if RANK == 0:
        os.mkdir(blocked)
    reduce_sum(0)
    failing = servermanager.writers.SparseGridWriter(Input=h, FileName=blocked)
    failing.UpdatePipeline()
    code = failing.GetClientSideObject().GetErrorCode()
    checker.check(code != 0, "rank %d: the write over a folder did not fail" % RANK)
    reduce_sum(0)
    left = sorted(os.listdir(folder))
    checker.check(os.path.isdir(blocked) and not os.listdir(blocked) and
                  not any(".tmp" in n for n in left),
                  "after the failed write the folder holds %s" % left)
    say("  a failed parallel write: error on every rank, no file and no temporary file left")
    Delete(failing)
    Delete(writer)
    return path


# A transient image that any rank can produce in pieces: f = sin(0.2 x + 0.1 (1 + t) y + 0.15 z)
# on 32^3 samples at t = 0, 1, 2.
SERIES_INFORMATION = """
executive = self.GetExecutive()
outInfo = executive.GetOutputInformation(0)
outInfo.Set(executive.WHOLE_EXTENT(), 0, 31, 0, 31, 0, 31)
outInfo.Remove(executive.TIME_STEPS())
for t in (0.0, 1.0, 2.0):
    outInfo.Append(executive.TIME_STEPS(), t)
outInfo.Set(executive.TIME_RANGE(), [0.0, 2.0], 2)
outInfo.Set(vtk.vtkAlgorithm.CAN_PRODUCE_SUB_EXTENT(), 1)
"""
SERIES_SCRIPT = """
import numpy as np
from vtkmodules.util.numpy_support import numpy_to_vtk
from vtkmodules.vtkCommonExecutionModel import vtkStreamingDemandDrivenPipeline as sddp
info = self.GetOutputInformation(0)
ext = info.Get(sddp.UPDATE_EXTENT())
t = info.Get(sddp.UPDATE_TIME_STEP()) if info.Has(sddp.UPDATE_TIME_STEP()) else 0.0
out = self.GetOutput()
out.SetExtent(ext)
z, y, x = np.mgrid[ext[4]:ext[5] + 1, ext[2]:ext[3] + 1, ext[0]:ext[1] + 1]
values = numpy_to_vtk(np.sin(0.2 * x + 0.1 * (1 + t) * y + 0.15 * z).astype(np.float32).ravel(),
                      deep=1)
values.SetName("f")
out.GetPointData().AddArray(values)
"""


def check_series(checker, folder):
    """WriteAllTimeSteps on every rank: one file of 3 steps, each rank writing its own bricks of
    every step and receiving nothing; step 2 reads back within its bound."""
    path = os.path.join(folder, "series.sgrid")
    source = ProgrammableSource(OutputDataSetType="vtkImageData", Script=SERIES_SCRIPT,
                                ScriptRequestInformation=SERIES_INFORMATION)
    h = SparseGridHierarchize(Input=source, Scalars=["f"], BrickSize=BRICK)
    mine, total = 0, 0
    for t in (0.0, 1.0, 2.0):
        h.UpdatePipeline(t)
        rep = h.GetClientSideObject().GetOutputDataObject(0)
        _, owners, sizes = brick_index(ints(rep, "SparseGrid.PieceExtents"),
                                       ints(rep, "SparseGrid.PieceOwners"),
                                       ints(rep, "SparseGrid.StreamOffsets"))
        for size, owner in zip(sizes, owners):
            mine += size if owner == RANK else 0
            total += size
    writer = servermanager.writers.SparseGridWriter(Input=h, FileName=path, WriteAllTimeSteps=1)
    writer.UpdatePipeline()
    code = writer.GetClientSideObject().GetErrorCode()
    written = property_value(writer, "BytesWritten")
    received = property_value(writer, "BytesReceived")
    checker.check(code == 0, "rank %d: writing the series failed (error code %d)" % (RANK, code))
    checker.check(written == mine and received == 0,
                  "rank %d wrote %d bytes of 3 steps (its own bricks: %d), received %d"
                  % (RANK, written, mine, received))
    checker.check(int(reduce_sum(written)[0]) == total,
                  "the ranks wrote %d bytes of 3 steps, the streams are %d"
                  % (int(reduce_sum(written)[0]), total))
    Delete(writer)
    reduce_sum(0)
    reader = SparseGridReader(FileName=path)
    checker.check(list(reader.TimestepValues) == [0.0, 1.0, 2.0],
                  "the series holds the times %s" % list(reader.TimestepValues))
    reader.UpdatePipeline(2.0)
    image = reader.GetClientSideObject().GetOutputDataObject(0)
    if image.GetNumberOfPoints() > 0:
        ext = image.GetExtent()
        z, y, x = np.mgrid[ext[4]:ext[5] + 1, ext[2]:ext[3] + 1, ext[0]:ext[1] + 1]
        expected = np.sin(0.2 * x + 0.1 * 3 * y + 0.15 * z).astype(np.float32).astype(np.float64)
        error = float(np.max(np.abs(array_of(image, "f").reshape(expected.shape) - expected)))
        bound = field_values(image, "SparseGrid.AbsoluteErrorBound")[0]
        checker.check(error <= bound, "rank %d: step 2 read back with error %g above %g"
                      % (RANK, error, bound))
    say("  WriteAllTimeSteps on %d rank(s): 3 steps in one file, each rank its own bricks"
        % SIZE)
    Delete(reader)
    Delete(h)
    Delete(source)


def check_read(checker, path):
    _, values = reference()
    bound = 1e-3 * (values.max() - values.min())
    original = values.reshape(48, 48, 48)
    rep_reader = SparseGridReader(FileName=path, OutputReconstructedImage=0)
    bricks, _, sizes = shared_index(local_output(rep_reader))
    Delete(rep_reader)
    reader = SparseGridReader(FileName=path)
    image = local_output(reader)
    ext = image.GetExtent()
    empty = image.GetNumberOfPoints() == 0
    under = [] if empty else bricks_decoded(bricks, ext)
    decoded = ints(image, "SparseGridLocal.BricksDecoded")
    read = ints(image, "SparseGridLocal.BytesRead")
    expected = builtins.sum(sizes[b] for b in under)
    if not empty:
        checker.check(decoded == [len(under)], "rank %d decoded %s bricks, %d serve its piece %s"
                      % (RANK, decoded, len(under), list(ext)))
        checker.check(read == [expected], "rank %d read %s bytes, its bricks' streams are %d"
                      % (RANK, read, expected))
        sub = original[ext[4]:ext[5] + 1, ext[2]:ext[3] + 1, ext[0]:ext[1] + 1]
        error = float(np.max(np.abs(array_of(image, "RTData").reshape(sub.shape) - sub)))
        checker.check(error <= bound, "rank %d: error %g above the bound %g" % (RANK, error, bound))
    if SIZE > 1 and not empty:
        checker.check(expected < builtins.sum(sizes), "rank %d read every stream (%d bytes)"
                      % (RANK, expected))
    worst = reduce_max(0 if empty else error)[0]
    say("  read on %d rank(s): bricks %s of %d, bytes read %s of %d, max error %.4g <= %.4g"
        % (SIZE, decoded, len(bricks), read, builtins.sum(sizes), worst, bound))
    Delete(reader)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--plugin", required=True)
    parser.add_argument("--out", required=True, help="folder for this run's files")
    parser.add_argument("--write", action="store_true", help="write DIR/files.sgrid")
    parser.add_argument("--read", help="a file to read on this run's ranks")
    args = parser.parse_args()
    LoadPlugin(args.plugin, remote=False, ns=globals())
    checker = Checker()
    say("SparseGrid MPI file test, %d rank(s)" % SIZE)
    if RANK == 0:
        os.makedirs(args.out, exist_ok=True)
    reduce_sum(0)
    paths = []
    if args.write:
        paths.append(check_write(checker, args.out))
        check_series(checker, args.out)
    if args.read:
        paths.append(args.read)
    for path in paths:
        if not os.path.exists(path):
            checker.check(False, "no file %s" % path)
            continue
        check_read(checker, path)
    return checker.finish()


if __name__ == "__main__":
    status = main()
    if status:
        sys.exit(status)
