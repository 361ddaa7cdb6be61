"""The Layer 3 rules of ASTP.md §19.3 as checks that raise ``Layer3GovernanceError``, whose
``code`` (and ``vector``) names the conformance vector broken: the workflow state machine
(WF-004), error consistency (EX-003), terminal-on-write immutability (L3-004), the
declaration's mutation surface (L3-005), retry by a new node (L3-006) and the deferred
``registry_id`` (SK-003). The writer (``Workspace``) raises them before anything is written;
the verifier reports the same vectors as findings."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from canonkit._astp_common import short_repr
from canonkit.astp.layer3.schema import (
    EDGE_PROPERTIES,
    EDGE_TYPES,
    ERROR_TYPES,
    EXECUTION_STATUSES,
    MUTABLE_DECLARATION_FIELDS,
    TRANSITIONS,
)
from canonkit.errors import Layer3GovernanceError

__all__ = [
    "check_declaration_update",
    "check_edge_properties",
    "check_execution_errors",
    "check_immutable",
    "check_registry_id",
    "check_retry",
    "check_transition",
]


def _fail(vector: str, message: str, node: Mapping[str, Any] | str | None = None,
          field: str | None = None) -> Layer3GovernanceError:
    node_id = node.get("node_id") if isinstance(node, Mapping) else node
    return Layer3GovernanceError(f"{vector}: {message}", vector=vector,
                                 node_id=node_id if isinstance(node_id, str) else None, field=field)


def check_transition(from_status: Any, to_status: Any) -> None:
    """WF-004: permitted exactly DECLARED -> {IN_PROGRESS, INTERRUPTED} and IN_PROGRESS ->
    {COMPLETED, FAILED, INTERRUPTED}; terminal states have no way out; every other pair
    (unknown names included, and a state to itself) raises."""
    allowed = TRANSITIONS.get(from_status) if isinstance(from_status, str) else None
    if allowed is None:
        raise _fail("WF-004", f"unknown workflow status {short_repr(from_status)}", field="status")
    if not isinstance(to_status, str) or to_status not in allowed:
        raise _fail("WF-004", f"transition {from_status} -> {short_repr(to_status)} is not permitted",
                    field="status")


def check_execution_errors(node: Mapping[str, Any]) -> None:
    """EX-003: COMPLETED carries neither ``error_type`` nor ``error_detail``; FAILED and
    INTERRUPTED carry an ``error_type`` of the ErrorType enumeration."""
    status = node.get("status")
    error_type = node.get("error_type")
    if status == "COMPLETED":
        for name in ("error_type", "error_detail"):
            if node.get(name) is not None:
                raise _fail("EX-003", f"a COMPLETED execution carries {name}", node, name)
    elif status in EXECUTION_STATUSES:
        if error_type is None:
            raise _fail("EX-003", f"a {status} execution has no error_type", node, "error_type")
    else:
        raise _fail("EX-003", f"execution status {short_repr(status)} is not one of "
                              f"{', '.join(EXECUTION_STATUSES)}", node, "status")
    if error_type is not None and error_type not in ERROR_TYPES:
        raise _fail("EX-003", f"error_type {short_repr(error_type)} is not one of {', '.join(ERROR_TYPES)}",
                    node, "error_type")


def check_registry_id(node: Mapping[str, Any]) -> None:
    """SK-003: ``registry_id`` stays null until a Skill Registry amendment defines it."""
    if node.get("registry_id") is not None:
        raise _fail("SK-003", "registry_id must stay null", node, "registry_id")


def _differing(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    return sorted(k for k in set(before) | set(after)
                  if k not in before or k not in after or before[k] != after[k])


def check_immutable(before: Mapping[str, Any], after: Mapping[str, Any]) -> None:
    """L3-004: an ExecutionNode or SkillInvocation never changes after it is written."""
    changed = _differing(before, after)
    if changed:
        raise _fail("L3-004", f"{before.get('node_type', 'node')} is terminal on write; "
                              f"{', '.join(changed)} changed", before, changed[0])


def check_declaration_update(before: Mapping[str, Any], after: Mapping[str, Any]) -> None:
    """L3-005: a WorkflowDeclaration changes only ``status``, ``status_updated_at`` and
    ``error_detail``; a status change obeys the state machine (WF-004)."""
    changed = [k for k in _differing(before, after) if k not in MUTABLE_DECLARATION_FIELDS]
    if changed:
        raise _fail("L3-005", f"only {', '.join(MUTABLE_DECLARATION_FIELDS)} may change; "
                              f"{', '.join(changed)} changed", before, changed[0])
    if before.get("status") != after.get("status"):
        check_transition(before.get("status"), after.get("status"))


def check_retry(prior: Mapping[str, Any], retry: Mapping[str, Any]) -> None:
    """L3-006: a retried step is a new ExecutionNode with its own ``node_id`` and
    ``sequence_index``; the prior node is never reused."""
    for name in ("node_id", "sequence_index"):
        if prior.get(name) == retry.get(name):
            raise _fail("L3-006", f"a retry reuses the prior execution's {name}", retry, name)


def check_edge_properties(name: str, properties: Any, node_id: str | None = None) -> None:
    """L3-008: an edge's ``properties`` are an object holding exactly what canonkit-layer3/1
    records for that edge: for PRECEDES ``edge_type`` (one of SEQUENTIAL, CONDITIONAL,
    PARALLEL) and ``sequence_gap`` (an integer above 0); for the other six edges nothing
    (``{}``). ``node_id`` names the node a refusal is reported on."""
    if not isinstance(properties, Mapping):
        raise _fail("L3-008", f"{name} properties must be an object, got "
                              f"{short_repr(properties)}", node_id, "properties")
    wanted = EDGE_PROPERTIES[name]
    if len(properties) != len(wanted) or any(key not in properties for key in wanted):
        keys = ", ".join(short_repr(k) for k in properties) or "none"
        expected = ", ".join(wanted) if wanted else "none (an empty object)"
        raise _fail("L3-008", f"{name} properties are exactly {expected}; got {keys}",
                    node_id, "properties")
    if name != "PRECEDES":
        return
    edge_type, gap = properties["edge_type"], properties["sequence_gap"]
    if not isinstance(edge_type, str) or edge_type not in EDGE_TYPES:
        raise _fail("L3-008", f"PRECEDES needs edge_type, one of {', '.join(EDGE_TYPES)}; "
                              f"got {short_repr(edge_type)}", node_id, "edge_type")
    if type(gap) is not int or gap <= 0:
        raise _fail("L3-008", f"PRECEDES sequence_gap must be an integer above 0, got "
                              f"{short_repr(gap)}", node_id, "sequence_gap")
