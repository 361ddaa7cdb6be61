"""Layer 3 rules, the writer-side Workspace and the verifier, one accepting and one rejecting
test per CONFORMANCE-LAYER3 vector (named after it), plus WF-006 and L3-008, and the
properties: random valid workspaces verify clean; each single change to an export is found
with the right vector."""
from __future__ import annotations

import copy
import itertools
import json
import random
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies_astp import sav2_episode

from canonkit import astp
from canonkit.astp import layer3
from canonkit.astp.canonical_json import parse_canonical
from canonkit.astp.layer3 import (
    CONFORMANCE_DECLARATION,
    EDGES,
    TRANSITIONS,
    Layer3GovernanceError,
    Workspace,
    check_execution_errors,
    check_transition,
    verify,
)
from canonkit.astp.layer3.schema import AUDIT_EVENTS, WORKFLOW_STATUSES
from canonkit.astp.layer3.synthetic_exports import VIOLATIONS, make_export, make_workspace
from canonkit.errors import InvalidFieldError, InvalidRecordError

EP = "550e8400-e29b-41d4-a716-446655440000"
T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
CIA = "ignis_mcp_server@ws-1"


def workspace(cia: Any = CIA) -> Workspace:
    ticks = itertools.count()
    ids = itertools.count(0x900)
    return Workspace(workspace_id="ws-1", episode_id=EP, cia=cia,
                     clock=lambda: T0 + timedelta(seconds=next(ticks)),
                     new_id=lambda: __import__("uuid").UUID(f"00000000-0000-4000-8000-{next(ids):012x}"))


def declare(ws: Workspace, **over: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {"workflow_name": "underwrite_loan", "declared_by": CIA,
                              "input_context": {"applicant": "A-1"}}
    fields.update(over)
    return ws.declare_workflow(principal=ws.cia["WorkflowDeclaration"], **fields)


def execute(ws: Workspace, workflow_id: str, index: int, **over: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {"workflow_id": workflow_id, "sequence_index": index,
                              "step_name": f"step-{index}", "agent_id": "agent-a",
                              "input_state": {"i": index, "rate": 0.0625}, "status": "COMPLETED"}
    fields.update(over)
    return ws.record_execution(principal=ws.cia["ExecutionNode"], **fields)


def invoke(ws: Workspace, step: dict[str, Any], **over: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {"execution_node_id": step["node_id"], "workflow_id": step["workflow_id"],
                              "skill_id": "credit.lookup", "skill_source": "mcp",
                              "skill_version": "1.0", "invoked_by": "agent-a",
                              "input_parameters": {"q": 1}, "status": "COMPLETED"}
    fields.update(over)
    return ws.invoke_skill(principal=ws.cia["SkillInvocation"], **fields)


def full() -> tuple[Workspace, dict[str, Any], dict[str, Any], dict[str, Any], dict[str, Any]]:
    """A workflow with a failed step, its retry, two skills, closed COMPLETED."""
    ws = workspace()
    wf = declare(ws, intention_id="00000000-0000-4000-8000-0000000000aa")
    first = execute(ws, wf["node_id"], 1, status="FAILED", error_type="TIMEOUT",
                    error_detail={"message": "timed out"})
    retry = execute(ws, wf["node_id"], 2, step_name="step-1")
    invoke(ws, retry)
    invoke(ws, retry, skill_id="pricing.quote")
    ws.close_workflow(wf["node_id"], "COMPLETED", status_updated_at=T0 + timedelta(hours=1),
                      principal=CIA)
    return ws, wf, first, retry, ws.export()


def vectors(document: Any, **kw: Any) -> list[str]:
    return verify(document, **kw).vectors


def events(doc: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(r["delta_type"], parse_canonical(r["forward_delta"])) for r in doc["audit"]]


def raises(vector: str) -> Any:
    return pytest.raises(Layer3GovernanceError, match=vector)


def test_a_clean_workspace_verifies() -> None:
    *_, doc = full()
    report = verify(doc)
    assert report.ok and report.findings == () and not report.notes
    assert json.loads(json.dumps(doc)) == doc           # the export is plain JSON


# --- WF-004 -------------------------------------------------------------------------------

def test_wf_004_permitted_transitions() -> None:
    permitted = [(a, b) for a in WORKFLOW_STATUSES for b in WORKFLOW_STATUSES if b in TRANSITIONS[a]]
    assert sorted(permitted) == sorted([("DECLARED", "IN_PROGRESS"), ("DECLARED", "INTERRUPTED"),
                                        ("IN_PROGRESS", "COMPLETED"), ("IN_PROGRESS", "FAILED"),
                                        ("IN_PROGRESS", "INTERRUPTED")])
    for a, b in permitted:
        check_transition(a, b)


def test_wf_004_every_other_pair_raises() -> None:
    names = [*WORKFLOW_STATUSES, "UNKNOWN", None]
    for a, b in itertools.product(names, names):
        if a in TRANSITIONS and b in TRANSITIONS[a]:
            continue
        with pytest.raises(Layer3GovernanceError) as caught:
            check_transition(a, b)
        assert caught.value.code == caught.value.vector == "WF-004"
        assert isinstance(caught.value, astp.layer3.Layer3GovernanceError)
    ws, wf, *_ = full()
    with raises("WF-004"):   # COMPLETED is terminal
        ws.close_workflow(wf["node_id"], "FAILED", status_updated_at=T0, principal=CIA)
    wf2 = declare(ws)
    with raises("WF-004"):   # close needs a terminal status
        ws.close_workflow(wf2["node_id"], "IN_PROGRESS", status_updated_at=T0, principal=CIA)
    with raises("WF-004"):   # DECLARED -> COMPLETED skips IN_PROGRESS
        ws.close_workflow(wf2["node_id"], "COMPLETED", status_updated_at=T0, principal=CIA)
    doc = ws.export()
    assert verify(doc).ok
    node = next(n for n in doc["nodes"] if n["node_id"] == wf["node_id"])
    node["status"] = "FAILED"
    assert vectors(doc) == ["WF-004"]


# --- WF-005 -------------------------------------------------------------------------------

def test_wf_005_first_execution_moves_the_workflow_atomically() -> None:
    ws = workspace()
    wf = declare(ws)
    assert ws.node(wf["node_id"])["status"] == "DECLARED"
    step = execute(ws, wf["node_id"], 1)
    assert ws.node(wf["node_id"])["status"] == "IN_PROGRESS"
    assert ws.node(wf["node_id"])["status_updated_at"] == step["executed_at"]
    kind, forward = events(ws.export())[-1]
    assert kind == "EXECUTION_RECORDED"      # one record: no fifth event type
    assert forward["workflow_transition"] == {"workflow_id": wf["node_id"], "from": "DECLARED",
                                              "to": "IN_PROGRESS",
                                              "status_updated_at": step["executed_at"]}
    execute(ws, wf["node_id"], 2)
    assert "workflow_transition" not in events(ws.export())[-1][1]
    assert verify(ws.export()).ok


def test_wf_005_declared_with_executions_is_rejected() -> None:
    ws = workspace()
    wf = declare(ws)
    execute(ws, wf["node_id"], 1)
    doc = ws.export()
    doc["nodes"][0]["status"] = "DECLARED"
    assert vectors(doc) == ["WF-005"]


# --- WF-006 -------------------------------------------------------------------------------

def test_wf_006_two_interrupted_states_are_reported_distinctly() -> None:
    ws = workspace()
    never = declare(ws)
    ws.close_workflow(never["node_id"], "INTERRUPTED", status_updated_at=T0, principal=CIA)
    started = declare(ws)
    execute(ws, started["node_id"], 1)
    ws.close_workflow(started["node_id"], "INTERRUPTED", status_updated_at=T0, principal=CIA)
    report = verify(ws.export())
    assert report.ok
    assert report.workflows == {never["node_id"]: "interrupted_before_start",
                                started["node_id"]: "interrupted_after_start"}
    notes = {n.node_id: n.detail for n in report.notes}
    assert "declared, never started" in notes[never["node_id"]]
    assert "started, terminated" in notes[started["node_id"]]
    assert all(n.vector == "WF-006" for n in report.notes)


def test_wf_006_a_workflow_interrupted_before_it_started_takes_no_execution() -> None:
    ws = workspace()
    never = declare(ws)
    ws.close_workflow(never["node_id"], "INTERRUPTED", status_updated_at=T0, principal=CIA)
    with raises("WF-004"):
        execute(ws, never["node_id"], 1)
    assert verify(ws.export()).workflows[never["node_id"]] == "interrupted_before_start"


# --- EX-003 -------------------------------------------------------------------------------

def test_ex_003_consistent_errors_are_accepted() -> None:
    check_execution_errors({"status": "COMPLETED", "error_type": None, "error_detail": None})
    check_execution_errors({"status": "FAILED", "error_type": "TIMEOUT", "error_detail": None})
    check_execution_errors({"status": "INTERRUPTED", "error_type": "UNKNOWN",
                            "error_detail": {"why": "x"}})


@pytest.mark.parametrize("node", [
    {"status": "COMPLETED", "error_type": "TIMEOUT", "error_detail": None},
    {"status": "COMPLETED", "error_type": None, "error_detail": {"e": 1}},
    {"status": "FAILED", "error_type": None, "error_detail": {"e": 1}},
    {"status": "INTERRUPTED", "error_type": None, "error_detail": None},
    {"status": "FAILED", "error_type": "OOPS", "error_detail": None},
])
def test_ex_003_inconsistent_errors_are_rejected(node: dict[str, Any]) -> None:
    with raises("EX-003"):
        check_execution_errors(node)
    ws = workspace()
    wf = declare(ws)
    with pytest.raises((Layer3GovernanceError, InvalidFieldError)):
        execute(ws, wf["node_id"], 1, **node)
    assert len(ws.audit) == 1          # nothing was emitted for the refused write
    doc, expected = make_export(random.Random(3), violation="EX-003")
    assert vectors(doc) == expected == ["EX-003"]


# --- hash vectors over an export (WF-001, EX-001, EX-002, SK-001) --------------------------------

@pytest.mark.parametrize("vector", ["WF-001", "EX-001", "EX-002", "SK-001"])
def test_hash_vectors_accept_stored_hashes(vector: str) -> None:
    *_, doc = full()
    for node in doc["nodes"]:
        assert node["content_hash"] == layer3.content_hash(node["node_type"], node)
    assert verify(doc).ok


@pytest.mark.parametrize("vector", ["WF-001", "EX-001", "EX-002", "SK-001"])
def test_hash_vectors_reject_changed_fields(vector: str) -> None:
    doc, expected = make_export(random.Random(vector), violation=vector)
    assert vectors(doc) == expected == [vector]


# --- one rule, two users -------------------------------------------------------------------

@pytest.mark.parametrize(("violation", "seed"), [("SK-003", 5), ("L3-006", 14)])
def test_the_verifier_reports_the_writers_own_rule(violation: str, seed: int) -> None:
    """A vector both the writer and the verifier check is decided once, in layer3/rules.py:
    the verifier's finding is the rule's refusal word for word ("<vector>: ...")."""
    doc, _ = make_export(random.Random(seed), violation=violation)
    findings = [f for f in verify(doc).findings if f.vector == violation]
    assert findings and all(f.detail.startswith(f"{violation}: ") for f in findings)


# --- SK-003 -------------------------------------------------------------------------------

def test_sk_003_registry_id_stays_null() -> None:
    *_, doc = full()
    skills = [n for n in doc["nodes"] if n["node_type"] == "SkillInvocation"]
    assert skills and all(n["registry_id"] is None for n in skills)


def test_sk_003_registry_id_populated_is_rejected() -> None:
    ws, wf, first, retry, _ = full()
    with raises("SK-003"):
        invoke(ws, retry, registry_id="registry:x")
    doc, expected = make_export(random.Random(5), violation="SK-003")
    assert vectors(doc) == expected == ["SK-003"]


# --- CIA-001 … CIA-004 ----------------------------------------------------------------------

def test_cia_001_the_cia_writes_and_is_declared_per_node_type() -> None:
    per_type = {"WorkflowDeclaration": "w@ws", "ExecutionNode": "e@ws", "SkillInvocation": "s@ws"}
    ws = workspace(per_type)
    wf = declare(ws, declared_by="w@ws")
    step = execute(ws, wf["node_id"], 1)
    invoke(ws, step)
    doc = ws.export()
    assert doc["cia"] == per_type and verify(doc).ok
    assert [f["cia_identifier"] for _, f in events(doc)] == ["w@ws", "e@ws", "s@ws"]
    cia = CONFORMANCE_DECLARATION["cia"]
    assert "per node type" in cia["per_node_type"] and "CIA-001" in cia["enforcement"]


def test_cia_001_other_principals_are_refused() -> None:
    ws = workspace({"WorkflowDeclaration": "w@ws", "ExecutionNode": "e@ws", "SkillInvocation": "s@ws"})
    with raises("CIA-001"):
        ws.declare_workflow(principal="e@ws", workflow_name="x", declared_by="e@ws",
                            input_context={})
    wf = declare(ws)
    with raises("CIA-001"):
        ws.record_execution(principal="w@ws", workflow_id=wf["node_id"], sequence_index=1,
                            step_name="s", agent_id="a", input_state={}, status="COMPLETED")
    with raises("CIA-001"):
        ws.close_workflow(wf["node_id"], "INTERRUPTED", status_updated_at=T0, principal="s@ws")
    assert len(ws.audit) == 1
    with pytest.raises(InvalidFieldError):
        Workspace(workspace_id="w", episode_id=EP, cia={"WorkflowDeclaration": "w@ws"})
    doc, expected = make_export(random.Random(6), violation="CIA-001")
    assert vectors(doc) == expected == ["CIA-001"]
    doc = full()[-1]
    doc["cia"] = {"WorkflowDeclaration": CIA}
    assert "CIA-001" in vectors(doc)


def test_cia_002_every_event_carries_cia_identifier() -> None:
    *_, doc = full()
    assert {kind for kind, _ in events(doc)} == set(AUDIT_EVENTS)
    assert all(forward["cia_identifier"] == CIA for _, forward in events(doc))


def test_cia_002_an_event_without_cia_identifier_is_rejected() -> None:
    doc, expected = make_export(random.Random(7), violation="CIA-002")
    assert vectors(doc) == expected == ["CIA-002"]


def test_cia_003_each_write_is_preceded_by_its_chained_audit_event() -> None:
    ws = workspace()
    wf = declare(ws)
    assert len(ws.audit) == 1 and ws.audit[0]["affected_nodes"] == [wf["node_id"]]
    assert astp.verify_audit_chain(ws.audit).ok
    calls: list[str] = []
    emit, store = ws._emit, ws._store

    def spy_emit(*a: Any, **k: Any) -> Any:
        calls.append("audit")
        return emit(*a, **k)

    def spy_store(*a: Any, **k: Any) -> Any:
        calls.append("write")
        return store(*a, **k)

    ws._emit, ws._store = spy_emit, spy_store  # type: ignore[method-assign]
    step = execute(ws, wf["node_id"], 1)
    invoke(ws, step)
    assert calls == ["audit", "write", "audit", "write"]   # W-L3-4: the event first
    records = ws.audit
    assert [r["prior_audit_hash"] for r in records[1:]] == [r["record_hash"] for r in records[:-1]]
    assert records[0]["prior_audit_hash"] is None
    assert all(r["chain_key"] == EP for r in records)


def test_cia_003_broken_links_and_unaudited_writes_are_rejected() -> None:
    doc, expected = make_export(random.Random(8), violation="CIA-003")
    assert vectors(doc) == expected == ["CIA-003"]
    *_, doc = full()
    del doc["audit"][-2]        # the last skill's event gone: the chain and the write
    report = verify(doc)
    assert "CIA-003" in report.vectors
    assert any(f.detail.startswith("a durable SkillInvocation with no preceding") for f in report.findings)


def test_cia_004_events_carry_their_required_fields() -> None:
    *_, doc = full()
    for kind, forward in events(doc):
        for name in AUDIT_EVENTS[kind][1]:
            assert name.rstrip("?") in forward, (kind, name)


def test_cia_004_a_missing_required_field_is_rejected() -> None:
    doc, expected = make_export(random.Random(9), violation="CIA-004")
    assert vectors(doc) == expected == ["CIA-004"]


# --- L3-001 … L3-003 -------------------------------------------------------------------------

episode_document = sav2_episode


def test_l3_001_layer3_writes_leave_the_spine_byte_identical() -> None:
    episode = episode_document()
    before = astp.reproduce(episode).to_json()
    ws = make_workspace(random.Random(1), episode_id=EP)
    doc = ws.export()
    with_layer3 = {**episode, "layer3": doc}
    assert astp.reproduce(with_layer3).to_json() == before
    assert astp.compute_seal(with_layer3, spine_algorithm_version=2) == episode["seal"]
    assert verify(doc, episode=episode).ok


def test_l3_001_a_layer3_node_id_in_the_spine_is_rejected() -> None:
    episode = episode_document()
    doc, expected = make_export(random.Random(10), violation="L3-001", episode=episode)
    assert expected == ["L3-001"] and vectors(doc, episode=episode) == ["L3-001"]
    assert verify(doc).ok      # invisible without the Episode


def test_l3_002_layer1_and_2_stay_valid_whatever_layer3_holds() -> None:
    episode = episode_document()
    for broken in ({"format": "canonkit-layer3/1", "nodes": [], "edges": [], "audit": []},
                   {"garbage": True}, "not even an object", None):
        assert astp.reproduce({**episode, "layer3": broken}).outcome == "reproduced"


def test_l3_002_a_corrupt_layer3_fails_on_its_own() -> None:
    episode = episode_document()
    doc, _ = make_export(random.Random(11), violation="CIA-003", episode=episode)
    assert not verify(doc, episode=episode).ok
    assert astp.reproduce({**episode, "layer3": doc}).outcome == "reproduced"


def test_l3_003_layer3_verifies_against_its_own_chain_alone() -> None:
    *_, doc = full()
    assert verify(doc, episode=None).ok


def test_l3_003_an_unverifiable_export_is_rejected_without_the_spine() -> None:
    assert vectors({"format": "something-else"}) == ["L3-003"]
    assert vectors([1, 2]) == ["L3-003"]
    assert vectors({"format": "canonkit-layer3/1", "nodes": {}, "edges": [], "audit": []}) == ["L3-003"]
    *_, doc = full()
    doc["audit"][0]["record_hash"] = "0" * 64
    assert vectors(doc) == ["CIA-003"]


# --- L3-004 … L3-006 ---------------------------------------------------------------------------

def test_l3_004_written_nodes_stay_as_written() -> None:
    ws, wf, first, retry, doc = full()
    assert ws.node(first["node_id"]) == first
    assert verify(doc).ok


def test_l3_004_every_mutation_of_an_execution_or_skill_is_refused() -> None:
    ws, wf, first, retry, _ = full()
    with raises("L3-004"):
        ws.update(first["node_id"], principal=CIA, status="COMPLETED")
    skill = next(n for n in ws.export()["nodes"] if n["node_type"] == "SkillInvocation")
    with raises("L3-004"):
        ws.update(skill["node_id"], principal=CIA, skill_version="2")
    with raises("L3-004"):
        layer3.check_immutable(first, {**first, "duration_ms": 1})
    doc, expected = make_export(random.Random(12), violation="L3-004")
    assert vectors(doc) == expected == ["L3-004"]


def test_l3_005_the_declaration_changes_only_its_trio() -> None:
    ws = workspace()
    wf = declare(ws)
    execute(ws, wf["node_id"], 1)
    closed = ws.update(wf["node_id"], principal=CIA, status="FAILED",
                       status_updated_at="2026-01-02T00:00:00+00:00", error_detail={"why": "x"})
    assert (closed["status"], closed["error_detail"]) == ("FAILED", {"why": "x"})
    assert closed["content_hash"] == wf["content_hash"]
    layer3.check_declaration_update(wf, {**wf, "status": "INTERRUPTED"})
    assert verify(ws.export()).ok


def test_l3_005_a_change_outside_the_trio_is_refused() -> None:
    ws = workspace()
    wf = declare(ws)
    with raises("L3-005"):
        ws.update(wf["node_id"], principal=CIA, workflow_name="renamed")
    with raises("L3-005"):
        layer3.check_declaration_update(wf, {**wf, "timeout_ms": 5})
    doc, expected = make_export(random.Random(13), violation="L3-005")
    assert vectors(doc) == expected == ["L3-005"]


def test_l3_006_a_retry_is_a_new_node() -> None:
    ws, wf, first, retry, doc = full()
    assert first["step_name"] == retry["step_name"]
    assert (first["node_id"], first["sequence_index"]) != (retry["node_id"], retry["sequence_index"])
    assert ws.node(first["node_id"]) == first and first["status"] == "FAILED"
    layer3.check_retry(first, retry)
    assert verify(doc).ok


def test_l3_006_reusing_a_node_id_or_sequence_index_is_refused() -> None:
    ws = workspace()
    wf = declare(ws)
    failed = execute(ws, wf["node_id"], 1, status="FAILED", error_type="TIMEOUT")
    with raises("L3-006"):
        execute(ws, wf["node_id"], 1)
    with raises("L3-006"):
        execute(ws, wf["node_id"], 2, node_id=failed["node_id"])
    with raises("L3-006"):
        layer3.check_retry(failed, {**failed, "node_id": "00000000-0000-4000-8000-0000000000ff"})
    doc, expected = make_export(random.Random(14), violation="L3-006")
    assert vectors(doc) == expected == ["L3-006"]


# --- L3-007 / L3-008 ----------------------------------------------------------------------------

def test_l3_007_seven_edges_named_and_directed() -> None:
    ws = workspace()
    wf = declare(ws, intention_id="00000000-0000-4000-8000-0000000000aa",
                 mandate_id="00000000-0000-4000-8000-0000000000bb")
    a = execute(ws, wf["node_id"], 1)
    b = execute(ws, wf["node_id"], 3)
    s1 = invoke(ws, b)
    s2 = invoke(ws, b)
    doc = ws.export()
    got = {(e["name"], e["from"], e["to"]) for e in doc["edges"]}
    assert got == {
        ("DECLARED_WITHIN", wf["node_id"], EP),
        ("SERVES_INTENTION", wf["node_id"], "00000000-0000-4000-8000-0000000000aa"),
        ("SPAWNED_BY_MANDATE", wf["node_id"], "00000000-0000-4000-8000-0000000000bb"),
        ("EXECUTES_WITHIN", a["node_id"], wf["node_id"]),
        ("EXECUTES_WITHIN", b["node_id"], wf["node_id"]),
        ("PRECEDES", a["node_id"], b["node_id"]),
        ("INVOKED_WITHIN", s1["node_id"], b["node_id"]),
        ("INVOKED_WITHIN", s2["node_id"], b["node_id"]),
        ("SKILL_PRECEDES", s1["node_id"], s2["node_id"]),
    }
    assert {name for name, *_ in got} == set(EDGES)
    assert verify(doc).ok


def test_l3_007_misdirected_renamed_or_missing_edges_are_rejected() -> None:
    ws = workspace()
    wf = declare(ws)
    execute(ws, wf["node_id"], 1)
    base = ws.export()
    for change in ("flip", "rename", "drop"):
        doc = copy.deepcopy(base)
        edge = next(e for e in doc["edges"] if e["name"] == "EXECUTES_WITHIN")
        if change == "flip":
            edge["from"], edge["to"] = edge["to"], edge["from"]
        elif change == "rename":
            edge["name"] = "RUNS_IN"
        else:
            doc["edges"].remove(edge)
        assert vectors(doc) == ["L3-007"], change
    with raises("L3-007"):
        execute(ws, "00000000-0000-4000-8000-0000000000cc", 2)
    doc, expected = make_export(random.Random(15), violation="L3-007")
    assert vectors(doc) == expected == ["L3-007"]


def test_l3_008_precedes_carries_edge_type_and_gap() -> None:
    ws = workspace()
    wf = declare(ws)
    a = execute(ws, wf["node_id"], 1)
    execute(ws, wf["node_id"], 4)                       # default SEQUENTIAL, recorded
    execute(ws, wf["node_id"], 5, preceded_by=a["node_id"], edge_type="PARALLEL")
    precedes = [e["properties"] for e in ws.export()["edges"] if e["name"] == "PRECEDES"]
    assert precedes == [{"edge_type": "SEQUENTIAL", "sequence_gap": 3},
                        {"edge_type": "PARALLEL", "sequence_gap": 4}]
    assert verify(ws.export()).ok


def test_l3_008_missing_or_wrong_properties_are_rejected() -> None:
    ws = workspace()
    wf = declare(ws)
    execute(ws, wf["node_id"], 1)
    with raises("L3-008"):
        execute(ws, wf["node_id"], 2, edge_type="SOMETIMES")
    execute(ws, wf["node_id"], 2)
    for properties in ({}, {"edge_type": "SEQUENTIAL"}, {"edge_type": "X", "sequence_gap": 1},
                       {"edge_type": "SEQUENTIAL", "sequence_gap": 2}):
        doc = ws.export()
        next(e for e in doc["edges"] if e["name"] == "PRECEDES")["properties"] = properties
        assert vectors(doc) == ["L3-008"], properties


# --- the declaration, the error class ------------------------------------------------------------

def test_conformance_declaration_documents_every_level_2_choice() -> None:
    d = CONFORMANCE_DECLARATION
    assert d["hash_serialization"]["name"] == "Form B"
    assert d["hash_serialization"]["digest"] == "SHA3-256"
    assert d["hash_serialization"]["field_order"] == {k: list(v) for k, v in layer3.FIELD_ORDER.items()}
    assert d["hash_serialization"]["excluded"] == {k: list(v) for k, v in layer3.EXCLUDED.items()}
    assert d["skill_source_vocabulary"]["stance"] == "recorded, not validated"
    assert d["audit"]["chain_key"].startswith("episode_id")
    assert set(d["edges"]["directions"]) == set(EDGES)
    assert "enforcement" in d["cia"]


def test_governance_errors_pickle_with_their_vector() -> None:
    import pickle

    exc = Layer3GovernanceError("x", vector="WF-004", node_id="n", field="status")
    back = pickle.loads(pickle.dumps(exc))
    assert (back.code, back.vector, back.node_id, back.field, str(back)) == (
        "WF-004", "WF-004", "n", "status", "x")


# --- properties ---------------------------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32))
def test_random_valid_workspaces_verify_clean(seed: int) -> None:
    doc, expected = make_export(random.Random(seed))
    report = verify(doc)
    assert expected == [] and report.ok, report.findings


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32), st.sampled_from([v for v in VIOLATIONS if v != "L3-001"]))
def test_each_single_change_is_found_with_its_vector(seed: int, violation: str) -> None:
    doc, expected = make_export(random.Random(seed), violation=violation)
    assert verify(doc).vectors == expected == [violation]


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32), st.data())
def test_any_change_to_a_field_link_edge_or_status_is_found(seed: int, data: st.DataObject) -> None:
    """Generic single changes (not the synthesized classes): a node field, an audit link, an
    edge direction, a status — each is found, and with the vector of what was changed."""
    doc = make_workspace(random.Random(seed)).export()
    kind = data.draw(st.sampled_from(["field", "link", "edge", "status"]))
    if kind == "field":
        node = data.draw(st.sampled_from(doc["nodes"]))
        name = data.draw(st.sampled_from(sorted(layer3.FIELD_ORDER[node["node_type"]][2:])))
        node[name] = "changed" if not isinstance(node[name], str) or node[name] != "changed" else "x"
        allowed = {layer3.schema.HASH_VECTOR[node["node_type"]], "L3-004", "L3-005", "L3-007",
                   "EX-002", "EX-003", "L3-006", "L3-008"}
    elif kind == "link":
        if len(doc["audit"]) < 2:
            return
        record = data.draw(st.sampled_from(doc["audit"][1:]))
        record["prior_audit_hash"] = data.draw(st.sampled_from(["f" * 64, None]))
        allowed = {"CIA-003"}
    elif kind == "edge":
        edge = data.draw(st.sampled_from(doc["edges"]))
        edge["from"], edge["to"] = edge["to"], edge["from"]
        allowed = {"L3-007"}
    else:
        node = data.draw(st.sampled_from(doc["nodes"]))
        if node["node_type"] == "WorkflowDeclaration":
            node["status"] = data.draw(st.sampled_from([s for s in WORKFLOW_STATUSES
                                                        if s != node["status"]]))
            allowed = {"WF-004", "WF-005"}
        else:
            node["status"] = data.draw(st.sampled_from([s for s in ("COMPLETED", "FAILED", "INTERRUPTED")
                                                        if s != node["status"]]))
            allowed = {layer3.schema.HASH_VECTOR[node["node_type"]], "EX-002", "EX-003", "L3-004"}
    found = set(verify(doc).vectors)
    assert found and found <= allowed, (kind, found)


def test_the_declaration_is_rendered_in_the_docs() -> None:
    from conftest import REPO

    text = (REPO / "docs" / "astp-layer3.md").read_text()
    section = text.split("## ConformanceDeclaration", 1)[1]
    block = section.split("```json\n", 1)[1].split("\n```", 1)[0]
    assert json.loads(block) == CONFORMANCE_DECLARATION


# --- the JSON-lines journal -------------------------------------------------------------------

def journaled(path: Any) -> Workspace:
    ticks = itertools.count()
    ids = itertools.count(0x900)
    return Workspace(workspace_id="ws-1", episode_id=EP, cia=CIA, journal=path,
                     clock=lambda: T0 + timedelta(seconds=next(ticks)),
                     new_id=lambda: __import__("uuid").UUID(f"00000000-0000-4000-8000-{next(ids):012x}"))


def test_a_journal_reopens_to_the_same_workspace_and_goes_on(tmp_path: Any) -> None:
    path = tmp_path / "ws.jsonl"
    ws = journaled(path)
    wf = declare(ws)
    step = execute(ws, wf["node_id"], 1)
    invoke(ws, step)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines[0]["format"] == "canonkit-layer3-journal/1"
    assert [next(iter(e)) for e in lines[1:]] == ["audit", "apply"] * 3   # the event first
    again = Workspace.open(path)
    assert again.export() == ws.export()
    execute(again, wf["node_id"], 2)                  # PRECEDES from the replayed latest step
    again.close_workflow(wf["node_id"], "COMPLETED", status_updated_at=T0, principal=CIA)
    third = Workspace.open(path)
    assert third.export() == again.export() and verify(third.export()).ok
    with pytest.raises(FileExistsError):
        journaled(path)


def test_a_journal_with_an_unfinished_or_changed_write_is_refused(tmp_path: Any) -> None:
    path = tmp_path / "ws.jsonl"
    ws = journaled(path)
    wf = declare(ws)
    execute(ws, wf["node_id"], 1)
    lines = path.read_text().splitlines()
    cut = tmp_path / "cut.jsonl"
    cut.write_text("\n".join(lines[:-1]) + "\n")     # the last write never reached the disk
    with pytest.raises(InvalidRecordError, match="never completed"):
        Workspace.open(cut)
    changed = tmp_path / "changed.jsonl"
    entry = json.loads(lines[-1])
    entry["apply"]["nodes"][0]["step_name"] = "other"
    changed.write_text("\n".join([*lines[:-1], json.dumps(entry)]) + "\n")
    with pytest.raises(InvalidRecordError, match="EX-001"):
        Workspace.open(changed)
    torn = tmp_path / "torn.jsonl"
    torn.write_text("\n".join(lines)[:-5])
    with pytest.raises(InvalidRecordError):
        Workspace.open(torn)
