"""``--cache DIR|URL`` (REVERIFY.md §7): a result cache for incremental re-verification,
in a local directory or under a prefix of object storage (``s3://``, ``gs://``, ``az://``).

An *Episode entry* holds an Episode's report line apart from its source (the serialized
fields on either side of it, ``lines.py``), under a key that is the BLAKE3 of everything
that result depends on: the document's exact bytes (and its kind), the path and bytes of a
Layer 3 export the document names, the verification version and the package version, and
the options that change a result (the search cap, whether Layer 3 is required). The
source is attached again on read, so a document moved or copied elsewhere is found too.

A *block entry* holds the finished report lines of a whole unit of work (``blocks.py``: the
bytes the report gets, the counts, the line base they were rendered at) under the BLAKE3
of the unit's bytes, where they are reported (the file's serialized name and the range's
offsets, or each document's source) and the same versions and options. The client writes
it when the unit's lines are final (it alone knows a range's line base), for a unit none
of whose Episodes names a Layer 3 export by path (such a unit's lines depend on its bytes
alone). A re-run over unchanged files is then one read, one hash and one lookup per unit,
and one write of its lines; a unit that misses (its bytes changed, the file moved, or its
boundaries moved because the corpus grew) is looked up Episode by Episode.

Entries live in segments (``cache_segments.py``): each unit of work that verified
something writes one, atomically, with every Episode entry it made, and the client one
with the block entries of the run (more when they pass ``CLIENT_SEGMENT_BYTES``); a run
lists the segments once when it starts and every process maps (or, in object storage,
fetches the index of) each of them once; an entry is checked on read, and a damaged or
foreign entry is recomputed, written again and counted (``corrupt``), never trusted and
never an error. At the end of a run the client merges the smallest segments when there
are more than ``MAX_SEGMENTS`` (``compact``), dropping damaged entries and segments of
other versions. A cache that cannot be read or written only costs verification, never a
result.
"""
from __future__ import annotations

import mmap
import os
import time
import uuid
from typing import Any, NamedTuple

import orjson
from blake3 import blake3

from .._version import __version__
from ..errors import CacheError
from . import cache_segments as seg
from . import blocks
from .blocks import Block
from .lines import Source, Verdict, source_head
from .worker import VERIFICATION_VERSION, Options

FORMAT = "canonkit-reverify-cache/3"
SEGMENTS = "segments"
_NO_EXPORT = b""
# a Layer 3 export larger than this is not keyed (the document is verified, not cached)
_MAX_EXPORT = 256 * 1024 * 1024
#: a unit of more bytes than this is looked up Episode by Episode (never held whole)
MAX_UNIT_BYTES = 64 * 1024 * 1024
#: the client writes its block entries as a segment whenever they pass this many bytes
CLIENT_SEGMENT_BYTES = 64 * 1024 * 1024
# what an entry's content starts with: the kind of entry
EPISODE_ENTRY = b"E"
BLOCK_ENTRY = b"B"
#: compaction merges the smallest segments when a cache has more than this many ...
MAX_SEGMENTS = 8
#: ... down to this many, merging at most MAX_MERGE_BYTES of segments at a time
KEEP_SEGMENTS = 4
MAX_MERGE_BYTES = 1 << 30
_dumps = orjson.dumps


def tag() -> bytes:
    """What every key of this version is made with: segments of another tag are dead."""
    return blake3(b"%b\0%b\0%d" % (FORMAT.encode(), __version__.encode(),
                                   VERIFICATION_VERSION)).digest()


def open_cache(path: str | os.PathLike[str]) -> str:
    """The cache as an absolute directory (made if missing, with its ``segments``
    directory) or a URL prefix of object storage (a ``/`` is added); ``CacheError`` when
    it is not a directory that can be written, or a URL no entry can be written under.
    Called before any work."""
    name = os.fspath(path)
    from .._files.urls import is_url

    if is_url(name):
        return _open_prefix(name)
    try:
        os.makedirs(os.path.join(name, SEGMENTS), exist_ok=True)
    except OSError as exc:
        raise CacheError(f"{name}: the cache directory cannot be made: "
                         f"{exc.strerror or exc}", detail=name) from None
    inner = os.path.join(name, SEGMENTS)
    if not all(os.path.isdir(d) and os.access(d, os.W_OK | os.X_OK) for d in (name, inner)):
        raise CacheError(f"{name}: not a writable directory", detail=name)
    return os.path.abspath(name)


def _open_prefix(name: str) -> str:
    from .._files.remote import _obstore, storage_prefix

    prefix = storage_prefix(name, what="cache", local="directory", error=CacheError)
    _obstore()  # MissingDependencyError (a usage error) now, not in every worker
    return prefix


def _is_remote(location: str) -> bool:
    from .._files.urls import is_url

    return is_url(location)


class SegmentRef(NamedTuple):
    """One segment as the client listed it: its name and size (and, in object storage,
    the ``ObjectInfo`` its ranges are read by); ``version`` tells one file (inode and
    modification time) or object (ETag) under that name from another: a segment written
    again under its name (after it was damaged) is opened again."""

    name: str
    size: int
    info: Any = None
    version: Any = None


class CacheView(NamedTuple):
    """What a unit of work is sent: the cache's location and the segments a run looks
    entries up in (listed once, when the run starts); ``client_looks_up``: the client
    looks up the blocks of the units it can read (``units.client_looks_up``)."""

    location: str
    segments: tuple[SegmentRef, ...]
    client_looks_up: bool = False


def _listing(location: str) -> list[SegmentRef]:
    if _is_remote(location):
        from .._files import remote

        return [SegmentRef(i.url.rsplit("/", 1)[-1], i.size, i, (i.etag, i.last_modified))
                for i in remote.list_prefix(f"{location}{SEGMENTS}/")
                if i.url.endswith(seg.SUFFIX)]
    refs = []
    with os.scandir(os.path.join(location, SEGMENTS)) as found:
        for entry in found:
            if entry.name.endswith(seg.SUFFIX):
                try:
                    st = entry.stat()
                    refs.append(SegmentRef(entry.name, st.st_size, None,
                                           (st.st_ino, st.st_mtime_ns)))
                except OSError:  # removed meanwhile (compaction)
                    continue
    return refs


def view(location: str, client_looks_up: bool = False) -> CacheView:
    """The cache as a run sees it from now on; a cache that cannot be listed is an empty
    one (verification is never wrong)."""
    try:
        refs = _listing(location)
    except OSError:
        refs = []
    # the largest first: a merged segment holds most entries, so most hits end there
    return CacheView(location, tuple(sorted(refs, key=lambda r: (-r.size, r.name))),
                     client_looks_up)


# --- a worker's open segments ------------------------------------------------------------

class _Open(NamedTuple):
    table: seg.Index
    whole: bool  # values are read from ``index.buf`` (else by ranged GETs)
    ref: SegmentRef


# (location, segment as listed) -> the segment open (None: unusable)
_OPEN: dict[tuple[str, SegmentRef], _Open | None] = {}


def _load(location: str, ref: SegmentRef) -> _Open | None:
    """A segment, mapped (local) or with its header and index fetched (object storage);
    None when it cannot be read or its header does not check (its entries then miss)."""
    try:
        if ref.info is not None:
            from .._files import remote

            head = remote.read_range(ref.info, 0, min(ref.size, seg.HEADER.size))
            span = seg.Index.span(head)
            buf = remote.read_range(ref.info, 0, min(ref.size, span))
            return _Open(seg.Index(buf, ref.size), False, ref)
        with open(os.path.join(location, SEGMENTS, ref.name), "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size == 0:
                return None
            mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        return _Open(seg.Index(memoryview(mapped), size), True, ref)
    except (OSError, ValueError, seg.Damaged):
        return None


def _segments(cache_view: CacheView, current: bytes) -> list[_Open]:
    """This view's segments of the current tag, each opened once per process (until it
    is listed as another file or object); segments no longer listed are forgotten."""
    location = cache_view.location
    wanted = {(location, ref) for ref in cache_view.segments}
    for key in [k for k in _OPEN if k[0] == location and k not in wanted]:
        _OPEN.pop(key, None)  # (a Dask worker's other thread may have dropped it too)
    out = []
    for ref in cache_view.segments:
        key = (location, ref)
        if key not in _OPEN:
            _OPEN[key] = _load(location, ref)
        opened = _OPEN[key]
        if opened is not None and opened.table.tag == current:
            out.append(opened)
    return out


# --- what an entry holds -----------------------------------------------------------------

def _pre(verdict: Verdict) -> bytes:
    return b'{"episode_id":%b,"outcome":%b' % (_dumps(verdict.episode_id),
                                               _dumps(verdict.outcome))


def pieces(verdict: Verdict, src: bytes) -> list[Any] | None:
    """``[pre, tail, outcome, episode_id, order, layer3]``: the verdict without its
    source ``src`` (``lines.source_head``), as JSON; None if it is not of that form."""
    pre = _pre(verdict)
    if verdict.number is None:
        if not verdict.head.startswith(pre + src):
            return None
        tail = verdict.head[len(pre) + len(src):]
    else:
        if verdict.head != pre + src:
            return None
        tail = verdict.tail
    try:
        return [pre.decode(), tail.decode(), verdict.outcome, verdict.episode_id,
                verdict.order, verdict.layer3]
    except UnicodeDecodeError:
        return None


def attach(held: Any, src: bytes, number: int | None) -> Verdict:
    """The verdict of ``held`` (``pieces``) at the source ``src``, ``number``."""
    pre, tail, outcome, episode_id, order, layer3 = held
    if number is None:
        return Verdict(b"%b%b%b" % (pre.encode(), src, tail.encode()), None, b"", outcome,
                       episode_id, order, layer3)
    return Verdict(pre.encode() + src, number, tail.encode(), outcome, episode_id, order,
                   layer3)


def _mentions(data: bytes, word: bytes) -> bool:
    """Whether ``word`` occurs in ``data``: each occurrence of its first byte found by
    ``memchr`` (``find`` of one byte), then compared. ``word in data`` cannot skip ahead
    over hex digests (their digits share its skip filter) and runs at a few hundred MB/s
    on Episodes; this runs at memory speed unless the first byte is everywhere."""
    first = word[:1]
    at = data.find(first)
    while at >= 0:
        if data.startswith(word, at):
            return True
        at = data.find(first, at + 1)
    return False


def _named_export(kind: str, payload: bytes, origin: str | None) -> tuple[str, bytes] | None:
    """The resolved path and bytes of the Layer 3 export the document names (``("",
    b"")`` when it names none); None when that cannot be known here (the document cannot
    be read this way, the export is an object or cannot be read): such a document is
    verified and not cached."""
    if not _mentions(payload, b"layer3") and (kind != "json"
                                               or not _mentions(payload, b"\\u")):
        return "", _NO_EXPORT  # no "layer3" key can be spelled without these bytes
    try:
        if kind == "cbor":
            from .. import cbor

            doc: Any = cbor.decode(payload)
        else:
            doc = orjson.loads(payload)
    except Exception:  # noqa: BLE001 (whatever the document is, it is just not cached)
        return None
    member = doc.get("layer3") if hasattr(doc, "get") else None
    if not isinstance(member, str):
        return "", _NO_EXPORT  # an inline export is part of the document's bytes
    from .layer3_component import note_named_read

    note_named_read()  # a cached result of it depends on a file the journal does not key
    from .._files import read_regular, resolve_within
    from .._files.urls import is_url

    if origin is None or is_url(origin) or not member:
        return None
    try:
        target = resolve_within(os.path.dirname(origin), member)
        return target, read_regular(target, max_bytes=_MAX_EXPORT)
    except (OSError, ValueError):
        return None


def frame(digest: Any, label: bytes, size: int) -> None:
    """Start a chunk of ``size`` bytes labelled ``label`` in a key being made (the chunk's
    bytes follow): every length is in the key, so no two sequences of chunks collide."""
    digest.update(b"%d\0%b%d\0" % (len(label), label, size))


class ResultCache:
    """The cache as one unit of work (or the client) uses it: entries are looked up in
    the run's view and the new ones collected, then written as one segment by ``flush``.
    ``hits`` counts the report lines taken from the cache, ``corrupt`` the entries that
    did not check."""

    def __init__(self, cache_view: CacheView) -> None:
        self.view = cache_view
        self._remote = _is_remote(cache_view.location)
        self._tag = tag()
        self._segments = _segments(cache_view, self._tag)
        self._last = 0  # the segment of the last hit
        self._new: dict[bytes, bytes] = {}
        self._new_bytes = 0
        self._bases: dict[Options, Any] = {}
        self.hits = 0
        self.corrupt = 0

    def _base(self, options: Options) -> Any:
        base = self._bases.get(options)
        if base is None:
            base = self._bases[options] = blake3(b"%b\0%b\0%d\0%d\0%d\0" % (
                FORMAT.encode(), __version__.encode(), VERIFICATION_VERSION,
                options.search_cap, int(options.require_layer3)))
        return base

    # --- keys ---

    def key(self, kind: str, payload: bytes, options: Options, origin: str | None
            ) -> bytes | None:
        """An Episode's key, or None when the document is not to be cached."""
        export = _named_export(kind, payload, origin)
        if export is None:
            return None
        target, data = export
        digest = self._base(options).copy()
        digest.update(b"episode\0%b\0%d\0" % (kind.encode(), len(payload)))
        digest.update(payload)
        name = os.fsencode(target)
        digest.update(b"%d\0%b%d\0" % (len(name), name, len(data)))
        digest.update(data)
        return digest.digest()  # type: ignore[no-any-return]

    def block_digest(self, what: bytes, options: Options) -> Any:
        """The hasher of a block key: ``what`` the unit is and where it is reported
        (``units.block_what``), then its chunks, each ``frame``d, in order."""
        digest = self._base(options).copy()
        frame(digest, b"block", len(what))
        digest.update(what)
        return digest

    # --- lookups ---

    def _value(self, opened: _Open, offset: int, length: int) -> bytes:
        if opened.whole:
            return bytes(opened.table.buf[offset:offset + length])
        from .._files import remote

        return remote.read_range(opened.ref.info, offset, offset + length)

    def _lookup(self, key: bytes, kind: bytes, decode: Any) -> Any:
        """``decode`` of the content filed under ``key`` as an entry of ``kind`` in any
        segment of the view (a copy that checks wins over a damaged one); None, counted
        in ``corrupt`` when only damaged copies were found."""
        damaged = False
        # the segment of the last hit first: neighbouring Episodes were stored together
        for n in range(len(self._segments)):
            at = (self._last + n) % len(self._segments)
            opened = self._segments[at]
            try:
                where = opened.table.find(key)
                if where is None:
                    continue
                content = seg.content_of(key, self._value(opened, *where))
                if not content.startswith(kind):
                    raise seg.Damaged("an entry of another kind")
                value = decode(memoryview(content)[len(kind):])
                self._last = at
                return value
            except (seg.Damaged, ValueError):  # orjson.JSONDecodeError is one
                damaged = True
            except OSError:  # a segment removed (merged) since the run listed it: a miss
                continue
        if damaged:
            self.corrupt += 1
        return None

    def get(self, key: bytes | None, source: Source, src: bytes | None = None
            ) -> Verdict | None:
        """The cached verdict of an Episode at ``source`` (``src`` its source head)."""
        if key is None or not self._segments:
            return None
        held = self._lookup(key, EPISODE_ENTRY, _episode_entry)
        if held is None:
            return None
        try:
            verdict = attach(held, source_head(source) if src is None else src,
                             None if source.key is None else source.number)
        except (TypeError, ValueError, AttributeError):
            self.corrupt += 1
            return None
        self.hits += 1
        return verdict

    def get_block(self, key: bytes) -> Block | None:
        """The block filed under ``key`` (its lines counted in ``hits``), or None."""
        if not self._segments:
            return None
        block: Block | None = self._lookup(key, BLOCK_ENTRY, blocks.decode)
        if block is not None:
            self.hits += block.episodes
        return block

    # --- new entries ---

    def _keep(self, key: bytes, content: bytes) -> None:
        self._new[key] = content
        self._new_bytes += len(content)

    @property
    def pending_bytes(self) -> int:
        """The bytes of the entries ``flush`` would write."""
        return self._new_bytes

    def put(self, key: bytes | None, verdict: Verdict, src: bytes) -> None:
        """Keep an Episode's verdict (at source head ``src``) for ``flush``."""
        if key is None:
            return
        held = pieces(verdict, src)
        if held is not None:
            self._keep(key, EPISODE_ENTRY + _dumps(held))

    def put_block(self, key: bytes, block: Block) -> None:
        """Keep a unit's block for ``flush``."""
        self._keep(key, BLOCK_ENTRY + block.encode())

    def flush(self) -> None:
        """Write the new entries as one segment (nothing when there are none); a cache
        that cannot be written only costs the next run the verification."""
        if not self._new:
            return
        data = seg.encode(self._new, self._tag)
        self._new, self._new_bytes = {}, 0
        try:
            _write(self.view.location, seg.name_of(data), data)
        except OSError:  # ObjectStorageError is one
            pass


def _episode_entry(content: memoryview) -> list[Any]:
    value = orjson.loads(content)
    if not isinstance(value, list) or len(value) != 6:
        raise ValueError("not an Episode entry")
    return value


def _write(location: str, name: str, data: bytes) -> None:
    """One segment, atomically: a PUT in object storage; locally a unique temporary in
    the segments directory, flushed to disk, then renamed into place (a reader sees a
    whole segment or none; a crash leaves at most a temporary, removed by ``compact``)."""
    if _is_remote(location):
        from .._files import remote

        remote.put(f"{location}{SEGMENTS}/{name}", data)
        return
    directory = os.path.join(location, SEGMENTS)
    tmp = os.path.join(directory, f".{name}.{os.getpid()}.{uuid.uuid4().hex}.tmp")
    try:
        with open(tmp, "xb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, os.path.join(directory, name))
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


# --- compaction (the client, at the end of a run) ------------------------------------------

_STALE_TMP = 3600.0  # seconds after which a temporary is a crashed writer's leftover


def _read_whole(location: str, ref: SegmentRef) -> bytes:
    if ref.info is not None:
        from .._files import remote

        return remote.read_object(ref.info, max_bytes=MAX_MERGE_BYTES)
    with open(os.path.join(location, SEGMENTS, ref.name), "rb") as f:
        return f.read(MAX_MERGE_BYTES + 1)


def _remove(location: str, refs: list[SegmentRef]) -> None:
    if _is_remote(location):
        from .._files import remote

        remote.delete_many([ref.info.url for ref in refs])
        return
    for ref in refs:
        try:
            os.unlink(os.path.join(location, SEGMENTS, ref.name))
        except FileNotFoundError:  # another run compacted it meanwhile
            pass


def _sweep_temporaries(location: str) -> None:
    directory = os.path.join(location, SEGMENTS)
    now = time.time()
    with os.scandir(directory) as found:
        for entry in found:
            if entry.name.endswith(".tmp"):
                try:
                    if now - entry.stat().st_mtime > _STALE_TMP:
                        os.unlink(entry.path)
                except OSError:
                    continue


def compact(location: str) -> int:
    """Merge the smallest segments into one when the cache holds more than
    ``MAX_SEGMENTS``, down to ``KEEP_SEGMENTS`` (at most ``MAX_MERGE_BYTES`` of them at a
    time); segments of other versions and damaged entries are dropped. The merged segment
    is written before any input is removed, so an entry is never missing; two runs
    compacting at once remove the same inputs and write (whatever the merge) only whole
    segments. Returns the number of segments removed; a failure leaves the cache as it
    was (and costs nothing but the merge)."""
    try:
        if not _is_remote(location):
            _sweep_temporaries(location)
        refs = sorted(_listing(location), key=lambda r: (r.size, r.name))
        if len(refs) <= MAX_SEGMENTS:
            return 0
        chosen: list[SegmentRef] = []
        total = 0
        for ref in refs[:len(refs) - KEEP_SEGMENTS + 1]:
            if total + ref.size > MAX_MERGE_BYTES:
                break
            chosen.append(ref)
            total += ref.size
        if len(chosen) < 2:
            return 0
        data, _ = seg.merged((_read_whole(location, ref) for ref in chosen), tag())
        name = None if data is None else seg.name_of(data)
        if data is not None and name is not None:
            _write(location, name, data)
        _remove(location, [ref for ref in chosen if ref.name != name])
        return len(chosen)
    except (OSError, ValueError):  # ObjectStorageError, FileTooLargeError: as it was
        return 0


class CacheStats(NamedTuple):
    """What a cache holds: segments, Episode entries, block entries (of this version,
    each key once), entries that do not check, and bytes."""

    segments: int
    episodes: int
    blocks: int
    damaged: int
    bytes: int


def describe(location: str) -> CacheStats:
    """Read every segment of the cache at ``location`` (``open_cache``) through."""
    refs = _listing(location)
    current = tag()
    seen: set[bytes] = set()
    episodes = block_entries = damaged = 0
    for ref in refs:
        data = _read_whole(location, ref)
        try:
            index = seg.Index(data, len(data))
        except seg.Damaged:
            damaged += 1
            continue
        if index.tag != current:
            continue
        for key, offset, length in index.records():
            try:
                content = seg.content_of(key, data[offset:offset + length])
                if content.startswith(BLOCK_ENTRY):
                    blocks.decode(content[len(BLOCK_ENTRY):])
                else:
                    _episode_entry(memoryview(content)[len(EPISODE_ENTRY):])
                    if not content.startswith(EPISODE_ENTRY):
                        raise ValueError("an entry of no known kind")
            except (seg.Damaged, ValueError):
                damaged += 1
                continue
            if key not in seen:
                seen.add(key)
                if content.startswith(BLOCK_ENTRY):
                    block_entries += 1
                else:
                    episodes += 1
    return CacheStats(len(refs), episodes, block_entries, damaged, sum(r.size for r in refs))
