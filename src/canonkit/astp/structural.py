"""ASTP.md §7 structural member hashes (5.0.0) from stored fields.

Each function takes the fields of its table row by name, in the table's order, and returns
the member hash as hex. ``member_hash(type_name, fields)`` dispatches on the node type name
used by ``canonkit-episode/1`` documents (docs/astp.md).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from canonkit.astp._live import hasher
from canonkit.errors import InvalidFieldError

__all__ = [
    "MEMBER_LAYOUTS",
    "TERMINAL_HITL_STATES",
    "branch_point_hash",
    "branch_terminus_hash",
    "departure_fork_point_hash",
    "fork_point_hash",
    "fork_return_hash",
    "hitl_context_hash",
    "hitl_node_hash",
    "hitl_resolution_hash",
    "member_hash",
    "merge_point_hash",
]

#: node type -> (prefix, [(field name, kind)]) in preimage order
MEMBER_LAYOUTS: dict[str, tuple[bytes, list[tuple[str, str]]]] = {
    "BranchPoint": (b"BRANCH_POINT:v2:", [
        ("branch_point_id", "UUID"), ("episode_id", "UUID"), ("branch_id", "UUID"),
        ("source_segment_id", "UUID"), ("spine_merkle_snapshot", "HASH"), ("branch_type", "STRING"),
        ("declaration_type", "STRING"), ("created_at", "TIMESTAMP"), ("parent_hash", "HASH|NULL")]),
    "BranchTerminus": (b"BRANCH_TERMINUS:v2:", [
        ("terminus_id", "UUID"), ("branch_id", "UUID"), ("terminus_type", "STRING"),
        ("branch_point_hash", "HASH"), ("final_merkle_root", "HASH|NULL"), ("created_at", "TIMESTAMP")]),
    "ForkPoint": (b"FORK_POINT:v2:", [
        ("fork_point_id", "UUID"), ("fork_id", "UUID"), ("episode_id", "UUID"),
        ("origin_episode_id", "UUID"), ("origin_segment_id", "UUID"), ("fork_objective", "STRING"),
        ("sibling_index", "UINT"), ("created_at", "TIMESTAMP"), ("parent_hash", "HASH|NULL")]),
    "DepartureForkPoint": (b"DEPARTURE_FORK_POINT:v2:", [
        ("fork_point_id", "UUID"), ("fork_id", "UUID"), ("fork_episode_id", "UUID"),
        ("origin_episode_id", "UUID"), ("origin_segment_id", "UUID"), ("fork_objective", "STRING"),
        ("fork_creation_trigger", "STRING"), ("spine_tip_hash_at_departure", "HASH"),
        ("created_at", "TIMESTAMP"), ("parent_hash", "HASH|NULL")]),
    "ForkReturn": (b"FORK_RETURN:v2:", [
        ("fork_return_id", "UUID"), ("fork_id", "UUID"), ("fork_episode_id", "UUID"),
        ("origin_episode_id", "UUID"), ("return_type", "STRING"), ("fork_final_spine_tip_hash", "HASH"),
        ("created_at", "TIMESTAMP"), ("parent_hash", "HASH|NULL")]),
    "MergePoint": (b"MERGE_POINT:v2:", [
        ("merge_point_id", "UUID"), ("merge_id", "UUID"), ("source_episode_id", "UUID"),
        ("target_episode_id", "UUID"), ("source_merkle_root", "HASH"), ("target_merkle_root_pre", "HASH"),
        ("target_merkle_root_post", "HASH"), ("common_ancestor_id", "UUID|NULL"), ("merge_type", "STRING"),
        ("created_at", "TIMESTAMP"), ("parent_hash", "HASH|NULL")]),
}
HITL_CONTEXT_FIELDS = [("hitl_request_id", "STRING"), ("episode_id", "UUID"), ("gate_type", "STRING"),
                       ("requesting_agent", "STRING"), ("invoked_at", "TIMESTAMP"),
                       ("context_json", "STRING")]
HITL_RESOLUTION_FIELDS = [("hitl_event_id", "UUID"), ("decision", "STRING"), ("resolved_by", "STRING"),
                          ("resolved_at", "TIMESTAMP"), ("rationale", "STRING|NULL")]
#: HITL events in these states are structural members; INVOKED is not
TERMINAL_HITL_STATES = frozenset({"RESOLVED", "TIMED_OUT", "ESCALATED"})


def _hash(prefix: bytes, layout: list[tuple[str, str]], fields: Mapping[str, Any], what: str) -> str:
    values = []
    for name, kind in layout:
        if name not in fields:
            if kind.endswith("|NULL"):
                values.append((kind, None))
                continue
            raise InvalidFieldError(f"{what}: missing field {name!r}", detail=name)
        values.append((kind, fields[name]))
    try:
        return hasher.hash_fields(prefix, values).hex()
    except InvalidFieldError as exc:
        raise type(exc)(f"{what}: {exc}", detail=exc.detail) from None


def hitl_context_hash(**fields: Any) -> str:
    return _hash(b"HITL_CONTEXT:v2:", HITL_CONTEXT_FIELDS, fields, "HITL context")


def hitl_resolution_hash(**fields: Any) -> str:
    return _hash(b"HITL_RESOLUTION:v2:", HITL_RESOLUTION_FIELDS, fields, "HITL resolution")


def hitl_node_hash(context_hash: Any, resolution_hash: Any) -> str:
    return hasher.hash_fields(b"HITL_NODE:v2:", (("HASH", context_hash), ("HASH", resolution_hash))).hex()


def _member(type_name: str):  # type: ignore[no-untyped-def]
    prefix, layout = MEMBER_LAYOUTS[type_name]

    def construct(**fields: Any) -> str:
        return _hash(prefix, layout, fields, type_name)
    construct.__name__ = type_name
    construct.__doc__ = f"{prefix.decode()} over " + ", ".join(f"{k} {n}" for n, k in layout)
    return construct


branch_point_hash = _member("BranchPoint")
branch_terminus_hash = _member("BranchTerminus")
fork_point_hash = _member("ForkPoint")
departure_fork_point_hash = _member("DepartureForkPoint")
fork_return_hash = _member("ForkReturn")
merge_point_hash = _member("MergePoint")


def member_hash(type_name: str, fields: Mapping[str, Any]) -> str | None:
    """Member hash of a structural node given by type name and stored fields; None for a
    node that is not a member (a HITL event not in a terminal ``state``)."""
    if type_name in MEMBER_LAYOUTS:
        prefix, layout = MEMBER_LAYOUTS[type_name]
        return _hash(prefix, layout, fields, type_name)
    if type_name == "HITLEvent":
        state = fields.get("state")
        if not isinstance(state, str) or state not in TERMINAL_HITL_STATES | {"INVOKED"}:
            raise InvalidFieldError(f"HITLEvent: unknown state {state!r}", detail="state")
        if state == "INVOKED":
            return None
        ctx = _hash(b"HITL_CONTEXT:v2:", HITL_CONTEXT_FIELDS, fields, "HITLEvent context")
        res = _hash(b"HITL_RESOLUTION:v2:", HITL_RESOLUTION_FIELDS, fields, "HITLEvent resolution")
        return hitl_node_hash(ctx, res)
    raise InvalidFieldError(f"unknown structural node type {type_name!r}", detail=type_name)
