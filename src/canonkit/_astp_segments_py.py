"""ASTP document-reader kernel, pure-Python twin (the reference oracle of
``canonkit._astp_segments``): ``read_segments``, the Episode reader's fast path over a
document's stored segments, and the leaf hashes of ASTP.md §4.
See docs/astp-kernel-api.md; the differential tests hold the two to it.
"""
from __future__ import annotations

import re
import struct
from datetime import datetime, timedelta, timezone
from typing import Any

from canonkit._astp_common import U64, uuid_bytes
from canonkit._astp_fields_py import hash_fields
from canonkit._astp_hash_py import hash_bytes, sha3_256
from canonkit._files.strict_json import loads_json
from canonkit._instant import instant_from_text
from canonkit.errors import InvalidFieldError, JSONInputError

__all__ = ["leaf_hash_v1", "leaf_hash_v2", "plain_json", "read_segments", "scan_episode"]


# --- §4 leaf hashes ----------------------------------------------------------------------

def leaf_hash_v2(node_id: Any, node_type: Any, schema_version: Any, sequence_index: Any,
                 content_hash: Any, parent_node_id: Any) -> str:
    """``hash_version`` 2 leaf hash (ASTP.md §4.1) as hex; ``parent_node_id`` None -> NULL."""
    return hash_fields(b"LEAF_HASH:v2:", (
        ("UUID", node_id), ("STRING", node_type), ("STRING", schema_version),
        ("UINT", sequence_index), ("HASH", content_hash), ("UUID|NULL", parent_node_id),
    )).hex()


def _raw_text(value: Any, what: str) -> bytes:
    if not isinstance(value, str):
        raise InvalidFieldError(f"{what} needs text, got {type(value).__name__}")
    try:
        data = value.encode("utf-8")  # v1: no NFC
    except UnicodeEncodeError as exc:
        raise InvalidFieldError(f"{what} is not encodable as UTF-8: {exc.reason}") from None
    return struct.pack(">I", len(data)) + data


def leaf_hash_v1(node_id: Any, node_type: Any, schema_version: Any, sequence_index: Any,
                 content_hash: Any, parent_node_id: Any, sealed_at_ms: int = 0) -> str:
    """``hash_version`` 1 leaf hash (ASTP.md §4.2) as hex: raw concatenation, no tags, no NFC;
    absent parent -> 16 zero bytes; ``sealed_at_ms`` 0 for the unsealed (verifier) value."""
    for name, n in (("sequence_index", sequence_index), ("sealed_at_ms", sealed_at_ms)):
        if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n < U64:
            raise InvalidFieldError(f"{name} must be an integer in [0, 2^64), got {n!r}")
    parent = b"\x00" * 16 if parent_node_id is None else uuid_bytes(parent_node_id)
    preimage = (uuid_bytes(node_id) + _raw_text(node_type, "node_type")
                + _raw_text(schema_version, "schema_version") + struct.pack(">Q", sequence_index)
                + hash_bytes(content_hash) + struct.pack(">Q", sealed_at_ms) + parent)
    return sha3_256(preimage).hex()


# --- Episode segments: the document reader's fast path ---------------------------------

_HEX64 = re.compile(r"[0-9a-fA-F]{64}")
_UUID36 = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_NO: Any = object()  # "not in the canonical shape": the caller's reader decides


def _seg_hex(value: Any) -> Any:
    if type(value) is str and len(value) == 64 and _HEX64.fullmatch(value):
        return value.lower()
    return _NO


def _seg_uuid(value: Any) -> Any:
    if type(value) is str and len(value) == 36 and _UUID36.fullmatch(value):
        return value.lower()
    return _NO


def _seg_uint(value: Any) -> Any:
    return value if type(value) is int and value >= 0 else _NO


def _seg_instant(value: Any) -> Any:
    if value is None:
        return None
    if type(value) is not str:
        return _NO
    try:
        instant = instant_from_text(value)
    except ValueError:
        return _NO
    return _NO if instant.tzinfo is None else instant


def _seg_leaf_fields(item: dict[str, Any]) -> Any:
    """(node_id, node_type, schema_version, parent_node_id) with the reader's defaults."""
    node_id = _seg_uuid(item["node_id"]) if "node_id" in item else None
    node_type = item.get("node_type", "segment")
    schema = item.get("schema_version")
    if "schema_version" in item and type(schema) is not str:
        return _NO
    parent = item.get("parent_node_id")
    if parent is not None:
        parent = _seg_uuid(parent)
    if node_id is _NO or type(node_type) is not str or parent is _NO:
        return _NO
    return node_id, node_type, schema, parent


def read_segments(items: Any, start: int, segment_type: Any, segments: list[Any], excluded: list[str],
                  *, closed_at: datetime | None = None, proof_of_record: bool = False) -> tuple[int, bool]:
    """Read ``items[start:]`` (the stored segments of an Episode document) while each item is
    in the canonical shape, appending ``segment_type(...)`` to ``segments`` (content hashes
    of EPHEMERAL segments to ``excluded``); return ``(stop, late)``: the index of the first
    item not read (``len(items)`` when all were) and whether a read item was created after
    ``closed_at``. See docs/astp-kernel-api.md for the canonical shape."""
    late = False
    if type(items) is not list:
        return start, late
    for stop in range(start, len(items)):
        item = items[stop]
        if type(item) is not dict:
            return stop, late
        if proof_of_record:
            index = _seg_uint(item.get("sequence_index" if "sequence_index" in item else "leaf_index", _NO))
            content = _seg_hex(item.get("content_hash", _NO))
            tier = created = hv = leaf = None
        else:
            tier = item.get("retention_tier")
            content = _seg_hex(item.get("content_hash", _NO))
            created = _seg_instant(item.get("created_at"))
            if (tier is not None and type(tier) is not str) or content is _NO or created is _NO:
                return stop, late
            if tier == "EPHEMERAL":
                if closed_at is not None and created is not None and created > closed_at:
                    late = True
                excluded.append(content)
                continue
            hv = item.get("hash_version")
            if hv is not None:
                hv = _seg_uint(hv)
            leaf = item.get("leaf_hash")
            if leaf is not None:
                leaf = _seg_hex(leaf)
            index = _seg_uint(item.get("sequence_index", _NO))
        fields = _seg_leaf_fields(item)
        if index is _NO or content is _NO or hv is _NO or leaf is _NO or fields is _NO:
            return stop, late
        if closed_at is not None and created is not None and created > closed_at:
            late = True
        node_id, node_type, schema, parent = fields
        segments.append(segment_type(index, content, node_id, node_type, schema, parent, tier, created,
                                     hv, leaf))
    return len(items), late


# --- Episode documents: the scanner ------------------------------------------------------

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MICROSECOND = timedelta(microseconds=1)


def _latest_created(items: list[Any]) -> int | None:
    """The latest ``created_at`` of the items, in UTC microseconds since 1970."""
    instants = [_seg_instant(item.get("created_at")) for item in items]
    found = [(i - _EPOCH) // _MICROSECOND for i in instants if i is not None and i is not _NO]
    return max(found) if found else None


def _signals(items: list[Any], signal_type: Any) -> Any:
    """(SPINE signals in stored order, latest received_at in UTC microseconds or None,
    whether a SPINE content hash repeats) when every item is a canonical signal, else
    None."""
    spine = []
    latest = None
    for position, item in enumerate(items):
        if type(item) is not dict or not set(item) <= {"content_hash", "placement", "received_at"}:
            return None
        content = _seg_hex(item.get("content_hash"))
        placement = item.get("placement")
        received = _seg_instant(item.get("received_at"))
        if content is _NO or type(placement) is not str or received is _NO:
            return None
        if received is not None:
            us = (received - _EPOCH) // _MICROSECOND
            latest = us if latest is None else max(latest, us)
        if placement == "SPINE":
            spine.append((position, signal_type(content, received)))
    if spine and all(sig.received_at is not None for _, sig in spine):
        spine.sort(key=lambda pair: (pair[1].received_at, pair[0]))
    signals = [sig for _, sig in spine]
    return signals, latest, len({sig.content_hash for sig in signals}) < len(signals)


def scan_episode(data: Any, segment_type: Any, signal_type: Any) -> Any:
    """``(members, segments, excluded, latest_created_us, signals)`` for an Episode
    document's JSON text whose stored segments are all in the canonical shape
    (``read_segments``) with strictly ascending indexes, else None; ``members`` are the
    top-level members without ``segments`` (and ``stored`` without its ``segments``), and
    for ``canonkit-episode/1`` without ``signals`` when every signal is canonical: then
    ``signals`` is ``(SPINE signals in stored order, latest_received_us, repeated)``,
    else None. The text is read by the strict reader (``canonkit._files.loads_json``); the
    compiled scanner reads it itself and may also return None where this one reads the
    document (docs/astp-kernel-api.md)."""
    if type(data) is not bytes:
        return None
    try:  # the strict reader: what it refuses, the general reader refuses too
        doc = loads_json(data)
    except JSONInputError:
        return None
    if type(doc) is not dict:
        return None
    fmt = doc.get("format")
    stored = doc.get("stored")
    if fmt == "canonkit-episode/1":
        items, por = doc.get("segments"), False
    elif fmt == "astp-proof-of-record/1" and doc.get("profile") == "full" and type(stored) is dict:
        items, por = stored.get("segments"), True
    else:
        return None
    if type(items) is not list:
        return None
    segments: list[Any] = []
    excluded: list[str] = []
    stop, _ = read_segments(items, 0, segment_type, segments, excluded, proof_of_record=por)
    indexes = [seg.sequence_index for seg in segments]
    if stop != len(items) or any(a >= b for a, b in zip(indexes, indexes[1:])):
        return None
    members = {k: v for k, v in doc.items() if k != "segments"}
    if type(stored) is dict:
        members["stored"] = {k: v for k, v in stored.items() if k != "segments"}
    signals = None
    if not por and type(doc.get("signals")) is list:
        signals = _signals(doc["signals"], signal_type)
        if signals is not None:
            del members["signals"]
    return members, segments, excluded, None if por else _latest_created(items), signals


def _same(a: Any, b: Any) -> bool:
    """Equal values of equal types at every depth (``1 == 1.0 == True`` is not enough)."""
    if type(a) is not type(b):
        return False
    if type(a) is dict:
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if type(a) is list:
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return bool(a == b) or (a != a and b != b)


def plain_json(data: Any) -> bool:
    """Whether orjson may read ``data`` (``bytes``) for the strict reader
    (``canonkit._files.loads_json``): ``orjson.loads`` either refuses it (the strict
    reader then decides and words the refusal) or gives exactly the strict reader's value,
    types included. The compiled kernel decides from one pass over the text and may say
    False where this says True, never the other way (docs/astp-kernel-api.md)."""
    import orjson

    if type(data) is not bytes:
        return False
    try:
        fast = orjson.loads(data)
    except orjson.JSONDecodeError:
        return True
    try:
        strict = loads_json(data)
    except (JSONInputError, RecursionError):
        return False
    return _same(strict, fast)
