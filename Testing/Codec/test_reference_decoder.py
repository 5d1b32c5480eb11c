#!/usr/bin/env python3
"""CTest: streams written by the C++ encoder (through sgcore_codec_writer) decode with the pure-numpy
reference decoder to exactly the C++ decoder's output, and within the bound of the original on
every voxel; prefixes (levels 0..k) within the stream's level bound; NaN and Inf voxels (a mask
section) bit for bit; the streams of versions 2 and 3 kept in
SparseGridCore/Testing/codec_stored_streams.h decode to what they decoded to when written. Inputs: synthetic fields of odd sizes (1-D, 2-D, 3-D, float and double, some
with a NaN border and scattered NaN/Inf) and every volume of ../shared/data (as float32, and
Isabel also as float64), at relative bounds 1e-2 and 1e-4. Exit 77 (skipped) without numpy.
    test_reference_decoder.py PATH/TO/sgcore_codec_writer
"""
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    print("SKIP: numpy is not installed for", sys.executable)
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference_decoder as rd  # noqa: E402
import sharedvolumes  # noqa: E402


def fields():
    rng = np.random.default_rng(1)
    out = []
    for dims in ([100, 1, 1], [17, 3, 1], [33, 20, 9], [2, 2, 2], [40, 1, 7]):
        x = np.indices(dims[::-1]).astype(np.float64)
        smooth = np.sin(0.3 * x[-1]) * np.cos(0.2 * x[-2]) + 0.1 * x[0]
        out.append(("smooth%s" % dims, smooth.astype(np.float32), dims))
        out.append(("noise%s" % dims, rng.normal(size=dims[::-1]), dims))
        special = smooth.copy()
        special[..., 0] = np.nan
        special.reshape(-1)[::13] = np.inf
        special.reshape(-1)[5::17] = -np.inf
        out.append(("special%s" % dims, special, dims))
    for name, arr, dims in sharedvolumes.shared_volumes():
        out.append((name, arr.astype(np.float32), dims))
        if arr.dtype == np.float64:
            out.append((name + "-double", arr, dims))
    return out


def stored_streams():
    """The streams of earlier format versions kept in SparseGridCore/Testing/codec_stored_streams.h
    (version 2, and version 3 with NaN/Inf voxels) with the hash of the float32 values the C++
    decoder of their time gave: [(name, bytes, hash)]."""
    import re
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "SparseGridCore",
                        "Testing", "codec_stored_streams.h")
    text = open(path).read()
    hashes = dict(re.findall(r"(StoredV\d)DecodedHash = (0x[0-9a-f]+)u", text))
    out = []
    for name, body in re.findall(r"(StoredV\d)\[\] = \{([^}]*)\}", text):
        data = bytes(int(h, 16) for h in re.findall(r"0x[0-9a-f]{2}", body))
        out.append((name, data, int(hashes[name], 16)))
    return out


def check_stored():
    """Streams written by earlier versions decode to what the C++ decoder of their time gave."""
    failures = 0
    for name, data, expected in stored_streams():
        py = rd.decode(data)
        got = rd._fnv1a(py.astype("<f4").tobytes())
        ok = got == expected and py.dtype == np.float32
        print("%-4s stored %s (version %d): hash of the decoded values %08x, expected %08x"
              % ("ok" if ok else "FAIL", name, rd.inspect(data)["version"], got, expected))
        failures += 0 if ok else 1
    return failures, 2


def pack_bits(fields):
    """Bytes of the compact table's bit order: fields most significant bit first, bits filling
    each byte from its lowest."""
    bits = [int(c) for c in "".join(fields)]
    bits += [0] * (-len(bits) % 8)
    return bytes(sum(b << i for i, b in enumerate(bits[k:k + 8])) for k in range(0, len(bits), 8))


def check_table_form():
    """The compact code-length table has one form: the decoder refuses a literal where a step
    fits and a zero run after a zero run, as the C++ decoders do, and reads the canonical forms."""
    failures = 0
    cases = [
        ("literal 5, step +1, repeat", ["111", "00101", "100", "0"], 3, [5, 6, 6]),
        ("literal 5, zero run of 2, literal 9", ["111", "00101", "110", "101", "111", "01001"], 4,
         [5, 0, 0, 9]),
        ("literal 5, literal 6 (a step fits)", ["111", "00101", "111", "00110"], 2, None),
        ("literal 5, literal 5 (a repeat fits)", ["111", "00101", "111", "00101"], 2, None),
        ("two zero runs in a row", ["111", "00101", "110", "100", "110", "100", "0"], 4, None),
    ]
    for name, fields, count, expected in cases:
        data = pack_bits(fields)
        try:
            got = rd._compact_lengths(data, 0, count)[0].tolist()
            ok = got == expected
        except rd.StreamError:
            got, ok = "refused", expected is None
        print("%-4s table form: %s -> %s" % ("ok" if ok else "FAIL", name, got))
        failures += 0 if ok else 1
    return failures, len(cases)


def main():
    writer = sys.argv[1]
    failures, checked = check_stored()
    table_failures, table_checked = check_table_form()
    failures, checked = failures + table_failures, checked + table_checked
    names = set()
    with tempfile.TemporaryDirectory() as tmp:
        for name, arr, dims in fields():
            names.add(name)
            kind = "double" if arr.dtype == np.float64 else "float"
            raw = os.path.join(tmp, "in.raw")
            arr.astype("<f8" if kind == "double" else "<f4").tofile(raw)
            finite = np.isfinite(arr)
            value_range = float(arr[finite].max() - arr[finite].min()) if finite.any() else 1.0
            value_range = value_range or 1.0
            for rel in (1e-2, 1e-4):
                bound = rel * value_range
                for level in (-1, 2):
                    stream_path = os.path.join(tmp, "s.sgcz")
                    dec_path = os.path.join(tmp, "d.raw")
                    cmd = [writer, kind, raw] + [str(d) for d in dims] + [repr(bound), stream_path,
                                                                         dec_path, str(level)]
                    r = subprocess.run(cmd, capture_output=True, text=True)
                    if r.returncode != 0:
                        print("FAIL writer", name, r.stderr)
                        failures += 1
                        continue
                    stream = open(stream_path, "rb").read()
                    info = rd.inspect(stream)
                    level = min(level, info["levels"] - 1)
                    cxx = np.fromfile(dec_path, arr.dtype).reshape(arr.shape)
                    py = rd.decode(stream, level)
                    checked += 1
                    same = np.array_equal(py.view(np.uint8), cxx.view(np.uint8))
                    kept = np.array_equal(py[~finite].view(np.uint8), arr[~finite].view(np.uint8))
                    same = same and kept
                    diff = np.abs(py.astype(np.float64) - arr.astype(np.float64))[finite]
                    err = float(diff.max()) if diff.size else 0.0
                    allowed = bound if level < 0 else info["level_bound"][level]
                    ratio = arr.nbytes / len(stream)
                    status = "ok" if same and err <= allowed else "FAIL"
                    print("%-4s %-28s %-6s rel %.0e level %2d ratio %7.2f max error/allowed %.4f "
                          "python==C++ %s" % (status, name, kind, rel, level, ratio, err / allowed, same))
                    if status != "ok":
                        failures += 1
    print("%d decodes checked, %d failures" % (checked, failures))
    if not any(n.startswith("hydrogen") for n in names):
        print("note: ../shared/data not found; only synthetic fields were checked")
    return 1 if failures or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
