"""The result cache's file format: a *segment* packs many entries, with a sorted index.

One segment is written per unit of work that stored results (``cache.py``), by one
atomic write, so a reader sees a whole segment or none, and concurrent writers never touch
one file. A segment is named by the BLAKE3 of its bytes: two writers of the same entries
write the same file.

    header   magic (8) | count u64 | tag (32)            56 bytes, little-endian
    index    count x (key (32) | offset u64 | length u32 | 4 zero bytes), sorted by key
    values   each: check (16) | content

``tag`` is the BLAKE3 of what every key of the segment was made with (the cache format,
the package and verification versions): a segment of another tag can never be hit, and
compaction drops it. ``check`` is the first 16 bytes of the BLAKE3 of key and content, so
an entry is checked on read (a damaged value, an index record pointing at another key's
value, a record out of the file's bounds: all "damaged"). The index is searched by
interpolation (keys are BLAKE3 digests, evenly spread): a few probes whatever its size,
straight from a memory map, so a worker holds nothing per entry.
"""
from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from typing import Union

from blake3 import blake3

MAGIC = b"CKRVCS\x00\x01"
HEADER = struct.Struct("<8sQ32s")
RECORD = struct.Struct("<32sQI4x")
KEY_BYTES = 32
CHECK_BYTES = 16
SUFFIX = ".seg"
_INTERPOLATED = 4  # probes by interpolation before bisection (evenly spread keys need 2-3)

Buffer = Union[bytes, memoryview]  # a segment's bytes (or its header and index alone)


class Damaged(Exception):
    """An entry (or a segment's header) that does not check."""


def check_of(key: bytes, content: bytes) -> bytes:
    return blake3(key + content).digest()[:CHECK_BYTES]


def encode(entries: dict[bytes, bytes], tag: bytes) -> bytes:
    """The segment holding ``entries`` (key -> content)."""
    keys = sorted(entries)
    offset = HEADER.size + RECORD.size * len(keys)
    index = bytearray()
    values = bytearray()
    for key in keys:
        value = check_of(key, entries[key]) + entries[key]
        index += RECORD.pack(key, offset + len(values), len(value))
        values += value
    return HEADER.pack(MAGIC, len(keys), tag) + bytes(index) + bytes(values)


def name_of(segment: bytes) -> str:
    """The file (object) name of a segment: its content's BLAKE3."""
    return blake3(segment).hexdigest()[:32] + SUFFIX


class Index:
    """The header and index of one segment over ``buf`` (a memory map of the whole file,
    or just the bytes of its header and index when values are read by range)."""

    __slots__ = ("buf", "count", "size", "tag")

    def __init__(self, buf: Buffer, size: int) -> None:
        if len(buf) < HEADER.size:
            raise Damaged("shorter than a segment header")
        magic, count, tag = HEADER.unpack_from(buf, 0)
        if magic != MAGIC or HEADER.size + count * RECORD.size > min(size, len(buf)):
            raise Damaged("not a segment header, or an index past the segment's end")
        self.buf, self.count, self.size, self.tag = buf, count, size, tag

    @staticmethod
    def span(buf: Buffer) -> int:
        """The bytes of header and index, from the first ``HEADER.size`` bytes."""
        magic, count, _ = HEADER.unpack_from(buf, 0)
        if magic != MAGIC:
            raise Damaged("not a segment header")
        return int(HEADER.size + count * RECORD.size)

    def find(self, key: bytes) -> tuple[int, int] | None:
        """``(offset, length)`` of the value filed under ``key``, or None. Interpolation
        search between two bounds whose keys are known (at first the virtual keys 0 and
        2^64 just outside the index), so a probe reads one record; after a few probes it
        falls back to bisection. Each probe narrows ``(lo, hi)`` strictly, so a damaged
        (unsorted) index ends too, at worst with a miss."""
        lo, hi = -1, self.count
        low, high = 0, 1 << 64
        want = int.from_bytes(key[:8], "big")
        probes = 0
        while hi - lo > 1:
            probes += 1
            if probes <= _INTERPOLATED and low <= want < high:
                mid = lo + 1 + (want - low) * (hi - lo - 1) // (high - low)
                mid = min(max(mid, lo + 1), hi - 1)
            else:
                mid = (lo + hi) // 2
            at = HEADER.size + mid * RECORD.size
            probe = bytes(self.buf[at:at + KEY_BYTES])
            if probe == key:
                _, offset, length = RECORD.unpack_from(self.buf, at)
                if offset < HEADER.size or offset + length > self.size or length < CHECK_BYTES:
                    raise Damaged("an index record past the segment's bounds")
                return int(offset), int(length)
            if probe < key:
                lo, low = mid, int.from_bytes(probe[:8], "big")
            else:
                hi, high = mid, int.from_bytes(probe[:8], "big") + 1
        return None

    def records(self) -> Iterator[tuple[bytes, int, int]]:
        """Every ``(key, offset, length)`` of the index, in its order."""
        for i in range(self.count):
            key, offset, length = RECORD.unpack_from(self.buf, HEADER.size + i * RECORD.size)
            yield key, offset, length


def content_of(key: bytes, value: Buffer) -> bytes:
    """The content of the value filed under ``key``; ``Damaged`` when it does not check."""
    check, content = bytes(value[:CHECK_BYTES]), bytes(value[CHECK_BYTES:])
    if len(check) != CHECK_BYTES or check != check_of(key, content):
        raise Damaged("an entry whose check does not match its key and content")
    return content


def merged(segments: Iterable[bytes], tag: bytes) -> tuple[bytes | None, int]:
    """One segment of every entry of ``segments`` that checks (a key once), and the
    number of entries dropped as damaged; None when no entry is left. Segments of another
    ``tag`` (whose keys can never be hit) and damaged ones contribute nothing."""
    entries: dict[bytes, bytes] = {}
    dropped = 0
    for data in segments:
        try:
            index = Index(data, len(data))
        except Damaged:
            continue
        if index.tag != tag:
            continue
        for key, offset, length in index.records():
            if key in entries:
                continue
            try:
                if offset < HEADER.size or offset + length > len(data):
                    raise Damaged("out of bounds")
                entries[key] = content_of(key, data[offset:offset + length])
            except Damaged:
                dropped += 1
    return (encode(entries, tag) if entries else None), dropped
