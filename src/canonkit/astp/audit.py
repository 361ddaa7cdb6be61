"""ASTP.md §14 audit record v2: record hash and chain verification."""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from canonkit.astp._live import auditor, hasher
from canonkit.astp._py.common import AUDIT_FIELDS, short_repr
from canonkit.errors import ASTPError

__all__ = ["AUDIT_FIELDS", "ChainVerdict", "audit_record_hash", "verify_audit_chain"]


def audit_record_hash(record: Mapping[str, Any]) -> str:
    """``AUDIT_RECORD:v2:`` hash of a record's stored fields (hex); stored deltas must be
    canonical JSON text (an object delta is canonicalized)."""
    return auditor.audit_record_hash(record)


@dataclass(frozen=True)
class ChainVerdict:
    """Result of ``verify_audit_chain``: ``ok``, or the first failing record's index and why."""
    ok: bool
    index: int | None = None
    reason: str | None = None


def verify_audit_chain(records: Sequence[Mapping[str, Any]], *,
                       record_hash: Callable[[Mapping[str, Any]], str] | None = None
                       ) -> ChainVerdict:
    """Check records in order: delta_sequence i+1, one chain_key, prior_audit_hash links, and
    stored record_hash recomputes (through ``record_hash``, default ``audit_record_hash``: a verifier that reads the
    records' deltas as well passes one that keeps them). The first failure is reported; an
    empty chain verifies."""
    hash_of = audit_record_hash if record_hash is None else record_hash
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
            computed = hash_of(record)
        except ASTPError as exc:
            return ChainVerdict(False, i, f"malformed record: {exc}")
        if prior_hex != previous:
            return ChainVerdict(False, i, "prior_audit_hash does not link to the previous record"
                                if i else "prior_audit_hash must be null for the first record")
        if computed != stored:
            return ChainVerdict(False, i, f"record_hash does not recompute (computed {computed})")
        previous = stored
    return ChainVerdict(True)
