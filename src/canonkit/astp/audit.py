"""ASTP.md §14 audit record v2: record hash and chain verification."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from canonkit.astp._py.common import short_repr
from canonkit.astp._live import hasher
from canonkit.astp.canonical_json import canonical_json_bytes, parse_canonical
from canonkit.errors import ASTPError, InvalidFieldError

__all__ = ["AUDIT_FIELDS", "ChainVerdict", "audit_record_hash", "verify_audit_chain"]

AUDIT_FIELDS: list[tuple[str, str]] = [
    ("audit_id", "UUID"), ("chain_key", "STRING"), ("delta_sequence", "UINT"), ("delta_type", "STRING"),
    ("agent_id", "STRING"), ("session_id", "STRING"), ("human_actor", "STRING|NULL"),
    ("wall_clock_time", "TIMESTAMP"), ("episode_time", "UINT"), ("forward_delta", "BYTES"),
    ("reverse_delta", "BYTES"), ("affected_nodes", "LIST(STRING)"), ("trigger_context", "STRING"),
    ("explicit_reason", "STRING|NULL"), ("caught_by", "STRING"), ("detection_window_open", "BOOL"),
    ("prior_audit_hash", "HASH|NULL"),
]


def _delta(value: Any, name: str) -> bytes:
    """A delta as canonical JSON bytes: stored text must already be canonical; an object is
    canonicalized."""
    if isinstance(value, str):
        try:
            parse_canonical(value)
        except InvalidFieldError as exc:
            raise InvalidFieldError(f"{name}: {exc}", offset=exc.offset) from None
        return value.encode("utf-8")
    return canonical_json_bytes(value)


def audit_record_hash(record: Mapping[str, Any]) -> str:
    """``AUDIT_RECORD:v2:`` hash of a record's stored fields (hex)."""
    values = []
    for name, kind in AUDIT_FIELDS:
        if name not in record and not kind.endswith("|NULL"):
            raise InvalidFieldError(f"audit record: missing field {name!r}", detail=name)
        value = record.get(name)
        if name == "chain_key" and (not isinstance(value, str) or not value):
            raise InvalidFieldError("audit record: chain_key must be non-empty text", detail=name)
        if name in ("forward_delta", "reverse_delta"):
            value = _delta(value, name)
        values.append((kind, value))
    return hasher.hash_fields(b"AUDIT_RECORD:v2:", values).hex()


@dataclass(frozen=True)
class ChainVerdict:
    """Result of ``verify_audit_chain``: ``ok``, or the first failing record's index and why."""
    ok: bool
    index: int | None = None
    reason: str | None = None


def verify_audit_chain(records: Sequence[Mapping[str, Any]]) -> ChainVerdict:
    """Check records in order: delta_sequence i+1, one chain_key, prior_audit_hash links, and
    stored record_hash recomputes. The first failure is reported; an empty chain verifies."""
    previous: str | None = None
    key = None
    for i, record in enumerate(records):
        if record.get("delta_sequence") != i + 1 or isinstance(record.get("delta_sequence"), bool):
            return ChainVerdict(False, i, f"delta_sequence {short_repr(record.get('delta_sequence'))}, "
                                f"expected {i + 1}")
        if i == 0:
            key = record.get("chain_key")
        elif record.get("chain_key") != key:
            return ChainVerdict(False, i, f"chain_key {short_repr(record.get('chain_key'))} differs "
                                f"from {short_repr(key)}")
        prior = record.get("prior_audit_hash")
        try:
            prior_hex = None if prior is None else hasher.hash_hex(prior)
            stored = hasher.hash_hex(record.get("record_hash"))
            computed = audit_record_hash(record)
        except ASTPError as exc:
            return ChainVerdict(False, i, f"malformed record: {exc}")
        if prior_hex != previous:
            return ChainVerdict(False, i, "prior_audit_hash does not link to the previous record"
                                if i else "prior_audit_hash must be null for the first record")
        if computed != stored:
            return ChainVerdict(False, i, f"record_hash does not recompute (computed {computed})")
        previous = stored
    return ChainVerdict(True)
