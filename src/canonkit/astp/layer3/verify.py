"""Verifying a ``canonkit-layer3/1`` export without trusting anything in it.

``verify(document, *, episode=None)`` recomputes every content hash in Form B, walks the
audit chain (the first broken link is reported), checks that every node has its creation
event with the declared CIA and the CIA-004 fields, replays the workflow state machine over
the recorded events (WF-004, WF-005), checks error consistency (EX-003), immutability
(L3-004, L3-005), retry by new node (L3-006), the seven edges (L3-007, L3-008) and, given the
Episode document, spine isolation (L3-001). Each finding names its vector, the node and the
field. The two INTERRUPTED states of WF-006 are reported as notes, never as findings.

The nodes, audit records and edges in which nothing is found are read by a kernel
(``checker``: compiled ``canonkit.astp._layer3``, twin ``canonkit.astp._py.layer3``), one
pass over each; the methods here judge everything else and word every finding, so a report
is the same whatever the kernel reads (docs/astp-kernel-api.md).
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from canonkit.astp._live import auditor, checker
from canonkit.astp._py.common import same_json, short_repr
from canonkit.astp.audit import verify_audit_chain
from canonkit.astp.canonical_json import parse_canonical
from canonkit.astp.documents import SegmentList, read_episode
from canonkit.astp.layer3.events import delta_value
from canonkit.astp.layer3.hashing import content_hash
from canonkit.astp.layer3.rules import (
    check_edge_properties,
    check_execution_errors,
    check_new_sequence_index,
    check_precedes,
    check_registry_id,
    check_sequence_gap,
    check_transition,
    check_within_episode,
)
from canonkit.astp.layer3.schema import (
    AUDIT_EVENTS,
    AUDIT_RECORD_MEMBERS,
    CREATION_EVENTS,
    EDGE_MEMBERS,
    EDGES,
    EXECUTION,
    EXPORT_MEMBERS,
    FORMAT,
    HASH_VECTOR,
    MUTABLE_DECLARATION_FIELDS,
    NODE_MEMBERS,
    NODE_TYPES,
    REQUIRED_FORWARD,
    RESTATED,
    SKILL,
    TERMINAL_STATUSES,
    WORKFLOW,
    WORKFLOW_STATUSES,
)
from canonkit.errors import ASTPError, Layer3GovernanceError

__all__ = ["WORKFLOW_STATES", "Finding", "Layer3Report", "verify"]

#: how a verified workflow ended, per its replayed status (WF-006 splits INTERRUPTED)
WORKFLOW_STATES = ("declared", "in_progress", "completed", "failed",
                   "interrupted_before_start", "interrupted_after_start")

_HEX64 = re.compile(r"[0-9a-f]{64}")
#: the vector of an unexplained change to a stored node of each type
_CHANGED = {WORKFLOW: "L3-005", EXECUTION: "L3-004", SKILL: "L3-004"}


def _texts(key: tuple[Any, ...]) -> bool:
    """Whether every part of an edge's (name, from, to) is text."""
    return type(key[0]) is str and type(key[1]) is str and type(key[2]) is str or all(
        isinstance(k, str) for k in key)


@dataclass(frozen=True)
class Finding:
    """One violation (or, in ``Layer3Report.notes``, one WF-006 observation)."""
    vector: str
    node_id: str | None
    field: str | None
    detail: str

    def to_json(self) -> dict[str, Any]:
        return {"vector": self.vector, "node_id": self.node_id, "field": self.field,
                "detail": self.detail}


@dataclass(frozen=True)
class Layer3Report:
    """``ok`` when there is no finding. ``workflows`` maps each workflow to how it ended
    (``WORKFLOW_STATES``); ``notes`` hold the WF-006 observations."""
    findings: tuple[Finding, ...]
    notes: tuple[Finding, ...] = ()
    workflows: Mapping[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.findings

    @property
    def vectors(self) -> list[str]:
        """The distinct vectors of the findings, sorted."""
        return sorted({f.vector for f in self.findings})

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "findings": [f.to_json() for f in self.findings],
                "notes": [n.to_json() for n in self.notes], "workflows": dict(self.workflows)}


def verify(document: Any, *, episode: Any = None) -> Layer3Report:
    """Check a ``canonkit-layer3/1`` export; with ``episode`` (an Episode document as
    ``canonkit.astp.read_episode`` reads it) also spine isolation (L3-001) and that the
    workflows are declared within that Episode. Never raises for the export's content; an
    unreadable ``episode`` raises ``InvalidRecordError``."""
    check = _Verification(document)
    check.run(episode)
    return check.report()


class _Workflow:
    """A workflow's status as the recorded events leave it."""

    def __init__(self, declared_at: Any) -> None:
        self.status = "DECLARED"
        self.status_updated_at = declared_at
        self.error_detail: Any = None
        self.executions = 0


class _Verification:
    """One verification. The bookkeeping the kernel (``checker``) keeps with it, for what
    holds, is the ledger its API describes: ``cia``, ``nodes``, ``steps``, ``collisions``,
    ``created``, ``audited_edges``, ``workflows`` (``Workflow``), ``matched``, ``shaped``;
    everything else it leaves to the methods here, which word the findings."""

    Workflow = _Workflow

    def __init__(self, document: Any) -> None:
        self.document = document
        self.findings: list[Finding] = []
        self.found: set[Finding] = set()
        self.notes: list[Finding] = []
        self.states: dict[str, str] = {}
        self.nodes: dict[str, Mapping[str, Any]] = {}
        #: ExecutionNodes by (workflow, sequence_index): the first, and those that came later
        self.steps: dict[tuple[str, int], str] = {}
        self.collisions: list[tuple[str, str]] = []
        self.created: dict[str, tuple[str, Mapping[str, Any], int]] = {}   # node -> event
        self.audited_edges: dict[tuple[str, str, str], Mapping[str, Any]] = {}
        #: each audit record's forward delta as read while its hash was checked (by id: a
        #: record is read once)
        self.forwards: dict[int, Any] = {}
        self.workflows: dict[str, _Workflow] = {}
        self.cia: dict[str, str] = {}
        self.matched: set[str] = set()      # nodes the kernel found to match their event
        self.shaped: set[tuple[str, str, str]] = set()   # edges it found in shape

    def add(self, vector: str, node_id: Any, field: str | None, detail: str) -> None:
        finding = Finding(vector, node_id if isinstance(node_id, str) else None, field, detail)
        if finding not in self.found:
            self.found.add(finding)
            self.findings.append(finding)

    def report(self) -> Layer3Report:
        return Layer3Report(tuple(self.findings), tuple(self.notes), dict(self.states))

    # --- the document ------------------------------------------------------------------------

    def run(self, episode: Any) -> None:
        doc = self.document
        if not isinstance(doc, Mapping):
            self.add("L3-003", None, None, f"not a Layer 3 document: {type(doc).__name__}")
            return
        if doc.get("format") != FORMAT:
            self.add("L3-003", None, "format",
                     f"format {short_repr(doc.get('format'))} is not {FORMAT}")
            return
        extra = next((k for k in doc if k not in EXPORT_MEMBERS), None)
        if extra is not None:
            self.add("L3-003", None, extra if isinstance(extra, str) else None,
                     f"{short_repr(extra)} is not a member of a {FORMAT} export")
        parts = {}
        for name in ("nodes", "edges", "audit"):
            value = doc.get(name)
            if not isinstance(value, list):
                self.add("L3-003", None, name, f"{name} must be a list")
                return
            parts[name] = value
        episode_id = doc.get("episode_id")
        if not isinstance(episode_id, str) or not episode_id:
            self.add("L3-003", None, "episode_id", "episode_id must be the Episode's UUID text")
        elif doc.get("chain_key") != episode_id:
            self.add("CIA-003", None, "chain_key", "the export's chain_key is not its episode_id")
        self.read_cia(doc.get("cia"))
        self.read_nodes(parts["nodes"])
        self.read_audit(parts["audit"], episode_id, doc.get("workspace_id"))
        self.match_nodes_and_events()
        self.check_workflows()
        self.check_retries()
        self.check_edges(parts["edges"])
        if episode is not None:
            self.check_isolation(episode)

    def read_cia(self, cia: Any) -> None:
        if not isinstance(cia, Mapping) or set(cia) != set(NODE_TYPES) or not all(
                isinstance(p, str) and p for p in cia.values()):
            self.add("CIA-001", None, "cia", "the export must name exactly one CIA for each of "
                     + ", ".join(NODE_TYPES))
            return
        self.cia = dict(cia)

    def read_nodes(self, items: Sequence[Any]) -> None:
        i = 0
        while i < len(items):   # the kernel reads the nodes that hold; each other one here
            i = checker.clean_nodes(items, i, self)
            if i < len(items):
                self.read_node(i, items[i])
                i += 1

    def read_node(self, i: int, node: Any) -> None:
        node_type = node.get("node_type") if isinstance(node, Mapping) else None
        node_id = node.get("node_id") if isinstance(node, Mapping) else None
        if node_type not in NODE_TYPES or not isinstance(node_id, str):
            self.add("L3-003", node_id, f"nodes[{i}]",
                     "not a Layer 3 node (node_type and node_id)")
            return
        assert isinstance(node, Mapping)
        if node_id in self.nodes:
            self.check_duplicate(self.nodes[node_id], node)
            return
        self.nodes[node_id] = node
        if node_type == EXECUTION:
            checker.note_step(self, node_id, node)
        self.check_members(node_type, node_id, node)
        self.check_node(node_type, node_id, node)

    def check_members(self, node_type: str, node_id: str, node: Mapping[str, Any]) -> None:
        """A node holds its preimage and excluded fields and nothing else: a member outside
        them would pass unhashed."""
        if node.keys() <= NODE_MEMBERS[node_type]:
            return
        for key in node:
            if not isinstance(key, str) or key not in NODE_MEMBERS[node_type]:
                self.add(_CHANGED[node_type], node_id, key if isinstance(key, str) else None,
                         f"{short_repr(key)} is not a field of a {node_type}")
                return

    def check_duplicate(self, first: Mapping[str, Any], again: Mapping[str, Any]) -> None:
        """Two records of one node may differ only in a declaration's mutable trio."""
        node_type = first.get("node_type")
        allowed = MUTABLE_DECLARATION_FIELDS if node_type == WORKFLOW else ()
        changed = sorted((k for k in set(first) | set(again) if k not in allowed
                          and not same_json(first.get(k, _MISSING), again.get(k, _MISSING))),
                         key=short_repr)
        if changed:
            self.add(_CHANGED.get(str(node_type), "L3-004"), first.get("node_id"),
                     changed[0] if isinstance(changed[0], str) else None,
                     f"two records of one node differ in {', '.join(map(short_repr, changed))}")

    def check_node(self, node_type: str, node_id: str, node: Mapping[str, Any]) -> None:
        stored = node.get("content_hash")
        try:
            computed = content_hash(node_type, node)
        except ASTPError as exc:
            self.add(HASH_VECTOR[node_type], node_id, exc.detail if isinstance(exc.detail, str)
                     else None, f"the content hash cannot be computed: {exc}")
        else:
            if not isinstance(stored, str) or not _HEX64.fullmatch(stored):
                self.add(HASH_VECTOR[node_type], node_id, "content_hash",
                         "content_hash is not 64 lowercase hex characters")
            elif stored != computed:
                self.add(HASH_VECTOR[node_type], node_id, "content_hash",
                         f"content_hash does not recompute in Form B (computed {computed})")
        if node_type == EXECUTION:
            self.guard(check_execution_errors, node)
        elif node_type == SKILL:
            self.guard(check_registry_id, node)
        elif node.get("status") not in WORKFLOW_STATUSES:
            self.add("WF-004", node_id, "status",
                     f"unknown workflow status {short_repr(node.get('status'))}")

    def guard(self, check: Any, *args: Any) -> bool:
        """Run a rule of ``rules``; its refusal becomes a finding. Whether it held."""
        try:
            check(*args)
        except Layer3GovernanceError as exc:
            self.add(exc.vector, exc.node_id, exc.field, str(exc))
            return False
        return True

    # --- the audit chain -----------------------------------------------------------------------

    def read_audit(self, records: Sequence[Any], episode_id: Any, workspace_id: Any) -> None:
        mappings = [r for r in records if type(r) is dict or isinstance(r, Mapping)]
        if len(mappings) != len(records):
            self.add("CIA-003", None, "audit", "an audit record is not an object")
            return
        # the kernel checks the chain and replays the events that hold in one pass; a chain
        # that does not hold is judged here, then each event it did not replay
        forwards, i = checker.clean_records(mappings, episode_id, workspace_id, self)
        if forwards is None:
            forwards = self.check_chain(mappings, episode_id, workspace_id)
        while i < len(mappings):
            self.read_record(i, mappings[i], forwards[i])
            i = checker.clean_events(mappings, forwards, i + 1, self)

    def check_chain(self, mappings: Sequence[Mapping[str, Any]], episode_id: Any,
                    workspace_id: Any) -> list[Any]:
        """The chain's findings; each record's forward delta as read while its hash was
        checked (None where it was not)."""
        for i, record in enumerate(mappings):
            if record.keys() <= AUDIT_RECORD_MEMBERS:
                continue
            extra = next((k for k in record if k not in AUDIT_RECORD_MEMBERS), None)
            if extra is not None:
                self.add("CIA-003", None, f"audit[{i}]", f"{short_repr(extra)} is not a field "
                         "of an audit record v2: it would pass unhashed")
                break
        verdict = verify_audit_chain(mappings, record_hash=self.record_hash)
        if not verdict.ok:
            index = verdict.index or 0
            affected = mappings[index].get("affected_nodes")
            node = affected[0] if isinstance(affected, list) and affected else None
            self.add("CIA-003", node, f"audit[{index}]",
                     f"the audit chain breaks at record {index}: {verdict.reason}")
        for i, record in enumerate(mappings):
            if record.get("chain_key") != episode_id:
                self.add("CIA-003", None, f"audit[{i}].chain_key",
                         "the chain key is not the export's episode_id")
                break
        if not isinstance(workspace_id, str) or not workspace_id:
            self.add("L3-003", None, "workspace_id", "workspace_id must be non-empty text")
        for i, record in enumerate(mappings):
            if record.get("session_id") != workspace_id:
                self.add("CIA-003", None, f"audit[{i}].session_id",
                         "the record's session_id is not the export's workspace_id")
                break
        return [self.forwards.get(id(record)) for record in mappings]

    def read_record(self, i: int, record: Mapping[str, Any], forward: Any) -> None:
        delta_type = record.get("delta_type")   # a non-text one broke the chain
        if isinstance(delta_type, str) and delta_type in AUDIT_EVENTS:
            read = self.read_event(i, delta_type, record, forward)
            if read is not None:
                self.replay(i, str(delta_type), read)

    def record_hash(self, record: Mapping[str, Any]) -> str:
        """The record's hash, keeping its forward delta for ``read_event`` (by id: a
        record is read once)."""
        digest, forward = auditor.audit_record_digest(record)
        if forward is not None:
            self.forwards[id(record)] = forward
        return digest

    def read_event(self, i: int, delta_type: str, record: Mapping[str, Any],
                   forward: Any) -> dict[str, Any] | None:
        """The record's forward delta (``forward``: as read with its hash, None when it was
        not) if it is an object, with its CIA-001/002/004 findings."""
        node_type = AUDIT_EVENTS[delta_type][0]
        affected = record.get("affected_nodes")
        node = affected[0] if isinstance(affected, list) and affected else None
        text = record.get("forward_delta")
        if not isinstance(text, str):
            self.add("CIA-004", node, f"audit[{i}].forward_delta",
                     f"not canonical JSON text: {short_repr(text)}")
            return None
        try:
            if forward is None:     # the chain broke before this record, or its text is JSON null
                forward = parse_canonical(text)
        except ASTPError as exc:
            self.add("CIA-004", node, f"audit[{i}].forward_delta", f"unreadable: {exc}")
            return None
        if not isinstance(forward, dict):
            self.add("CIA-004", node, f"audit[{i}].forward_delta", "not a JSON object")
            return None
        cia = forward.get("cia_identifier")
        if cia is None:
            self.add("CIA-002", node, f"audit[{i}].cia_identifier",
                     f"{delta_type} carries no cia_identifier")
        elif self.cia and cia != self.cia[node_type]:
            self.add("CIA-001", node, f"audit[{i}].cia_identifier",
                     f"{delta_type} written by {short_repr(cia)}, not the CIA "
                     f"{short_repr(self.cia[node_type])}")
        for key, optional in REQUIRED_FORWARD[delta_type]:
            if key not in forward or (not optional and forward[key] is None):
                self.add("CIA-004", node, f"audit[{i}].{key}", f"{delta_type} lacks {key}")
        return forward

    def replay(self, i: int, delta_type: str, forward: dict[str, Any]) -> None:
        """The state machine over the recorded events, in chain order."""
        if delta_type in CREATION_EVENTS:
            node_type, id_field = CREATION_EVENTS[delta_type]
            node_id = forward.get(id_field)
            if not isinstance(node_id, str):
                return
            if node_id in self.created:
                self.add(_CHANGED[node_type], node_id, id_field, "the node is written twice")
                return
            self.created[node_id] = (delta_type, forward, i)
            edges = forward.get("edges", [])
            for edge in edges if isinstance(edges, list) else []:
                if isinstance(edge, Mapping):
                    key = (edge.get("name"), edge.get("from"), edge.get("to"))
                    if _texts(key):
                        self.audited_edges[key] = edge  # type: ignore[index]
        workflow_id = forward.get("workflow_id")
        if delta_type == "WORKFLOW_DECLARED":
            if isinstance(workflow_id, str):
                self.workflows[workflow_id] = _Workflow(forward.get("declared_at"))
            return
        if delta_type == "SKILL_INVOKED":
            return
        state = self.workflows.get(workflow_id) if isinstance(workflow_id, str) else None
        node = forward.get("execution_node_id", workflow_id)
        if state is None:
            self.add("L3-007", node, "workflow_id", f"{delta_type} names no declared workflow")
            return
        if delta_type == "EXECUTION_RECORDED":
            transition = forward.get("workflow_transition")
            if state.status == "DECLARED":
                if not (isinstance(transition, Mapping) and transition.get("from") == "DECLARED"
                        and transition.get("to") == "IN_PROGRESS"
                        and transition.get("workflow_id") == workflow_id):
                    self.add("WF-005", workflow_id, "status", "the first ExecutionNode did not "
                             "move the workflow DECLARED -> IN_PROGRESS in its write")
                state.status = "IN_PROGRESS"
                if isinstance(transition, Mapping):
                    state.status_updated_at = transition.get("status_updated_at")
            elif state.status in TERMINAL_STATUSES:
                self.add("WF-004", node, "workflow_id",
                         f"an execution recorded after the workflow became {state.status}")
            elif transition is not None:
                self.add("WF-004", workflow_id, "status",
                         "a DECLARED -> IN_PROGRESS transition recorded twice")
            state.executions += 1
            return
        final = forward.get("final_status")     # WORKFLOW_CLOSED
        try:
            if not isinstance(final, str) or final not in TERMINAL_STATUSES:
                raise Layer3GovernanceError(f"closing status {short_repr(final)} is not terminal",
                                            vector="WF-004")
            check_transition(state.status, final)
        except Layer3GovernanceError as exc:
            self.add("WF-004", workflow_id, "status", f"WORKFLOW_CLOSED: {exc}")
        state.status = str(final)
        state.status_updated_at = forward.get("status_updated_at")
        state.error_detail = forward.get("error_detail")

    # --- nodes against their events -------------------------------------------------------------

    def match_nodes_and_events(self) -> None:
        for node_id in checker.unmatched_nodes(self.nodes, self.matched):
            self.match_node(node_id, self.nodes[node_id])
        for node_id, (delta_type, _, i) in self.created.items():
            if node_id not in self.nodes:
                node_type = CREATION_EVENTS[delta_type][0]
                self.add(_CHANGED[node_type], node_id, None,
                         f"the {node_type} written by audit[{i}] is missing from the export")

    def match_node(self, node_id: str, node: Mapping[str, Any]) -> None:
        node_type = node["node_type"]
        event = self.created.get(node_id)
        if event is None or CREATION_EVENTS[event[0]][0] != node_type:
            self.add("CIA-003", node_id, None,
                     f"a durable {node_type} with no preceding creation event")
            return
        delta_type, forward, _ = event
        for key, name in RESTATED[delta_type].items():
            if key not in forward:
                continue        # reported as CIA-004
            value = node.get(name)
            try:    # ids, names and instants (ASCII text) read back as they are
                same = forward[key] == (value if type(value) is str and value.isascii()
                                        else delta_value(value))
            except ASTPError:
                same = False
            if not same:
                vector = "EX-002" if (node_type, name) == (EXECUTION, "status") else _CHANGED[node_type]
                self.add(vector, node_id, name,
                         f"{name} differs from the value its {delta_type} event recorded")

    def check_workflows(self) -> None:
        for workflow_id, state in self.workflows.items():
            node = self.nodes.get(workflow_id)
            if node is None or node.get("node_type") != WORKFLOW:
                continue
            if node.get("status") != state.status:
                vector = ("WF-005" if node.get("status") == "DECLARED" and state.executions
                          else "WF-004")
                self.add(vector, workflow_id, "status", f"status {short_repr(node.get('status'))}, "
                         f"but the recorded transitions lead to {state.status}")
            for name, expected in (("status_updated_at", state.status_updated_at),
                                   ("error_detail", state.error_detail)):
                try:
                    same = delta_value(node.get(name)) == expected
                except ASTPError:
                    same = False
                if not same:
                    self.add("L3-005", workflow_id, name,
                             f"{name} differs from the value its last transition recorded")
            status = state.status
            if status == "INTERRUPTED":
                started = state.executions > 0
                status = "interrupted_after_start" if started else "interrupted_before_start"
                self.notes.append(Finding(
                    "WF-006", workflow_id, "status",
                    f"INTERRUPTED after {state.executions} ExecutionNode(s): started, terminated"
                    if started else "INTERRUPTED with no ExecutionNode: declared, never started"))
            self.states[workflow_id] = status.lower()

    def check_retries(self) -> None:
        # an ExecutionNode whose (workflow, sequence_index) an earlier one took, judged by
        # the writer's rule against that one (a field of another type: a hash finding)
        for first, later in self.collisions:
            self.guard(check_new_sequence_index, [self.nodes[first]], self.nodes[later])

    # --- the seven edges -----------------------------------------------------------------------

    def check_edges(self, items: Sequence[Any]) -> None:
        exported: dict[tuple[str, str, str], Mapping[str, Any]] = {}
        i = 0
        while i < len(items):   # the kernel reads the edges that hold; each other one here
            i = checker.clean_edges(items, i, exported, self)
            if i < len(items):
                self.read_edge(i, items[i], exported)
                i += 1
        for key in self.audited_edges:
            if key not in exported:
                flipped = (key[0], key[2], key[1])
                if flipped not in exported:
                    self.add("L3-007", key[1], key[0], f"{key[0]} {key[1]} -> {key[2]} is missing")
        self.check_edge_shapes(exported)

    def read_edge(self, i: int, edge: Any,
                  exported: dict[tuple[str, str, str], Mapping[str, Any]]) -> None:
        key = ((edge.get("name"), edge.get("from"), edge.get("to"))
               if isinstance(edge, Mapping) else (None, None, None))
        if not _texts(key) or key[0] not in EDGES:
            self.add("L3-007", None, f"edges[{i}]",
                     f"not one of the seven edges: {short_repr(key[0])}")
            return
        assert isinstance(edge, Mapping)
        name, source, target = key
        extra = (None if edge.keys() <= EDGE_MEMBERS
                 else next((k for k in edge if k not in EDGE_MEMBERS), None))
        if extra is not None:
            self.add("L3-007", source, f"edges[{i}]", f"{short_repr(extra)} is not a member "
                     "of an edge (name, from, to, properties)")
        if key in exported:
            self.add("L3-007", source, f"edges[{i}]", f"{name} edge listed twice")
        exported[key] = edge  # type: ignore[index]
        self.shaped.discard(key)     # judged again, as this edge, by check_edge_shape
        subject = target if name == "PRECEDES" else source
        properties = edge.get("properties")
        shaped = self.guard(check_edge_properties, name, properties, subject)
        if key not in self.audited_edges:
            flipped = (name, target, source)
            how = ("misdirected (its write recorded it the other way)"
                   if flipped in self.audited_edges else "recorded by no write")
            self.add("L3-007", source, f"edges[{i}]", f"{name} {source} -> {target}: {how}")
        elif shaped and not same_json(properties, self.audited_edges[key].get("properties")):
            self.add("L3-008", subject, "properties",
                     f"{name} properties differ from the ones its write recorded")

    def check_edge_shapes(self, exported: Mapping[tuple[str, str, str], Mapping[str, Any]]) -> None:
        """Every node has its required edges, each edge joins the right node types in the
        right direction, and PRECEDES carries its properties."""
        outgoing: dict[str, set[str]] = {}    # edge name -> the nodes it leaves
        for key in checker.edge_shapes(exported, self.shaped, outgoing):
            self.check_edge_shape(*key, exported[key])
        for node_id in checker.missing_edges(self.nodes, outgoing):
            self.check_required_edges(node_id, self.nodes[node_id], outgoing)

    def check_edge_shape(self, name: str, source: str, target: str,
                         edge: Mapping[str, Any]) -> None:
        from_type, to_type, via, _ = EDGES[name]
        node = self.nodes.get(source)
        if node is None or node.get("node_type") != from_type:
            self.add("L3-007", source, name, f"{name} must start at a node of type {from_type}")
            return
        if via is not None:
            if node.get(via) != target:
                self.add("L3-007", source, name, f"{name} must point to the node's {via}")
            if to_type in NODE_TYPES and (self.nodes.get(target) or {}).get("node_type") != to_type:
                self.add("L3-007", source, name, f"{name} must end at a node of type {to_type}")
            return
        other = self.nodes.get(target)
        if other is None or other.get("node_type") != to_type:
            self.add("L3-007", source, name, f"{name} must end at a node of type {to_type}")
            return
        if name == "PRECEDES":
            self.check_precedes_edge(source, target, node, other, edge)
        elif node.get("execution_node_id") != other.get("execution_node_id") or not (
                self.created.get(source, ("", {}, -1))[2] < self.created.get(target, ("", {}, -1))[2]):
            self.add("L3-007", source, name, "SKILL_PRECEDES joins two skills of one execution, "
                                             "earlier to later")

    def check_required_edges(self, node_id: str, node: Mapping[str, Any],
                             outgoing: Mapping[str, set[str]]) -> None:
        for name, (from_type, _, via, required) in EDGES.items():
            if via is None or node.get("node_type") != from_type:
                continue
            present = node_id in outgoing.get(name, ())
            wanted = required or node.get(via) is not None
            if wanted and not present:
                self.add("L3-007", node_id, name, f"the {name} edge is missing")
            elif not wanted and present:
                self.add("L3-007", node_id, name, f"{name} without a {via}")

    def check_precedes_edge(self, source: str, target: str, earlier: Mapping[str, Any],
                       later: Mapping[str, Any], edge: Mapping[str, Any]) -> None:
        if not self.guard(check_precedes, earlier, source, later):
            return
        properties = edge.get("properties")       # its shape: check_edge_properties
        if isinstance(properties, Mapping) and type(properties.get("sequence_gap")) is int:
            self.guard(check_sequence_gap, earlier, later, properties)

    # --- spine isolation -----------------------------------------------------------------------

    def check_isolation(self, episode: Any) -> None:
        read = read_episode(episode)
        segments: Any = read.segments
        if not hasattr(segments, "spine_hits"):   # a SegmentList or the compiled segment table
            segments = SegmentList(segments)
        stored = {node_id: node.get("content_hash") for node_id, node in self.nodes.items()}
        ids, hashes = segments.spine_hits(self.nodes, [h for h in stored.values()
                                                        if isinstance(h, str)])
        hashes |= set(read.excluded_hashes) | set(read.structural_member_hashes)
        hashes.update(s.content_hash for s in read.signals)
        for node_id, node in self.nodes.items():
            if node_id in ids:
                self.add("L3-001", node_id, "node_id",
                         "a Layer 3 node_id is embedded in a Layer 1/2 preimage of the Episode")
            if isinstance(stored[node_id], str) and stored[node_id] in hashes:
                self.add("L3-001", node_id, "content_hash",
                         "a Layer 3 content hash is among the Episode's spine inputs")
            self.guard(check_within_episode, node, read.episode_id)


_MISSING = object()
