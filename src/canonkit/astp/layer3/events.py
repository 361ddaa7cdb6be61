"""Layer 3 audit events (ASTP.md §19.4): audit records v2 (§14) whose ``delta_type`` is one
of ``WORKFLOW_DECLARED``, ``EXECUTION_RECORDED``, ``SKILL_INVOKED``, ``WORKFLOW_CLOSED``.

The deltas are canonical JSON (§2.3) objects. Values are the Form B JSON values of the node
(UUIDs and instants as their §19.2 text, floats as their ``repr`` text), so a delta can
always be canonicalized and compares with the stored node value for value. Besides the
CIA-004 required fields, a forward delta carries the edges the write created (``edges``)
and, for the first ExecutionNode of a workflow, the WF-005 auto-transition
(``workflow_transition``); no fifth event type exists.
"""
from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from canonkit.astp._live import auditor, former
from canonkit.astp._py.common import l3_value
from canonkit._files import MAX_INTEGER_DIGITS
from canonkit.astp.canonical_json import canonical_json, parse_canonical

__all__ = ["TRIGGER_CONTEXT", "audit_time", "delta_value", "make_record"]

#: the ``trigger_context`` and ``caught_by`` of every record a Workspace writes
TRIGGER_CONTEXT = "layer3_write"
CAUGHT_BY = "canonkit.astp.layer3.Workspace"


def audit_time(instant: datetime) -> str:
    """An audit ``wall_clock_time``: UTC, truncated to whole milliseconds, ``Z`` (§14 stores
    the truncated value)."""
    if instant.tzinfo is None or instant.utcoffset() is None:
        instant = instant.replace(tzinfo=timezone.utc)
    instant = instant.astimezone(timezone.utc)
    if instant.year >= 1000:    # four digits, as strftime writes them: the same text
        return instant.isoformat(timespec="milliseconds")[:23] + "Z"
    return instant.strftime("%Y-%m-%dT%H:%M:%S.") + f"{instant.microsecond // 1000:03d}Z"


def delta_value(value: Any) -> Any:
    """A node value as it reads back from a canonical-JSON delta (Form B value, then NFC);
    ``InvalidFieldError`` for one no delta can hold (or be read back with: the strict JSON
    reader bounds integers)."""
    if value is None or value is True or value is False:
        return value
    if type(value) is str and value.isascii():     # the common case: ids, names, instants
        return value
    if type(value) is int and -_INTEGER_BOUND < value < _INTEGER_BOUND:
        return value
    return parse_canonical(canonical_json(l3_value(value)))


_INTEGER_BOUND = 10 ** MAX_INTEGER_DIGITS   # longer integers the strict reader refuses


def make_record(*, audit_id: str, chain_key: str, delta_sequence: int, delta_type: str,
                principal: str, session_id: str, wall_clock_time: datetime,
                forward: Mapping[str, Any], reverse: Mapping[str, Any],
                affected_nodes: list[str], prior_audit_hash: str | None) -> dict[str, Any]:
    """One audit record v2 with its ``record_hash``."""
    forward_value, reverse_value = former.json_value(forward), former.json_value(reverse)
    record: dict[str, Any] = {
        "audit_id": audit_id,
        "chain_key": chain_key,
        "delta_sequence": delta_sequence,
        "delta_type": delta_type,
        "agent_id": principal,
        "session_id": session_id,
        "human_actor": None,
        "wall_clock_time": audit_time(wall_clock_time),
        "episode_time": delta_sequence,
        "forward_delta": forward_value,
        "reverse_delta": reverse_value,
        "affected_nodes": affected_nodes,
        "trigger_context": TRIGGER_CONTEXT,
        "explicit_reason": None,
        "caught_by": CAUGHT_BY,
        "detection_window_open": False,
        "prior_audit_hash": prior_audit_hash,
    }
    # the deltas as values, canonicalized once for their text and the hash alike
    record["forward_delta"], record["reverse_delta"], record["record_hash"] = (
        auditor.sealed_record(record))
    return record
