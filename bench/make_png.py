#!/usr/bin/env python3
"""Writes a valid PNG of exactly SIZE bytes: a 1x1 RGB image (IHDR, IDAT, IEND with correct
CRCs) padded by one private ancillary chunk (`prVt`) of random bytes, which decoders skip and
which neither PostgreSQL's pglz nor the page cache can shrink.

Usage: make_png.py PATH [SIZE=1048576]
"""
import os
import struct
import sys
import zlib

path, size = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 1 << 20


def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


head = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
tail = chunk(b"IDAT", zlib.compress(b"\x00\xff\x80\x00")) + chunk(b"IEND", b"")
padding = size - len(head) - len(tail) - 12  # a chunk's length, type and CRC
assert padding >= 0, "SIZE is too small for a PNG"
png = head + chunk(b"prVt", os.urandom(padding)) + tail
assert len(png) == size
with open(path, "wb") as f:
    f.write(png)
