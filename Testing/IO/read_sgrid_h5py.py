"""Reads an .sgrid file with h5py and numpy only, verifying every checksum.

This is the example of docs/file-format.md; CTest runs it on files the plugin wrote.
Usage: python3 read_sgrid_h5py.py FILE.sgrid [...]
Exit status: 0 when every file is valid, 1 otherwise, 125 when h5py is not installed.
"""
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


def read_sgrid(path):
    with h5py.File(path, "r") as f:
        assert text(f.attrs["format"]) == "SparseGrid", "not a SparseGrid file"
        assert int(f.attrs["format_version"]) <= 1, "written by a newer version"
        grid = {key: f["grid"].attrs[key] for key in f["grid"].attrs}
        steps = f["steps"]
        result = {"grid": grid, "steps": []}
        for s in range(int(steps.attrs["number_of_steps"])):
            group = steps["%06d" % s]
            step = {"time": group.attrs.get("time"), "arrays": {}}
            for k in range(int(steps.attrs["number_of_arrays"])):
                dataset = group["array_%04d" % k]
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
    for path in sys.argv[1:]:
        try:
            content = read_sgrid(path)
        except Exception as error:  # report and go on with the next file
            print("%s: %s" % (path, error))
            ok = False
            continue
        g = content["grid"]
        assert len(content["steps"][0]["arrays"]) >= 1
        for step in content["steps"]:
            for name, values in step["arrays"].items():
                assert values.shape[0] == int(g["number_of_points"])
        print("%s: %d-D grid, level %d, caps %s, %d points, %s, %d step(s) at times %s, arrays %s"
              % (path, g["dimensions"], g["level"], list(g["level_caps"]), g["number_of_points"],
                 text(g["precision"]), len(content["steps"]),
                 [step["time"] for step in content["steps"]],
                 {n: v.shape for n, v in content["steps"][0]["arrays"].items()}))
    sys.exit(0 if ok else 1)
