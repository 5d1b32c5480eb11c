"""Reference decoder of the sparse-grid codec stream (docs/compression.md), in pure numpy.

Written from the format description, not from the C++: it is the independent check of the format
(Testing/Codec/test_reference_decoder.py compares it with the C++ decoder). It is slow (the Huffman
stage is a Python loop) and meant for reading and testing, not for production.

    import numpy as np, reference_decoder as rd
    info = rd.inspect(open("field.sgcz", "rb").read())
    values = rd.decode(open("field.sgcz", "rb").read())      # numpy array, shape (nz, ny, nx)
"""
import struct

import numpy as np

MAGIC = b"SGCZ"
CHUNK_CODES = 4096
BLOCK_CODES = 64
MAX_RUN = 64
TOKEN_SHIFT = 63
ESCAPE = 1


class StreamError(ValueError):
    pass


def _fnv1a(data):
    h = 2166136261
    for b in data:
        h ^= b
        h = (h * 16777619) & 0xFFFFFFFF
    return h


def plan(dims, order=(0, 1, 2)):
    """Levels and passes: [(level, axis, gap, start[3], step[3], count[3], codeBegin)], and the
    number of codes per level. Axis 0 is x (fastest); each level refines the axes in `order`."""
    max_gap = max(d - 1 for d in dims)
    top = 0
    while (1 << top) < max_gap:
        top += 1
    if max_gap >= 1 and top == 0:
        top = 1
    levels = top + 1
    step = 1 << top
    anchor = (0, -1, 0, [0, 0, 0], [step] * 3, [(d - 1) // step + 1 for d in dims], 0)
    passes = [anchor]
    level_codes = [int(np.prod(anchor[5]))]
    for k in range(1, levels):
        s = 1 << (top - k)
        code = 0
        refined = []
        for axis in order:
            start, stp, cnt = [0, 0, 0], [0, 0, 0], [0, 0, 0]
            for b in range(3):
                if b == axis:
                    start[b], stp[b] = s, 2 * s
                    cnt[b] = (dims[b] - 1 - s) // (2 * s) + 1 if dims[b] > s else 0
                else:
                    stp[b] = s if b in refined else 2 * s
                    cnt[b] = (dims[b] - 1) // stp[b] + 1
            refined.append(axis)
            size = cnt[0] * cnt[1] * cnt[2]
            if size == 0:
                continue
            passes.append((k, axis, s, start, stp, cnt, code))
            code += size
        level_codes.append(code)
    return levels, passes, level_codes


def inspect(stream):
    if len(stream) < 56:
        raise StreamError("stream shorter than the fixed header")
    if stream[:4] != MAGIC:
        raise StreamError("magic SGCZ missing")
    version, vtype, flags = struct.unpack_from("<HBB", stream, 4)
    if version not in (1, 2, 3, 4, 5):
        raise StreamError("unsupported version %d" % version)
    # Version 1: linear prediction, axes in index order, one quantiser for all levels.
    fixed, entry = (56, 16) if version == 1 else (64, 24)
    order, cubic = (0, 1, 2), False
    # Version 3: raw values that may be special (flags 1), or a mask section of M bytes before
    # the header's checksum (flags 2). Versions 4-5: a coded stream, with a mask section if flags 2.
    (mask_bytes,) = struct.unpack_from("<I", stream, 60) if version >= 3 else (0,)
    masked = flags == 2 and mask_bytes >= 16 and mask_bytes % 4 == 0
    if version == 3 and not ((flags == 1 and mask_bytes == 0) or masked):
        raise StreamError("invalid flags or mask section size")
    if version >= 4 and not ((flags == 0 and mask_bytes == 0) or masked):
        raise StreamError("invalid flags or mask section size")
    if version >= 2:
        order = tuple(stream[56:59])
        cubic = stream[59] == 1
        if sorted(order) != [0, 1, 2] or stream[59] > 1:
            raise StreamError("invalid axis order or predictor")
    dims = list(struct.unpack_from("<3Q", stream, 8))
    (bound,) = struct.unpack_from("<d", stream, 32)
    max_quant, chunk, block, levels = struct.unpack_from("<4I", stream, 40)
    if (max_quant, chunk, block) != (32767, CHUNK_CODES, BLOCK_CODES):
        raise StreamError("unsupported quantiser or chunk parameters")
    level_end, level_bound, level_quant = [], [], []
    for k in range(levels):
        e, b = struct.unpack_from("<Qd", stream, fixed + entry * k)
        (qb,) = struct.unpack_from("<d", stream, fixed + entry * k + 16) if version >= 2 else (bound,)
        if not 0 < qb <= bound:
            raise StreamError("level %d: quantiser bound %r outside (0, bound]" % (k, qb))
        level_end.append(e)
        level_bound.append(b)
        level_quant.append(qb)
    table_pos = fixed + entry * levels
    (count,) = struct.unpack_from("<I", stream, table_pos)
    if version >= 4:
        lengths, table_bytes = _compact_lengths(stream, table_pos + 4, count)
    else:
        lengths, table_bytes = np.frombuffer(stream, np.uint8, count, table_pos + 4), count
    header = (table_pos + 4 + table_bytes + 3) // 4 * 4 + mask_bytes + 4
    (checksum,) = struct.unpack_from("<I", stream, header - 4)
    if checksum != _fnv1a(stream[: header - 4]):
        raise StreamError("header checksum mismatch")
    dtype = np.float32 if vtype == 1 else np.float64
    runs = _mask_runs(stream[header - 4 - mask_bytes:header - 4], dims, dtype) if mask_bytes else []
    return dict(version=version, dtype=dtype, raw=bool(flags & 1),
                dims=dims, bound=bound, levels=levels, level_end=level_end,
                level_bound=level_bound, level_quant=level_quant, order=order, cubic=cubic,
                lengths=lengths, header_bytes=header, special_runs=runs)


def _compact_lengths(stream, at, count):
    """Version 4's code-length table at stream[at]: operations on p, the last non-zero length
    (0 at first): '0' p again, '10s' p + 1 (s = 0) or p - 1, '110' + Exp-Golomb (order 2) of r - 1:
    r zero lengths, '111' + 5 bits: a literal length; bits from each byte's lowest, fields most
    significant bit first. Returns (lengths, bytes used)."""
    size = max(0, min(len(stream) - at, count + 1))  # at most 8 bits per length
    bits = np.unpackbits(np.frombuffer(stream, np.uint8, size, at), bitorder="little")
    pos = [0]

    def read(n):
        if pos[0] + n > len(bits):
            raise StreamError("code-length table truncated")
        v = 0
        for b in bits[pos[0]:pos[0] + n]:
            v = (v << 1) | int(b)
        pos[0] += n
        return v

    out = np.zeros(count, np.uint8)
    i, p = 0, 0
    zero_run = False  # the previous operation was a zero run: a run takes the whole run
    while i < count:
        if read(1) == 0:
            if p == 0:
                raise StreamError("code-length table repeats nothing")
            out[i], i, zero_run = p, i + 1, False
        elif read(1) == 0:
            p = p - 1 if read(1) else p + 1
            if not 1 <= p <= 24:
                raise StreamError("code length %d out of range" % p)
            out[i], i, zero_run = p, i + 1, False
        elif read(1) == 0:
            if zero_run:
                raise StreamError("code-length table: a zero run after a zero run")
            zero_run = True
            zeros = 0
            while read(1) == 0:
                zeros += 1
                if zeros > 20:
                    raise StreamError("code-length table: overlong zero run")
            run = ((1 << (zeros + 2)) | read(zeros + 2)) - 4 + 1
            if run > count - i:
                raise StreamError("code-length table: zero run past the end")
            i += run
        else:
            v = read(5)
            if not 1 <= v <= 24:
                raise StreamError("code length %d out of range" % v)
            if abs(v - p) <= 1:
                raise StreamError("code-length table: a literal where a step fits")
            p = v
            out[i], i, zero_run = p, i + 1, False
    used = (pos[0] + 7) // 8
    if bits[pos[0]:used * 8].any():
        raise StreamError("code-length table padding not zero")
    return out, used


def _varints(data, at):
    """The unsigned LEB128 varint at data[at]: (value, next position)."""
    value, shift = 0, 0
    while True:
        if at >= len(data) or shift > 63:
            raise StreamError("mask section: truncated or overlong varint")
        b = data[at]
        at += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, at


def _mask_runs(section, dims, dtype):
    """[(first voxel, count, value)] of the mask section: S, P, R, P values, R program bytes; the
    program is (repeat, plane)... over z, plane = (repeat, row)... over y, row = m runs of
    (gap, length[, palette entry where P > 1])."""
    specials, palette_size, program_bytes = struct.unpack_from("<QII", section, 0)
    vsize = np.dtype(dtype).itemsize
    palette = np.frombuffer(section, dtype, palette_size, 16)
    program = section[16 + vsize * palette_size:16 + vsize * palette_size + program_bytes]
    nx, ny, nz = dims
    runs, at, z = [], 0, 0
    while z < nz:
        plane_repeat, at = _varints(program, at)
        plane_at = at
        for pz in range(plane_repeat):
            at, y = plane_at, 0
            while y < ny:
                row_repeat, at = _varints(program, at)
                row_at = at
                for py in range(row_repeat):
                    at = row_at
                    m, at = _varints(program, at)
                    x = 0
                    for _ in range(m):
                        gap, at = _varints(program, at)
                        length, at = _varints(program, at)
                        entry = 0
                        if palette_size > 1:
                            entry, at = _varints(program, at)
                        x += gap
                        if length < 1 or x + length > nx or entry >= palette_size:
                            raise StreamError("mask section: a run outside its row or palette")
                        runs.append((x + nx * ((y + py) + ny * (z + pz)), length, palette[entry]))
                        x += length
                y += row_repeat
        z += plane_repeat
    if at != len(program) or sum(r[1] for r in runs) != specials or z != nz:
        raise StreamError("mask section: inconsistent program")
    return runs


def _canonical(lengths):
    """{(length, code): token} of the canonical Huffman code (DEFLATE's assignment)."""
    table = {}
    max_len = int(lengths.max()) if len(lengths) else 0
    code = 0
    for length in range(1, max_len + 1):
        for token in np.flatnonzero(lengths == length):
            table[(length, code)] = int(token)
            code += 1
        code <<= 1
    return table, max_len


def _chunk_bytes(entry, version):
    """Bytes of the chunk a size-table entry describes (version 5: bits 0-15 hold bytes / 4)."""
    return 4 * (entry & 0xFFFF) if version >= 5 else entry


def _decode_chunk(payload, entry, version, ncodes, table, max_len, dtype):
    vsize = np.dtype(dtype).itemsize
    if version >= 5:
        # Escapes in bits 16-28 of the entry, bit 31: the chunk starts with its block mask (else
        # every block of the chunk is coded); bits 29-30 are zero.
        if entry & 0x60000000:
            raise StreamError("reserved bits of a chunk entry set")
        nesc, head = (entry >> 16) & 0x1FFF, 8 if entry >> 31 else 0
        blocks = (ncodes + BLOCK_CODES - 1) // BLOCK_CODES
        mask = struct.unpack_from("<Q", payload, 0)[0] if head else (1 << blocks) - 1
        if head + nesc * vsize > len(payload):
            raise StreamError("chunk size mismatch")
        nwords = (len(payload) - head - nesc * vsize) // 4
    else:
        mask, nesc, nwords = struct.unpack_from("<QII", payload, 0)
        head = 16
        if 16 + nesc * vsize + 4 * nwords != len(payload):
            raise StreamError("chunk size mismatch")
    escapes = np.frombuffer(payload, dtype, nesc, head)
    words = np.frombuffer(payload, "<u4", nwords, head + nesc * vsize)
    bits = np.unpackbits(words.astype(">u4").view(np.uint8)).tolist()
    symbols = np.zeros(ncodes, np.int64)
    esc_at = []
    pos = 0
    for b in range((ncodes + BLOCK_CODES - 1) // BLOCK_CODES):
        if not (mask >> b) & 1:
            continue
        i, end = b * BLOCK_CODES, min((b + 1) * BLOCK_CODES, ncodes)
        while i < end:
            code, length = 0, 0
            while True:
                if length >= max_len or pos >= len(bits):
                    raise StreamError("invalid Huffman code")
                code = (code << 1) | bits[pos]
                pos += 1
                length += 1
                token = table.get((length, code))
                if token is not None:
                    break
            if token == 0:
                i += 1
            elif token == ESCAPE:
                symbols[i] = ESCAPE
                esc_at.append(i)
                i += 1
            elif token <= MAX_RUN:
                i += token
            else:
                symbols[i] = token - TOKEN_SHIFT
                i += 1
        if i != end:
            raise StreamError("zero run crosses a block")
    if len(esc_at) != nesc or (pos + 31) // 32 != nwords:
        raise StreamError("bit stream length does not match its header")
    return symbols, esc_at, escapes


def _symbol_to_q(symbols):
    zz = symbols - 1
    q = np.where(zz & 1, (zz + 1) // 2, -(zz // 2))
    return np.where(symbols <= ESCAPE, 0, q)


def decode(stream, level_of_detail=-1):
    """Decodes levels 0..level_of_detail (-1: all); returns an array of shape (nz, ny, nx)."""
    stream = bytes(stream)
    info = inspect(stream)
    dims, dtype = info["dims"], info["dtype"]
    nx, ny, nz = dims
    if info["raw"]:
        return np.frombuffer(stream, dtype, nx * ny * nz, info["header_bytes"]).reshape(nz, ny, nx)
    levels, passes, level_codes = plan(dims, info["order"])
    lod = levels - 1 if level_of_detail < 0 else level_of_detail
    table, max_len = _canonical(info["lengths"])
    rec = np.zeros((nz, ny, nx), dtype)
    half, nine, sixteenth = dtype(0.5), dtype(9), dtype(0.0625)
    three, six, eighth = dtype(3), dtype(6), dtype(0.125)
    for k in range(levels):
        step = 2.0 * info["level_quant"][k]
        symbols = np.zeros(level_codes[k], np.int64)
        escapes = {}
        if k <= lod:
            begin = info["header_bytes"] if k == 0 else info["level_end"][k - 1]
            nchunks = (level_codes[k] + CHUNK_CODES - 1) // CHUNK_CODES
            entries = np.frombuffer(stream, "<u4", nchunks, begin)
            at = begin + 4 * nchunks
            for c, entry in enumerate(entries.tolist()):
                n = min(CHUNK_CODES, level_codes[k] - c * CHUNK_CODES)
                size = _chunk_bytes(entry, info["version"])
                if entry:
                    s, esc_at, values = _decode_chunk(stream[at:at + size], entry, info["version"],
                                                      n, table, max_len, dtype)
                    symbols[c * CHUNK_CODES:c * CHUNK_CODES + n] = s
                    for i, v in zip(esc_at, values):
                        escapes[c * CHUNK_CODES + i] = v
                at += size
            if at != info["level_end"][k]:
                raise StreamError("level %d: chunks do not fill the section" % k)
        q = _symbol_to_q(symbols)
        for (lev, axis, gap, start, stp, cnt, code_begin) in passes:
            if lev != k:
                continue
            size = cnt[0] * cnt[1] * cnt[2]
            # numpy axes are (z, y, x): reverse the pass's (x, y, z) description.
            target = tuple(slice(start[a], start[a] + stp[a] * (cnt[a] - 1) + 1, stp[a])
                           for a in (2, 1, 0))
            if axis < 0:
                pred = np.zeros(rec[target].shape, dtype)
            else:
                # Along the pass axis, the voxel at i is predicted from i - gap and i + gap
                # (mean), or also from i - 3 gap and i + 3 gap (cubic, weights -1 9 9 -1 over 16)
                # where all four exist and the stream is cubic; at the far border it copies i - gap.
                na, n = 2 - axis, dims[axis]
                ia = start[axis] + stp[axis] * np.arange(cnt[axis])

                def at(coords):
                    sl = list(target)
                    sl[na] = np.clip(coords, 0, n - 1)
                    return rec[tuple(sl)]

                shape = [1, 1, 1]
                shape[na] = -1
                left, right = at(ia - gap), at(ia + gap)
                with np.errstate(all="ignore"):
                    has_right = ia + gap < n
                    pred = np.where(has_right.reshape(shape), (left + right) * half, left)
                    if info["cubic"]:
                        # Cubic where -3 gap and +3 gap exist too, else quadratic (weights 3 6 -1
                        # over 8, nearest first) through the three that exist.
                        before, after = ia >= 3 * gap, ia + 3 * gap < n
                        far_left, far_right = at(ia - 3 * gap), at(ia + 3 * gap)
                        cubic = (nine * (left + right) - (far_left + far_right)) * sixteenth
                        quad_after = (three * left + six * right - far_right) * eighth
                        quad_before = (three * right + six * left - far_left) * eighth
                        pred = np.where((has_right & before & after).reshape(shape), cubic,
                                        np.where((has_right & after).reshape(shape), quad_after,
                                                 np.where((has_right & before).reshape(shape),
                                                          quad_before, pred)))
                pred = pred.astype(dtype)
            qs = q[code_begin:code_begin + size].reshape(cnt[2], cnt[1], cnt[0])
            # C order: the escapes below are written through a flat view.
            values = (pred.astype(np.float64) + qs.astype(np.float64) * step).astype(dtype)
            values = np.ascontiguousarray(values)
            # An escape's value replaces the prediction.
            flat = values.reshape(-1)
            for i, v in escapes.items():
                if code_begin <= i < code_begin + size:
                    flat[i - code_begin] = v
            rec[target] = values
    # Special voxels (versions 3 to 5) replace whatever the levels reconstructed there.
    flat = rec.reshape(-1)
    for first, count, value in info["special_runs"]:
        flat[first:first + count] = value
    return rec
