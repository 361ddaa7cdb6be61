"""The Layer 3 rules of ASTP.md §19.3 as checks that raise ``Layer3GovernanceError``, whose
``code`` (and ``vector``) names the conformance vector broken. This is the one place a rule
is decided: the writer (``Workspace``) calls these checks and refuses a write before
anything is written; the verifier (``verify``) runs the same checks over a recorded export
and reports each refusal as a finding (``_Verification.guard``). The verifier's fast path
(the kernel ``canonkit.astp._layer3``) reads only what these checks admit: its twin
(``canonkit.astp._py.layer3``) calls them, and the compiled side, which writes
``check_execution_errors``, ``check_edge_properties``, ``check_precedes``,
``check_sequence_gap`` and ``check_transition`` in C for values of the exact JSON types, is
held to the twin by tests/test_layer3_kernel.py — a change here is a change there.

| vector | rule | checks |
|---|---|---|
| CIA-001 | a node is written by the CIA of its node type | ``check_principal`` |
| WF-004 | the workflow state machine | ``check_transition``, ``check_open_workflow``, ``check_closing_status`` |
| EX-003 | error consistency of an execution | ``check_execution_errors`` |
| SK-003 | ``registry_id`` stays null | ``check_registry_id`` |
| L3-004 | ExecutionNode and SkillInvocation are terminal on write | ``check_immutable``, ``check_terminal_on_write``, ``check_new_node_id`` |
| L3-005 | a declaration changes only its status trio | ``check_declaration_update``, ``check_declaration_changes`` |
| L3-006 | a retry is a new node | ``check_retry``, ``check_new_sequence_index``, ``check_new_node_id`` |
| L3-007 | the seven edges join the right nodes, within the Episode | ``check_executes_within``, ``check_invoked_within``, ``check_precedes``, ``check_within_episode`` |
| L3-008 | an edge's properties | ``check_edge_properties``, ``check_sequence_gap`` |

The vectors that concern only a recorded export — its shape (L3-003), its content hashes
(the ``HASH_VECTOR`` of each node type), its audit chain and creation events (CIA-002,
CIA-003, CIA-004, EX-002), the first execution's transition (WF-005), the WF-006 notes and
spine isolation (L3-001) — are what the writer produces by construction; ``verify`` checks
them while it reads the export (docs/astp-layer3.md lists every vector)."""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from canonkit.astp._py.common import short_repr
from canonkit.astp.layer3.schema import (
    EDGE_PROPERTIES,
    EDGE_TYPES,
    ERROR_TYPES,
    EXECUTION,
    EXECUTION_STATUSES,
    MUTABLE_DECLARATION_FIELDS,
    TERMINAL_STATUSES,
    TRANSITIONS,
    WORKFLOW,
)
from canonkit.errors import Layer3GovernanceError

__all__ = [
    "check_closing_status",
    "check_declaration_changes",
    "check_declaration_update",
    "check_edge_properties",
    "check_executes_within",
    "check_execution_errors",
    "check_immutable",
    "check_invoked_within",
    "check_new_node_id",
    "check_new_sequence_index",
    "check_open_workflow",
    "check_precedes",
    "check_principal",
    "check_registry_id",
    "check_retry",
    "check_sequence_gap",
    "check_terminal_on_write",
    "check_transition",
    "check_within_episode",
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
    if type(properties) is not dict and not isinstance(properties, Mapping):
        raise _fail("L3-008", f"{name} properties must be an object, got "
                              f"{short_repr(properties)}", node_id, "properties")
    wanted = EDGE_PROPERTIES[name]
    if len(properties) != len(wanted) or wanted and any(key not in properties for key in wanted):
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


# --- CIA-001 ---------------------------------------------------------------------------

def check_principal(cia: Mapping[str, str], node_type: str, principal: Any,
                    node_id: Any) -> None:
    """CIA-001: ``principal`` is the CIA that ``cia`` names for ``node_type``."""
    if principal != cia[node_type]:
        raise _fail("CIA-001", f"{principal!r} is not the CIA of {node_type} "
                               f"({cia[node_type]!r})", node_id, "principal")


# --- WF-004 ----------------------------------------------------------------------------

def check_open_workflow(workflow: Mapping[str, Any], node: Mapping[str, Any]) -> None:
    """WF-004: no execution is recorded against a workflow in a terminal status."""
    status = workflow["status"]
    if status in TERMINAL_STATUSES:
        raise _fail("WF-004", f"workflow {workflow['node_id']} is {status}: no execution "
                              "may be recorded against it", node["node_id"], "workflow_id")


def check_closing_status(workflow: Mapping[str, Any], final_status: Any) -> None:
    """WF-004: a workflow closes into a terminal status."""
    if not isinstance(final_status, str) or final_status not in TERMINAL_STATUSES:
        raise _fail("WF-004", "close_workflow needs a terminal status, got "
                              f"{short_repr(final_status)}", workflow["node_id"], "status")


# --- L3-004, L3-005, L3-006: writes -----------------------------------------------------

def check_terminal_on_write(node: Mapping[str, Any], changes: Mapping[str, Any]) -> None:
    """L3-004: only a WorkflowDeclaration is ever updated."""
    if node["node_type"] != WORKFLOW:
        raise _fail("L3-004", f"{node['node_type']} is terminal on write; nothing may change",
                    node["node_id"], next(iter(changes), None))


def check_declaration_changes(node: Mapping[str, Any], changes: Mapping[str, Any]) -> None:
    """L3-005: an update of a WorkflowDeclaration names only its mutable trio."""
    outside = sorted(set(changes) - set(MUTABLE_DECLARATION_FIELDS))
    if outside:
        raise _fail("L3-005", f"only {', '.join(MUTABLE_DECLARATION_FIELDS)} may change; "
                              f"not {', '.join(outside)}", node["node_id"], outside[0])


def check_new_node_id(node: Mapping[str, Any], *, taken: bool) -> None:
    """L3-006 (an ExecutionNode: a retry is a new node) or L3-004 (any other node: written
    once): a write needs a ``node_id`` not ``taken`` yet."""
    if taken:
        raise _fail("L3-006" if node["node_type"] == EXECUTION else "L3-004",
                    f"node_id {node['node_id']} is taken: a new write needs a new node_id",
                    node["node_id"], "node_id")


def check_new_sequence_index(nodes: Iterable[Mapping[str, Any]], node: Mapping[str, Any]
                             ) -> None:
    """L3-006: an ExecutionNode's ``sequence_index`` is new in its workflow."""
    for other in nodes:
        if (other.get("node_type") == EXECUTION
                and other.get("workflow_id") == node.get("workflow_id")
                and other.get("sequence_index") == node.get("sequence_index")):
            raise _fail("L3-006", f"sequence_index {short_repr(node.get('sequence_index'))} "
                                  f"is taken by {other.get('node_id')}: a retry is a new node "
                                  "with a new sequence_index", node, "sequence_index")


# --- L3-007 ----------------------------------------------------------------------------

def check_within_episode(node: Mapping[str, Any], episode_id: str) -> None:
    """L3-007: a node is declared within the Episode ``episode_id`` (the workspace's, or
    the one an export is verified against)."""
    if node.get("episode_id") != episode_id:
        raise _fail("L3-007", f"declared within {short_repr(node.get('episode_id'))}, not "
                              f"the Episode {episode_id}", node, "episode_id")


def check_executes_within(workflow: Mapping[str, Any] | None, workflow_id: Any,
                          node: Mapping[str, Any] | None) -> None:
    """L3-007: EXECUTES_WITHIN ends at a WorkflowDeclaration (``workflow``, looked up by
    ``workflow_id``; None when there is none)."""
    if workflow is None or workflow["node_type"] != WORKFLOW:
        raise _fail("L3-007", f"EXECUTES_WITHIN: no WorkflowDeclaration {workflow_id}",
                    node["node_id"] if node else workflow_id, "workflow_id")


def check_invoked_within(execution: Mapping[str, Any] | None, node: Mapping[str, Any]) -> None:
    """L3-007: INVOKED_WITHIN ends at an ExecutionNode of the skill's own workflow."""
    if execution is None or execution["node_type"] != EXECUTION:
        raise _fail("L3-007", f"INVOKED_WITHIN: no ExecutionNode {node['execution_node_id']}",
                    node["node_id"], "execution_node_id")
    if execution["workflow_id"] != node["workflow_id"]:
        raise _fail("L3-007", "workflow_id differs from the execution's",
                    node["node_id"], "workflow_id")


def check_precedes(earlier: Mapping[str, Any] | None, before: Any, node: Mapping[str, Any]
                   ) -> None:
    """L3-007: PRECEDES points from an earlier ExecutionNode (``earlier``, looked up by
    ``before``) of the same workflow to the later one, ``node``."""
    if earlier is None or earlier.get("node_type") != EXECUTION or (
            earlier.get("workflow_id") != node.get("workflow_id")):
        raise _fail("L3-007", f"PRECEDES: no earlier ExecutionNode {before} in the workflow",
                    node, "preceded_by")
    first, then = earlier.get("sequence_index"), node.get("sequence_index")
    if type(first) is not int or type(then) is not int or then <= first:
        raise _fail("L3-007", "PRECEDES points from the earlier ExecutionNode to the later: "
                              f"sequence_index {short_repr(then)} does not follow "
                              f"{short_repr(first)}", node, "sequence_index")


def check_sequence_gap(earlier: Mapping[str, Any], node: Mapping[str, Any],
                       properties: Mapping[str, Any]) -> None:
    """L3-008: a PRECEDES edge's ``sequence_gap`` is the later ExecutionNode's
    ``sequence_index`` minus the earlier one's (both checked by ``check_precedes``)."""
    gap, wanted = properties.get("sequence_gap"), node["sequence_index"] - earlier["sequence_index"]
    if gap != wanted:
        raise _fail("L3-008", f"sequence_gap must be {wanted}, got {short_repr(gap)}", node,
                    "sequence_gap")
