# pvpython smoke test of the MeshLoop filters through the plugin: the Wavelet's point data moved
# to cells and split into tetrahedra, then Cell Data To Point Data (Accelerated) must equal
# ParaView's Cell Data to Point Data, with and without a GPS reordering, and Reorder Mesh must
# keep the number of points and cells and give the same averages at the original ids.
import os
import sys

from paraview.simple import *  # noqa: F401,F403

if not os.path.exists(sys.argv[1]):
    print('SKIP: plugin not built at', sys.argv[1])
    sys.exit(77)
LoadPlugin(sys.argv[1], remote=False, ns=globals())

wavelet = Wavelet(WholeExtent=[-8, 8, -8, 8, -8, 8])
cells = PointDatatoCellData(Input=wavelet)
tets = Tetrahedralize(Input=cells)

reference = servermanager.Fetch(CellDatatoPointData(Input=tets)).GetPointData().GetArray('RTData')
worst = 0.0
for strategy in ('Global Atomics', 'Global Colouring', 'Hierarchical Colouring'):
    for reordering in ('None', 'GPS'):
        accelerated = CellDataToPointDataAccelerated(Input=tets)
        accelerated.Strategy = strategy
        accelerated.Reordering = reordering
        out = servermanager.Fetch(accelerated)
        values = out.GetPointData().GetArray('RTData')
        assert values.GetNumberOfTuples() == reference.GetNumberOfTuples()
        for i in range(values.GetNumberOfTuples()):
            worst = max(worst, abs(values.GetValue(i) - reference.GetValue(i)))
        backend = out.GetFieldData().GetAbstractArray('MeshLoop.Backend').GetValue(0)
print('largest difference to Cell Data to Point Data:', worst, 'backend', backend)
# RTData is float: round-off of a mean of up to 24 float values.
assert worst < 1e-3, worst

reordered = ReorderMesh(Input=tets)
mesh = servermanager.Fetch(reordered)
original = servermanager.Fetch(tets)
assert mesh.GetNumberOfPoints() == original.GetNumberOfPoints()
assert mesh.GetNumberOfCells() == original.GetNumberOfCells()
ids = mesh.GetPointData().GetArray('vtkOriginalPointIds')
assert sorted(ids.GetValue(i) for i in range(ids.GetNumberOfTuples())) == list(range(mesh.GetNumberOfPoints()))
again = servermanager.Fetch(CellDataToPointDataAccelerated(Input=reordered)).GetPointData().GetArray('RTData')
for i in range(again.GetNumberOfTuples()):
    assert abs(again.GetValue(i) - reference.GetValue(ids.GetValue(i))) < 1e-3
print('OK')
