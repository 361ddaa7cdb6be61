"""ASTP document-reader kernel, pure-Python twin (the reference oracle of
``canonkit.astp._segments``): ``read_segments``, the Episode reader's fast path over a
document's stored segments, and the leaf hashes of ASTP.md §4.
See docs/astp-kernel-api.md; the differential tests hold the two to it.
"""
from __future__ import annotations

import re
import struct
from datetime import datetime, timedelta, timezone
from typing import Any

from canonkit.astp._py.common import U64, uuid_bytes
from canonkit.astp._py.hash import hash_fields
from canonkit.astp._py.hash import hash_bytes, sha3_256
from canonkit._instant import instant_from_text
from canonkit.errors import InvalidFieldError

__all__ = ["leaf_hash_v1", "leaf_hash_v2", "read_segments"]


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
#: "not in the canonical shape": the caller's reader decides (the scanner twin reads it too)
NOT_CANONICAL: Any = object()
_NO = NOT_CANONICAL


def segment_hex(value: Any) -> Any:
    if type(value) is str and len(value) == 64 and _HEX64.fullmatch(value):
        return value.lower()
    return _NO


def _seg_uuid(value: Any) -> Any:
    if type(value) is str and len(value) == 36 and _UUID36.fullmatch(value):
        return value.lower()
    return _NO


def _seg_uint(value: Any) -> Any:
    return value if type(value) is int and value >= 0 else _NO


def segment_instant(value: Any) -> Any:
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
            content = segment_hex(item.get("content_hash", _NO))
            tier = created = hv = leaf = None
        else:
            tier = item.get("retention_tier")
            content = segment_hex(item.get("content_hash", _NO))
            created = segment_instant(item.get("created_at"))
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
                leaf = segment_hex(leaf)
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
