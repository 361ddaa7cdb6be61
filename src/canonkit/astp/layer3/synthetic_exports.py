"""Synthetic Layer 3 exports with known answers, for tests and re-verification corpora.

``make_export(rng, violation=None)`` writes a random workspace through ``Workspace`` (so a
clean export is exactly what the writer produces) and, for a violation class, changes the
export the way a faulty or dishonest store would; it returns the export and the sorted
vector ids ``verify`` must report. ``VIOLATIONS`` lists the classes. Changes that would
otherwise show up as a broken hash or audit link are made consistent again (content hashes
recomputed, the chain relinked), so that only the named rule is broken.
"""
from __future__ import annotations

import os
import random
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

from canonkit.astp.audit import audit_record_hash
from canonkit.astp.canonical_json import canonical_json, parse_canonical
from canonkit.astp.layer3.hashing import content_hash
from canonkit.astp.layer3.schema import EXECUTION, SKILL, WORKFLOW
from canonkit.astp.layer3.workspace import Workspace

__all__ = ["VIOLATIONS", "make_export", "make_workspace"]

#: every violation class, named by the vector ``verify`` reports for it
VIOLATIONS = ("WF-001", "WF-004", "WF-005", "EX-001", "EX-002", "EX-003", "SK-001", "SK-003",
              "CIA-001", "CIA-002", "CIA-003", "CIA-004", "L3-001", "L3-004", "L3-005",
              "L3-006", "L3-007", "L3-008")

_EPOCH = datetime(2026, 1, 1, tzinfo=timezone.utc)
_STEPS = ("fetch_credit_report", "score_applicant", "check_identity", "draft_offer", "notify")
_SKILLS = (("credit.lookup", "mcp"), ("kyc.verify", "builtin"), ("pricing.quote", "plugin"),
           ("mail.send", "mcp"))


def _uuid(rng: random.Random) -> uuid.UUID:
    return uuid.UUID(int=rng.getrandbits(128), version=4)


def _state(rng: random.Random, i: int) -> dict[str, Any]:
    """A realistic nested ``input_state``."""
    return {
        "applicant": {"name": rng.choice(["Jane Q. Example", "Ana Müller", "李雷"]),
                      "id": f"A-{rng.randrange(10**6)}", "income": round(rng.uniform(2e4, 3e5), 2),
                      "scores": [rng.randrange(300, 850) for _ in range(3)],
                      "address": {"street": f"{rng.randrange(1, 999)} Main St", "zip": "12345"}},
        "loan": {"amount": rng.randrange(10**4, 10**6), "term_months": rng.choice([180, 360]),
                 "rate": rng.choice([0.0625, 0.07, 1e-05, 2.5])},
        "flags": [rng.random() < 0.5, None],
        "notes": f"step {i}: \"quoted\"\nline",
    }


def make_workspace(rng: random.Random, *, episode_id: Any = None,
                   journal: str | os.PathLike[str] | None = None) -> Workspace:
    """A random valid workspace: one to three workflows (one may be interrupted before it
    starts), executions with failures retried by new nodes, skills, closes; kept in the
    JSON-lines file ``journal`` (which must not exist yet) when given."""
    ticks = iter(range(10**9))
    clock: Callable[[], datetime] = lambda: _EPOCH + timedelta(milliseconds=250 * next(ticks),
                                                               microseconds=rng.randrange(1000))
    principals = {WORKFLOW: "ignis_mcp_server@ws-1", EXECUTION: "executor@ws-1",
                  SKILL: "skills@ws-1"}
    ws = Workspace(workspace_id="ws-1", episode_id=episode_id or _uuid(rng),
                   cia=principals if rng.random() < 0.5 else "ignis_mcp_server@ws-1",
                   clock=clock, new_id=lambda: _uuid(rng), journal=journal)
    cia = ws.cia
    for _ in range(rng.randint(1, 3)):
        workflow = ws.declare_workflow(
            principal=cia[WORKFLOW], workflow_name=rng.choice(["underwrite_loan", "onboard"]),
            declared_by=cia[WORKFLOW], input_context={"b": 1, "a": 2.5, "é": [True, None]},
            intention_id=_uuid(rng) if rng.random() < 0.5 else None,
            mandate_id=_uuid(rng) if rng.random() < 0.3 else None,
            timeout_ms=rng.choice([None, 30000]))
        wid = workflow["node_id"]
        steps = rng.choice([0, 1, 2, 3, 4])
        if steps == 0 and rng.random() < 0.5:
            ws.close_workflow(wid, "INTERRUPTED", status_updated_at=clock(), principal=cia[WORKFLOW])
            continue
        index = 0
        failed = False
        for s in range(steps):
            index += rng.choice([1, 1, 2])
            failed = rng.random() < 0.25
            status = "FAILED" if failed else "COMPLETED"
            step = ws.record_execution(
                principal=cia[EXECUTION], workflow_id=wid, sequence_index=index,
                step_name=_STEPS[s % len(_STEPS)], agent_id="underwriter@ws-1",
                duration_ms=rng.randrange(5000), input_state=_state(rng, index),
                output_state=None if failed else {"decision": "refer", "confidence": 0.82},
                status=status, error_type="SKILL_ERROR" if failed else None,
                error_detail={"message": "timeout"} if failed else None,
                edge_type=rng.choice(["SEQUENTIAL", "CONDITIONAL", "PARALLEL"]))
            for _k in range(rng.choice([0, 1, 2])):
                skill_id, source = rng.choice(_SKILLS)
                ws.invoke_skill(principal=cia[SKILL], execution_node_id=step["node_id"],
                                workflow_id=wid, skill_id=skill_id, skill_source=source,
                                skill_version="1.2.0", invoked_by="underwriter@ws-1",
                                input_parameters={"q": index}, output_result={"ok": True},
                                status="COMPLETED", error_detail=None)
        if steps and rng.random() < 0.8:
            final = rng.choice(["INTERRUPTED", "FAILED"]) if failed else "COMPLETED"
            ws.close_workflow(wid, final, status_updated_at=clock(), principal=cia[WORKFLOW],
                              error_detail={"reason": "step failed"} if failed else None)
    return ws


def make_export(rng: random.Random, *, violation: str | None = None,
                episode: dict[str, Any] | None = None) -> tuple[dict[str, Any], list[str]]:
    """A random export and the vectors ``verify`` reports for it (``[]`` when clean).
    ``episode`` (an Episode document) makes the workflows belong to it; the ``L3-001``
    violation needs one whose Segments carry ``node_id``."""
    if violation is not None and violation not in VIOLATIONS:
        raise ValueError(f"unknown violation class {violation!r}; one of {', '.join(VIOLATIONS)}")
    while True:   # some classes need a shape (an execution, two steps, a skill)
        ws = make_workspace(rng, episode_id=episode["episode_id"] if episode else None)
        doc = ws.export()
        if violation is None:
            return doc, []
        if _VIOLATE[violation](rng, doc, episode):
            return doc, [violation]


# --- the violations ----------------------------------------------------------------------------

def _nodes(doc: dict[str, Any], node_type: str) -> list[dict[str, Any]]:
    return [n for n in doc["nodes"] if n["node_type"] == node_type]


def _events(doc: dict[str, Any], delta_type: str) -> list[dict[str, Any]]:
    return [r for r in doc["audit"] if r["delta_type"] == delta_type]


def _event_of(doc: dict[str, Any], node_id: str) -> dict[str, Any]:
    return next(r for r in doc["audit"] if r["affected_nodes"][0] == node_id)


def _edit_forward(record: dict[str, Any], edit: Callable[[dict[str, Any]], None]) -> None:
    forward = parse_canonical(record["forward_delta"])
    edit(forward)
    record["forward_delta"] = canonical_json(forward)


def _rechain(doc: dict[str, Any]) -> None:
    """Relink the audit chain after an edit (every record hash recomputed)."""
    prior = None
    for i, record in enumerate(doc["audit"]):
        record["delta_sequence"] = i + 1
        record["episode_time"] = i + 1
        record["prior_audit_hash"] = prior
        record["record_hash"] = prior = audit_record_hash(record)


def _rehash(doc: dict[str, Any], node: dict[str, Any], *, event: bool = True) -> None:
    """Recompute a node's content hash (and, with ``event``, the one its event restates)."""
    node["content_hash"] = content_hash(node["node_type"], node)
    if event:
        _edit_forward(_event_of(doc, node["node_id"]),
                      lambda f: f.update(content_hash=node["content_hash"]))
        _rechain(doc)


def _pick(rng: random.Random, items: list[Any]) -> Any:
    return rng.choice(items) if items else None


def _v_wf001(rng: random.Random, doc: dict[str, Any], episode: Any) -> bool:
    node = _pick(rng, _nodes(doc, WORKFLOW))
    node["workflow_name"] += "-renamed"
    return True


def _v_wf004(rng: random.Random, doc: dict[str, Any], episode: Any) -> bool:
    closed = [n for n in _nodes(doc, WORKFLOW) if n["status"] in ("COMPLETED", "FAILED")]
    node = _pick(rng, closed)
    if node is None:
        return False
    node["status"] = "FAILED" if node["status"] == "COMPLETED" else "COMPLETED"
    return True


def _v_wf005(rng: random.Random, doc: dict[str, Any], episode: Any) -> bool:
    started = {n["workflow_id"] for n in _nodes(doc, EXECUTION)}
    node = _pick(rng, [n for n in _nodes(doc, WORKFLOW)
                       if n["node_id"] in started and n["status"] == "IN_PROGRESS"])
    if node is None:
        return False
    node["status"] = "DECLARED"
    return True


def _v_ex001(rng: random.Random, doc: dict[str, Any], episode: Any) -> bool:
    node = _pick(rng, _nodes(doc, EXECUTION))
    if node is None:
        return False
    node["input_state"]["tampered"] = True
    return True


def _v_ex002(rng: random.Random, doc: dict[str, Any], episode: Any) -> bool:
    node = _pick(rng, _nodes(doc, EXECUTION))
    if node is None:
        return False
    node["status"] = "INTERRUPTED" if node["status"] == "FAILED" else "FAILED"
    node["error_type"] = node["error_type"] or "UNKNOWN"
    node["error_detail"] = node["error_detail"] or {"message": "x"}
    node["content_hash"] = content_hash(EXECUTION, node)      # stored hash consistent, event not
    _edit_forward(_event_of(doc, node["node_id"]),
                  lambda f: f.update(content_hash=node["content_hash"]))
    _rechain(doc)
    return True


def _v_ex003(rng: random.Random, doc: dict[str, Any], episode: Any) -> bool:
    node = _pick(rng, [n for n in _nodes(doc, EXECUTION) if n["status"] == "COMPLETED"])
    if node is None:
        return False
    node["error_type"] = "UNKNOWN"
    _rehash(doc, node)
    return True


def _v_sk001(rng: random.Random, doc: dict[str, Any], episode: Any) -> bool:
    node = _pick(rng, _nodes(doc, SKILL))
    if node is None:
        return False
    node["skill_version"] = "9.9.9"
    return True


def _v_sk003(rng: random.Random, doc: dict[str, Any], episode: Any) -> bool:
    node = _pick(rng, _nodes(doc, SKILL))
    if node is None:
        return False
    node["registry_id"] = "registry:credit.lookup@1"
    return True


def _v_cia001(rng: random.Random, doc: dict[str, Any], episode: Any) -> bool:
    record = rng.choice([r for r in doc["audit"]])
    _edit_forward(record, lambda f: f.update(cia_identifier="intruder@ws-9"))
    _rechain(doc)
    return True


def _v_cia002(rng: random.Random, doc: dict[str, Any], episode: Any) -> bool:
    record = rng.choice([r for r in doc["audit"]])
    _edit_forward(record, lambda f: f.pop("cia_identifier"))
    _rechain(doc)
    return True


def _v_cia003(rng: random.Random, doc: dict[str, Any], episode: Any) -> bool:
    if len(doc["audit"]) < 2:
        return False
    record = rng.choice(doc["audit"][1:])
    record["prior_audit_hash"] = "0" * 64
    return True


def _v_cia004(rng: random.Random, doc: dict[str, Any], episode: Any) -> bool:
    record = _pick(rng, _events(doc, "EXECUTION_RECORDED") + _events(doc, "SKILL_INVOKED"))
    if record is None:
        return False
    name = "agent_id" if record["delta_type"] == "EXECUTION_RECORDED" else "skill_source"
    _edit_forward(record, lambda f: f.pop(name))
    _rechain(doc)
    return True


def _v_l3001(rng: random.Random, doc: dict[str, Any], episode: Any) -> bool:
    if not episode:
        raise ValueError("the L3-001 violation needs the Episode document")
    segments = [s for s in episode.get("segments", []) if s.get("node_id")]
    if not segments:
        raise ValueError("the L3-001 violation needs Segments with node_id")
    node = rng.choice(doc["nodes"])
    old = node["node_id"]
    new = rng.choice(segments)["node_id"].lower()
    _rename(doc, old, new)
    return True


def _rename(doc: dict[str, Any], old: str, new: str) -> None:
    """Give a node another id everywhere the export names it (hashes and chain redone)."""
    def swap(value: Any) -> Any:
        if value == old:
            return new
        if isinstance(value, list):
            return [swap(v) for v in value]
        if isinstance(value, dict):
            return {k: swap(v) for k, v in value.items()}
        return value

    doc["nodes"] = swap(doc["nodes"])
    doc["edges"] = swap(doc["edges"])
    for record in doc["audit"]:
        record["affected_nodes"] = swap(record["affected_nodes"])
        record["forward_delta"] = canonical_json(swap(parse_canonical(record["forward_delta"])))
        record["reverse_delta"] = canonical_json(swap(parse_canonical(record["reverse_delta"])))
    for node in doc["nodes"]:
        _rehash(doc, node)


def _v_l3004(rng: random.Random, doc: dict[str, Any], episode: Any) -> bool:
    node = _pick(rng, _nodes(doc, EXECUTION) + _nodes(doc, SKILL))
    if node is None:
        return False
    key = "input_state" if node["node_type"] == EXECUTION else "input_parameters"
    node[key] = {**node[key], "rewritten": 1}
    _rehash(doc, node, event=False)
    return True


def _v_l3005(rng: random.Random, doc: dict[str, Any], episode: Any) -> bool:
    node = rng.choice(_nodes(doc, WORKFLOW))
    node["input_context"] = {**node["input_context"], "rewritten": 1}
    _rehash(doc, node, event=False)
    return True


def _v_l3006(rng: random.Random, doc: dict[str, Any], episode: Any) -> bool:
    """A retry (a workflow's last step) that reuses its predecessor's sequence_index."""
    starts = {e["from"] for e in doc["edges"] if e["name"] == "PRECEDES"}
    for edge in doc["edges"]:
        if edge["name"] != "PRECEDES" or edge["to"] in starts:
            continue
        earlier, later = (next(n for n in doc["nodes"] if n["node_id"] == edge[k])
                          for k in ("from", "to"))
        doc["edges"].remove(edge)
        record = _event_of(doc, later["node_id"])
        later["sequence_index"] = earlier["sequence_index"]
        later["content_hash"] = content_hash(EXECUTION, later)
        _edit_forward(record, lambda f: f.update(
            sequence_index=later["sequence_index"], content_hash=later["content_hash"],
            edges=[e for e in f["edges"] if e["name"] != "PRECEDES"]))
        _rechain(doc)
        return True
    return False


def _v_l3007(rng: random.Random, doc: dict[str, Any], episode: Any) -> bool:
    edge = rng.choice(doc["edges"])
    edge["from"], edge["to"] = edge["to"], edge["from"]
    return True


def _v_l3008(rng: random.Random, doc: dict[str, Any], episode: Any) -> bool:
    edge = _pick(rng, [e for e in doc["edges"] if e["name"] == "PRECEDES"])
    if edge is None:
        return False
    edge["properties"] = rng.choice([{}, {**edge["properties"], "edge_type": "SEQ"},
                                     {**edge["properties"], "sequence_gap": 0}])
    return True


_VIOLATE: dict[str, Callable[[random.Random, dict[str, Any], Any], bool]] = {
    "WF-001": _v_wf001, "WF-004": _v_wf004, "WF-005": _v_wf005, "EX-001": _v_ex001,
    "EX-002": _v_ex002, "EX-003": _v_ex003, "SK-001": _v_sk001, "SK-003": _v_sk003,
    "CIA-001": _v_cia001, "CIA-002": _v_cia002, "CIA-003": _v_cia003, "CIA-004": _v_cia004,
    "L3-001": _v_l3001, "L3-004": _v_l3004, "L3-005": _v_l3005, "L3-006": _v_l3006,
    "L3-007": _v_l3007, "L3-008": _v_l3008,
}
assert set(_VIOLATE) == set(VIOLATIONS)
