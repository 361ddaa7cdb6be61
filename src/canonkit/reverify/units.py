"""Units of work: what the parent sends to a worker, and what comes back.

Shipping every document's bytes from the parent costs the parent CPU that a small machine
takes straight from the workers (and on Dask every byte travels client -> scheduler ->
worker). So where the workers can open the parent's files, the parent sends descriptors
and each worker reads its own documents:

- :class:`LineRange`: the whole lines of a plain JSON-lines file in ``[start, end)``;
- :class:`JsonFiles`: ``.json`` documents, one Episode each;
- :class:`WholeObject`: an object of object storage that cannot be cut into ranges (a
  compressed stream, a CBOR sequence), read through by the one worker that verifies it
  (the client process lists and plans; it forwards no corpus bytes);
- :class:`Documents`: documents the parent read itself (local compressed streams and CBOR
  sequences, unreadable inputs, and everything when the workers cannot see the files).

A range's first line number is not known when it is planned (that would need every
newline before it counted), so a worker numbers the lines of its range from 1 and the
parent, consuming units in order, adds the lines of the earlier ranges of the file
(``lines.Verdict.line``).
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import NamedTuple, Union

from .._files import Expect, JSONLines
from ..errors import FileChangedError
from .lines import Source, Verdict, invalid, source_head
from .sources import MAX_DOCUMENT_BYTES, Input, Item, iter_items, read_json_file
from .cache import MAX_UNIT_BYTES, CacheView, ResultCache, attach
from .worker import Options, verify_one


@dataclass(frozen=True, slots=True)
class LineRange:
    """Lines ``[start, end)`` of the JSON-lines file ``path`` (reported as ``source``),
    numbered from ``line0 + 1`` within the file's ranges; ``first`` starts a file;
    ``identity`` is the file the run started on (a worker reads no other)."""

    source: str
    path: str
    start: int
    end: int
    first: bool = False
    line0: int = 0
    identity: Expect = None


@dataclass(frozen=True, slots=True)
class JsonFiles:
    """``.json`` documents as ``(reported name, name to open, identity)`` triples: the
    identity is the file the run started on (a worker reads no other)."""

    files: tuple[tuple[str, str, Expect], ...]


@dataclass(frozen=True, slots=True)
class Documents:
    """Documents already read (or found unreadable) by the parent."""

    items: tuple[Item, ...]


@dataclass(frozen=True, slots=True)
class WholeObject:
    """All of one object (an ``Input`` whose identity is its ``ObjectInfo``), read by the
    worker through the parent's own readers (``sources.iter_items``)."""

    input: Input


Unit = Union[LineRange, JsonFiles, WholeObject, Documents]


class UnitResult(NamedTuple):
    """The verdicts of a unit in input order; ``lines`` is the number of physical lines
    a ``LineRange`` held (the parent's line count; ``CHANGED`` when the range was refused
    because its file changed: its lines cannot be counted), the byte counts feed the
    progress."""

    verdicts: list[Verdict]
    lines: int
    doc_bytes: int
    disk_bytes: int
    cached: int = 0  # verdicts taken from the result cache
    cache_corrupt: int = 0  # cache entries that did not check (recomputed)
    named_exports: int = 0  # Layer 3 exports named by path that were read (journal.py)


CHANGED = -1  # UnitResult.lines of a range refused because its file changed
# the bytes of the range being looked up whole: one buffer a thread (a Dask worker may
# run several units at once), reused from range to range (see ranges.read_range)
_HELD = threading.local()


def refused_range(unit: LineRange, reason: str) -> UnitResult:
    """The result of a range that is not read because its file is not the one the run
    started on: one ``invalid_record`` located by the range's byte offset (its line
    numbers cannot be known) naming the change."""
    verdict = invalid(Source(unit.source, "offset", unit.start), reason)
    located = verdict._replace(head=verdict.line(), number=None, tail=b"")  # no line base
    return UnitResult([located], CHANGED, 0, unit.end - unit.start)


def too_long() -> str:
    return f"line exceeds the {MAX_DOCUMENT_BYTES}-byte document limit"


def _cannot_read(exc: OSError, opened: str, reported: str) -> str:
    if exc.filename == opened:  # say it under the name the user gave
        exc.filename = reported
    return f"cannot read the file: {type(exc).__name__}: {exc}"


def _verify_range(unit: LineRange, search_cap: int, require_layer3: bool,
                  cache: ResultCache | None) -> UnitResult:
    """With a cache, a range short enough to hold is read whole and looked up as a unit
    first; otherwise (or when it cannot be read whole) it is read line by line."""
    if cache is not None and unit.end - unit.start <= MAX_UNIT_BYTES:
        from .ranges import read_range

        try:
            if not hasattr(_HELD, "buffer"):
                _HELD.buffer = bytearray()
            data = read_range(unit.path, unit.start, unit.end, unit.identity, _HELD.buffer)
        except FileChangedError as exc:  # not the file the run started on: none of it counts
            return refused_range(unit, _cannot_read(exc, unit.path, unit.source))
        except OSError:  # read line by line: that says where it fails
            data = None
        if data is not None:
            try:
                return _verify_held_range(unit, data, Options(search_cap, require_layer3),
                                          cache)
            finally:
                if isinstance(data, memoryview):
                    data.release()  # (the buffer may grow for the next range)
    return _stream_range(unit, search_cap, require_layer3, cache)


def _verify_held_range(unit: LineRange, data: bytes | memoryview, options: Options,
                       cache: ResultCache) -> UnitResult:
    """A range whose bytes are held: its unit entry, or its lines one by one (then a
    unit entry is kept when none of them named a Layer 3 export by path)."""
    import io

    from .layer3_component import named_reads

    head = source_head(Source(unit.source, "line"))
    key = cache.unit_key(b"lines", [(b"", data)], options)
    held = cache.get_unit(key)
    if held is not None:
        try:
            lines, doc_bytes = int(held[0]), int(held[1])
            verdicts = [attach(row[1:], head, unit.line0 + row[0]) for row in held[2]]
        except (TypeError, ValueError, IndexError, AttributeError):  # not a unit's entry
            cache.damaged_unit()
        else:
            cache.hit_unit(len(verdicts))
            return UnitResult(verdicts, lines, doc_bytes, len(data))
    before = named_reads()
    verdicts = []
    rows: list[tuple[int | None, Verdict, bytes]] = []
    lines = doc_bytes = 0
    reader = JSONLines(io.BytesIO(data), max_line=MAX_DOCUMENT_BYTES, stop_after=len(data))
    for number, line in reader:
        lines = number
        source = Source(unit.source, "line", unit.line0 + number)
        if line is None:
            verdict = invalid(source, too_long(), None, head)
        elif line:
            verdict = verify_one("json", line, source, options.search_cap, head, unit.path,
                                 options.require_layer3, cache)
            doc_bytes += len(line)
        else:
            continue
        verdicts.append(verdict)
        rows.append((number, verdict, head))
    if named_reads() == before:
        cache.put_unit(key, lines, doc_bytes, rows)
    return UnitResult(verdicts, lines, doc_bytes, len(data))


def _stream_range(unit: LineRange, search_cap: int, require_layer3: bool,
                  cache: ResultCache | None) -> UnitResult:
    from .ranges import read_lines

    head = source_head(Source(unit.source, "line"))
    verdicts: list[Verdict] = []
    lines = doc_bytes = 0
    try:
        for number, _, line in read_lines(unit.path, unit.start, unit.end, MAX_DOCUMENT_BYTES,
                                          unit.identity):
            lines = number
            source = Source(unit.source, "line", unit.line0 + number)
            if line is None:
                verdicts.append(invalid(source, too_long(), None, head))
            elif line:
                verdicts.append(verify_one("json", line, source, search_cap, head,
                                           unit.path, require_layer3, cache))
                doc_bytes += len(line)
    except FileChangedError as exc:  # not the file the run started on: none of it counts
        return refused_range(unit, _cannot_read(exc, unit.path, unit.source))
    except OSError as exc:  # the file vanished or could not be read
        source = Source(unit.source, "line", unit.line0 + lines + 1)
        verdicts.append(invalid(source, _cannot_read(exc, unit.path, unit.source), None, head))
    return UnitResult(verdicts, lines, doc_bytes, unit.end - unit.start)


def _verify_json_files(unit: JsonFiles, search_cap: int, require_layer3: bool,
                       cache: ResultCache | None) -> UnitResult:
    verdicts: list[Verdict] = []
    doc_bytes = disk = 0
    for reported, opened, identity in unit.files:
        try:
            items = list(read_json_file(opened, reported, expect=identity))
        except OSError as exc:
            items = [Item("error", _cannot_read(exc, opened, reported).encode(),
                          Source(reported), 0)]
        for item in items:
            verdicts.append(verify_one(item.kind, item.payload, item.source, search_cap,
                                       None, opened, require_layer3, cache))
            if item.kind != "error":
                doc_bytes += len(item.payload)
            disk += item.disk_bytes
    return UnitResult(verdicts, 0, doc_bytes, disk)


def _source_heads(items: tuple[Item, ...]) -> list[bytes]:
    """Every item's ``lines.source_head``, rendered once per file (and key)."""
    heads: dict[tuple[str, str | None], bytes] = {}
    out = []
    for i in items:
        head = heads.get((i.source.file, i.source.key))
        if head is None:
            head = heads[i.source.file, i.source.key] = source_head(i.source)
        out.append(head)
    return out


def _verify_documents(unit: Documents, search_cap: int, require_layer3: bool,
                      cache: ResultCache | None) -> UnitResult:
    doc_bytes = sum(len(i.payload) for i in unit.items if i.kind != "error")
    disk = sum(i.disk_bytes for i in unit.items)
    held = sum(len(i.payload) for i in unit.items) <= MAX_UNIT_BYTES
    if cache is None or not held:
        verdicts = [verify_one(i.kind, i.payload, i.source, search_cap, head,
                               require_layer3=require_layer3, cache=cache)
                    for i, head in zip(unit.items, _source_heads(unit.items))]
        return UnitResult(verdicts, 0, doc_bytes, disk)
    from .layer3_component import named_reads

    options = Options(search_cap, require_layer3)
    heads = [source_head(i.source) for i in unit.items]
    key = cache.unit_key(b"documents", [(i.kind.encode(), i.payload) for i in unit.items],
                         options)
    entry = cache.get_unit(key)
    if entry is not None:
        try:
            rows = entry[2]
            if len(rows) != len(unit.items):
                raise ValueError("not this unit's entry")
            verdicts = [attach(row[1:], src, None if i.source.key is None else i.source.number)
                        for row, src, i in zip(rows, heads, unit.items)]
        except (TypeError, ValueError, IndexError, AttributeError):  # not a unit's entry
            cache.damaged_unit()
        else:
            cache.hit_unit(len(verdicts))
            return UnitResult(verdicts, 0, doc_bytes, disk)
    before = named_reads()
    verdicts = [verify_one(i.kind, i.payload, i.source, search_cap, src,
                           require_layer3=require_layer3, cache=cache)
                for i, src in zip(unit.items, heads)]
    if named_reads() == before:
        cache.put_unit(key, 0, doc_bytes, [(None, v, src) for v, src in zip(verdicts, heads)])
    return UnitResult(verdicts, 0, doc_bytes, disk)


def _verify_whole_object(unit: WholeObject, search_cap: int, require_layer3: bool,
                         cache: ResultCache | None) -> UnitResult:
    verdicts: list[Verdict] = []
    doc_bytes = disk = 0
    for item in iter_items([unit.input]):  # a failure of the object is an "error" item
        verdicts.append(verify_one(item.kind, item.payload, item.source, search_cap,
                                   None, unit.input.path, require_layer3, cache))
        if item.kind != "error":
            doc_bytes += len(item.payload)
        disk += item.disk_bytes
    return UnitResult(verdicts, 0, doc_bytes, disk)


def verify_unit(unit: Unit, search_cap: int, require_layer3: bool = False,
                cache: CacheView | None = None) -> UnitResult:
    """Runs in a worker: the verdicts of one unit, in input order; ``cache`` is the view
    of a result cache (``cache.py``) to look the unit, then every document, up in first
    (the new entries are written when the unit is done)."""
    from .layer3_component import named_reads

    found = None if cache is None else ResultCache(cache)
    before = named_reads()
    if isinstance(unit, LineRange):
        result = _verify_range(unit, search_cap, require_layer3, found)
    elif isinstance(unit, JsonFiles):
        result = _verify_json_files(unit, search_cap, require_layer3, found)
    elif isinstance(unit, WholeObject):
        result = _verify_whole_object(unit, search_cap, require_layer3, found)
    else:
        result = _verify_documents(unit, search_cap, require_layer3, found)
    result = result._replace(named_exports=named_reads() - before)
    if found is not None:
        found.flush()
    if found is None or result.lines == CHANGED:  # a refused range kept no verdict
        return result
    return result._replace(cached=found.hits, cache_corrupt=found.corrupt)


def split(unit: Unit) -> tuple[list[Unit], int]:
    """One unit per Episode of ``unit`` (to find the one that kills its worker), and the
    number of lines a ``LineRange`` held. Runs in the parent; reads a range's lines to
    find their boundaries, parses nothing."""
    from .ranges import read_lines

    if isinstance(unit, Documents):
        return [Documents((item,)) for item in unit.items], 0
    if isinstance(unit, JsonFiles):
        return [JsonFiles((pair,)) for pair in unit.files], 0
    if isinstance(unit, WholeObject):  # the parent reads it: one Documents per Episode
        return [Documents((item,)) for item in iter_items([unit.input])], 0
    singles: list[Unit] = []
    lines = 0
    for number, at, line in read_lines(unit.path, unit.start, unit.end, MAX_DOCUMENT_BYTES,
                                       unit.identity):
        lines = number
        where = Source(unit.source, "line", unit.line0 + number)
        if line is None:
            singles.append(Documents((Item("error", too_long().encode(), where, 0),)))
        elif line:
            singles.append(LineRange(unit.source, unit.path, at, at + len(line),
                                     line0=unit.line0 + number - 1, identity=unit.identity))
    return singles, lines


def lost(unit: Unit, reason: str) -> Verdict:
    """The verdict for a single-Episode unit whose worker died twice."""
    if isinstance(unit, LineRange):
        source = Source(unit.source, "line", unit.line0 + 1)
    elif isinstance(unit, JsonFiles):
        source = Source(unit.files[0][0])
    elif isinstance(unit, WholeObject):
        source = Source(unit.input.path)
    else:
        source = unit.items[0].source
    return invalid(source, reason)
