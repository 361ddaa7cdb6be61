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
from .blocks import Block
from .lines import Source, Verdict, invalid, source_head
from .sources import MAX_DOCUMENT_BYTES, Input, Item, iter_items, read_json_file
from .cache import MAX_UNIT_BYTES, CacheView, ResultCache, frame
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
    progress. A unit found whole in the result cache comes back as its ``block`` (and no
    verdicts); a unit whose lines the cache may keep as a block says under which key
    (``block_key``: the unit's bytes as this worker read and verified them)."""

    verdicts: list[Verdict]
    lines: int
    doc_bytes: int
    disk_bytes: int
    cached: int = 0  # verdicts taken from the result cache
    cache_corrupt: int = 0  # cache entries that did not check (recomputed)
    named_exports: int = 0  # Layer 3 exports named by path that were read (journal.py)
    block: Block | None = None
    block_key: bytes | None = None

    @property
    def episodes(self) -> int:
        return len(self.verdicts) if self.block is None else self.block.episodes


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


# --- block keys: what a unit is, where it is reported, and its bytes -------------------

def range_what(unit: LineRange) -> bytes:
    """A byte range as its block key names it: the file's name as the report spells it,
    and the range's offsets."""
    return b"lines\0%b\0%d\0%d" % (source_head(Source(unit.source, "line")), unit.start,
                                      unit.end)


def items_key(cache: ResultCache, what: bytes, items: list[Item], options: Options,
              heads: list[bytes] | None = None) -> bytes:
    """The block key of documents: each one's kind, source and bytes (``heads``: their
    ``_source_heads``, when the caller has them already)."""
    digest = cache.block_digest(what, options)
    for item, head in zip(items, _source_heads(items) if heads is None else heads):
        number = b"" if item.source.key is None else b"%d" % item.source.number
        frame(digest, b"%b\0%b%b" % (item.kind.encode(), head, number), len(item.payload))
        digest.update(item.payload)
    return digest.digest()  # type: ignore[no-any-return]


def _held_block(block: Block | None, unit: LineRange | None, disk: int) -> Block | None:
    """A block found for a unit, unless it cannot be the unit's: its extent is not the
    unit's, or it has more Episode lines than the range has lines."""
    if block is None or block.disk_bytes != disk:
        return None
    if unit is not None and block.lines < block.episodes:
        return None
    return block


def _found(cache: ResultCache, key: bytes, unit: LineRange | None, disk: int,
           look: bool = True) -> UnitResult | None:
    """The unit as the block filed under ``key`` (None: a miss; nothing is looked up
    unless ``look``: the client looked it up already)."""
    if not look:
        return None
    block = cache.get_block(key)
    held = _held_block(block, unit, disk)
    if block is not None and held is None:  # filed under this key, yet not this unit's
        cache.hits -= block.episodes
        cache.corrupt += 1
    if held is None:
        return None
    return UnitResult([], held.lines, held.doc_bytes, held.disk_bytes, held.episodes,
                      block=held)


def client_looks_up(unit: Unit) -> bool:
    """Whether the client looks the unit's block up itself, before any worker is asked
    (``cached_block``): a unit of local files, or documents it read. Objects of object
    storage are read by workers only (corpus bytes never pass through the client)."""
    if isinstance(unit, LineRange):
        return unit.end - unit.start <= MAX_UNIT_BYTES and _local(unit.identity)
    if isinstance(unit, JsonFiles):
        return all(_local(identity) for _, _, identity in unit.files)
    return isinstance(unit, Documents) and _holdable(unit.items)


def cached_block(unit: Unit, cache: ResultCache, options: Options,
                 buffer: bytearray) -> UnitResult | None:
    """The client's look-up of a unit it looks up (``client_looks_up``): the unit as its
    block, or None. Reads and hashes the unit's bytes (a range through ``buffer``, a
    small block at a time) and parses nothing; a worker that verifies a unit that missed
    keys it again on its own reading (the bytes it verified)."""
    if not client_looks_up(unit):
        return None
    if isinstance(unit, LineRange):
        from .ranges import hash_range

        digest = cache.block_digest(range_what(unit), options)
        frame(digest, b"", unit.end - unit.start)
        try:
            hash_range(unit.path, unit.start, unit.end, unit.identity, digest, buffer)
        except OSError:  # the worker reads it, and says what is wrong
            return None
        return _found(cache, digest.digest(), unit, unit.end - unit.start)
    if isinstance(unit, JsonFiles):
        items = _json_items(unit)
        if not _holdable(items):
            return None
        disk = sum(i.disk_bytes for i in items)
        return _found(cache, items_key(cache, b"json", items, options), None, disk)
    assert isinstance(unit, Documents)
    disk = sum(i.disk_bytes for i in unit.items)
    return _found(cache, items_key(cache, b"documents", list(unit.items), options), None,
                  disk)


def _worker_looks_up(cache: ResultCache, unit: Unit) -> bool:
    """Whether a worker looks the unit's block up: not when the client did."""
    return not (cache.view.client_looks_up and client_looks_up(unit))


def _local(identity: Expect) -> bool:
    from .._files import Identity

    return identity is None or isinstance(identity, Identity)


def _holdable(items: tuple[Item, ...] | list[Item]) -> bool:
    return sum(len(i.payload) for i in items) <= MAX_UNIT_BYTES


# --- verifying a unit (a worker) --------------------------------------------------------

def _verify_range(unit: LineRange, search_cap: int, require_layer3: bool,
                  cache: ResultCache | None) -> UnitResult:
    """With a cache, a range short enough to hold is read whole and looked up as a block
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
    """A range whose bytes are held: its block, or its lines one by one (each looked up
    in the cache by its own bytes)."""
    import io

    digest = cache.block_digest(range_what(unit), options)
    frame(digest, b"", len(data))
    digest.update(data)
    key = digest.digest()
    found = _found(cache, key, unit, len(data), _worker_looks_up(cache, unit))
    if found is not None:
        return found
    head = source_head(Source(unit.source, "line"))
    verdicts = []
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
    return UnitResult(verdicts, lines, doc_bytes, len(data), block_key=key)


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


def _json_items(unit: JsonFiles, origins: list[str | None] | None = None) -> list[Item]:
    """The documents of a group of ``.json`` files (an unreadable one as an ``error``
    item), and in ``origins`` the name each was opened by."""
    items: list[Item] = []
    for reported, opened, identity in unit.files:
        try:
            items.extend(read_json_file(opened, reported, expect=identity))
        except OSError as exc:
            items.append(Item("error", _cannot_read(exc, opened, reported).encode(),
                              Source(reported), 0))
        if origins is not None:
            origins.extend([opened] * (len(items) - len(origins)))
    return items


def _verify_json_files(unit: JsonFiles, search_cap: int, require_layer3: bool,
                       cache: ResultCache | None) -> UnitResult:
    origins: list[str | None] = []
    items = _json_items(unit, origins)
    return _verify_items(b"json", items, origins, search_cap, require_layer3, cache,
                         unit)


def _source_heads(items: list[Item]) -> list[bytes]:
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
    return _verify_items(b"documents", list(unit.items), [None] * len(unit.items),
                         search_cap, require_layer3, cache, unit)


def _verify_items(what: bytes, items: list[Item], origins: list[str | None], search_cap: int,
                  require_layer3: bool, cache: ResultCache | None, unit: Unit) -> UnitResult:
    """Documents (of a group of ``.json`` files opened at ``origins``, or read by the
    client): their block, or each one looked up and verified."""
    doc_bytes = sum(len(i.payload) for i in items if i.kind != "error")
    disk = sum(i.disk_bytes for i in items)
    key = None
    heads = _source_heads(items)
    if cache is not None and _holdable(items):
        options = Options(search_cap, require_layer3)
        key = items_key(cache, what, items, options, heads)
        found = _found(cache, key, None, disk, _worker_looks_up(cache, unit))
        if found is not None:
            return found
    verdicts = [verify_one(i.kind, i.payload, i.source, search_cap, head, origin,
                           require_layer3, cache)
                for i, origin, head in zip(items, origins, heads)]
    return UnitResult(verdicts, 0, doc_bytes, disk, block_key=key)


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
    of a result cache (``cache.py``) to look the unit up in first as a block, then every
    document (the new Episode entries are written when the unit is done; its block, by
    the client, which knows its line base). A unit holding an Episode that names a Layer
    3 export by path gets no block key (its lines depend on more than its bytes)."""
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
    named = named_reads() - before
    result = result._replace(named_exports=named)
    if found is not None:
        found.flush()
    if found is None or result.lines == CHANGED:  # a refused range kept no verdict
        return result
    return result._replace(cached=found.hits, cache_corrupt=found.corrupt,
                           block_key=None if named else result.block_key)


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
