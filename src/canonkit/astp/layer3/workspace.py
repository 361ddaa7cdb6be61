"""The writer side of Layer 3: a ``Workspace`` that a provenance service can embed.

Every write is checked completely first (the principal is the Cognitive Implementation
Authority of the node type, CIA-001; the node hashes in Form B; the rules of ASTP.md §19.3
hold), then its audit record v2 is emitted onto the chain (W-L3-4, CIA-002…004), and only
then is the write applied; a refused write leaves nothing behind. The first ExecutionNode of
a workflow moves it DECLARED -> IN_PROGRESS in the same write (WF-005). Stored nodes never
change, except a WorkflowDeclaration's ``status``/``status_updated_at``/``error_detail``
through ``close_workflow`` (L3-I3, L3-I4); a retry is a new node (L3-I5).

``export()`` gives the ``canonkit-layer3/1`` document (docs/astp-layer3.md) that
``canonkit.astp.layer3.verify`` checks without trusting any of it. Over a JSON-lines journal
(``journal=PATH``, resumed with ``Workspace.open(PATH)``) each audit record reaches the disk
(written, flushed, fsynced) before the write it announces, and the write right after it.
The journal is read back through the strict JSON reader, line by line; a last line without
its newline (a write cut off) is refused with its offset, never appended onto. A write
holding an integer that reader refuses (more than ``MAX_INTEGER_DIGITS`` digits) is refused
before anything is written, so every export and journal reads back.
"""
from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

from canonkit.astp._live import former
from canonkit.astp._py.common import (
    L3_DATETIME,
    L3_OBJECT,
    l3_field,
    l3_value,
    readable,
    short_repr,
)
from canonkit._files import JSONLines, loads_json, open_regular
from canonkit.astp.layer3.events import make_record
from canonkit.astp.layer3.rules import (
    check_closing_status,
    check_declaration_changes,
    check_edge_properties,
    check_executes_within,
    check_execution_errors,
    check_invoked_within,
    check_new_node_id,
    check_new_sequence_index,
    check_open_workflow,
    check_precedes,
    check_principal,
    check_registry_id,
    check_terminal_on_write,
    check_transition,
    check_within_episode,
)
from canonkit.astp.layer3.schema import (
    EXECUTION,
    EXPORT_MEMBERS,
    FIELD_ORDER,
    FORMAT,
    JOURNAL_FORMAT,
    LAYOUTS,
    NODE_TYPES,
    SCHEMA_VERSION,
    SKILL,
    WORKFLOW,
    WORKFLOW_VERSION,
)
from canonkit.errors import InvalidFieldError, InvalidRecordError, JSONInputError

__all__ = ["EXPORT_MEMBERS", "FORMAT", "JOURNAL_FORMAT", "Workspace"]

_Stored = TypeVar("_Stored")


#: fields a write may leave out, and what the Workspace stores for them
_DEFAULTS: dict[str, dict[str, Any]] = {
    WORKFLOW: {"schema_version": SCHEMA_VERSION, "workflow_version": WORKFLOW_VERSION,
               "intention_id": None, "mandate_id": None, "expected_outputs": None,
               "timeout_ms": None},
    EXECUTION: {"schema_version": SCHEMA_VERSION, "duration_ms": None, "output_state": None,
                "error_detail": None, "error_type": None},
    SKILL: {"schema_version": SCHEMA_VERSION, "duration_ms": None, "output_result": None,
            "error_detail": None},
}
#: the fields a write may name (SK-003's registry_id too: it is refused when not null)
_WRITABLE = {t: frozenset(FIELD_ORDER[t]) | {"registry_id"} for t in NODE_TYPES}
#: the fields that take an instant; the Workspace's clock fills them when left out
_INSTANT = {WORKFLOW: "declared_at", EXECUTION: "executed_at", SKILL: "invoked_at"}
_LATEST: Any = object()
#: the longest journal line read (one write's nodes and edges); longer lines are refused
MAX_JOURNAL_LINE = 256 * 1024 * 1024


def _copy(value: _Stored) -> _Stored:
    """A deep copy of stored JSON values (exact dicts, lists, text, integers of any size,
    booleans, None), in the Form B kernel."""
    copied: _Stored = former.copy_stored(value)
    return copied


def _refused(path: Path, number: int | None, offset: int, reason: str,
             message: str) -> InvalidRecordError:
    """A journal refusal: ``offset`` (bytes into the file) and ``detail`` (the reason) say
    where and why; the message names the path and line."""
    where = f"{path}:{number}" if number is not None else f"{path}"
    return InvalidRecordError(f"{where}: {message} (byte {offset})", offset=offset,
                              detail=reason)


def _journal_entries(path: Path, handle: BinaryIO) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """``(line number, byte offset, entry)`` of each line of an open journal, read through
    the strict JSON reader; blank lines hold no entry. Refused (``_refused``): a line over
    ``MAX_JOURNAL_LINE``, a last line without its newline (a write cut off: nothing is
    appended onto it), a line that is not strict JSON or not an object."""
    lines = JSONLines(handle, max_line=MAX_JOURNAL_LINE)
    end = 0
    for number, line in lines:
        start, end = end, lines.consumed
        if line is None:
            raise _refused(path, number, start, "line_too_long",
                           f"a line over the {MAX_JOURNAL_LINE}-byte limit")
        if not line:
            continue    # JSON lines: a blank line holds no document
        if not line.endswith(b"\n"):
            raise _refused(path, number, start, "torn_line",
                           "the last line has no newline: a write was cut off; the journal "
                           "is whole up to this offset")
        try:
            entry = loads_json(line[:-1], source="the line")   # the newline ends it
        except JSONInputError as exc:   # exc.offset counts from the line's start
            raise _refused(path, number, start + (exc.offset or 0), exc.code, str(exc)) from None
        if not isinstance(entry, dict):
            raise _refused(path, number, start, "not_an_entry", "not a journal entry (an object)")
        yield number, start, entry


class Workspace:
    """An in-memory Layer 3 workspace of one Episode.

    ``cia`` is the one principal allowed to write every node type, or a mapping from each
    of ``WorkflowDeclaration``, ``ExecutionNode``, ``SkillInvocation`` to its principal.
    ``clock`` (default: now, UTC) stamps audit records and fills a write's instant when it
    is left out; ``new_id`` (default: ``uuid.uuid4``) makes node and audit identifiers.
    ``journal`` (a path that must not exist yet) keeps the workspace in a JSON-lines file.
    """

    def __init__(self, *, workspace_id: str, episode_id: Any, cia: str | Mapping[str, str],
                 clock: Callable[[], datetime] | None = None,
                 new_id: Callable[[], uuid.UUID] | None = None,
                 journal: str | os.PathLike[str] | None = None) -> None:
        if not isinstance(workspace_id, str) or not workspace_id:
            raise InvalidFieldError("workspace_id must be non-empty text", detail="workspace_id")
        self.workspace_id = workspace_id
        self.episode_id: str = l3_value(episode_id) if isinstance(episode_id, uuid.UUID) else episode_id
        if not isinstance(self.episode_id, str) or not self.episode_id:
            raise InvalidFieldError("episode_id must be a UUID", detail="episode_id")
        self.cia = self._cia(cia)
        self.chain_key = self.episode_id   # the audit chain-key dimension: the Episode
        self._clock = clock or (lambda: datetime.now(timezone.utc))
        self._new_id = new_id or uuid.uuid4
        self._nodes: dict[str, dict[str, Any]] = {}
        self._order: list[str] = []
        self._edges: list[dict[str, Any]] = []
        self._audit: list[dict[str, Any]] = []
        self._latest_step: dict[str, str] = {}     # workflow -> its last ExecutionNode
        self._latest_skill: dict[str, str] = {}    # execution -> its last SkillInvocation
        #: (workflow, sequence_index) -> its ExecutionNode: L3-006 without a scan of every node
        self._steps: dict[tuple[Any, Any], dict[str, Any]] = {}
        self._journal: Path | None = None
        self._broken: str | None = None             # a journal write failed: no more writes
        if journal is not None:
            self._journal = Path(journal)
            with open(self._journal, "x", encoding="utf-8") as handle:   # never overwrite
                handle.write(json.dumps({"format": JOURNAL_FORMAT, "workspace_id": workspace_id,
                                         "episode_id": self.episode_id, "cia": self.cia}) + "\n")
                handle.flush()
                os.fsync(handle.fileno())

    @classmethod
    def open(cls, journal: str | os.PathLike[str], *, clock: Callable[[], datetime] | None = None,
             new_id: Callable[[], uuid.UUID] | None = None) -> Workspace:
        """Resume the workspace kept in ``journal``: its lines are read through the strict
        JSON reader, its writes replayed and the result verified; later writes append.
        Otherwise ``InvalidRecordError`` naming the line, with ``offset`` the byte of the
        file and ``detail`` the reason (docs/astp-layer3.md): a torn last line, a line that
        is not strict JSON, entries out of order, an audit record whose write never
        followed, or the first finding's vector."""
        from canonkit.astp.layer3.verify import verify

        path = Path(journal)
        ws: Workspace | None = None
        pending: tuple[int, int] | None = None   # line and offset of an audit awaiting its write
        with open_regular(path) as handle:   # a FIFO or device is refused, never blocked on
            for number, offset, entry in _journal_entries(path, handle):
                if ws is None:
                    ws = cls._from_header(path, number, offset, entry, clock, new_id)
                elif set(entry) == {"audit"} and pending is None:
                    ws._audit.append(entry["audit"])
                    pending = (number, offset)
                elif set(entry) == {"apply"} and pending is not None:
                    ws._replay(entry["apply"], path, number, offset)
                    pending = None
                else:
                    raise _refused(path, number, offset, "out_of_order", "out of order (each "
                                   "write is one {\"audit\": ...} line, then one {\"apply\": ...})")
        if ws is None:
            raise _refused(path, None, 0, "empty", "empty journal")
        if pending is not None:
            raise _refused(path, *pending, "unfinished_write",
                           "the write this audit record announces never completed")
        report = verify(ws.export())
        if not report.ok:
            first = report.findings[0]
            raise InvalidRecordError(f"{path}: does not verify: {first.vector} {first.node_id}: "
                                     f"{first.detail}", detail=first.vector)
        ws._journal = path
        return ws

    @classmethod
    def _from_header(cls, path: Path, number: int, offset: int, entry: dict[str, Any],
                     clock: Callable[[], datetime] | None,
                     new_id: Callable[[], uuid.UUID] | None) -> Workspace:
        if entry.get("format") != JOURNAL_FORMAT or set(entry) != {
                "format", "workspace_id", "episode_id", "cia"}:
            raise _refused(path, number, offset, "not_a_journal",
                           f"not a {JOURNAL_FORMAT} journal header")
        try:
            return cls(workspace_id=entry["workspace_id"], episode_id=entry["episode_id"],
                       cia=entry["cia"], clock=clock, new_id=new_id)
        except InvalidFieldError as exc:
            raise _refused(path, number, offset, "not_a_journal",
                           f"not a {JOURNAL_FORMAT} journal header: {exc}") from None

    def _replay(self, apply: Any, path: Path, number: int, offset: int) -> None:
        if not isinstance(apply, dict) or set(apply) != {"nodes", "edges"} or not isinstance(
                apply["nodes"], list) or not isinstance(apply["edges"], list):
            raise _refused(path, number, offset, "not_a_write",
                           "not a write ({\"nodes\": [...], \"edges\": [...]})")
        for node in apply["nodes"]:
            if not isinstance(node, dict) or not isinstance(node.get("node_id"), str):
                raise _refused(path, number, offset, "not_a_write", "not a node")
            if node["node_id"] not in self._nodes:
                self._order.append(node["node_id"])
                if node.get("node_type") == EXECUTION:
                    self._latest_step[str(node.get("workflow_id"))] = node["node_id"]
                    self._index_step(node)
                elif node.get("node_type") == SKILL:
                    self._latest_skill[str(node.get("execution_node_id"))] = node["node_id"]
            self._nodes[node["node_id"]] = node
        self._edges.extend(apply["edges"])

    def _log(self, entry: dict[str, Any]) -> None:
        """Append one line to the journal and fsync it; a failure ends all further writes."""
        if self._journal is None:
            return
        line = json.dumps(entry, ensure_ascii=False, allow_nan=False) + "\n"
        try:
            with open(self._journal, "a", encoding="utf-8") as handle:
                handle.write(line)
                handle.flush()
                os.fsync(handle.fileno())
        except OSError as exc:
            self._broken = f"the journal write failed: {exc}"
            raise

    @staticmethod
    def _cia(cia: Any) -> dict[str, str]:
        if isinstance(cia, str):
            cia = {t: cia for t in NODE_TYPES}
        if not isinstance(cia, Mapping) or set(cia) != set(NODE_TYPES) or not all(
                isinstance(p, str) and p for p in cia.values()):
            raise InvalidFieldError("cia must name one principal, or one principal for each of "
                                    + ", ".join(NODE_TYPES), detail="cia")
        return {t: cia[t] for t in NODE_TYPES}

    # --- reading ------------------------------------------------------------------------

    def node(self, node_id: str) -> dict[str, Any]:
        """A copy of the stored node (``KeyError`` if there is none)."""
        return _copy(self._nodes[node_id])

    @property
    def audit(self) -> list[dict[str, Any]]:
        """The audit records v2, in chain order (copies)."""
        return _copy(self._audit)

    def export(self) -> dict[str, Any]:
        """The ``canonkit-layer3/1`` document: nodes, edges and audit records."""
        return {
            "format": FORMAT,
            "workspace_id": self.workspace_id,
            "episode_id": self.episode_id,
            "chain_key": self.chain_key,
            "cia": dict(self.cia),
            "nodes": [_copy(self._nodes[i]) for i in self._order],
            "edges": _copy(self._edges),
            "audit": _copy(self._audit),
        }

    # --- writes -------------------------------------------------------------------------

    def declare_workflow(self, *, principal: str, **fields: Any) -> dict[str, Any]:
        """Write a WorkflowDeclaration (status DECLARED) and its DECLARED_WITHIN,
        SERVES_INTENTION and SPAWNED_BY_MANDATE edges."""
        node = self._new_node(WORKFLOW, principal, fields)
        node["status"] = "DECLARED"
        node["status_updated_at"] = node["declared_at"]
        node["error_detail"] = None
        edges = [self._edge("DECLARED_WITHIN", node["node_id"], node["episode_id"])]
        for name, field in (("SERVES_INTENTION", "intention_id"), ("SPAWNED_BY_MANDATE", "mandate_id")):
            if node[field] is not None:
                edges.append(self._edge(name, node["node_id"], node[field]))
        forward = {"workflow_id": node["node_id"], "episode_id": node["episode_id"],
                   "intention_id": node["intention_id"], "mandate_id": node["mandate_id"],
                   "declared_by": node["declared_by"], "declared_at": node["declared_at"],
                   "content_hash": node["content_hash"], "cia_identifier": principal,
                   "edges": edges}
        reverse = {"reverse_delete_workflow_id": node["node_id"]}
        self._emit("WORKFLOW_DECLARED", principal, forward, reverse, [node["node_id"]])
        return self._store(node, edges)

    def record_execution(self, *, principal: str, preceded_by: Any = _LATEST,
                         edge_type: str = "SEQUENTIAL", **fields: Any) -> dict[str, Any]:
        """Write an ExecutionNode and its EXECUTES_WITHIN edge, and a PRECEDES edge from
        ``preceded_by`` (default: the workflow's latest ExecutionNode; None for none) with
        ``edge_type``. The workflow's first ExecutionNode moves it to IN_PROGRESS (WF-005)."""
        node = self._new_node(EXECUTION, principal, fields)
        check_execution_errors(node)
        workflow = self._workflow(node["workflow_id"], node)
        status = workflow["status"]
        check_open_workflow(workflow, node)
        taken = self._steps.get(self._step_key(node))
        check_new_sequence_index([taken] if taken is not None else [], node)
        edges = [self._edge("EXECUTES_WITHIN", node["node_id"], node["workflow_id"])]
        before = self._latest_step.get(node["workflow_id"]) if preceded_by is _LATEST else preceded_by
        if before is not None:
            edges.append(self._precedes(before, node, edge_type))
        forward: dict[str, Any] = {
            "execution_node_id": node["node_id"], "workflow_id": node["workflow_id"],
            "episode_id": node["episode_id"], "sequence_index": node["sequence_index"],
            "agent_id": node["agent_id"], "status": node["status"],
            "executed_at": node["executed_at"], "content_hash": node["content_hash"],
            "cia_identifier": principal, "edges": edges}
        reverse: dict[str, Any] = {"reverse_delete_execution_node_id": node["node_id"]}
        affected = [node["node_id"]]
        if status == "DECLARED":     # WF-005: atomically with this write, in this record
            check_transition("DECLARED", "IN_PROGRESS")
            forward["workflow_transition"] = {"workflow_id": workflow["node_id"],
                                              "from": "DECLARED", "to": "IN_PROGRESS",
                                              "status_updated_at": node["executed_at"]}
            reverse.update(reverse_prior_status="DECLARED",
                           reverse_prior_status_updated_at=workflow["status_updated_at"])
            affected.append(workflow["node_id"])
        self._emit("EXECUTION_RECORDED", principal, forward, reverse, affected)
        if status == "DECLARED":
            workflow["status"] = "IN_PROGRESS"
            workflow["status_updated_at"] = node["executed_at"]
        self._latest_step[node["workflow_id"]] = node["node_id"]
        self._index_step(node)
        return self._store(node, edges, [workflow] if status == "DECLARED" else [])

    def invoke_skill(self, *, principal: str, **fields: Any) -> dict[str, Any]:
        """Write a SkillInvocation (``registry_id`` null: SK-003) and its INVOKED_WITHIN edge,
        and a SKILL_PRECEDES edge from the execution's previous SkillInvocation."""
        if fields.get("registry_id") is not None:
            check_registry_id(fields)
        node = self._new_node(SKILL, principal, fields)
        node["registry_id"] = None
        check_invoked_within(self._nodes.get(node["execution_node_id"]), node)
        edges = [self._edge("INVOKED_WITHIN", node["node_id"], node["execution_node_id"])]
        before = self._latest_skill.get(node["execution_node_id"])
        if before is not None:
            edges.append(self._edge("SKILL_PRECEDES", before, node["node_id"]))
        forward = {"skill_invocation_id": node["node_id"],
                   "execution_node_id": node["execution_node_id"],
                   "workflow_id": node["workflow_id"], "episode_id": node["episode_id"],
                   "skill_id": node["skill_id"], "skill_source": node["skill_source"],
                   "invoked_by": node["invoked_by"], "invoked_at": node["invoked_at"],
                   "status": node["status"], "content_hash": node["content_hash"],
                   "cia_identifier": principal, "edges": edges}
        reverse = {"reverse_delete_skill_invocation_id": node["node_id"]}
        self._emit("SKILL_INVOKED", principal, forward, reverse, [node["node_id"]])
        self._latest_skill[node["execution_node_id"]] = node["node_id"]
        return self._store(node, edges)

    def close_workflow(self, workflow_id: Any, final_status: str, *, status_updated_at: Any,
                       error_detail: Any = None, principal: str) -> dict[str, Any]:
        """Move a workflow to a terminal status (WF-004) with its trio of mutable fields."""
        self._check_principal(WORKFLOW, principal, workflow_id)
        workflow = self._workflow(l3_value(workflow_id), None)
        check_closing_status(workflow, final_status)
        check_transition(workflow["status"], final_status)
        updated_at = l3_field("status_updated_at", L3_DATETIME, False, None, status_updated_at)
        detail = l3_field("error_detail", L3_OBJECT, True, None, error_detail)
        readable("error_detail", detail)
        forward = {"workflow_id": workflow["node_id"], "final_status": final_status,
                   "status_updated_at": updated_at, "error_detail": detail,
                   "cia_identifier": principal}
        reverse = {"reverse_prior_status": workflow["status"],
                   "reverse_prior_status_updated_at": workflow["status_updated_at"],
                   "reverse_prior_error_detail": workflow["error_detail"]}
        self._emit("WORKFLOW_CLOSED", principal, forward, reverse, [workflow["node_id"]])
        workflow.update(status=final_status, status_updated_at=updated_at, error_detail=detail)
        self._log({"apply": {"nodes": [workflow], "edges": []}})
        return _copy(workflow)

    def update(self, node_id: str, *, principal: str, **changes: Any) -> dict[str, Any]:
        """The one mutation path: an ExecutionNode or SkillInvocation is refused (L3-004); a
        WorkflowDeclaration admits only its status trio (L3-005), through the state machine
        (``close_workflow``)."""
        node = self._nodes.get(node_id) if isinstance(node_id, str) else None
        if node is None:
            raise InvalidFieldError(f"no Layer 3 node {short_repr(node_id)}", detail="node_id")
        self._check_principal(node["node_type"], principal, node_id)
        check_terminal_on_write(node, changes)
        check_declaration_changes(node, changes)
        return self.close_workflow(
            node_id, changes.get("status", node["status"]), principal=principal,
            status_updated_at=changes.get("status_updated_at", node["status_updated_at"]),
            error_detail=changes.get("error_detail", node["error_detail"]))

    # --- the steps of a write -----------------------------------------------------------------

    @staticmethod
    def _step_key(node: Mapping[str, Any]) -> tuple[Any, Any]:
        return node.get("workflow_id"), node.get("sequence_index")

    def _index_step(self, node: dict[str, Any]) -> None:
        """Remember the first ExecutionNode to take its (workflow, sequence_index)."""
        try:
            self._steps.setdefault(self._step_key(node), node)
        except TypeError:   # an unhashable field of a replayed node: verify reports it
            pass

    def _check_principal(self, node_type: str, principal: Any, node_id: Any) -> None:
        check_principal(self.cia, node_type, principal, node_id)

    def _new_node(self, node_type: str, principal: str, fields: Mapping[str, Any]) -> dict[str, Any]:
        """The node as stored (Form B JSON values) with its content hash; nothing is stored."""
        unknown = fields.keys() - _WRITABLE[node_type]
        if unknown:
            first = sorted(unknown)[0]
            raise InvalidFieldError(f"{node_type} has no field {first!r}", detail=first)
        self._check_principal(node_type, principal, fields.get("node_id"))
        values: dict[str, Any] = {**_DEFAULTS[node_type], **fields}
        values["node_type"] = node_type
        values.setdefault("node_id", self._new_id())
        values.setdefault(_INSTANT[node_type], self._clock())
        values.setdefault("episode_id", self.episode_id)
        # refuses what Form B cannot hash, then what the strict reader could not read back
        node, digest = former.stored_node(LAYOUTS[node_type], values)
        node["content_hash"] = digest
        check_within_episode(node, self.episode_id)
        check_new_node_id(node, taken=node["node_id"] in self._nodes
                          or node["node_id"] == self.episode_id)
        return node

    def _workflow(self, workflow_id: Any, node: Mapping[str, Any] | None) -> dict[str, Any]:
        workflow = self._nodes.get(workflow_id) if isinstance(workflow_id, str) else None
        check_executes_within(workflow, workflow_id, node)
        assert workflow is not None
        return workflow

    def _precedes(self, before: Any, node: Mapping[str, Any], edge_type: Any) -> dict[str, Any]:
        earlier = self._nodes.get(before) if isinstance(before, str) else None
        check_precedes(earlier, before, node)
        assert earlier is not None
        gap = node["sequence_index"] - earlier["sequence_index"]
        return self._edge("PRECEDES", earlier["node_id"], node["node_id"],
                          {"edge_type": edge_type, "sequence_gap": gap}, node["node_id"])

    @staticmethod
    def _edge(name: str, source: str, target: str, properties: dict[str, Any] | None = None,
              subject: str | None = None) -> dict[str, Any]:
        properties = {} if properties is None else properties
        check_edge_properties(name, properties, subject or source)   # L3-008
        return {"name": name, "from": source, "to": target, "properties": properties}

    def _emit(self, delta_type: str, principal: str, forward: Mapping[str, Any],
              reverse: Mapping[str, Any], affected: list[str]) -> None:
        """Append the write's audit record to the chain (before the write is applied)."""
        if self._broken:
            raise InvalidRecordError(f"this workspace takes no more writes: {self._broken}")
        prior = self._audit[-1]["record_hash"] if self._audit else None
        record = make_record(
            audit_id=str(self._new_id()), chain_key=self.chain_key,
            delta_sequence=len(self._audit) + 1, delta_type=delta_type, principal=principal,
            session_id=self.workspace_id, wall_clock_time=self._clock(), forward=forward,
            reverse=reverse, affected_nodes=affected, prior_audit_hash=prior)
        self._log({"audit": record})
        self._audit.append(record)

    def _store(self, node: dict[str, Any], edges: list[dict[str, Any]],
               changed: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        self._nodes[node["node_id"]] = node
        self._order.append(node["node_id"])
        self._edges.extend(edges)
        self._log({"apply": {"nodes": [node, *(changed or [])], "edges": edges}})
        return _copy(node)
