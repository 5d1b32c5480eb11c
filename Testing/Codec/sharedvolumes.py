"""Reads the volumes of ../shared/data (VTK XML .vti with zlib + base64, legacy binary .vtk) into
numpy arrays (x fastest when flattened in C order of shape (nz, ny, nx)), without VTK."""
import base64
import os
import re
import zlib

import numpy as np

_VTK_TYPES = {"Float32": "<f4", "Float64": "<f8", "UInt8": "u1", "Int16": "<i2", "Int32": "<i4"}


def find_data_dir(start=None):
    """../shared/data seen from the repository (or SPARSEGRID_DATA); None when absent."""
    env = os.environ.get("SPARSEGRID_DATA")
    if env and os.path.isdir(env):
        return env
    here = os.path.abspath(start or os.path.dirname(__file__))
    while True:
        candidate = os.path.join(os.path.dirname(here), "shared", "data")
        if os.path.isdir(candidate):
            return candidate
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def read_vti(path):
    text = open(path, "rb").read().decode("latin-1")
    extent = [int(v) for v in re.search(r'WholeExtent="([^"]+)"', text).group(1).split()]
    dims = [extent[1] - extent[0] + 1, extent[3] - extent[2] + 1, extent[5] - extent[4] + 1]
    m = re.search(r'<DataArray[^>]*type="(\w+)"[^>]*>\s*([A-Za-z0-9+/=\s]+?)\s*</DataArray>', text)
    dtype = np.dtype(_VTK_TYPES[m.group(1)])
    payload = "".join(m.group(2).split())
    compressed = 'compressor="vtkZLibDataCompressor"' in text
    if not compressed:
        raw = base64.b64decode(payload)
        n = np.frombuffer(raw[:4], "<u4")[0]
        data = np.frombuffer(raw[4:4 + n], dtype)
    else:
        first = base64.b64decode(payload[:16])
        blocks = int(np.frombuffer(first[:4], "<u4")[0])
        header_bytes = 4 * (3 + blocks)
        header_chars = (header_bytes + 2) // 3 * 4
        header = np.frombuffer(base64.b64decode(payload[:header_chars])[:header_bytes], "<u4")
        sizes = header[3:3 + blocks]
        body = base64.b64decode(payload[header_chars:])
        out, at = [], 0
        for s in sizes:
            out.append(zlib.decompress(body[at:at + int(s)]))
            at += int(s)
        data = np.frombuffer(b"".join(out), dtype)
    return data.reshape(dims[2], dims[1], dims[0]), dims


def read_legacy_vtk(path):
    raw = open(path, "rb").read()
    head_end = raw.index(b"LOOKUP_TABLE default\n") + len(b"LOOKUP_TABLE default\n")
    head = raw[:head_end].decode("latin-1")
    dims = [int(v) for v in re.search(r"DIMENSIONS\s+(\d+)\s+(\d+)\s+(\d+)", head).groups()]
    kind = re.search(r"SCALARS\s+\S+\s+(\w+)", head).group(1)
    dtype = {"unsigned_char": "u1", "float": ">f4", "double": ">f8", "short": ">i2"}[kind]
    n = dims[0] * dims[1] * dims[2]
    data = np.frombuffer(raw[head_end:head_end + n * np.dtype(dtype).itemsize], dtype)
    return data.reshape(dims[2], dims[1], dims[0]), dims


def shared_volumes(data_dir=None):
    """[(name, array (nz, ny, nx) in its own type, dims [nx, ny, nz])] of ../shared/data."""
    data_dir = data_dir or find_data_dir()
    if not data_dir:
        return []
    out = []
    for name in sorted(os.listdir(data_dir)):
        path = os.path.join(data_dir, name)
        if name.endswith(".vti"):
            arr, dims = read_vti(path)
        elif name.endswith(".vtk"):
            arr, dims = read_legacy_vtk(path)
        else:
            continue
        out.append((os.path.splitext(name)[0], arr, dims))
    return out
