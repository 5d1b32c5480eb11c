"""pvpython smoke test of the Laplacian filter and the Column Mesh source: the laplap of a
generated quad column mesh's cell field equals a numpy Laplacian applied twice (independent
reference). Exits 77 (skipped) when the plugin has not been built."""
import argparse
import os
import sys

parser = argparse.ArgumentParser()
parser.add_argument("--plugin", required=True)
args = parser.parse_args()
if not os.path.exists(args.plugin):
    print("plugin not built (%s): skipped" % args.plugin)
    sys.exit(77)

import numpy as np
from paraview.simple import *  # noqa: F401,F403
from paraview import servermanager
from vtkmodules.util.numpy_support import vtk_to_numpy

LoadPlugin(args.plugin, remote=False, ns=globals())

nx, ny, layers = 12, 10, 6
mesh = ColumnMesh(Shape="Quad", Resolution=[nx, ny], Layers=layers, Spacing=0.5, LayerSpacing=0.8)
lap = Laplacian(Input=mesh)
lap.Scalars = ["CELLS", "Field"]
lap.Operator = "Laplacian of Laplacian"
lap.Boundary = "NaN"
lap.UpdatePipeline()
out = servermanager.Fetch(lap)
field = vtk_to_numpy(out.GetCellData().GetArray("Field")).reshape(layers, ny, nx)
result = vtk_to_numpy(out.GetCellData().GetArray("Field_laplap")).reshape(layers, ny, nx)


def laplacian(u, spacing=(0.8, 0.5, 0.5)):
    """Second differences on the interior (axes z, y, x); NaN on the boundary layer."""
    r = np.full(u.shape, np.nan)
    c = u[1:-1, 1:-1, 1:-1]
    r[1:-1, 1:-1, 1:-1] = (
        (u[2:, 1:-1, 1:-1] - 2 * c + u[:-2, 1:-1, 1:-1]) / spacing[0] ** 2
        + (u[1:-1, 2:, 1:-1] - 2 * c + u[1:-1, :-2, 1:-1]) / spacing[1] ** 2
        + (u[1:-1, 1:-1, 2:] - 2 * c + u[1:-1, 1:-1, :-2]) / spacing[2] ** 2)
    return r


expected = laplacian(laplacian(field))
same_nan = np.array_equal(np.isnan(expected), np.isnan(result))
finite = ~np.isnan(expected)
error = np.max(np.abs(result[finite] - expected[finite]))
backend = out.GetFieldData().GetAbstractArray("Stencil.Backend").GetValue(0)
print("laplap at the centre: %.6f (numpy %.6f), max |diff| %.2e, %d finite values, backend %s"
      % (result[3, 5, 6], expected[3, 5, 6], error, finite.sum(), backend))
ok = same_nan and finite.sum() == (layers - 4) * (ny - 4) * (nx - 4) and error < 1e-10
sys.exit(0 if ok else 1)
