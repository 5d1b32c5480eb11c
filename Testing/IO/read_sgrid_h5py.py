"""Reads an .sgrid file with h5py and numpy only, verifying every checksum.

This is the example of docs/file-format.md; CTest runs it on files the plugin wrote.
Usage: python3 read_sgrid_h5py.py FILE.sgrid [...]
Exit status: 0 when every file is valid, 1 otherwise, 125 when h5py is not installed.
"""
import os
import sys
import zlib

try:
    import h5py
    import numpy as np
except ImportError:
    print("h5py or numpy is not installed: skipped")
    sys.exit(125)


def text(value):
    """Our strings are fixed-length UTF-8; h5py returns them as bytes."""
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def decode_array(dataset, grid):
    """Version 2 (error-bounded): the coded streams of one array, decoded with the numpy
    reference decoder (Testing/Codec/reference_decoder.py) into (nz, ny, nx, components)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Codec"))
    import reference_decoder

    data = dataset[...].tobytes()
    if zlib.crc32(data) != int(dataset.attrs["crc32"]):
        raise ValueError("checksum mismatch in %s" % dataset.name)
    offsets = [int(o) for o in dataset.attrs["stream_offsets"]]
    nc = int(dataset.attrs["components"])
    nx, ny, nz = [int(n) for n in grid["image_dimensions"]]
    out = np.zeros((nz, ny, nx, nc))
    extents = [int(e) for e in grid["piece_extents"]]
    for p in range(len(extents) // 6):
        x0, x1, y0, y1, z0, z1 = extents[6 * p:6 * p + 6]
        for c in range(nc):
            k = p * nc + c
            piece = reference_decoder.decode(data[offsets[k]:offsets[k + 1]])
            out[z0:z1 + 1, y0:y1 + 1, x0:x1 + 1, c] = piece
    return out


def read_sgrid(path):
    with h5py.File(path, "r") as f:
        assert text(f.attrs["format"]) == "SparseGrid", "not a SparseGrid file"
        version = int(f.attrs["format_version"])
        assert version <= 2, "written by a newer version"
        grid = {key: f["grid"].attrs[key] for key in f["grid"].attrs}
        coded = version == 2 and text(grid.get("encoding", b"")) == "error_bounded"
        steps = f["steps"]
        result = {"grid": grid, "steps": [], "coded": coded}
        for s in range(int(steps.attrs["number_of_steps"])):
            group = steps["%06d" % s]
            step = {"time": group.attrs.get("time"), "arrays": {}}
            for k in range(int(steps.attrs["number_of_arrays"])):
                dataset = group["array_%04d" % k]
                if coded:
                    step["arrays"][text(dataset.attrs["name"])] = decode_array(dataset, grid)
                    step["bounds"] = step.get("bounds", []) + [float(dataset.attrs["absolute_bound"])]
                    continue
                values = dataset[...]  # shape (number_of_points, components)
                # CRC-32 (zlib) of the values as stored: little-endian IEEE, row-major.
                stored = int(dataset.attrs["crc32"])
                little = np.ascontiguousarray(values, dtype=values.dtype.newbyteorder("<"))
                if zlib.crc32(little.tobytes()) != stored:
                    raise ValueError("checksum mismatch in %s" % dataset.name)
                step["arrays"][text(dataset.attrs["name"])] = values
            result["steps"].append(step)
        return result


if __name__ == "__main__":
    ok = True
    args = sys.argv[1:]
    # --bound-check FILE ORIGINAL.npy: the first array of an error-bounded FILE, decoded here,
    # is within the file's absolute bound of the original values (float64, x fastest).
    if len(args) >= 3 and args[0] == "--bound-check":
        content = read_sgrid(args[1])
        step = content["steps"][0]
        decoded = next(iter(step["arrays"].values())).reshape(-1)
        original = np.load(args[2]).reshape(-1)
        error = float(np.max(np.abs(decoded - original)))
        print("%s: decoded with numpy only; max error %.6g, bound %.6g"
              % (args[1], error, step["bounds"][0]))
        if not (error <= step["bounds"][0]):
            print("the bound is not kept")
            ok = False
        args = args[3:]
    for path in args:
        try:
            content = read_sgrid(path)
        except Exception as error:  # report and go on with the next file
            print("%s: %s" % (path, error))
            ok = False
            continue
        g = content["grid"]
        assert len(content["steps"][0]["arrays"]) >= 1
        if content["coded"]:
            print("%s: error-bounded, image %s, %d piece(s), arrays %s" % (
                path, list(g["image_dimensions"]), len(g["piece_extents"]) // 6,
                {n: v.shape for n, v in content["steps"][0]["arrays"].items()}))
            continue
        for step in content["steps"]:
            for name, values in step["arrays"].items():
                assert values.shape[0] == int(g["number_of_points"])
        print("%s: %d-D grid, level %d, caps %s, %d points, %s, %d step(s) at times %s, arrays %s"
              % (path, g["dimensions"], g["level"], list(g["level_caps"]), g["number_of_points"],
                 text(g["precision"]), len(content["steps"]),
                 [step["time"] for step in content["steps"]],
                 {n: v.shape for n, v in content["steps"][0]["arrays"].items()}))
    sys.exit(0 if ok else 1)
