#!/usr/bin/env python3
"""Writes the real test volumes of ../shared/data as raw float32 files for the GPU codec test.

The device machine has no copy of ../shared/data and SparseGridCore reads no VTK files, so
`CodecGpu.SameStreamAsCpuOnTheRealVolumes` reads raw little-endian float32 files named
NAME.DXxDYxDZ.f32 (x fastest, as VTK stores an image) from the folder named by
SPARSEGRID_CODEC_VOLUMES. The volumes are read by Testing/Codec/sharedvolumes.py (the reader of
the codec tests and scripts/compare-codecs.py; it finds ../shared/data or SPARSEGRID_DATA):

    /usr/bin/python3 scripts/gpu/prepare-volumes.py build-volumes   # Debian python3 with numpy

`build-volumes/` is git-ignored (/build*/); carry it to the device machine (about 4 MB) and run
    SPARSEGRID_CODEC_VOLUMES=$PWD/build-volumes <build>/bin/sgcore_test_codec_gpu \\
        --gtest_filter='CodecGpu.SameStreamAsCpuOnTheRealVolumes'
Non-float arrays (ironProt's unsigned char) are converted to float32, as the filters do.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "Testing", "Codec"))
import sharedvolumes  # noqa: E402


def main(target):
    volumes = sharedvolumes.shared_volumes()
    if not volumes:
        sys.exit("no volumes: ../shared/data not found (set SPARSEGRID_DATA)")
    os.makedirs(target, exist_ok=True)
    for name, values, dims in volumes:
        out = os.path.join(target, "%s.%dx%dx%d.f32" % (name, *dims))
        values.astype("<f4").tofile(out)
        print("%s (%s) %s -> %s" % (name, values.dtype, dims, out))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
