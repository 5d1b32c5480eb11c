# pvpython smoke test of the correlation filters through the plugin: a Wavelet slice moved by
# Center = (3, -2) against the unmoved one. Image Correlation must find the lag (3, -2) and every
# valid window of Image Displacement the displacement (3, -2) within 0.1.
import os
import sys

from paraview.simple import *  # noqa: F401,F403

if not os.path.exists(sys.argv[1]):
    print('SKIP: plugin not built at', sys.argv[1])
    sys.exit(77)
LoadPlugin(sys.argv[1], remote=False, ns=globals())

extent = [-40, 40, -40, 40, 0, 0]
reference = Wavelet(WholeExtent=extent)
moved = Wavelet(WholeExtent=extent, Center=[3.0, -2.0, 0.0])

correlation = ImageCorrelation(Input=moved, Reference=reference)
correlation.Scalars = ['POINTS', 'RTData']
correlation.UpdatePipeline()
fd = servermanager.Fetch(correlation).GetFieldData()
lag = fd.GetArray('Correlation.PeakLag').GetTuple3(0)
peak = fd.GetArray('Correlation.PeakValue').GetValue(0)
print('peak lag', lag, 'peak', peak, 'backend', fd.GetAbstractArray('Correlation.Backend').GetValue(0))
assert round(lag[0]) == 3 and round(lag[1]) == -2 and lag[2] == 0, lag
assert abs(lag[0] - 3) < 0.1 and abs(lag[1] + 2) < 0.1, lag
assert peak > 0.99, peak

displacement = ImageDisplacement(Input=moved, Reference=reference)
displacement.Scalars = ['POINTS', 'RTData']
displacement.WindowSize = 16
displacement.Step = 12
displacement.SearchRadius = 5
displacement.UpdatePipeline()
out = servermanager.Fetch(displacement)
vectors = out.GetPointData().GetArray('Displacement')
valid = out.GetPointData().GetArray('Valid')
good = 0
for k in range(vectors.GetNumberOfTuples()):
    if valid.GetValue(k):
        good += 1
        d = vectors.GetTuple3(k)
        assert abs(d[0] - 3) < 0.1 and abs(d[1] + 2) < 0.1, (k, d)
print('valid windows', good, 'of', vectors.GetNumberOfTuples())
assert good > vectors.GetNumberOfTuples() // 2
