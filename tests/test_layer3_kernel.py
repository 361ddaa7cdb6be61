"""The Layer 3 verification kernel (docs/astp-kernel-api.md, ``checker``): compiled
(``canonkit.astp._layer3``) against its twin (``canonkit.astp._py.layer3``, which asks the
rules of ``astp.layer3.rules`` themselves), and ``verify`` with either kernel against
``verify`` alone (a kernel that reads nothing: every node, record and edge judged by the
verifier's own code). On exports changed the way a faulty or hostile writer would change
them — every field of every node, record, forward delta and edge set to junk of every
type (subclasses, other mappings, huge integers, floats, booleans, repeated and unknown
members), then the hashes and the chain made consistent again, so that the kernel reads on
to the rule behind them — the kernels read the same things into the same ledger, and the
three reports are the same findings in the same order."""
from __future__ import annotations

import copy
import itertools
import importlib
import json
import random
from collections import UserDict
from collections.abc import Iterator, Mapping
from types import SimpleNamespace
from typing import Any
from unittest import mock

import pytest
from conftest import backend_pair
from hypothesis import example, given, settings
from hypothesis import strategies as st

from canonkit.astp._py import audit as audit_twin
from canonkit.astp._py import layer3 as checker_twin
from canonkit.astp.layer3 import verify as verify_facade
from canonkit.astp.layer3.hashing import content_hash
from canonkit.astp.layer3.synthetic_exports import VIOLATIONS, make_export

verify_module = importlib.import_module("canonkit.astp.layer3.verify")
C, PY = backend_pair("astp", "checker")
EXAMPLES = settings(max_examples=200, deadline=None)


class Text(str):
    """Text of a subclass: the kernels leave it to the verifier."""


class Number(int):
    """An integer of a subclass."""


class Members(Mapping[str, Any]):
    """A read-only mapping that is not a dict."""

    def __init__(self, items: dict[str, Any]) -> None:
        self.items_ = items

    def __getitem__(self, key: str) -> Any:
        return self.items_[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.items_)

    def __len__(self) -> int:
        return len(self.items_)

    def __repr__(self) -> str:     # the same in every copy: findings quote it
        return f"Members({self.items_!r})"


#: junk for any member: every JSON type and then some, near misses of the values the rules
#: admit, and shapes that are only possible in memory
JUNK = [None, True, False, 0, 1, -1, 2, 2**64, -2**63, 10**40, 0.0, -0.0, 1.0, 1.5, "", "x",
        "COMPLETED", "FAILED", "INTERRUPTED", "DECLARED", "IN_PROGRESS", "AGENT_ERROR", "TIMEOUT",
        "SEQUENTIAL", "PARALLEL", "PRECEDES", "EXECUTES_WITHIN", "ExecutionNode",
        "WorkflowDeclaration", "SkillInvocation", "0" * 64, "A" * 64, "é", "\u212b",
        Text("COMPLETED"), Text("x"), Number(1), [], [1], ["x"], {}, {"a": 1},
        {"edge_type": "SEQUENTIAL", "sequence_gap": 1}, {"edge_type": "SEQUENTIAL", "sequence_gap": 0},
        {"edge_type": "SEQUENTIAL", "sequence_gap": True}, {"edge_type": "LOOP", "sequence_gap": 1},
        {"edge_type": "SEQUENTIAL"}, {"edge_type": "SEQUENTIAL", "sequence_gap": 1, "x": 1},
        {"from": "DECLARED", "to": "IN_PROGRESS"}, UserDict({"a": 1}), Members({})]


def _junk(rng: random.Random) -> Any:
    return copy.deepcopy(rng.choice(JUNK)) if rng.random() < 0.8 else rng.getrandbits(8)


def _rehash(node: Any) -> None:
    try:
        node["content_hash"] = content_hash(node["node_type"], node)
    except Exception:  # noqa: BLE001 — junk that Form B refuses stays refused
        pass


def _rechain(doc: dict[str, Any]) -> None:
    prior = None
    for i, record in enumerate(doc["audit"]):
        if not isinstance(record, dict):
            continue
        record["delta_sequence"] = i + 1
        record["prior_audit_hash"] = prior
        try:
            record["record_hash"] = prior = audit_twin.audit_record_hash(record)
        except Exception:  # noqa: BLE001 — a record the hash refuses breaks the chain there
            return


def _edit_forward(record: Any, rng: random.Random) -> None:
    try:
        forward = audit_twin.parse_canonical(record["forward_delta"])
    except Exception:  # noqa: BLE001
        return
    if not isinstance(forward, dict) or not forward:
        return
    key = rng.choice(sorted(forward))
    if key == "edges" and isinstance(forward[key], list) and forward[key] and rng.random() < 0.7:
        edge = rng.choice(forward[key])
        if isinstance(edge, dict):
            edge[rng.choice(["name", "from", "to", "properties", "x"])] = _junk(rng)
    elif key == "workflow_transition" and isinstance(forward[key], dict) and rng.random() < 0.7:
        forward[key][rng.choice(["from", "to", "workflow_id", "status_updated_at"])] = _junk(rng)
    elif rng.random() < 0.2:
        del forward[key]
    else:
        forward[key] = _junk(rng)
    try:
        record["forward_delta"] = audit_twin.canonical_json(forward)
    except Exception:  # noqa: BLE001 — a delta no JSON text holds: set as the value itself
        record["forward_delta"] = forward


def forge_edge(doc: dict[str, Any], edge: dict[str, Any], properties: Any) -> None:
    """Give ``edge`` ``properties`` in the export and in the write that recorded it."""
    edge["properties"] = copy.deepcopy(properties)
    for record in doc["audit"]:
        try:
            forward = audit_twin.parse_canonical(record["forward_delta"])
        except Exception:  # noqa: BLE001
            continue
        recorded_edges = forward.get("edges", []) if isinstance(forward, dict) else []
        for recorded in recorded_edges if isinstance(recorded_edges, list) else []:
            if isinstance(recorded, dict) and [recorded.get(k) for k in ("name", "from", "to")] == [
                    edge.get(k) for k in ("name", "from", "to")]:
                recorded["properties"] = copy.deepcopy(properties)
                try:
                    record["forward_delta"] = audit_twin.canonical_json(forward)
                except Exception:  # noqa: BLE001 — no JSON text holds it: the value itself
                    record["forward_delta"] = forward


def mutate(doc: dict[str, Any], rng: random.Random, rounds: int) -> dict[str, Any]:
    """``doc`` with ``rounds`` members set to junk (or dropped, repeated, retyped), then —
    most of the time — its content hashes and audit chain recomputed, as a writer that
    signs what it forged would."""
    for _ in range(rounds):
        part = rng.choice(["nodes", "nodes", "audit", "forward", "forward", "edges", "edges",
                           "order", "top"])
        items = doc["edges"] if part == "edges" else doc["nodes"] if part == "nodes" else doc["audit"]
        if part == "top":
            doc[rng.choice(["cia", "episode_id", "workspace_id", "chain_key"])] = _junk(rng)
            continue
        if not items:
            continue
        i = rng.randrange(len(items))
        if part == "order":
            j = rng.randrange(len(items))
            how = rng.randrange(3)
            if how == 0:
                items[i], items[j] = items[j], items[i]
            elif how == 1:
                items.append(copy.deepcopy(items[i]))
            else:
                items[i] = _junk(rng)
            continue
        item = items[i]
        if not isinstance(item, dict):
            continue
        if part == "forward":
            _edit_forward(item, rng)
            continue
        key = rng.choice(sorted(item) + ["extra"])
        if rng.random() < 0.15:
            item.pop(key, None)
        elif part == "edges" and key == "properties" and rng.random() < 0.7:
            forge_edge(doc, item, rng.choice([
                {}, {"edge_type": "SEQUENTIAL", "sequence_gap": rng.randint(-1, 3)},
                {"edge_type": Text("SEQUENTIAL"), "sequence_gap": 1}, _junk(rng)]))
        else:
            item[key] = _junk(rng)
        if part == "nodes" and rng.random() < 0.8:
            _rehash(item)
    if rng.random() < 0.8:
        _rechain(doc)
    return doc


def exports(rng: random.Random) -> dict[str, Any]:
    violation = rng.choice([None, None, *[v for v in VIOLATIONS if v != "L3-001"]])
    return make_export(rng, violation=violation)[0]


# --- the ledger ---------------------------------------------------------------------------------

def ledger(doc: Any) -> Any:
    book = verify_module._Verification(doc)
    if isinstance(doc, dict):
        book.read_cia(doc.get("cia"))
    return book


def _shown(value: Any) -> Any:
    """A value with its types spelled out, containers by content (an identity-free view)."""
    if isinstance(value, dict):
        return ("dict", sorted(((repr(k), _shown(v)) for k, v in value.items()), key=repr))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [_shown(v) for v in value])
    if isinstance(value, set):
        return ("set", sorted(map(repr, value)))
    if isinstance(value, verify_module._Workflow):
        return ("workflow", _shown(vars(value)))
    return (type(value).__name__, repr(value))


def state(book: Any) -> Any:
    return _shown({name: getattr(book, name) for name in (
        "nodes", "steps", "collisions", "created", "audited_edges", "workflows", "matched",
        "shaped")})


def run_kernel(kernel: Any, doc: dict[str, Any]) -> Any:
    """Every kernel function over ``doc`` in the verifier's order, resuming past each item it
    did not read (as the verifier does, without judging it): what each returned, and the
    ledger after each."""
    book = ledger(doc)
    out: list[Any] = []
    nodes = doc.get("nodes") if isinstance(doc.get("nodes"), list) else []
    i = 0
    while i < len(nodes):
        i = kernel.clean_nodes(nodes, i, book)
        out.append(("nodes", i))
        i += 1
    records = doc.get("audit") if isinstance(doc.get("audit"), list) else []
    forwards, i = kernel.clean_records(records, doc.get("episode_id"), doc.get("workspace_id"), book)
    out.append(("records", i, _shown(forwards)))
    if forwards is None:
        forwards = [None] * len(records)
    while i < len(records):
        i = kernel.clean_events(records, forwards, i + 1, book)
        out.append(("events", i))
    out.append(("unmatched", kernel.unmatched_nodes(book.nodes, book.matched)))
    edges = doc.get("edges") if isinstance(doc.get("edges"), list) else []
    exported: dict[Any, Any] = {}
    i = 0
    while i < len(edges):
        i = kernel.clean_edges(edges, i, exported, book)
        out.append(("edges", i))
        i += 1
    outgoing: dict[str, set[str]] = {}
    out.append(("shapes", kernel.edge_shapes(exported, book.shaped, outgoing), _shown(outgoing)))
    out.append(("missing", kernel.missing_edges(book.nodes, outgoing)))
    out.append(("ledger", state(book)))
    return out


seeds = st.integers(0, 2**32)


@EXAMPLES
@given(seed=seeds, rounds=st.integers(0, 4))
@example(0, 0)
def test_the_compiled_kernel_reads_what_its_twin_reads(seed: int, rounds: int) -> None:
    rng = random.Random(seed)
    doc = mutate(exports(rng), rng, rounds)
    assert run_kernel(C, copy.deepcopy(doc)) == run_kernel(PY, copy.deepcopy(doc))


# --- verify with a kernel == verify alone -------------------------------------------------------

def _decline_records(records: Any, episode_id: Any, workspace_id: Any, book: Any) -> Any:
    return None, 0


#: a kernel that reads nothing: the verifier judges every node, record and edge itself
READS_NOTHING = SimpleNamespace(
    clean_nodes=lambda items, start, book: start,
    note_step=checker_twin.note_step,
    clean_records=_decline_records,
    clean_events=lambda records, forwards, start, book: start,
    unmatched_nodes=lambda nodes, matched: list(nodes),
    clean_edges=lambda items, start, exported, book: start,
    edge_shapes=checker_twin.edge_shapes,
    missing_edges=lambda nodes, outgoing: list(nodes))


def report(kernel: Any, doc: Any, episode: Any = None) -> Any:
    """``verify``'s report of ``doc`` with ``kernel`` bound as its fast path."""
    with mock.patch.object(verify_module, "checker", kernel):
        return verify_facade(copy.deepcopy(doc), episode=episode).to_json()


@EXAMPLES
@given(seed=seeds, rounds=st.integers(0, 4))
@example(0, 0)
@example(3, 1)
def test_verify_with_either_kernel_reports_what_it_reports_alone(seed: int, rounds: int) -> None:
    rng = random.Random(seed)
    doc = mutate(exports(rng), rng, rounds)
    alone = report(READS_NOTHING, doc)
    assert report(C, doc) == alone
    assert report(PY, doc) == alone
    json.dumps(alone, allow_nan=False)


def test_a_clean_export_is_read_whole_by_the_kernel() -> None:
    """The fast path is the common path: a clean export leaves the verifier nothing."""
    doc = make_export(random.Random(5))[0]
    for kernel in (C, PY):
        out = run_kernel(kernel, doc)
        assert out[0] == ("nodes", len(doc["nodes"]))
        assert out[1][:2] == ("records", len(doc["audit"]))
        assert ("unmatched", []) in out and ("missing", []) in out
        assert next(o for o in out if o[0] == "shapes")[1] == []


@pytest.mark.parametrize("violation", [v for v in VIOLATIONS if v != "L3-001"])
def test_each_violation_is_left_to_the_verifier_and_found(violation: str) -> None:
    for seed in range(4):
        doc, vectors = make_export(random.Random(seed), violation=violation)
        for kernel in (C, PY):
            with mock.patch.object(verify_module, "checker", kernel):
                assert verify_facade(copy.deepcopy(doc)).vectors == vectors
        assert report(C, doc) == report(READS_NOTHING, doc)


def test_the_target_catches_a_kernel_that_reads_too_much() -> None:
    """A kernel that took a node the rules refuse would hide a finding: the comparison with
    the verifier alone sees it."""
    doc, _ = make_export(random.Random(1), violation="EX-003")

    def lenient(items: Any, start: int, book: Any) -> int:
        for node in items[start:]:
            book.nodes[node["node_id"]] = node
        return len(items)

    lax = SimpleNamespace(**{**vars(READS_NOTHING), "clean_nodes": lenient})
    assert report(lax, doc) != report(READS_NOTHING, doc)


# --- hostile shapes the rules must judge alike ----------------------------------------------------

def every_edge() -> dict[str, Any]:
    """A clean export holding every one of the seven edges."""
    doc = make_export(random.Random(3))[0]
    assert len({e["name"] for e in doc["edges"]}) == 7
    return doc


STATUSES = ["COMPLETED", "FAILED", "INTERRUPTED", Text("COMPLETED"), "DECLARED", None, 1]
ERROR_TYPES = [None, "AGENT_ERROR", "UNKNOWN", "x", Text("TIMEOUT"), 1, []]
DETAILS = [None, {}, {"reason": "x"}, "x", [], Members({})]


def test_execution_errors_are_judged_as_the_rule_judges_them() -> None:
    """EX-003 in C (``check_execution_errors``) on every combination of statuses, error
    types and details, the content hash made to recompute wherever Form B can hash them."""
    base = every_edge()
    at = next(i for i, n in enumerate(base["nodes"]) if n["node_type"] == "ExecutionNode")
    for status, error_type, detail in itertools.product(STATUSES, ERROR_TYPES, DETAILS):
        doc = copy.deepcopy(base)
        node = doc["nodes"][at]
        node.update(status=status, error_type=copy.deepcopy(error_type),
                    error_detail=copy.deepcopy(detail))
        _rehash(node)
        assert run_kernel(C, copy.deepcopy(doc)) == run_kernel(PY, copy.deepcopy(doc)), (
            status, error_type, detail)


@pytest.mark.parametrize("name", ["SKILL_PRECEDES", "PRECEDES", "INVOKED_WITHIN", "EXECUTES_WITHIN",
                                  "DECLARED_WITHIN"])
def test_edges_forged_between_other_nodes_are_judged_alike(name: str) -> None:
    """L3-007 in C: an edge (in the export and its write alike) turned around, looping on
    its own node, or ending at every other node of the export."""
    base = every_edge()
    at = next(i for i, e in enumerate(base["edges"]) if e["name"] == name)
    ends = [n["node_id"] for n in base["nodes"]] + [base["episode_id"], "x"]
    edge = base["edges"][at]
    for source, target in [(edge["to"], edge["from"]), (edge["from"], edge["from"]),
                           (edge["to"], edge["to"])] + [(edge["from"], end) for end in ends] + [
                               (end, edge["to"]) for end in ends]:
        doc = copy.deepcopy(base)
        forged = doc["edges"][at]
        for record in doc["audit"]:
            forward = audit_twin.parse_canonical(record["forward_delta"])
            for recorded in forward.get("edges", []):
                if [recorded[k] for k in ("name", "from", "to")] == [name, forged["from"], forged["to"]]:
                    recorded.update({"from": source, "to": target})
                    record["forward_delta"] = audit_twin.canonical_json(forward)
        forged.update({"from": source, "to": target})
        _rechain(doc)
        assert run_kernel(C, copy.deepcopy(doc)) == run_kernel(PY, copy.deepcopy(doc)), (source, target)


@EXAMPLES
@given(st.sampled_from(JUNK), st.sampled_from(["PRECEDES", "EXECUTES_WITHIN", "INVOKED_WITHIN",
                                                "SKILL_PRECEDES", "DECLARED_WITHIN"]))
def test_edge_properties_are_judged_as_the_rule_judges_them(properties: Any, name: str) -> None:
    """L3-008 in C (``check_edge_properties``, and the recorded properties compared as the
    verifier compares them): the same junk in the export and in the write that recorded it."""
    doc = every_edge()
    forge_edge(doc, next(e for e in doc["edges"] if e["name"] == name), properties)
    _rechain(doc)
    assert run_kernel(C, copy.deepcopy(doc)) == run_kernel(PY, copy.deepcopy(doc))


@EXAMPLES
@given(st.sampled_from(JUNK), st.sampled_from(JUNK))
def test_precedes_and_its_gap_are_judged_as_the_rules_judge_them(index: Any, gap: Any) -> None:
    """L3-007/L3-008 in C (``check_precedes``, ``check_sequence_gap``) on junk sequence
    indexes and gaps."""
    doc = every_edge()
    edge = next(e for e in doc["edges"] if e["name"] == "PRECEDES")
    later = next(n for n in doc["nodes"] if n["node_id"] == edge["to"])
    later["sequence_index"] = copy.deepcopy(index)
    _rehash(later)
    forge_edge(doc, edge, {"edge_type": "SEQUENTIAL", "sequence_gap": copy.deepcopy(gap)})
    _rechain(doc)
    assert run_kernel(C, copy.deepcopy(doc)) == run_kernel(PY, copy.deepcopy(doc))


@pytest.mark.parametrize("final", ["COMPLETED", "FAILED", "INTERRUPTED", "DECLARED", "IN_PROGRESS",
                                   Text("COMPLETED"), None, 1, ["COMPLETED"]])
def test_a_close_is_judged_by_the_state_machine_alike(final: Any) -> None:
    """WF-004 in C (``check_transition``) for every closing status, a subclass included."""
    for seed in range(6):
        doc = make_export(random.Random(seed))[0]
        closes = [r for r in doc["audit"] if r["delta_type"] == "WORKFLOW_CLOSED"]
        if not closes:
            continue
        forward = audit_twin.parse_canonical(closes[0]["forward_delta"])
        forward["final_status"] = final
        closes[0]["forward_delta"] = (forward if isinstance(final, Text)
                                      else audit_twin.canonical_json(forward))
        _rechain(doc)
        assert run_kernel(C, copy.deepcopy(doc)) == run_kernel(PY, copy.deepcopy(doc))
        assert report(C, doc) == report(READS_NOTHING, doc)
