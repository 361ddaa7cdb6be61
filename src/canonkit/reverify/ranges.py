"""Work descriptors for seekable inputs: workers read their own documents.

Shipping every document's bytes from the parent to a worker costs the parent CPU that a
2-CPU machine takes straight from the workers (Dask's route is client -> scheduler ->
worker over TCP). For inputs a worker can seek in itself — plain JSON lines and ``.json``
documents — the parent sends descriptors instead:

- ``("lines", source_path, open_path, start, end)``: the whole lines of a JSON lines file
  in the byte range ``[start, end)``. Boundaries are 0, the end of the file, or a position
  just after a ``b"\\n"``, found by seeking and scanning (:func:`plan_ranges`); the parent
  never reads the file through.
- ``("json", [(source_path, open_path), ...])``: ``.json`` documents, one Episode each.
- ``("items", tasks)``: documents already read by the parent (compressed streams, CBOR
  sequences, and every input when the workers cannot see the parent's files).

A range's first line number is not known when it is planned (that would need every
newline before it counted), so the worker numbers lines from 1 within its range and
returns, per verdict, where the number sits in the report line; the parent, consuming
ranges in order, adds the lines of the earlier ranges (:func:`renumber`). Reports are
byte-identical to the ones built from shipped bytes (tested).
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any, BinaryIO

import orjson

from .._files import JSONLines, open_regular
from .sources import MAX_DOCUMENT_BYTES, Item, _read_json_file
from .worker import Task, Verdict, verify_batch, verify_one

_SCAN = 1 << 16
# A range is at least this long (so a tiny corpus is not cut into one-line tasks) ...
MIN_RANGE_BYTES = 1 << 16
# ... and the parent plans about this many ranges per worker for a file smaller than
# workers x batch_bytes, so every worker gets a share of it.
RANGES_PER_WORKER = 4

Unit = tuple[Any, ...]
# (start, end) of the line number inside a report line, and the number written there
Fixup = tuple[int, int, int] | None
# verdicts, fixups (None when nothing needs renumbering), lines read, document bytes,
# disk bytes
UnitResult = tuple[list[Verdict], list[Fixup] | None, int, int, int]


def seekable_kind(path: str) -> str | None:
    """"lines" for plain JSON lines, "json" for a .json document, None for inputs that
    only the parent reads (compressed streams, CBOR sequences)."""
    name = path.lower()
    if name.endswith((".jsonl", ".ndjson")):
        return "lines"
    if name.endswith(".json"):
        return "json"
    return None


def _next_boundary(f: BinaryIO, pos: int, size: int) -> int:
    """The first line start at or after ``pos`` (a position just after a newline), or
    ``size``. Reads from ``pos - 1`` to the next newline only."""
    if pos <= 0:
        return 0
    if pos >= size:
        return size
    at = pos - 1
    f.seek(at)
    while True:
        block = f.read(_SCAN)
        if not block:
            return size
        i = block.find(b"\n")
        if i >= 0:
            return at + i + 1
        at += len(block)


def plan_ranges(path: str, chunk_bytes: int) -> Iterator[tuple[int, int]]:
    """Consecutive ``[start, end)`` byte ranges of whole lines covering the file, each at
    least ``chunk_bytes`` long (the last may be shorter; one may be longer, to finish a
    line). Lazy: a range is planned when the consumer asks for it."""
    if chunk_bytes < 1:
        raise ValueError("chunk_bytes must be at least 1")
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        start = 0
        while start < size:
            end = _next_boundary(f, start + chunk_bytes, size)
            yield start, end
            start = end


def chunk_bytes_for(size: int, workers: int, batch_bytes: int) -> int:
    """Range length for a file of ``size`` bytes: ``batch_bytes``, or less for a file
    too small to give every worker several ranges."""
    share = size // max(1, workers * RANGES_PER_WORKER)
    return max(1, min(batch_bytes, max(MIN_RANGE_BYTES, share)))


def read_lines(path: str, start: int, end: int) -> Iterator[tuple[Item, int]]:
    """The documents of ``[start, end)`` with their 1-based line number within the range
    (the source's ``line`` is that relative number). Same reader as
    ``sources._read_jsonl`` (``canonkit._files.JSONLines``): blank lines are counted (as
    ``blank`` items), an over-long line is an ``error`` item skipped up to its newline.
    Yields ``(item, lines_read_so_far)``; the final value of the counter is the number of
    lines in the range."""
    with open_regular(path) as raw:
        raw.seek(start)
        for line_no, line in JSONLines(raw, max_line=MAX_DOCUMENT_BYTES, stop_after=end - start):
            source: dict[str, object] = {"file": path, "line": line_no}
            if line is None:
                reason = f"line exceeds the {MAX_DOCUMENT_BYTES}-byte document limit"
                yield Item("error", reason.encode(), source, 0), line_no
            elif not line:
                yield Item("blank", b"", source, 0), line_no
            else:
                yield Item("json", line, source, 0), line_no


def _verify_lines(source_path: str, open_path: str, start: int, end: int,
                  search_cap: int) -> UnitResult:
    verdicts: list[Verdict] = []
    fixups: list[Fixup] = []
    lines = doc_bytes = 0
    key = b'"source":{"file":' + orjson.dumps(source_path) + b',"line":'
    for item, lines in read_lines(open_path, start, end):
        if item.kind == "blank":
            continue
        rel = lines
        source = {"file": source_path, "line": rel}
        verdict = verify_one(item.kind, item.payload, source, search_cap)
        if item.kind != "error":
            doc_bytes += len(item.payload)
        # the first match is the source: a JSON string holds no unescaped quote, so the
        # episode_id before it cannot contain the key
        i = verdict[0].find(key) + len(key)
        verdicts.append(verdict)
        fixups.append((i, i + len(str(rel)), rel))
    return verdicts, fixups, lines, doc_bytes, end - start


def _verify_json_files(files: list[tuple[str, str]], search_cap: int) -> UnitResult:
    verdicts: list[Verdict] = []
    doc_bytes = disk = 0
    for source_path, open_path in files:
        source: dict[str, Any] = {"file": source_path}
        try:
            items = list(_read_json_file(open_path))
        except OSError as exc:  # as sources.iter_items reports it, under the given name
            if exc.filename == open_path:
                exc.filename = source_path
            reason = f"cannot read the file: {type(exc).__name__}: {exc}"
            items = [Item("error", reason.encode(), source, 0)]
        for item in items:
            verdicts.append(verify_one(item.kind, item.payload, source, search_cap))
            if item.kind != "error":
                doc_bytes += len(item.payload)
            disk += item.disk_bytes
    return verdicts, None, 0, doc_bytes, disk


def verify_unit(unit: Unit, search_cap: int) -> UnitResult | list[Verdict]:
    """Runs in a worker: the verdicts of one unit, in input order (an ``items`` unit
    gives ``verify_batch``'s plain list)."""
    kind = unit[0]
    if kind == "lines":
        _, source_path, open_path, start, end = unit
        return _verify_lines(source_path, open_path, start, end, search_cap)
    if kind == "json":
        return _verify_json_files(unit[1], search_cap)
    tasks: list[Task] = unit[1]
    return verify_batch(tasks, search_cap)


def renumber(verdicts: list[Verdict], fixups: list[Fixup], base: int) -> list[Verdict]:
    """Add ``base`` (the lines of the file before the range) to every line number."""
    if base == 0:
        return verdicts
    out: list[Verdict] = []
    for (line, outcome, episode_id, order), fix in zip(verdicts, fixups):
        if fix is not None:
            i, j, rel = fix
            line = b"%b%d%b" % (line[:i], base + rel, line[j:])
        out.append((line, outcome, episode_id, order))
    return out
