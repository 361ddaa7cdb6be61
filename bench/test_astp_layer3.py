"""Layer 3: Form B hashing of 10^5 realistic ExecutionNodes, and verification of a 10^4-node
export.

    python -m pytest bench/test_astp_layer3.py --benchmark-json=/tmp/l3.json
    python bench/report.py /tmp/l3.json

Form B contenders over the same 10^5 dicts (as parsed from JSON: UUIDs and instants as
their §19.2 text, a nested ``input_state`` of ~20 values, ~850 bytes of preimage each):
``canonkit-c`` (``execution_node_hash``, compiled Form B kernel), ``canonkit-py`` (the twin:
the §19.2 pseudo-code with json.dumps), and ``json-dumps-sha3`` — the plain loop
``hashlib.sha3_256(json.dumps(node, separators=(",", ":"), ensure_ascii=False).encode())``
over the dicts as they are. ``extra_info["nodes_per_s"]`` is on every contender, and
``["ratio_interleaved_min"]`` on ``canonkit-c``: the loop's time over Form B's, both timed
alternately (best of 5 each), the steadiest ratio when the load varies.

Verification: ``verify`` of one export with 10^4 nodes (workflows of 20 executions, skills
on half of them), on the compiled kernels and on the twin's; and against its floor, the
plain loop ``hashlib.sha3_256(orjson.dumps(x))`` over every node, audit record and edge of
the export (``["ratio_to_floor_interleaved_min"]``: verify's time over the loop's, timed
alternately, best of 5 each).

Writes: ``Workspace`` building an export in memory (``["nodes_per_s"]``), and over a
journal, where every write is two appended lines each flushed and fsynced, so the rate is
the disk's fsync rate over two (``["fsyncs_per_s"]`` says what the disk gave).
"""
from __future__ import annotations

import hashlib
import json
import random
import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import orjson
import pytest

from canonkit import _backend
from canonkit.astp import layer3

EP = "550e8400-e29b-41d4-a716-446655440000"
N_NODES = 100_000
TWIN = _backend.import_on_twins("canonkit.astp")
assert TWIN.__backend__ == "python"


def _u(rng: random.Random) -> str:
    return str(__import__("uuid").UUID(int=rng.getrandbits(128), version=4))


def _node(rng: random.Random, i: int) -> dict[str, Any]:
    at = datetime(2026, 1, 1, tzinfo=timezone.utc) + timedelta(milliseconds=1000 * i + 123)
    return {
        "node_id": _u(rng), "node_type": "ExecutionNode", "schema_version": "3.0.0",
        "workflow_id": _u(rng), "episode_id": EP, "sequence_index": i,
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


NODES = [_node(random.Random(42), i) for i in range(N_NODES)]


def _form_b(hash_node: Callable[[dict[str, Any]], str]) -> Callable[[], object]:
    return lambda: [hash_node(n) for n in NODES]


def _loop() -> object:
    dumps, sha3 = json.dumps, hashlib.sha3_256
    return [sha3(dumps(n, separators=(",", ":"), ensure_ascii=False).encode()).hexdigest()
            for n in NODES]


def _interleaved(fast: Callable[[], object], slow: Callable[[], object], pairs: int = 5) -> float:
    best_fast = best_slow = float("inf")
    for _ in range(pairs):
        t0 = time.perf_counter()
        slow()
        t1 = time.perf_counter()
        fast()
        t2 = time.perf_counter()
        best_slow, best_fast = min(best_slow, t1 - t0), min(best_fast, t2 - t1)
    return best_slow / best_fast


FORM_B = {"canonkit-c": _form_b(layer3.execution_node_hash),
          "canonkit-py": _form_b(TWIN.layer3.execution_node_hash),
          "json-dumps-sha3": _loop}


@pytest.mark.parametrize("contender", list(FORM_B))
def test_form_b_hashing(benchmark: Any, contender: str) -> None:
    fn = FORM_B[contender]
    benchmark.group = "astp-layer3:form-b-1e5-execution-nodes"
    benchmark.extra_info["contender"] = contender
    benchmark.pedantic(fn, rounds=3 if contender != "canonkit-py" else 1, iterations=1)
    benchmark.extra_info["nodes_per_s"] = N_NODES / benchmark.stats.stats.min
    if contender == "canonkit-c":
        assert FORM_B["canonkit-c"]() == FORM_B["canonkit-py"]()   # same hashes, both backends
        benchmark.extra_info["ratio_interleaved_min"] = _interleaved(fn, _loop)


def _plan(n_nodes: int) -> list[dict[str, Any] | None]:
    """The inputs of ``n_nodes`` writes, made up front so a timing holds only the writes:
    for each ExecutionNode its fields, then None for its SkillInvocation when it has one."""
    rng = random.Random(7)
    plan: list[dict[str, Any] | None] = []
    planned = 0
    while planned < n_nodes:
        planned += 1                                    # the workflow's declaration
        for i in range(1, 21):
            node = _node(rng, i)
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


def _write(plan: list[dict[str, Any] | None], journal: Path | None = None) -> layer3.Workspace:
    """A Workspace holding the writes of ``plan``: workflows of up to 20 ExecutionNodes, a
    SkillInvocation on every other one, each workflow closed."""
    rng = random.Random(8)
    ticks = iter(range(10**9))
    ws = layer3.Workspace(workspace_id="ws-1", episode_id=EP, cia="cia@ws-1",
                          clock=lambda: datetime(2026, 1, 1, tzinfo=timezone.utc)
                          + timedelta(milliseconds=next(ticks)),
                          new_id=lambda: __import__("uuid").UUID(int=rng.getrandbits(128), version=4),
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


def _export(n_nodes: int) -> dict[str, Any]:
    return _write(_plan(n_nodes)).export()


EXPORT = _export(10_000)


@pytest.mark.parametrize("contender", ["canonkit-c", "canonkit-py"])
def test_verify_10k_node_export(benchmark: Any, contender: str) -> None:
    verify = layer3.verify if contender == "canonkit-c" else TWIN.layer3.verify
    assert len(EXPORT["nodes"]) == 10_000 and verify(EXPORT).ok
    benchmark.group = "astp-layer3:verify-1e4-node-export"
    benchmark.extra_info["contender"] = contender
    benchmark.pedantic(lambda: verify(EXPORT), rounds=3, iterations=1)
    benchmark.extra_info["nodes_per_s"] = 10_000 / benchmark.stats.stats.min


def _hashing_floor(doc: dict[str, Any]) -> object:
    """SHA3-256 of every node, audit record and edge as ``orjson.dumps`` writes it."""
    sha3, dumps = hashlib.sha3_256, orjson.dumps
    return [sha3(dumps(x)).digest() for part in ("nodes", "audit", "edges") for x in doc[part]]


def test_verify_against_the_hashing_floor(benchmark: Any) -> None:
    benchmark.group = "astp-layer3:verify-vs-hashing-floor"
    benchmark.pedantic(lambda: layer3.verify(EXPORT), rounds=1, iterations=1)
    benchmark.extra_info["ratio_to_floor_interleaved_min"] = _interleaved(
        lambda: _hashing_floor(EXPORT), lambda: layer3.verify(EXPORT))


WRITES = 2_000


def test_workspace_writes_in_memory(benchmark: Any) -> None:
    benchmark.group = "astp-layer3:workspace-writes"
    benchmark.extra_info["contender"] = "in-memory"
    plan = _plan(WRITES)
    ws = benchmark.pedantic(lambda: _write(plan), rounds=5, iterations=1)
    assert len(ws.export()["nodes"]) == WRITES and layer3.verify(ws.export()).ok
    benchmark.extra_info["nodes_per_s"] = WRITES / benchmark.stats.stats.min


def test_workspace_writes_to_a_journal(benchmark: Any, tmp_path: Path) -> None:
    benchmark.group = "astp-layer3:workspace-writes"
    benchmark.extra_info["contender"] = "journal"
    plan = _plan(200)
    paths = iter(tmp_path / f"journal-{i}.jsonl" for i in range(100))
    ws = benchmark.pedantic(lambda: _write(plan, next(paths)), rounds=3, iterations=1)
    writes = len(ws.audit)
    benchmark.extra_info["nodes_per_s"] = 200 / benchmark.stats.stats.min
    benchmark.extra_info["fsyncs_per_s"] = (2 * writes + 1) / benchmark.stats.stats.min
