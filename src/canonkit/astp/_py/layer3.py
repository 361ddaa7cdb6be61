"""ASTP Layer 3 verification kernel, pure-Python twin (the reference oracle of
``canonkit.astp._layer3``): the fast path of ``canonkit.astp.layer3.verify``.

Each function reads the nodes, audit records or edges of an export **in which the
verifier would find nothing**, in one pass over each, and keeps the verifier's own
bookkeeping for them in ``ledger`` (the verifier itself, see below); it leaves everything
else to the verifier, which judges it itself and words every finding. Whatever a kernel
reads, the report is the one the verifier gives alone (the tests hold the verifier with
either kernel to the verifier with a kernel that reads nothing). "Holds" means: of the
exact JSON types (``dict``, ``list``, ``str``, ``int``; a subclass or another mapping is
left to the verifier), and every rule of ``canonkit.astp.layer3.rules`` the verifier
applies passes — this twin asks those rules themselves, so the compiled kernel is held to
them through it.

``ledger`` has the attributes ``cia`` (node type -> CIA, or empty), ``nodes`` (id -> node),
``steps`` ((workflow_id, sequence_index) -> the first ExecutionNode's id), ``collisions``
(a list of (first, later) ids), ``created`` (id -> (delta_type, forward delta, record
index); the kernels keep None for the forward delta of a node that matches it, which
nothing reads again), ``audited_edges`` ((name, from, to) -> the edge as its write recorded it),
``workflows`` (id -> its replayed state: ``status``, ``status_updated_at``,
``error_detail``, ``executions``), ``Workflow`` (the state's class, called with the
``declared_at``), ``matched`` (the ids of the nodes that match their creation event) and
``shaped`` (the (name, from, to) of the edges that join the right nodes the right way).

The Layer 3 tables are read from ``canonkit.astp.layer3.schema`` at the first call:
``canonkit.astp.layer3`` binds the kernels as it loads, so a kernel cannot import it then.
See docs/astp-kernel-api.md.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import Any

from canonkit.astp._py.audit import audit_record_digest
from canonkit.astp._py.common import same_json
from canonkit.astp._py.formb import form_b_hash

__all__ = ["clean_edges", "clean_events", "clean_nodes", "clean_records", "edge_shapes",
           "missing_edges", "note_step", "unmatched_nodes"]

#: a creation event as the verifier keeps it: (delta_type, forward delta, record index)
Created = tuple[str, dict[str, Any], int]
_UNKNOWN: Created = ("", {}, -1)


@functools.cache
def _layer3() -> tuple[ModuleType, ModuleType, Callable[[Any], Any]]:
    """``astp.layer3``'s rules, its schema and ``events.delta_value``."""
    from canonkit.astp.layer3 import rules, schema
    from canonkit.astp.layer3.events import delta_value

    return rules, schema, delta_value


def _holds(check: Callable[..., None], *args: Any) -> bool:
    """Whether a rule of ``rules`` passes. Any exception is a doubt, left to the verifier
    (which raises it again or words the finding)."""
    try:
        check(*args)
    except Exception:
        return False
    return True


def _hex64(text: Any) -> bool:
    return (type(text) is str and len(text) == 64
            and all(c in "0123456789abcdef" for c in text))


# --- nodes ------------------------------------------------------------------------------------

def clean_nodes(items: Sequence[Any], start: int, ledger: Any) -> int:
    """Reads ``items[start:]`` while each node holds — a node of a known type with a new
    ``node_id``, only its own members, a content hash that recomputes in Form B, and its
    type's rule (EX-003, SK-003, a known workflow status) — storing each in
    ``ledger.nodes`` and an ExecutionNode's step in ``ledger.steps`` (or, taken already,
    in ``ledger.collisions``); the index of the first node it did not read."""
    rules, schema, _ = _layer3()
    for i in range(start, len(items)):
        node = items[i]
        if not _node_holds(node, ledger.nodes, rules, schema):
            return i
        ledger.nodes[node["node_id"]] = node
        if node["node_type"] == schema.EXECUTION:
            note_step(ledger, node["node_id"], node)
    return len(items)


def note_step(ledger: Any, node_id: str, node: Mapping[str, Any]) -> None:
    """Files an ExecutionNode by (``workflow_id`` text, integer ``sequence_index``): in
    ``ledger.steps`` when it is the first there, else in ``ledger.collisions``."""
    key = (node.get("workflow_id"), node.get("sequence_index"))
    if not isinstance(key[0], str) or type(key[1]) is not int:
        return
    if key in ledger.steps:
        ledger.collisions.append((ledger.steps[key], node_id))
    else:
        ledger.steps[key] = node_id


def _node_holds(node: Any, nodes: Mapping[str, Any], rules: Any, schema: Any) -> bool:
    if type(node) is not dict:
        return False
    node_type, node_id = node.get("node_type"), node.get("node_id")
    if (type(node_type) is not str or node_type not in schema.NODE_TYPES
            or type(node_id) is not str or node_id in nodes
            or not node.keys() <= schema.NODE_MEMBERS[node_type]):
        return False
    try:
        computed = form_b_hash(schema.LAYOUTS[node_type], node)
    except Exception:
        return False
    if node.get("content_hash") != computed or type(node["content_hash"]) is not str:
        return False
    if node_type == schema.EXECUTION:
        return _holds(rules.check_execution_errors, node)
    if node_type == schema.SKILL:
        return _holds(rules.check_registry_id, node)
    status = node.get("status")
    return type(status) is str and status in schema.WORKFLOW_STATUSES


def unmatched_nodes(nodes: Mapping[str, Any], matched: set[str]) -> list[str]:
    """The ids of the nodes (in order) not in ``matched``."""
    return [node_id for node_id in nodes if node_id not in matched]


def _matches(node: Any, delta_type: str, forward: dict[str, Any], schema: Any,
             delta_value: Callable[[Any], Any]) -> bool:
    """Whether a node matches its creation event: of the event's node type, and every field
    the event restates equal (as the verifier compares them)."""
    if type(node) is not dict or schema.CREATION_EVENTS[delta_type][0] != node.get("node_type"):
        return False
    for key, name in schema.RESTATED[delta_type].items():
        if key not in forward:
            continue        # the verifier reports it as CIA-004
        value = node.get(name)
        try:
            if not forward[key] == (value if type(value) is str and value.isascii()
                                    else delta_value(value)):
                return False
        except Exception:
            return False
    return True


# --- the audit chain --------------------------------------------------------------------------

def clean_records(records: Sequence[Any], episode_id: Any, workspace_id: Any, ledger: Any
                  ) -> tuple[list[Any] | None, int]:
    """One pass over the chain: each record's link and hash checked, and its event replayed
    as ``clean_events`` replays it, as long as both hold. ``(forwards, stop)``: ``stop`` is
    the index of the first record whose event it did not replay; ``forwards`` is None
    unless the whole chain holds — records of only their own members, numbered from 1,
    each keyed by ``episode_id`` and in the session ``workspace_id`` (non-empty text), the
    first with no prior hash and each other linked to the one before, every
    ``record_hash`` 64 lowercase hex characters that recompute — and then holds each
    record's forward delta as read from ``stop`` on (None where it is not text, and
    before ``stop``, where it is replayed and needed no more)."""
    rules, schema, delta_value = _layer3()
    if type(episode_id) is not str or type(workspace_id) is not str or not workspace_id:
        return None, 0
    forwards: list[Any] = []
    previous = None
    stop = None
    for i, record in enumerate(records):
        if type(record) is not dict or not record.keys() <= schema.AUDIT_RECORD_MEMBERS:
            return None, i if stop is None else stop
        sequence, stored = record.get("delta_sequence"), record.get("record_hash")
        prior = record.get("prior_audit_hash")
        if (type(sequence) is not int or sequence != i + 1
                or type(record.get("chain_key")) is not str or record["chain_key"] != episode_id
                or type(record.get("session_id")) is not str
                or record["session_id"] != workspace_id or not _hex64(stored)
                or prior != previous or (prior is not None and type(prior) is not str)):
            return None, i if stop is None else stop
        try:
            computed, forward = audit_record_digest(record)
        except Exception:
            return None, i if stop is None else stop
        if computed != stored:
            return None, i if stop is None else stop
        previous = stored
        if stop is None and not _event(i, record, forward, ledger, rules, schema, delta_value):
            stop = i
        forwards.append(None if stop is None else forward)
    return forwards, len(records) if stop is None else stop


def clean_events(records: Sequence[Any], forwards: Sequence[Any], start: int, ledger: Any
                 ) -> int:
    """Replays ``records[start:]`` (``forwards[i]``: record i's forward delta as read, None
    when unknown) while each event holds: its forward delta an object with the CIA's
    ``cia_identifier`` (``ledger.cia``, when it names one per node type) and every CIA-004
    field; a creation event of a new node, whose recorded edges are kept in
    ``ledger.audited_edges`` and whose node, when it matches the event, goes to
    ``ledger.matched``; an execution or close that moves its declared workflow as the
    state machine allows (WF-004, WF-005). The index of the first record it did not
    replay."""
    rules, schema, delta_value = _layer3()
    for i in range(start, len(records)):
        if not _event(i, records[i], forwards[i], ledger, rules, schema, delta_value):
            return i
    return len(records)


def _event(i: int, record: Any, forward: Any, ledger: Any, rules: Any, schema: Any,
           delta_value: Callable[[Any], Any]) -> bool:
    """Replays record i's event if it holds; whether it did (a record of no event holds)."""
    if type(record) is not dict:
        return False
    delta_type = record.get("delta_type")
    if not isinstance(delta_type, str):
        return True                 # no event: nothing to replay (the chain judged it)
    if type(delta_type) is not str:
        return False
    if delta_type not in schema.AUDIT_EVENTS:
        return True
    if type(record.get("forward_delta")) is not str or type(forward) is not dict:
        return False
    if not _event_holds(delta_type, forward, ledger, rules, schema):
        return False
    _replay(i, delta_type, forward, ledger, schema, delta_value)
    return True


_ENDS = ("name", "from", "to")


def _texts(edge: dict[str, Any]) -> tuple[str, str, str] | None:
    """An edge's (name, from, to) when all three are exact text."""
    name, source, target = edge.get("name"), edge.get("from"), edge.get("to")
    if type(name) is str and type(source) is str and type(target) is str:
        return name, source, target
    return None


def _recorded_edges(forward: dict[str, Any]) -> list[tuple[str, str, str, dict[str, Any]]] | None:
    """The edges a creation event recorded, as (name, from, to, edge); None when one is of a
    shape left to the verifier."""
    edges = forward.get("edges", [])
    out = []
    for edge in edges if type(edges) is list else []:
        if type(edge) is not dict:
            if isinstance(edge, Mapping):
                return None
            continue
        key = _texts(edge)
        if key is not None:
            out.append((*key, edge))
        elif any(isinstance(edge.get(k), str) for k in _ENDS):
            return None
    return out


def _event_holds(delta_type: str, forward: dict[str, Any], ledger: Any, rules: Any,
                 schema: Any) -> bool:
    node_type = schema.AUDIT_EVENTS[delta_type][0]
    identifier = forward.get("cia_identifier")
    if identifier is None or (ledger.cia and identifier != ledger.cia[node_type]):
        return False
    for key, optional in schema.REQUIRED_FORWARD[delta_type]:
        if key not in forward or (not optional and forward[key] is None):
            return False
    if delta_type in schema.CREATION_EVENTS:
        node_id = forward.get(schema.CREATION_EVENTS[delta_type][1])
        if (type(node_id) is not str or node_id in ledger.created
                or _recorded_edges(forward) is None):
            return False
    if delta_type in ("WORKFLOW_DECLARED", "SKILL_INVOKED"):
        return True
    workflow_id = forward.get("workflow_id")
    state = ledger.workflows.get(workflow_id) if type(workflow_id) is str else None
    if state is None:
        return False
    if delta_type == "EXECUTION_RECORDED":
        transition = forward.get("workflow_transition")
        if state.status == "DECLARED":
            return (type(transition) is dict and transition.get("from") == "DECLARED"
                    and transition.get("to") == "IN_PROGRESS"
                    and transition.get("workflow_id") == workflow_id)
        return state.status not in schema.TERMINAL_STATUSES and transition is None
    final = forward.get("final_status")     # WORKFLOW_CLOSED
    return (type(final) is str and final in schema.TERMINAL_STATUSES
            and _holds(rules.check_transition, state.status, final))


def _replay(i: int, delta_type: str, forward: dict[str, Any], ledger: Any, schema: Any,
            delta_value: Callable[[Any], Any]) -> None:
    """The bookkeeping of an event that holds."""
    workflow_id = forward.get("workflow_id")
    if delta_type in schema.CREATION_EVENTS:
        node_id = forward[schema.CREATION_EVENTS[delta_type][1]]
        for name, source, target, edge in _recorded_edges(forward) or ():
            ledger.audited_edges[(name, source, target)] = edge
        if _matches(ledger.nodes.get(node_id), delta_type, forward, schema, delta_value):
            ledger.matched.add(node_id)
            ledger.created[node_id] = (delta_type, None, i)
        else:
            ledger.created[node_id] = (delta_type, forward, i)
    if delta_type == "WORKFLOW_DECLARED":
        ledger.workflows[workflow_id] = ledger.Workflow(forward.get("declared_at"))
        return
    if delta_type == "SKILL_INVOKED":
        return
    state = ledger.workflows[workflow_id]
    if delta_type == "EXECUTION_RECORDED":
        if state.status == "DECLARED":
            state.status = "IN_PROGRESS"
            state.status_updated_at = forward["workflow_transition"].get("status_updated_at")
        state.executions += 1
        return
    state.status = forward["final_status"]
    state.status_updated_at = forward.get("status_updated_at")
    state.error_detail = forward.get("error_detail")


# --- edges ------------------------------------------------------------------------------------

def clean_edges(items: Sequence[Any], start: int,
                exported: dict[tuple[str, str, str], Any], ledger: Any) -> int:
    """Reads ``items[start:]`` while each edge holds — one of the seven, only its own
    members, listed once, its properties as L3-008 wants them and as its write recorded
    them (``ledger.audited_edges``) — keeping each in ``exported`` by (name, from, to),
    and in ``ledger.shaped`` when it also joins the right nodes the right way (L3-007:
    node types and direction, the field naming the target, PRECEDES by the rules'
    ``check_precedes`` and ``check_sequence_gap``, SKILL_PRECEDES earlier to later within
    one execution); the index of the first edge it did not read."""
    rules, schema, _ = _layer3()
    for i in range(start, len(items)):
        edge = items[i]
        if type(edge) is not dict:
            return i
        key = _texts(edge)
        if (key is None or key[0] not in schema.EDGES or not edge.keys() <= schema.EDGE_MEMBERS
                or key in exported):
            return i
        name, source, target = key
        properties = edge.get("properties")
        audited = ledger.audited_edges.get(key)
        if (type(audited) is not dict
                or not _holds(rules.check_edge_properties, name, properties,
                              target if name == "PRECEDES" else source)
                or not same_json(properties, audited.get("properties"))):
            return i
        exported[key] = edge
        if _shape_holds(name, source, target, edge, ledger.nodes, ledger.created, rules,
                        schema):
            ledger.shaped.add(key)
    return len(items)


def _shape_holds(name: str, source: str, target: str, edge: Any, nodes: Mapping[str, Any],
                 created: Mapping[str, Created], rules: Any, schema: Any) -> bool:
    from_type, to_type, via, _ = schema.EDGES[name]
    node, other = nodes.get(source), nodes.get(target)
    if type(node) is not dict or node.get("node_type") != from_type:
        return False
    if via is not None:
        return node.get(via) == target and (to_type not in schema.NODE_TYPES or (
            type(other) is dict and other.get("node_type") == to_type))
    if type(other) is not dict or other.get("node_type") != to_type:
        return False
    if name == "PRECEDES":
        if not _holds(rules.check_precedes, node, source, other):
            return False
        properties = edge.get("properties")
        return not (isinstance(properties, Mapping)
                    and type(properties.get("sequence_gap")) is int) or _holds(
            rules.check_sequence_gap, node, other, properties)
    return (node.get("execution_node_id") == other.get("execution_node_id")
            and created.get(source, _UNKNOWN)[2] < created.get(target, _UNKNOWN)[2])


def edge_shapes(exported: Mapping[tuple[str, str, str], Any], shaped: set[Any],
                outgoing: dict[str, set[str]]) -> list[tuple[str, str, str]]:
    """Files every exported edge in ``outgoing`` (name -> the nodes it leaves) and gives the
    (name, from, to) of those (in order) not in ``shaped``."""
    out = []
    for key in exported:
        outgoing.setdefault(key[0], set()).add(key[1])
        if key not in shaped:
            out.append(key)
    return out


def missing_edges(nodes: Mapping[str, Any], outgoing: Mapping[str, set[str]]) -> list[str]:
    """The ids of the nodes (in order) that lack an edge their type requires (or their
    field names), or carry one their field does not name."""
    _, schema, _ = _layer3()
    out = []
    for node_id, node in nodes.items():
        for name, (from_type, _, via, required) in schema.EDGES.items():
            if via is None or node.get("node_type") != from_type:
                continue
            if (node_id in outgoing.get(name, ())) != bool(required or node.get(via) is not None):
                out.append(node_id)
                break
    return out
