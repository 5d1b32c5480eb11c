# pvpython smoke test of the correlation filters through the plugin: a Wavelet slice moved by
# Center = (3, -2) against the unmoved one. Image Correlation must find the lag (3, -2) and every
# valid window of Image Displacement the displacement (3, -2) within 0.1. Then the time shift:
# three files of a Wavelet moving by (3, -2) per step, read as one temporal source; Image
# Correlation without a Reference must find (3, -2) between a step and the next.
import os
import sys
import tempfile

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

# Time shift: no Reference, the input compared with itself one step later.
folder = tempfile.mkdtemp()
files = []
for k in range(3):
    step = Wavelet(WholeExtent=extent, Center=[3.0 * k, -2.0 * k, 0.0])
    files.append(os.path.join(folder, 'moving_%d.vti' % k))
    # Inline base64: Debian's ParaView 5.11 cannot read XML files with appended data once
    # libexpat1 2.5.0-1+deb12u5 is installed (docs/debian-notes.md).
    SaveData(files[-1], proxy=step, DataMode='Binary')
reader = XMLImageDataReader(FileName=files)
times = list(reader.TimestepValues)
assert len(times) == 3, times
motion = ImageCorrelation(Input=reader)
motion.Scalars = ['POINTS', 'RTData']
motion.TimeShift = 1
motion.UpdatePipeline(time=times[1])
# Read through the data information of that update (a Fetch would update again, at no time).
info = motion.FieldData
lag = (info['Correlation.PeakLag'].GetRange(0)[0], info['Correlation.PeakLag'].GetRange(1)[0])
pair = (info['Correlation.ReferenceTime'].GetRange()[0], info['Correlation.InputTime'].GetRange()[0])
print('time shift: peak lag', lag, 'times', pair)
assert abs(lag[0] - 3) < 0.1 and abs(lag[1] + 2) < 0.1, lag
assert pair == (times[1], times[2]), (pair, times)
