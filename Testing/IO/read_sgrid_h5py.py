"""Reads an .sgrid file with h5py and numpy only, verifying every checksum (data, level and
metadata checksums, docs/file-format.md section Checksums).

This is the example of docs/file-format.md; CTest runs it on files the plugin wrote.
Usage: python3 read_sgrid_h5py.py FILE.sgrid [...]
Exit status: 0 when every file is valid, 1 otherwise, 125 when h5py is not installed.
"""
import os
import struct
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


def _reference_decoder():
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Codec"))
    import reference_decoder
    return reference_decoder


class MetadataText:
    """The canonical metadata text: key=value lines; doubles as the hex digits of their bits."""

    def __init__(self):
        self.data = b""

    def add(self, key, value):
        self.data += key.encode("utf-8") + b"=" + value + b"\n"

    def integer(self, key, value):
        self.add(key, b"%d" % int(value))

    def integers(self, key, values):
        self.add(key, ",".join("%d" % int(v) for v in np.atleast_1d(values)).encode())

    def reals(self, key, values):
        self.add(key, ",".join("%016x" % struct.unpack("<Q", struct.pack("<d", float(v)))[0]
                               for v in np.atleast_1d(values)).encode())

    def string(self, key, value):
        data = value if isinstance(value, bytes) else str(value).encode("utf-8")
        data = data.split(b"\0")[0]
        self.add(key, b"%d:" % len(data) + data)

    def optional(self, attrs, key, kind, name=None):
        if key in attrs:
            getattr(self, kind)(name or key, attrs[key])


def layout_text(f, coded):
    grid, steps = f["grid"].attrs, f["steps"]
    t = MetadataText()
    t.integer("format_version", f.attrs["format_version"])
    t.string("encoding", "error_bounded" if coded else "sparse_grid")
    t.integer("dimensions", grid["dimensions"])
    if coded:
        for key, kind in (("bound_mode", "string"), ("error_bound", "reals"),
                          ("number_of_pieces", "integer"), ("piece_extents", "integers")):
            getattr(t, kind)(key, grid[key])
    else:
        for key, kind in (("level", "integer"), ("level_caps", "integers"),
                          ("boundary", "integer"), ("number_of_points", "integer")):
            getattr(t, kind)(key, grid[key])
    for key, kind in (("axis_map", "integers"), ("bounds", "reals"),
                      ("image_dimensions", "integers"), ("image_origin", "reals"),
                      ("image_spacing", "reals"), ("precision", "string")):
        getattr(t, kind)(key, grid[key])
    arrays = int(steps.attrs["number_of_arrays"])
    t.integer("number_of_arrays", arrays)
    for k in range(arrays):
        dataset = steps["000000"]["array_%04d" % k]
        t.string("array_%04d.name" % k, dataset.attrs["name"])
        t.integer("array_%04d.components" % k,
                  dataset.attrs["components"] if coded else dataset.shape[1])
    return t.data


def check_metadata(f, coded):
    """The root's and every step's metadata_crc32 (files written before they existed have
    none), and every level checksum of coded streams."""
    if "metadata_crc32" not in f.attrs:
        return
    layout = layout_text(f, coded)
    steps = f["steps"]
    count = int(steps.attrs["number_of_steps"])
    header = MetadataText()
    header.integer("number_of_steps", count)
    for s in range(count):
        header.optional(steps["%06d" % s].attrs, "time", "reals", "step_%06d.time" % s)
    if zlib.crc32(layout + header.data) != int(f.attrs["metadata_crc32"]):
        raise ValueError("metadata checksum mismatch in the header")
    for s in range(count):
        group = steps["%06d" % s]
        t = MetadataText()
        t.integer("layout_crc32", zlib.crc32(layout))
        t.integer("step", s)
        for key, kind in (("time", "reals"), ("compression_ratio", "reals"),
                          ("hierarchize_seconds", "reals"), ("backend", "string"),
                          ("backend_note", "string")):
            t.optional(group.attrs, key, kind)
        for k in range(int(steps.attrs["number_of_arrays"])):
            dataset = group["array_%04d" % k]
            a, key = dataset.attrs, "array_%04d" % k
            t.string(key + ".name", a["name"])
            t.integer(key + ".components", a["components"] if coded else dataset.shape[1])
            t.integer(key + ".crc32", a["crc32"])
            if coded:
                t.integers(key + ".stream_offsets", a["stream_offsets"])
                t.reals(key + ".absolute_bound", a["absolute_bound"])
                t.integers(key + ".stream_levels", a["stream_levels"])
                t.integers(key + ".level_crc32", a["level_crc32"])
                check_levels(dataset)
            for metric in ("max_abs_error", "rmse", "psnr", "level_max_abs_error"):
                t.optional(a, metric, "reals", key + "." + metric)
        if zlib.crc32(t.data) != int(group.attrs["metadata_crc32"]):
            raise ValueError("metadata checksum mismatch in step %d" % s)


def check_levels(dataset):
    """Each stream's first k levels against its level_crc32 entries."""
    decoder = _reference_decoder()
    data = dataset[...].tobytes()
    offsets = [int(o) for o in dataset.attrs["stream_offsets"]]
    levels = [int(n) for n in np.atleast_1d(dataset.attrs["stream_levels"])]
    crcs = [int(c) for c in np.atleast_1d(dataset.attrs["level_crc32"])]
    at = 0
    for k, count in enumerate(levels):
        stream = data[offsets[k]:offsets[k + 1]]
        ends = decoder.inspect(stream)["level_end"]
        if len(ends) != count:
            raise ValueError("level table mismatch in %s" % dataset.name)
        for j, end in enumerate(ends):
            if zlib.crc32(stream[:end]) != crcs[at + j]:
                raise ValueError("level checksum mismatch in %s" % dataset.name)
        at += count


def decode_array(dataset, grid):
    """Version 2 (error-bounded): the coded streams of one array, decoded with the numpy
    reference decoder (Testing/Codec/reference_decoder.py) into (nz, ny, nx, components)."""
    reference_decoder = _reference_decoder()
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
        check_metadata(f, coded)
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
