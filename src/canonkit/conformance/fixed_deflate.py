"""A small, fully specified zlib encoder for frozen fixtures.

Library compressors produce different bytes for the same input (zlib, zlib-ng, isal and
libdeflate all differ, and so can two versions of one of them), so a frozen DEFLATE
fixture recorded with one of them could not be recorded again everywhere. This encoder
is pinned by its own definition: one final block with the fixed Huffman codes of
RFC 1951 §3.2.6, greedy LZ77 (at each position the longest match of 3-258 bytes within
the last 32 KiB, the nearest one among equals; a literal when there is none), wrapped in
a zlib stream (RFC 1950: header ``78 01``, no preset dictionary, Adler-32). Any inflater
reads it. It is quadratic in the worst case: for small fixtures only.
"""
from __future__ import annotations

import zlib

__all__ = ["compress"]

WINDOW = 32768
MIN_MATCH, MAX_MATCH = 3, 258

# RFC 1951 §3.2.5: (code, base, extra bits) for lengths and distances
_LENGTHS = [(257 + i, base, extra) for i, (base, extra) in enumerate([
    (3, 0), (4, 0), (5, 0), (6, 0), (7, 0), (8, 0), (9, 0), (10, 0), (11, 1), (13, 1),
    (15, 1), (17, 1), (19, 2), (23, 2), (27, 2), (31, 2), (35, 3), (43, 3), (51, 3),
    (59, 3), (67, 4), (83, 4), (99, 4), (115, 4), (131, 5), (163, 5), (195, 5), (227, 5),
    (258, 0)])]
_DISTANCES = [(i, base, extra) for i, (base, extra) in enumerate([
    (1, 0), (2, 0), (3, 0), (4, 0), (5, 1), (7, 1), (9, 2), (13, 2), (17, 3), (25, 3),
    (33, 4), (49, 4), (65, 5), (97, 5), (129, 6), (193, 6), (257, 7), (385, 7), (513, 8),
    (769, 8), (1025, 9), (1537, 9), (2049, 10), (3073, 10), (4097, 11), (6145, 11),
    (8193, 12), (12289, 12), (16385, 13), (24577, 13)])]


class _Bits:
    """An LSB-first bit stream (RFC 1951 §3.1.1)."""

    def __init__(self) -> None:
        self.out = bytearray()
        self.acc = 0
        self.n = 0

    def put(self, value: int, count: int) -> None:
        self.acc |= value << self.n
        self.n += count
        while self.n >= 8:
            self.out.append(self.acc & 0xFF)
            self.acc >>= 8
            self.n -= 8

    def code(self, value: int, count: int) -> None:
        """A Huffman code: its bits go most significant first."""
        self.put(int(format(value, f"0{count}b")[::-1], 2), count)

    def flush(self) -> bytes:
        if self.n:
            self.out.append(self.acc & 0xFF)
            self.acc = self.n = 0
        return bytes(self.out)


def _symbol(bits: _Bits, symbol: int) -> None:
    """A literal/length symbol with the fixed codes of RFC 1951 §3.2.6."""
    if symbol < 144:
        bits.code(0x30 + symbol, 8)
    elif symbol < 256:
        bits.code(0x190 + symbol - 144, 9)
    elif symbol < 280:
        bits.code(symbol - 256, 7)
    else:
        bits.code(0xC0 + symbol - 280, 8)


def _split(value: int, table: list[tuple[int, int, int]]) -> tuple[int, int, int]:
    """``(code, extra value, extra bits)`` for a length or distance."""
    for code, base, extra in reversed(table):
        if value >= base:
            return code, value - base, extra
    raise ValueError(value)


def _longest(data: bytes, i: int) -> tuple[int, int]:
    """``(length, distance)`` of the longest earlier match at ``i`` (0, 0 if none)."""
    best_len, best_dist = 0, 0
    limit = min(MAX_MATCH, len(data) - i)
    if limit < MIN_MATCH:
        return 0, 0
    for start in range(i - 1, max(-1, i - WINDOW - 1), -1):  # nearest first
        n = 0
        while n < limit and data[start + n] == data[i + n]:
            n += 1
        if n > best_len:
            best_len, best_dist = n, i - start
            if n == limit:
                break
    return (best_len, best_dist) if best_len >= MIN_MATCH else (0, 0)


def compress(data: bytes) -> bytes:
    """``data`` as one zlib stream (see the module docstring for the exact encoding)."""
    bits = _Bits()
    bits.put(1, 1)  # BFINAL
    bits.put(1, 2)  # BTYPE 01: fixed Huffman codes
    i = 0
    while i < len(data):
        length, distance = _longest(data, i)
        if not length:
            _symbol(bits, data[i])
            i += 1
            continue
        code, extra_value, extra_bits = _split(length, _LENGTHS)
        _symbol(bits, code)
        bits.put(extra_value, extra_bits)
        code, extra_value, extra_bits = _split(distance, _DISTANCES)
        bits.code(code, 5)
        bits.put(extra_value, extra_bits)
        i += length
    _symbol(bits, 256)  # end of block
    return b"\x78\x01" + bits.flush() + zlib.adler32(data).to_bytes(4, "big")
