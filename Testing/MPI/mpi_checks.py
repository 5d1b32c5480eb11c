"""Helpers of the MPI tests: the controller, reductions over ranks, and a checker whose verdict is
collective (every rank exits with the same status, so mpirun reports one result)."""
import math
import sys

import numpy as np
from vtkmodules.util.numpy_support import vtk_to_numpy
from vtkmodules.vtkCommonCore import vtkDoubleArray
from vtkmodules.vtkCommonExecutionModel import vtkExtentTranslator
from vtkmodules.vtkParallelCore import vtkCommunicator, vtkMultiProcessController

SKIP = 77  # CTest's SKIP_RETURN_CODE

# Reconstructed values agree to float rounding, not bit for bit. The coefficients are identical,
# but a rank reconstructs a smaller image than one process does, and sparsegrid::reconstructImage
# picks its path by size: through the nodal values of the full lattice (exact interpolation) for
# a large target, by evaluating the sparse grid point by point for a target much smaller than
# that lattice. Evaluation adds one float surplus per subspace on the path to the point (tens of
# roundings for these levels), so the two paths differ by a few tens of float epsilons relative
# to the largest value (seen: 12 on ironProt with 2 ranks; 0 where both take the same path).
# 64 epsilons bound that; it is 4 to 5 orders of magnitude below the compression error.
TOLERANCE = 64 * np.finfo(np.float32).eps

CONTROLLER = vtkMultiProcessController.GetGlobalController()
RANK = CONTROLLER.GetLocalProcessId() if CONTROLLER else 0
SIZE = CONTROLLER.GetNumberOfProcesses() if CONTROLLER else 1


def reduce(values, op):
    """Elementwise reduction over all ranks (collective); returns a list of floats."""
    values = [float(v) for v in values]
    if SIZE == 1:
        return values
    send, receive = vtkDoubleArray(), vtkDoubleArray()
    for v in values:
        send.InsertNextValue(v)
    CONTROLLER.AllReduce(send, receive, op)
    return [receive.GetValue(i) for i in range(receive.GetNumberOfValues())]


def reduce_max(*values):
    return reduce(values, vtkCommunicator.MAX_OP)


def reduce_sum(*values):
    return reduce(values, vtkCommunicator.SUM_OP)


def gather_ints(values):
    """Per-rank integer lists gathered on every rank: result[r] is rank r's list (collective)."""
    table = [[0] * len(values) for _ in range(SIZE)]
    table[RANK] = list(values)
    flat = reduce_sum(*[v for row in table for v in row])
    n = len(values)
    return [[int(round(flat[r * n + i])) for i in range(n)] for r in range(SIZE)]


def piece_extent(whole, piece=RANK, pieces=SIZE):
    """The extent VTK's extent translator gives this piece (block mode, no ghosts), or None."""
    extent = [0] * 6
    ok = vtkExtentTranslator().PieceToExtentThreadSafe(piece, pieces, 0, list(whole), extent, 3, 0)
    if not ok or any(extent[2 * a + 1] < extent[2 * a] for a in range(3)):
        return None
    return extent


def extent_points(extent):
    if extent is None:
        return 0
    n = 1
    for a in range(3):
        n *= extent[2 * a + 1] - extent[2 * a] + 1
    return n


def array_of(data, name):
    array = data.GetPointData().GetArray(name)
    if array is None:
        raise AssertionError("rank %d: no point array %s" % (RANK, name))
    return vtk_to_numpy(array)


def surpluses_of(data, name):
    """The hierarchical surpluses of array `name` in a fixed-level representation (field data,
    "<name> Surpluses"), or None where this piece holds none."""
    array = data.GetFieldData().GetArray(name + " Surpluses")
    return None if array is None else vtk_to_numpy(array)


def field_values(data, name):
    """All values of a field data array (strings as str, numbers as float), or None."""
    array = data.GetFieldData().GetAbstractArray(name)
    if array is None:
        return None
    values = [array.GetVariantValue(i) for i in range(array.GetNumberOfValues())]
    return [v.ToString() if v.IsString() else v.ToDouble() for v in values]


def close(a, b, rel, abs_tol=0.0):
    if math.isinf(a) or math.isinf(b) or math.isnan(a) or math.isnan(b):
        return a == b
    return abs(a - b) <= abs_tol + rel * max(abs(a), abs(b))


def local_piece_values(image, reference, name):
    """(values of `name` on this rank's piece image, the reference's values at the same points)."""
    ext = image.GetExtent()
    rext = reference.GetExtent()
    nc = reference.GetPointData().GetArray(name).GetNumberOfComponents()
    dims = [rext[2 * a + 1] - rext[2 * a] + 1 for a in range(3)]
    ref = array_of(reference, name).reshape(dims[2], dims[1], dims[0], nc)
    sub = ref[ext[4] - rext[4]:ext[5] - rext[4] + 1, ext[2] - rext[2]:ext[3] - rext[2] + 1,
              ext[0] - rext[0]:ext[1] - rext[0] + 1]
    mine = array_of(image, name).reshape(sub.shape)
    return mine.astype(np.float64), sub.astype(np.float64)


class Checker:
    """Collects failures on each rank; finish() agrees on the verdict over all ranks. In a
    non-symmetric run only rank 0 runs the script: collective=False keeps finish() local."""

    def __init__(self, collective=True):
        self.failures = []
        self.collective = collective

    def check(self, condition, message):
        if not condition:
            self.failures.append(message)
            print("FAILED (rank %d of %d): %s" % (RANK, SIZE, message))
            sys.stdout.flush()

    def finish(self):
        total = int(reduce_sum(len(self.failures))[0]) if self.collective else len(self.failures)
        if RANK == 0:
            print("%d ranks: %s" % (SIZE, "all checks passed" if total == 0 else
                                    "%d failed check(s) over all ranks" % total))
        sys.stdout.flush()
        return 1 if total else 0


def say(*args):
    """Prints on rank 0 only (the others would repeat it)."""
    if RANK == 0:
        print(*args)
        sys.stdout.flush()
