"""The Layer 3 inputs of the benchmarks (bench/test_astp_layer3.py,
bench/layer3_speed.py), seeded, the same on every run: realistic ExecutionNodes as parsed
from JSON, the writes that build an export of any size through ``Workspace``, and the
hashing floor ``verify`` is measured against."""
from __future__ import annotations

import hashlib
import random
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import orjson

from canonkit.astp import layer3

EP = "550e8400-e29b-41d4-a716-446655440000"


def _uuid_text(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def execution_node(rng: random.Random, i: int) -> dict[str, Any]:
    at = datetime(2026, 1, 1, tzinfo=timezone.utc) + timedelta(milliseconds=1000 * i + 123)
    return {
        "node_id": _uuid_text(rng), "node_type": "ExecutionNode", "schema_version": "3.0.0",
        "workflow_id": _uuid_text(rng), "episode_id": EP, "sequence_index": i,
        "step_name": "fetch_credit_report", "agent_id": "underwriter-agent@ws-1",
        "executed_at": at.isoformat(), "duration_ms": rng.randrange(5000),
        "input_state": {
            "applicant": {"name": rng.choice(["Jane Q. Example", "Ana Müller", "李雷"]),
                          "id": f"A-{i}", "income": round(rng.uniform(2e4, 3e5), 2),
                          "scores": [rng.randrange(300, 850) for _ in range(3)],
                          "address": {"street": "1 Main St", "city": "Springfield", "zip": "12345"}},
            "loan": {"amount": rng.randrange(10**4, 10**6), "term_months": 360, "rate": 0.0625,
                     "purpose": "purchase"},
            "flags": [True, False, None], "notes": "first pass, \"quoted\"\nsecond line"},
        "output_state": {"decision": "refer", "confidence": 0.82, "reasons": ["dti", "ltv"]},
        "status": "COMPLETED", "error_detail": None, "error_type": None,
    }


def writes(n_nodes: int) -> list[dict[str, Any] | None]:
    """The inputs of ``n_nodes`` writes, made up front so a timing holds only the writes:
    for each ExecutionNode its fields, then None for its SkillInvocation when it has one."""
    rng = random.Random(7)
    plan: list[dict[str, Any] | None] = []
    planned = 0
    while planned < n_nodes:
        planned += 1                                    # the workflow's declaration
        for i in range(1, 21):
            node = execution_node(rng, i)
            plan.append({k: node[k] for k in ("sequence_index", "step_name", "agent_id",
                                              "duration_ms", "input_state", "output_state",
                                              "status")})
            planned += 1
            if i % 2 and planned < n_nodes:
                plan.append(None)
                planned += 1
            if planned >= n_nodes:
                break
        plan.append({})                                 # the workflow closes
    return plan


def write(plan: list[dict[str, Any] | None], journal: Path | None = None) -> layer3.Workspace:
    """A Workspace holding the writes of ``plan``: workflows of up to 20 ExecutionNodes, a
    SkillInvocation on every other one, each workflow closed."""
    rng = random.Random(8)
    ticks = iter(range(10**9))
    ws = layer3.Workspace(workspace_id="ws-1", episode_id=EP, cia="cia@ws-1",
                          clock=lambda: datetime(2026, 1, 1, tzinfo=timezone.utc)
                          + timedelta(milliseconds=next(ticks)),
                          new_id=lambda: uuid.UUID(int=rng.getrandbits(128), version=4),
                          journal=journal)
    wf: dict[str, Any] | None = None
    step: dict[str, Any] = {}
    for fields in plan:
        if wf is None:
            wf = ws.declare_workflow(principal="cia@ws-1", workflow_name="underwrite_loan",
                                     declared_by="cia@ws-1", input_context={"a": 1})
        if fields is None:
            ws.invoke_skill(principal="cia@ws-1", execution_node_id=step["node_id"],
                            workflow_id=wf["node_id"], skill_id="credit.lookup",
                            skill_source="mcp", skill_version="1.0", invoked_by="agent",
                            input_parameters={"q": step["sequence_index"]}, status="COMPLETED")
        elif fields:
            step = ws.record_execution(principal="cia@ws-1", workflow_id=wf["node_id"], **fields)
        else:
            ws.close_workflow(wf["node_id"], "COMPLETED", status_updated_at=datetime(
                2026, 2, 1, tzinfo=timezone.utc), principal="cia@ws-1")
            wf = None
    return ws


def export(n_nodes: int) -> dict[str, Any]:
    """The export of ``writes(n_nodes)``."""
    return write(writes(n_nodes)).export()


def hashing_floor(doc: dict[str, Any]) -> object:
    """SHA3-256 of every node, audit record and edge as ``orjson.dumps`` writes it."""
    sha3, dumps = hashlib.sha3_256, orjson.dumps
    return [sha3(dumps(x)).digest() for part in ("nodes", "audit", "edges") for x in doc[part]]
