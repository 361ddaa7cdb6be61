"""Byte ranges of whole lines of a JSON-lines file: planned by the parent without reading
the file through, read by the worker that verifies them.

Boundaries are 0, the end of the file, or a position just after a ``b"\\n"``, found by
seeking to the wanted length and scanning to the next newline (:func:`plan_ranges`).
An object of object storage (``expect`` its ``ObjectInfo``) is planned the same way, by
small ranged GETs at each wanted boundary, and each range is read by the worker that
verifies it with ranged GETs of exactly its bytes.
"""
from __future__ import annotations

import io
import os
from collections.abc import Iterator
from typing import Any, BinaryIO, cast

from .._files import Expect, Identity, JSONLines, check_unchanged, open_regular

_SCAN = 1 << 16
_READ_BUFFER = 1 << 20  # a worker reading its range
# a planner's GET at a wanted boundary of an object: a few lines (one GET each)
_SCAN_OBJECT = 1 << 13
# A range is at least this long (so a tiny corpus is not cut into one-line tasks) ...
MIN_RANGE_BYTES = 1 << 16
# ... and the parent plans about this many ranges per worker for a file smaller than
# workers x batch_bytes, so every worker gets a share of it.
RANGES_PER_WORKER = 4


def seekable_kind(path: str) -> str | None:
    """"lines" for plain JSON lines, "json" for a .json document, None for inputs that
    only the parent reads (compressed streams, CBOR sequences)."""
    name = path.lower()
    if name.endswith((".jsonl", ".ndjson")):
        return "lines"
    if name.endswith(".json"):
        return "json"
    return None


def _next_boundary(f: BinaryIO, pos: int, size: int, scan: int = _SCAN) -> int:
    """The first line start at or after ``pos`` (a position just after a newline), or
    ``size``. Reads from ``pos - 1`` to the next newline only."""
    if pos <= 0:
        return 0
    if pos >= size:
        return size
    at = pos - 1
    f.seek(at)
    while True:
        block = f.read(scan)
        if not block:
            return size
        i = block.find(b"\n")
        if i >= 0:
            return at + i + 1
        at += len(block)


def _open(path: str, expect: Expect, start: int = 0, end: int | None = None, *,
          scan: bool = False) -> tuple[BinaryIO, int]:
    """The file (or object version) positioned at ``start``, and its size. An object is
    read by ranged GETs of ``[start, end)`` only; a planner's scans (``scan``) fetch
    ``_SCAN_OBJECT`` bytes at a time and nothing ahead."""
    if expect is None or isinstance(expect, Identity):
        f = open_regular(path, expect=expect)
        if not scan:  # lines of tens of kilobytes: read in large blocks, not the default
            f = io.BufferedReader(cast(io.BufferedReader, f).detach(), _READ_BUFFER)
        try:
            f.seek(start)
            return f, os.fstat(f.fileno()).st_size
        except BaseException:
            f.close()
            raise
    from .._files.remote import open_range

    if scan:
        return (open_range(expect, start, end, block=_SCAN_OBJECT, readahead=False),
                expect.size)
    return open_range(expect, start, end), expect.size


def plan_ranges(path: str, chunk_bytes: int, expect: Expect = None
                ) -> Iterator[tuple[int, int]]:
    """Consecutive ``[start, end)`` byte ranges of whole lines covering the file (the one
    ``expect`` describes), each at least ``chunk_bytes`` long (the last may be shorter;
    one may be longer, to finish a line). Lazy: a range is planned when the consumer asks
    for it."""
    if chunk_bytes < 1:
        raise ValueError("chunk_bytes must be at least 1")
    f, size = _open(path, expect, scan=True)
    scan = _SCAN if expect is None or isinstance(expect, Identity) else _SCAN_OBJECT
    with f:
        start = 0
        while start < size:
            end = _next_boundary(f, start + chunk_bytes, size, scan)
            yield start, end
            start = end


def chunk_bytes_for(size: int, workers: int, batch_bytes: int) -> int:
    """Range length for a file of ``size`` bytes: ``batch_bytes``, or less for a file
    too small to give every worker several ranges."""
    share = size // max(1, workers * RANGES_PER_WORKER)
    return max(1, min(batch_bytes, max(MIN_RANGE_BYTES, share)))


def read_lines(path: str, start: int, end: int, max_line: int,
               expect: Expect = None) -> Iterator[tuple[int, int, bytes | None]]:
    """``(line number within the range, offset of the line, line)`` for every line of
    ``[start, end)`` (``canonkit._files.JSONLines``: ``b""`` for a blank line, ``None``
    for one longer than ``max_line``, skipped to its newline). FileChangedError (an
    OSError) when the file is not the one ``expect`` describes, at open or at the end."""
    raw, _ = _open(path, expect, start, end)
    with raw:
        reader = JSONLines(raw, max_line=max_line, stop_after=end - start)
        at = start
        for number, line in reader:
            yield number, at, line
            at = start + reader.consumed
        check_unchanged(raw, path, expect)


def read_range(path: str, start: int, end: int, expect: Expect = None,
               into: bytearray | None = None) -> bytes | memoryview:
    """The bytes ``[start, end)`` of the file (or object version) ``expect`` describes,
    whole (read into ``into`` when given, grown as needed: a worker reuses one buffer
    rather than faulting in fresh pages for every range): FileChangedError when it is not
    that file (at open or at the end), another OSError when it holds fewer bytes (the
    caller then reads it line by line, which says where it ends)."""
    if expect is not None and not isinstance(expect, Identity):
        from .._files.remote import read_range as read_object_range

        return read_object_range(expect, start, end)
    f, _ = _open(path, expect, start, end)
    with f:
        if into is None:
            data: bytes | memoryview = f.read(end - start)
            got = len(data)
        else:
            if len(into) < end - start:
                into.extend(bytes(end - start - len(into)))
            data = memoryview(into)[:end - start]
            got = cast(io.BufferedReader, f).readinto(data)
        check_unchanged(f, path, expect)
    if got != end - start:
        raise OSError(f"{path}: {got} bytes where the range holds {end - start}")
    return data


#: what the client reads at a time to hash a range: small enough to stay in the CPU's
#: cache between the copy and the hash (measured: bench/reverify_resume.py --hashing)
HASH_BLOCK = 256 * 1024


def hash_range(path: str, start: int, end: int, expect: Expect, digest: Any,
               buffer: bytearray) -> None:
    """Feed the bytes ``[start, end)`` of the file ``expect`` describes to ``digest``, a
    ``HASH_BLOCK`` at a time through ``buffer`` (nothing is held): FileChangedError when
    it is not that file (at open or at the end), another OSError when it holds fewer
    bytes."""
    if len(buffer) < HASH_BLOCK:
        buffer.extend(bytes(HASH_BLOCK - len(buffer)))
    view = memoryview(buffer)
    try:
        with open_regular(path, expect=expect if isinstance(expect, Identity) else None) as f:
            fd = f.fileno()
            at = start
            while at < end:
                got = os.preadv(fd, [view[:min(HASH_BLOCK, end - at)]], at)
                if got <= 0:
                    raise OSError(f"{path}: {at - start} bytes where the range holds "
                                  f"{end - start}")
                digest.update(view[:got])
                at += got
            check_unchanged(f, path, expect)
    finally:
        view.release()
