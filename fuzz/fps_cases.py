"""The byte layout the FPS fuzz target reads a case from (and the seeds are written in):

    [flags][level][offset: u32 LE][length: u32 LE] then chunks [n: u8][n bytes] ...

``flags & 3`` picks the op (slice, concat, reverse, splice); ``flags & 4`` also runs the
op with ``out=`` (a buffer of the expected size); ``flags & 8`` makes offset and length
huge (2**63 + value: past every buffer). ``level`` picks from ``LEVELS`` (the last two
are refused). Chunks are the input(s): slice/reverse use the first, splice the first two
(input, insert), concat all of them.
"""
from __future__ import annotations

import struct
from typing import Any

OPS = ("slice", "concat", "reverse", "splice")
LEVELS: tuple[Any, ...] = ("bit", "byte", "word", "long", None, "nibble")


def parse(data: bytes) -> tuple[str, Any, int, int, list[bytes], bool] | None:
    if len(data) < 10:
        return None
    flags, level = data[0], LEVELS[data[1] % len(LEVELS)]
    offset, length = struct.unpack_from("<II", data, 2)
    if flags & 8:
        offset, length = offset + (1 << 63), length + (1 << 63)
    chunks: list[bytes] = []
    i = 10
    while i < len(data):
        n = data[i]
        chunks.append(data[i + 1:i + 1 + n])
        i += 1 + n
    return OPS[flags & 3], level, offset, length, chunks, bool(flags & 4)


def build(op: str, level: Any, offset: int, length: int, chunks: list[bytes],
          use_out: bool = False) -> bytes:
    """The inverse of ``parse`` (offset/length must fit in 32 bits, chunks in 255 bytes)."""
    flags = OPS.index(op) | (4 if use_out else 0)
    head = bytes([flags, LEVELS.index(level)]) + struct.pack("<II", offset, length)
    return head + b"".join(bytes([len(c)]) + c for c in chunks)
