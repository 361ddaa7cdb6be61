"""Checking a CARv2 index against the data it indexes (docs/car.md, "The index").

The index's structure (format code, bucket counts, hash codes, widths, lengths) is read
here with small reads at known offsets; every count and length it declares is compared
with the bytes the file has left before anything is read on its behalf, so an index
cannot make the check allocate or loop beyond the file's own size. The entries of each
bucket are streamed in blocks to the kernel's ``EntryChecker``, which finds each entry's
section among the offsets the walk recorded and compares the digests.
"""
from __future__ import annotations

import struct
from types import ModuleType
from typing import Any

from ..cbor._cid import code_name
from ..errors import FileChangedError
from .findings import Finding, finding
from .format import (
    INDEX_FORMATS,
    INDEX_SORTED,
    MAX_VARINT_BYTES,
    VarintProblem,
    read_at,
    read_varint,
)

__all__ = ["IndexResult", "check_index"]

_ENTRY_BLOCK = 1 << 20  # entries are read in blocks of about this many bytes


class _Broken(Exception):
    """The index's structure cannot be read on from here."""

    def __init__(self, found: Finding) -> None:
        super().__init__(found.detail)
        self.finding = found


class IndexResult:
    """What the index check found: the format's name, the entries read, the findings
    (structure) and the entry checker (its ``problems`` and ``counts``)."""

    def __init__(self) -> None:
        self.format: str | None = None
        self.entries = 0
        self.findings: list[Finding] = []
        self.checker: Any = None


class _Cursor:
    """Reads the index's fields in order, refusing any that would run past the file."""

    def __init__(self, fd: int, pos: int, size: int) -> None:
        self.fd = fd
        self.pos = pos
        self.size = size

    def take(self, n: int, what: str) -> bytes:
        if n > self.size - self.pos:
            raise _Broken(finding(self.pos, "car_index_truncated",
                                  f"the index ends inside {what} ({self.size - self.pos} of "
                                  f"{n} bytes are left)"))
        raw = read_at(self.fd, n, self.pos)
        if len(raw) != n:
            raise FileChangedError(f"the file ended at offset {self.pos + len(raw)} while "
                                   "being read (it held more when opened)")
        self.pos += n
        return raw

    def count(self, what: str) -> int:
        """A bucket count: a little-endian int32 (go-car writes and reads it signed)."""
        at = self.pos
        value: int = struct.unpack("<i", self.take(4, what))[0]
        if value < 0:
            raise _Broken(finding(at, "car_index_malformed", f"{what} is negative ({value})"))
        return value


def _width_bucket(cursor: _Cursor, checker: Any, code: int | None, previous: int,
                  result: IndexResult) -> int:
    """One bucket of entries of one width; returns its width."""
    at = cursor.pos
    width: int
    length: int
    width, length = struct.unpack("<IQ", cursor.take(12, "a bucket header (width, length)"))
    if width <= previous:
        result.findings.append(finding(at, "car_index_unsorted",
                                       f"a bucket of width {width} follows one of width "
                                       f"{previous} (widths must ascend)"))
    if length > cursor.size - cursor.pos:
        raise _Broken(finding(at, "car_index_truncated",
                              f"the bucket declares {length} bytes of entries but "
                              f"{cursor.size - cursor.pos} remain in the file"))
    start = cursor.pos
    cursor.pos += length
    if width < 8:
        result.findings.append(finding(at, "car_index_malformed",
                                       f"a bucket of width {width}: an entry holds an 8-byte "
                                       "offset, so the width is at least 8; its entries are "
                                       "not checked"))
        return width
    whole = length - length % width
    if whole != length:
        result.findings.append(finding(at, "car_index_malformed",
                                       f"the bucket's {length} bytes are not a whole number of "
                                       f"{width}-byte entries (the length counts bytes, as "
                                       f"go-car writes it); the last {length - whole} are "
                                       "not checked"))
    checker.bucket(width, code)
    step = max(1, _ENTRY_BLOCK // width) * width
    pos = start
    while pos < start + whole:
        block = read_at(cursor.fd, min(step, start + whole - pos), pos)
        if len(block) == 0 or len(block) % width:
            raise FileChangedError(f"the file ended at offset {pos + len(block)} while being "
                                   "read (it held more when opened)")
        checker.feed(block, pos)
        pos += len(block)
    return width


def _buckets(cursor: _Cursor, checker: Any, code: int | None, result: IndexResult) -> None:
    """A count, then that many buckets of ascending widths."""
    count = cursor.count("the bucket count")
    width = -1
    for _ in range(count):  # each bucket takes 12 bytes or ends the index: bounded
        width = _width_bucket(cursor, checker, code, width, result)


def check_index(fd: int, index_offset: int, size: int, kernel: ModuleType, *,
                payload_start: int, data_end: int, scanner: Any, fully_indexed: bool,
                limit: int) -> IndexResult:
    """Check the index at ``index_offset`` of the file ``fd`` (``size`` bytes) against the
    sections ``scanner`` recorded (its ``offsets`` from ``payload_start``, ``flags``,
    ``keys`` and ``key_ends``)."""
    result = IndexResult()
    head = read_at(fd, min(MAX_VARINT_BYTES, size - index_offset), index_offset)
    try:
        codec, used = read_varint(head, 0, len(head))
    except VarintProblem as exc:
        words = {"cut": "runs past the end of the file", "overlong": "is longer than 9 bytes",
                 "non_minimal": "is not minimally encoded"}[exc.kind]
        code = "car_index_truncated" if exc.kind == "cut" else "car_index_malformed"
        result.findings.append(finding(index_offset, code,
                                       f"the index's format code varint {words}"))
        return result
    if codec not in INDEX_FORMATS:
        result.findings.append(finding(index_offset, "car_unknown_index",
                                       f"index format 0x{codec:x} ({code_name(codec)}): only "
                                       "car-index-sorted (0x400) and "
                                       "car-multihash-index-sorted (0x401) are defined"))
        return result
    result.format = INDEX_FORMATS[codec]
    checker = result.checker = kernel.EntryChecker(
        fd, payload_start, data_end, scanner.offsets, scanner.flags, scanner.keys,
        scanner.key_ends, fully_indexed=fully_indexed, limit=limit)
    cursor = _Cursor(fd, index_offset + used, size)
    try:
        if codec == INDEX_SORTED:
            _buckets(cursor, checker, None, result)
        else:
            groups = cursor.count("the multihash bucket count")
            previous = -1
            for _ in range(groups):  # each takes 12 bytes or ends the index: bounded
                at = cursor.pos
                (code,) = struct.unpack("<Q", cursor.take(8, "a multihash code"))
                if code <= previous:
                    result.findings.append(finding(
                        at, "car_index_unsorted",
                        f"the bucket of multihash {code_name(code)} (0x{code:x}) follows "
                        f"0x{previous:x} (codes must ascend)"))
                previous = code
                _buckets(cursor, checker, code, result)
        if cursor.pos != size:
            result.findings.append(finding(cursor.pos, "car_index_malformed",
                                           f"{size - cursor.pos} bytes follow the last bucket"))
    except _Broken as broken:
        result.findings.append(broken.finding)
        result.entries = checker.entries
        return result  # entries past the break were never read: no "missing" findings
    result.entries = checker.entries
    checker.missing()
    return result
