"""Reading an Episode document: ``astp-proof-of-record/1`` (ASTP.md §17) and
``canonkit-episode/1`` (docs/astp.md "canonkit-episode/1 layout").

``read_episode(document)`` turns either format into one ``Episode`` model; anything that
cannot be read as an Episode raises ``InvalidRecordError`` whose message starts with the
JSON path of the offending value (``segments[3].content_hash: ...``). Seal-level refusals
that the protocol reports as ``not_reproducible`` (unknown identifiers, malformed sealed
digests, ``sealed_at < closed_at``, ...) are NOT raised here: the raw seal values are kept
and ``reproduce`` judges them.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from canonkit._instant import INSTANT_FORM
from canonkit.astp._live import reader, scanner
from canonkit.astp.encoding import hash_hex, is_uuid_text, uuid_text
from canonkit.astp.structural import member_hash
from canonkit.errors import ASTPError, InvalidFieldError, InvalidRecordError

__all__ = [
    "EPISODE_FORMAT",
    "PROOF_OF_RECORD",
    "SEAL_KEYS",
    "Episode",
    "Seal",
    "Segment",
    "SegmentList",
    "Signal",
    "episode_from_scan",
    "parse_instant",
    "read_episode",
    "read_episode_bytes",
]

PROOF_OF_RECORD = "astp-proof-of-record/1"
EPISODE_FORMAT = "canonkit-episode/1"
SEAL_KEYS = ("spine_algorithm_version", "ordering_version", "hash_version", "sealed_at", "closed_at",
             "spine_root", "signal_manifest_hash", "exclusion_hash", "structural_manifest_hash",
             "context_manifest_hash", "capture_posture", "context_entry_count", "episode_root_hash",
             "leaf_count")
_ABSENT = object()


@dataclass(slots=True)
class Segment:
    """A stored Segment. ``content_hash`` is lowercase hex; the leaf-hash fields are None when
    the document does not carry them (a sav 0/1 proof of record)."""
    sequence_index: int
    content_hash: str
    node_id: str | None = None
    node_type: str = "segment"
    schema_version: str | None = None
    parent_node_id: str | None = None
    retention_tier: str | None = None
    created_at: datetime | None = None
    hash_version: int | None = None
    leaf_hash: str | None = None

    @property
    def has_leaf_fields(self) -> bool:
        return self.node_id is not None and self.schema_version is not None


class SegmentList(list[Segment]):
    """Stored segments as ``Segment`` values, in sequence order, with the raw views the
    seal constructions fold (the compiled document scanner gives a table with the same
    methods, without a Python object per segment)."""

    def content_raw(self) -> bytes:
        """The content hashes, 32 raw bytes each."""
        return b"".join(bytes.fromhex(s.content_hash) for s in self)

    def content_hex(self) -> list[str]:
        return [s.content_hash for s in self]

    def spine_keys(self) -> tuple[set[str | None], set[str | None]]:
        """``(ids, hashes)``: every segment's ``node_id`` and ``parent_node_id``, and its
        ``content_hash`` and ``leaf_hash`` (None where absent) — what Layer 3 nodes must not
        reuse (L3-001)."""
        ids: set[str | None] = set()
        hashes: set[str | None] = set()
        for s in self:
            ids.add(s.node_id)
            ids.add(s.parent_node_id)
            hashes.add(s.content_hash)
            hashes.add(s.leaf_hash)
        return ids, hashes

    def spine_hits(self, ids: Iterable[Any], hashes: Iterable[Any]
                   ) -> tuple[set[Any], set[Any]]:
        """``(ids found, hashes found)``: the texts of ``ids`` among the segments'
        ``node_id`` and ``parent_node_id``, and of ``hashes`` among their ``content_hash``
        and ``leaf_hash`` (``spine_keys``) — what Layer 3 asks of an Episode (L3-001)."""
        spine_ids, spine_hashes = self.spine_keys()
        return ({x for x in ids if type(x) is str and x in spine_ids},
                {x for x in hashes if type(x) is str and x in spine_hashes})

    def leaves_v2_raw(self, sav: int) -> bytes:
        """The ``hash_version`` 2 leaf hashes (ASTP.md §4.1), 32 raw bytes each."""
        out = []
        for s in self:
            if not s.has_leaf_fields:
                raise InvalidFieldError(f"segment {s.sequence_index} lacks the leaf-hash fields sav {sav} needs")
            out.append(bytes.fromhex(reader.leaf_hash_v2(s.node_id, s.node_type, s.schema_version,
                                                          s.sequence_index, s.content_hash,
                                                          s.parent_node_id)))
        return b"".join(out)

    @property
    def stored_leaf_hashes(self) -> bool:
        """Whether any segment carries a stored ``leaf_hash`` to check."""
        return any(s.leaf_hash is not None for s in self)


#: what ``Episode.segments`` holds: a ``SegmentList`` or the compiled scanner's table
Segments = Sequence[Segment]


@dataclass(slots=True)
class Signal:
    """A stored SPINE-placed Signal; ``received_at`` None when the document has no timestamp."""
    content_hash: str
    received_at: datetime | None = None


@dataclass(frozen=True)
class Seal:
    """The seal record's values exactly as written (``None`` for absent or null)."""
    values: Mapping[str, Any]
    resolved_signal_order: Any = None

    def get(self, key: str) -> Any:
        return self.values.get(key)


@dataclass(frozen=True)
class Episode:
    format: str
    episode_id: str
    profile: str = "full"
    status: str | None = None
    closed_at: datetime | None = None
    sealed_at: datetime | None = None
    segments: Segments = field(default_factory=SegmentList)      # spine segments, sequence order
    signals: list[Signal] = field(default_factory=list)          # SPINE signals, stored order
    excluded_hashes: list[str] = field(default_factory=list)
    structural_member_hashes: list[str] = field(default_factory=list)
    context_entries: list[Mapping[str, Any]] = field(default_factory=list)
    seal: Seal | None = None
    flags: frozenset[str] = frozenset()
    #: the document's ``layer3`` member as written (a ``canonkit-layer3/1`` export, or the
    #: name of a file beside the document holding one), None when absent; Layer 3 never
    #: enters the Episode's own constructions (L3-002)
    layer3: Any = None


#: a JSON path: text, or (list name, index, key or None), formatted only on failure
Path = str | tuple[str, int, str | None]


def _where(path: Path) -> str:
    if isinstance(path, tuple):
        name, index, key = path
        return f"{name}[{index}].{key}" if key else f"{name}[{index}]"
    return path


def _fail(path: Path, message: str) -> InvalidRecordError:
    where = _where(path)
    return InvalidRecordError(f"{where}: {message}", detail=where)


def _get(obj: Mapping[str, Any], key: str, path: Path, *, required: bool = True) -> Any:
    if key not in obj:
        if required:
            base = _where(path)
            raise _fail(f"{base}.{key}" if base else key, "missing")
        return _ABSENT
    return obj[key]


def _obj(value: Any, path: Path) -> Mapping[str, Any]:
    if type(value) is not dict and not isinstance(value, Mapping):
        raise _fail(path, f"expected an object, got {type(value).__name__}")
    return value


def _list(value: Any, path: Path) -> list[Any]:
    if not isinstance(value, list):
        raise _fail(path, f"expected a list, got {type(value).__name__}")
    return value


def _digest(value: Any, path: Path) -> str:
    if not isinstance(value, str):
        raise _fail(path, f"expected a 64-hex-character digest, got {type(value).__name__}")
    try:
        return hash_hex(value)
    except ASTPError:
        raise _fail(path, f"not a 64-hex-character digest: {value[:80]!r}") from None


def _int(value: Any, path: Path) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _fail(path, f"expected a non-negative integer, got {value!r}")
    return value


def _text(value: Any, path: Path, *, nullable: bool = False) -> str | None:
    if value is None and nullable:
        return None
    if not isinstance(value, str):
        raise _fail(path, f"expected text, got {type(value).__name__}")
    return value


def _uuid(value: Any, path: Path, *, nullable: bool = False) -> str | None:
    if value is None and nullable:
        return None
    if not isinstance(value, str):
        raise _fail(path, f"expected UUID text, got {type(value).__name__}")
    try:
        return uuid_text(value)
    except ASTPError:
        raise _fail(path, f"not a UUID: {value[:80]!r}") from None


def parse_instant(value: Any, path: Path) -> datetime | None:
    """An instant with offset (canonkit._instant's rule), or None for null/absent; naive
    instants refused."""
    if value is None or value is _ABSENT:
        return None
    if not isinstance(value, str):
        raise _fail(path, f"expected ISO 8601 text, got {type(value).__name__}")
    try:
        instant = scanner.read_instant(value)
    except ValueError:
        raise _fail(path, f"not an ISO 8601 instant ({INSTANT_FORM}): {value[:80]!r}") from None
    if instant.tzinfo is None:
        raise _fail(path, f"instant has no UTC offset: {value!r}")
    return instant


def _episode_id(doc: Mapping[str, Any]) -> str:
    """The identifier in canonical form: a UUID lowercased (ASTP.md §5.2), other text as stored."""
    value = _get(doc, "episode_id", "")
    if not isinstance(value, str) or not value:
        raise _fail("episode_id", "expected non-empty text")
    return value.lower() if is_uuid_text(value) else value


def _seal(raw: Any, path: str, annotation: Any) -> Seal:
    seal = _obj(raw, path)
    values = {key: seal.get(key) for key in SEAL_KEYS}
    return Seal(values, annotation)


def _sort_segments(segments: list[Segment], path: str) -> SegmentList:
    indexes = [s.sequence_index for s in segments]
    if all(map(int.__lt__, indexes, indexes[1:])):
        return SegmentList(segments)  # strictly ascending: distinct and in order (the common case)
    seen: set[int] = set()
    for s in segments:
        if s.sequence_index in seen:
            raise _fail(path, f"duplicate sequence_index {s.sequence_index}")
        seen.add(s.sequence_index)
    return SegmentList(sorted(segments, key=lambda s: s.sequence_index))


def _leaf_fields(item: Mapping[str, Any], name: str, i: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if "node_id" in item:
        out["node_id"] = _uuid(item["node_id"], (name, i, "node_id"))
    if "node_type" in item:
        out["node_type"] = _text(item["node_type"], (name, i, "node_type"))
    if "schema_version" in item:
        out["schema_version"] = _text(item["schema_version"], (name, i, "schema_version"))
    if "parent_node_id" in item:
        out["parent_node_id"] = _uuid(item["parent_node_id"], (name, i, "parent_node_id"), nullable=True)
    return out


#: what the compiled scanner hands over instead of the stored segments and signals: the
#: segments (in sequence order), the content hashes of EPHEMERAL segments, the latest
#: created_at (UTC microseconds since 1970, or None), and the signals when it read them:
#: (SPINE signals in stored order, latest received_at, whether a SPINE hash repeats)
Scanned = tuple[Segments, list[str], "int | None", "tuple[list[Signal], int | None, bool] | None"]
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MICROSECOND = timedelta(microseconds=1)


def _read_por_segments(stored: Mapping[str, Any], excluded: list[str]) -> SegmentList:
    segments: list[Segment] = []
    items = _list(_get(stored, "segments", "stored"), "stored.segments")
    i = 0
    while i < len(items):
        # the kernel reads the run of canonical items; the first other one is judged here
        i, _ = reader.read_segments(items, i, Segment, segments, excluded, proof_of_record=True)
        if i == len(items):
            break
        p = f"stored.segments[{i}]"
        item = _obj(items[i], p)
        key = "sequence_index" if "sequence_index" in item else "leaf_index"
        index = _int(_get(item, key, p), ("stored.segments", i, key))
        content = _digest(_get(item, "content_hash", p), ("stored.segments", i, "content_hash"))
        segments.append(Segment(sequence_index=index, content_hash=content,
                                **_leaf_fields(item, "stored.segments", i)))
        i += 1
    return _sort_segments(segments, "stored.segments")


def _read_proof_of_record(doc: Mapping[str, Any], scanned: Scanned | None = None) -> Episode:
    profile = _get(doc, "profile", "")
    if profile not in ("full", "attested"):
        raise _fail("profile", f"expected 'full' or 'attested', got {profile!r}")
    episode_id = _episode_id(doc)
    stored = doc.get("stored")
    annotation = None
    segments: Segments = SegmentList()
    signals: list[Signal] = []
    excluded: list[str] = []
    members: list[str] = []
    entries: list[Mapping[str, Any]] = []
    if profile == "full":
        stored = _obj(stored, "stored")
        if scanned is not None:
            segments, excluded = scanned[0], list(scanned[1])
        else:
            segments = _read_por_segments(stored, excluded)
        for name, target in (("signal_content_hashes", None), ("excluded_content_hashes", excluded),
                             ("structural_member_hashes", members)):
            value = stored.get(name)
            values = [] if value is None else _list(value, f"stored.{name}")
            hexes = [_digest(v, f"stored.{name}[{i}]") for i, v in enumerate(values)]
            if target is None:
                signals = [Signal(h) for h in hexes]
            else:
                target.extend(hexes)
        ctx = stored.get("context_entries")
        entries = [] if ctx is None else [_obj(e, f"stored.context_entries[{i}]")
                                          for i, e in enumerate(_list(ctx, "stored.context_entries"))]
        annotation = stored.get("resolved_signal_order")
    seal = _seal(_get(doc, "seal", ""), "seal", annotation)
    return Episode(format=PROOF_OF_RECORD, episode_id=episode_id, profile=profile,
                   closed_at=parse_instant(seal.get("closed_at"), "seal.closed_at"),
                   sealed_at=parse_instant(seal.get("sealed_at"), "seal.sealed_at"),
                   segments=segments, signals=signals, excluded_hashes=excluded,
                   structural_member_hashes=members, context_entries=entries, seal=seal,
                   flags=frozenset({"duplicate_signal"} if len({s.content_hash for s in signals}) < len(signals)
                                   else set()), layer3=doc.get("layer3"))


def _read_episode_segments(doc: Mapping[str, Any], closed_at: datetime | None,
                           excluded: list[str], flags: set[str]) -> SegmentList:
    segments: list[Segment] = []
    items = _list(_get(doc, "segments", ""), "segments")
    i = -1
    while i + 1 < len(items):
        # the kernel reads the run of canonical items; the first other one is judged here
        i, late = reader.read_segments(items, i + 1, Segment, segments, excluded, closed_at=closed_at)
        if late:
            flags.add("post_closure_append")
        if i == len(items):
            break
        p = ("segments", i, None)
        item = _obj(items[i], p)
        tier = _text(item.get("retention_tier"), (p[0], i, "retention_tier"), nullable=True)
        content = _digest(_get(item, "content_hash", p), (p[0], i, "content_hash"))
        created_at = parse_instant(item.get("created_at"), (p[0], i, "created_at"))
        if closed_at is not None and created_at is not None and created_at > closed_at:
            flags.add("post_closure_append")
        if tier == "EPHEMERAL":
            excluded.append(content)
            continue
        hv = item.get("hash_version")
        if hv is not None:
            hv = _int(hv, (p[0], i, "hash_version"))
        leaf = item.get("leaf_hash")
        segment = Segment(
            sequence_index=_int(_get(item, "sequence_index", p), (p[0], i, "sequence_index")),
            content_hash=content, retention_tier=tier,
            created_at=created_at,
            hash_version=hv, leaf_hash=None if leaf is None else _digest(leaf, (p[0], i, "leaf_hash")),
            **_leaf_fields(item, "segments", i))
        segments.append(segment)
    return _sort_segments(segments, "segments")


def _after(latest_us: int | None, closed_at: datetime | None) -> bool:
    """Whether an instant given in UTC microseconds is later than ``closed_at``."""
    return (closed_at is not None and latest_us is not None
            and latest_us > (closed_at - _EPOCH) // _MICROSECOND)


def _read_signals(doc: Mapping[str, Any], closed_at: datetime | None, flags: set[str]) -> list[Signal]:
    raw_signals = doc.get("signals")
    spine: list[tuple[int, Signal]] = []
    for i, item in enumerate([] if raw_signals is None else _list(raw_signals, "signals")):
        p = ("signals", i, None)
        item = _obj(item, p)
        placement = _text(_get(item, "placement", p), (p[0], i, "placement"))
        content = _digest(_get(item, "content_hash", p), (p[0], i, "content_hash"))
        received = parse_instant(item.get("received_at"), (p[0], i, "received_at"))
        if placement == "SPINE":
            spine.append((i, Signal(content, received)))
        if closed_at is not None and received is not None and received > closed_at:
            flags.add("post_closure_append")
    if spine and all(s.received_at is not None for _, s in spine):
        # stored (arrival) order: received_at ascending, document order among equal instants
        spine.sort(key=lambda pair: (pair[1].received_at, pair[0]))
    signals = [s for _, s in spine]
    if len({s.content_hash for s in signals}) < len(signals):
        flags.add("duplicate_signal")
    return signals


def _read_episode_doc(doc: Mapping[str, Any], scanned: Scanned | None = None) -> Episode:
    episode_id = _episode_id(doc)
    status = _text(doc.get("status"), "status", nullable=True)
    closed_at = parse_instant(doc.get("closed_at"), "closed_at")
    sealed_at = parse_instant(doc.get("sealed_at"), "sealed_at")
    raw_seal = _get(doc, "seal", "")
    if closed_at is None and isinstance(raw_seal, Mapping):
        # the closure instant for G-1 findings: the Episode's, else the one its seal recorded
        closed_at = parse_instant(raw_seal.get("closed_at"), "seal.closed_at")
    excluded: list[str] = []
    flags: set[str] = set()
    segments: Segments
    if scanned is None:
        segments = _read_episode_segments(doc, closed_at, excluded, flags)
    else:
        segments, excluded = scanned[0], list(scanned[1])
        if _after(scanned[2], closed_at):
            flags.add("post_closure_append")
    if scanned is not None and scanned[3] is not None:
        signals, latest, repeated = scanned[3]
        if _after(latest, closed_at):
            flags.add("post_closure_append")
        if repeated:
            flags.add("duplicate_signal")
    else:
        signals = _read_signals(doc, closed_at, flags)
    members: list[str] = []
    raw_members = doc.get("structural_members")
    for i, item in enumerate([] if raw_members is None else _list(raw_members, "structural_members")):
        p = ("structural_members", i, None)
        item = _obj(item, p)
        if "type" in item:
            type_name = _text(item["type"], (p[0], i, "type"))
            try:
                h = member_hash(type_name, item)  # type: ignore[arg-type]
            except ASTPError as exc:
                raise _fail(p, str(exc)) from None
            if h is not None:
                members.append(h)
        else:
            members.append(_digest(_get(item, "hash", p), (p[0], i, "hash")))
    raw_entries = doc.get("context_entries")
    entries = [] if raw_entries is None else [_obj(e, f"context_entries[{i}]")
                                              for i, e in enumerate(_list(raw_entries, "context_entries"))]
    seal = None
    if raw_seal is not None:
        seal_obj = _obj(raw_seal, "seal")
        seal = _seal(seal_obj, "seal", seal_obj.get("resolved_signal_order"))
    return Episode(format=EPISODE_FORMAT, episode_id=episode_id, status=status, closed_at=closed_at,
                   sealed_at=sealed_at, segments=segments, signals=signals, excluded_hashes=excluded,
                   structural_member_hashes=members, context_entries=entries, seal=seal,
                   flags=frozenset(flags), layer3=doc.get("layer3"))


def read_episode_bytes(data: bytes) -> Episode | None:
    """Read an Episode document from its JSON text on the fast path (the compiled scanner:
    no Python object per stored segment); None when the text is outside that path — then
    ``read_episode(canonkit._files.loads_json(data))`` (the strict reader) reads it, with
    the same result for every document this one reads. Raises ``InvalidRecordError`` exactly as ``read_episode`` would."""
    return episode_from_scan(scanner.scan_episode(data, Segment, Signal))


def episode_from_scan(scanned: Any) -> Episode | None:
    """The Episode of a document as the scanner kernel read it (what ``scan_episode`` gives:
    ``read_episode_bytes`` without the scan); None for None."""
    if scanned is None:
        return None
    doc, segments, excluded, latest, signals = scanned
    if type(segments) is list:  # the twin's scanner gives Segment values
        segments = SegmentList(segments)
    if doc.get("format") == PROOF_OF_RECORD:
        return _read_proof_of_record(doc, (segments, excluded, latest, None))
    return _read_episode_doc(doc, (segments, excluded, latest, signals))


def read_episode(document: Any) -> Episode:
    """Read a parsed JSON document (a dict) in either format as an ``Episode`` (an
    ``Episode`` is returned as it is)."""
    if isinstance(document, Episode):
        return document
    doc = _obj(document, "$")
    fmt = doc.get("format")
    if fmt == PROOF_OF_RECORD:
        return _read_proof_of_record(doc)
    if fmt == EPISODE_FORMAT:
        return _read_episode_doc(doc)
    raise _fail("format", f"expected {PROOF_OF_RECORD!r} or {EPISODE_FORMAT!r}, got {fmt!r}")
