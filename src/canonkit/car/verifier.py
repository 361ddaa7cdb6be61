"""``verify``: check every rule of a CAR file and recompute every block's CID
(docs/car.md).

The file is read through the input door (a regular file, never blocking; the same file
from start to end, or FileChangedError) and streamed: the sections pass through one
buffer of ``CHUNK`` bytes, grown only to hold a section longer than that (never beyond
what the file holds), and the kernel walks them as they arrive. What the index check keeps
is, per section walked, its offset, one flag byte and its CID's multihash; the index
itself is streamed too.
"""
from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Any, cast

from .. import _backend, cbor
from .._files import Identity, check_unchanged, open_regular
from ..cbor._cid import cid_to_string, code_name
from .findings import Report, finding, from_problem
from .format import IDENTITY, parse_cid
from .header import Layout, read_layout
from .index import check_index
from .window import CHUNK, Source, Window

if TYPE_CHECKING:
    from . import _sections_py as _sections
else:  # the section walk and the index entry check; the twin is the typed surface
    _sections = _backend.select("car", compiled="canonkit.car._sections",
                                twin="canonkit.car._sections_py")

__all__ = ["CHUNK", "verify", "walk"]

PathLike = str | os.PathLike[str]


def walk(handle: Source, scanner: Any, start: int, end: int, *, chunk: int | None = None
         ) -> None:
    """Feed ``scanner`` the file's bytes from ``start`` to ``end`` until it is done."""
    window = Window(handle, start, end, CHUNK if chunk is None else chunk)
    while True:
        with window.fill() as view:
            used = scanner.feed(view, window.pos)
        if scanner.done:
            return
        window.advance(used, scanner.wanted)


def _strict_check() -> Callable[[Any], object]:
    return functools.partial(cbor.check, profile="dag-cbor")


def _fill_header(report: Report, layout: Layout) -> None:
    report.version = layout.version
    report.roots = [str(root) for root in layout.roots]
    if layout.v2 is not None:
        report.characteristics = layout.v2.characteristics.hex()
        report.fully_indexed = layout.v2.fully_indexed
        report.data_offset = layout.v2.data_offset
        report.data_size = layout.v2.data_size
        report.index_offset = layout.v2.index_offset or None


def _is_identity(cid: bytes) -> bool:
    return parse_cid(cid, 0, len(cid)).hash_code == IDENTITY


def _walk_and_check(handle: IO[bytes], layout: Layout, report: Report, strict: bool,
                    limit: int) -> None:
    fd = handle.fileno()
    roots = {root.cid_bytes for root in layout.roots}
    record = layout.index_offset is not None
    scanner = _sections.Scanner(layout.payload_start, layout.sections_start, layout.data_end,
                        roots=roots, strict=_strict_check() if strict else None,
                        record=record, limit=limit)
    walk(cast(Source, handle), scanner, layout.sections_start, layout.data_end)
    scanner.finish()
    report.findings.extend(from_problem(p) for p in scanner.problems)
    report.add_counts(scanner.counts)
    report.blocks = scanner.blocks
    report.block_bytes = scanner.block_bytes
    report.verified = scanner.verified
    report.codecs = {code_name(c): n for c, n in sorted(scanner.codecs.items())}
    report.hashes = {code_name(c): n for c, n in sorted(scanner.hashes.items())}
    for root in layout.roots:
        cid = root.cid_bytes
        if cid not in scanner.roots_found and not _is_identity(cid):
            report.add(finding(layout.sections_start, "car_root_missing",
                               f"the root {cid_to_string(cid)} is not a block of the data",
                               cid))
    if scanner.blocks == 0 and scanner.stopped_at is None:
        report.add(finding(layout.sections_start, "car_no_blocks",
                           "the data holds no block"))
    if layout.index_offset is None:
        return
    if scanner.stopped_at is not None:
        return  # the sections past the stop are unknown: the index cannot be held to them
    assert layout.v2 is not None
    result = check_index(fd, layout.index_offset, layout.size, _sections,
                         payload_start=layout.payload_start, data_end=layout.data_end,
                         scanner=scanner, fully_indexed=layout.v2.fully_indexed, limit=limit)
    report.index_checked = True
    report.index_format = result.format
    report.index_entries = result.entries
    report.add(result.findings)
    if result.checker is not None:
        report.findings.extend(from_problem(p) for p in result.checker.problems)
        report.add_counts(result.checker.counts)


def verify(path: PathLike, *, strict: bool = False, limit: int = 1000) -> Report:
    """Check the CAR file at ``path`` (CARv1 or CARv2) and return its :class:`Report`.

    Every rule of docs/car.md is checked: the pragma and headers, the CARv2 offsets, sizes
    and padding, the framing of every section, every block's digest recomputed from its
    bytes (sha2-256, blake2b-256, blake3, identity and the other functions ``Link.for_block``
    computes; any other hash function is a finding), and a CARv2 index against the data.
    With ``strict``, every dag-cbor block is also decoded as strict DAG-CBOR. Problems in the
    file are findings, never exceptions; at most ``limit`` are kept per code (all counted).

    Raises what the input door raises for a file that cannot be read (OSError, among them
    NotRegularFileError, and FileChangedError when the file changes during the check)."""
    report = Report(path=os.fspath(path), strict=strict, limit=limit)
    with open_regular(path) as handle:
        started = Identity.of(os.fstat(handle.fileno()))
        report.size = started.size
        layout, found = read_layout(handle.fileno(), started.size)
        report.add(found)
        _fill_header(report, layout)
        if layout.walkable:
            _walk_and_check(handle, layout, report, strict, limit)
        check_unchanged(handle, path, started)
    report.finish()
    return report
