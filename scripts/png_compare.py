#!/usr/bin/env python3
"""png_compare.py A.png B.png [MAX_DELTA]: are two renders of one picture the same, up to rasterizer rounding?

Exit 0 when both are 8-bit RGB or RGBA PNGs of one size whose every channel differs by at most
MAX_DELTA (default 8), 1 otherwise, printing how many pixels differ and by how much. Why: Mesa's
llvmpipe rounds a few edge pixels differently on different CPUs (seen: the same build drawing up to
0.3% of a picture's pixels 1-3 levels apart on an Intel Xeon and an AMD EPYC), while a change of what
a picture shows (a label, a colour, a tile) moves pixels by far more than 8 levels. Used by
scripts/make-pictures.sh --check when two files are not byte-identical.
What it is not: a general PNG reader (no palette, 16-bit or interlaced images: they are refused).
"""
import struct
import sys
import zlib


def load(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path}: not a PNG")
    i, idat = 8, []
    while i < len(data):
        (n,) = struct.unpack(">I", data[i:i + 4])
        kind, body = data[i + 4:i + 8], data[i + 8:i + 8 + n]
        i += 12 + n
        if kind == b"IHDR":
            w, h, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or colour not in (2, 6) or interlace:
                raise ValueError(f"{path}: only 8-bit RGB/RGBA non-interlaced PNGs are read")
        elif kind == b"IDAT":
            idat.append(body)
    bpp = 3 if colour == 2 else 4
    stride, raw = w * bpp, zlib.decompress(b"".join(idat))
    rows, prev, j = [], bytearray(stride), 0
    for _ in range(h):
        f, line = raw[j], bytearray(raw[j + 1:j + 1 + stride])
        j += 1 + stride
        if f == 1:
            for x in range(bpp, stride):
                line[x] = (line[x] + line[x - bpp]) & 255
        elif f == 2:
            line = bytearray((u + v) & 255 for u, v in zip(line, prev))
        elif f == 3:
            for x in range(stride):
                left = line[x - bpp] if x >= bpp else 0
                line[x] = (line[x] + ((left + prev[x]) >> 1)) & 255
        elif f == 4:
            for x in range(stride):
                a = line[x - bpp] if x >= bpp else 0
                b, c = prev[x], (prev[x - bpp] if x >= bpp else 0)
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, bpp, b"".join(rows)


def main():
    if len(sys.argv) not in (3, 4):
        print("usage: png_compare.py A.png B.png [MAX_DELTA]", file=sys.stderr)
        return 2
    limit = int(sys.argv[3]) if len(sys.argv) == 4 else 8
    (w1, h1, b1, p1), (w2, h2, b2, p2) = load(sys.argv[1]), load(sys.argv[2])
    if (w1, h1, b1) != (w2, h2, b2):
        print(f"png_compare: sizes differ: {w1}x{h1}x{b1} against {w2}x{h2}x{b2}")
        return 1
    deltas = [abs(u - v) for u, v in zip(p1, p2) if u != v]
    pixels = len({k // b1 for k, (u, v) in enumerate(zip(p1, p2)) if u != v}) if deltas else 0
    worst = max(deltas, default=0)
    print(f"png_compare: {pixels} of {w1 * h1} pixels differ, by at most {worst} levels (allowed {limit})")
    return 0 if worst <= limit else 1


if __name__ == "__main__":
    sys.exit(main())
