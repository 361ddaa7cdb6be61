"""Layer 3 reads nothing wrong as ok: the properties of every edge (L3-008), the members of
nodes, edges and audit records, exports of any shape (findings, never exceptions, from the
API and the command line), the journal read through the strict JSON reader (its torn last
line, bytes that are not UTF-8, repeated keys, blank lines), and integers no export could
carry back."""
from __future__ import annotations

import copy
import json
import math
import random
from pathlib import Path
from typing import Any

import pytest
from test_astp_layer3 import CIA, EP, declare, execute, full, invoke, journaled, workspace

from canonkit.astp.audit import audit_record_hash
from canonkit.astp.canonical_json import canonical_json, parse_canonical
from canonkit.astp.layer3 import Layer3GovernanceError, Workspace, verify
from canonkit.astp.layer3.synth import make_export
from canonkit.cli import main as cli_main
from canonkit.errors import InvalidFieldError, InvalidRecordError

INTENTION = "00000000-0000-4000-8000-0000000000aa"


def _export_with_every_edge() -> dict[str, Any]:
    ws = workspace()
    wf = declare(ws, intention_id=INTENTION)
    first = execute(ws, wf["node_id"], 1)
    second = execute(ws, wf["node_id"], 2)
    invoke(ws, first)
    invoke(ws, second)
    invoke(ws, second)
    return ws.export()


def _rechain(doc: dict[str, Any]) -> None:
    """Recompute every record hash and link, as a forger who rewrote a delta would."""
    prior = None
    for record in doc["audit"]:
        record["prior_audit_hash"] = prior
        record["record_hash"] = prior = audit_record_hash(record)


def _forge_recorded_edge(doc: dict[str, Any], name: str, properties: Any) -> None:
    """Give the first ``name`` edge ``properties`` in the export and in its write's delta."""
    edge = next(e for e in doc["edges"] if e["name"] == name)
    edge["properties"] = properties
    for record in doc["audit"]:
        forward = parse_canonical(record["forward_delta"])
        for recorded in forward.get("edges", []):
            if (recorded["name"], recorded["from"], recorded["to"]) == (
                    name, edge["from"], edge["to"]):
                recorded["properties"] = properties
                record["forward_delta"] = canonical_json(forward)
    _rechain(doc)


# --- edge properties (L3-008) ---------------------------------------------------------------

EDGES_WITHOUT_PROPERTIES = ("DECLARED_WITHIN", "SERVES_INTENTION", "EXECUTES_WITHIN",
                            "INVOKED_WITHIN", "SKILL_PRECEDES")
JUNK = [{"x": 1}, {"x": math.nan}, None, "junk", [], {"edge_type": "SEQUENTIAL"}, 0]


def test_every_edge_of_a_clean_export_carries_its_properties() -> None:
    doc = _export_with_every_edge()
    assert verify(doc).ok
    for edge in doc["edges"]:
        expected = {"edge_type", "sequence_gap"} if edge["name"] == "PRECEDES" else set()
        assert set(edge["properties"]) == expected


@pytest.mark.parametrize("name", EDGES_WITHOUT_PROPERTIES)
@pytest.mark.parametrize("properties", JUNK, ids=repr)
def test_junk_properties_of_an_edge_without_properties_are_found(name: str,
                                                                 properties: Any) -> None:
    doc = _export_with_every_edge()
    edge = next(e for e in doc["edges"] if e["name"] == name)
    edge["properties"] = properties
    report = verify(doc)
    assert report.vectors == ["L3-008"], report.findings
    assert {f.node_id for f in report.findings} == {edge["from"]}


@pytest.mark.parametrize("name", EDGES_WITHOUT_PROPERTIES)
def test_properties_forged_in_the_export_and_its_write_alike_are_found(name: str) -> None:
    doc = _export_with_every_edge()
    _forge_recorded_edge(doc, name, {"weight": 1})
    report = verify(doc)
    assert report.vectors == ["L3-008"], report.findings
    assert report.findings[0].field == "properties"


def test_an_edge_without_properties_is_found() -> None:
    doc = _export_with_every_edge()
    del next(e for e in doc["edges"] if e["name"] == "EXECUTES_WITHIN")["properties"]
    assert verify(doc).vectors == ["L3-008"]


@pytest.mark.parametrize("properties", [
    {"edge_type": "SEQUENTIAL", "sequence_gap": True},
    {"edge_type": "SEQUENTIAL", "sequence_gap": 1.0},
    {"edge_type": "SEQUENTIAL", "sequence_gap": 1, "weight": 2},
    {"edge_type": "SEQUENTIAL", "sequence_gap": math.nan},
    {"edge_type": ["SEQUENTIAL"], "sequence_gap": 1},
], ids=repr)
def test_precedes_properties_are_exactly_edge_type_and_an_integer_gap(properties: Any) -> None:
    doc = _export_with_every_edge()
    next(e for e in doc["edges"] if e["name"] == "PRECEDES")["properties"] = properties
    assert verify(doc).vectors == ["L3-008"]


def test_a_recorded_gap_of_another_type_is_found() -> None:
    """``true`` equals ``1`` in Python: the comparison with the write's record is by type too."""
    doc = _export_with_every_edge()
    _forge_recorded_edge(doc, "PRECEDES", {"edge_type": "SEQUENTIAL", "sequence_gap": True})
    assert verify(doc).vectors == ["L3-008"]


def test_the_writer_refuses_properties_the_verifier_would_refuse() -> None:
    ws = workspace()
    wf = declare(ws)
    execute(ws, wf["node_id"], 1)
    with pytest.raises(Layer3GovernanceError, match="L3-008"):
        execute(ws, wf["node_id"], 2, edge_type=["SEQUENTIAL"])
    assert verify(ws.export()).ok


@pytest.mark.parametrize("where", ["node", "edge", "audit"])
def test_a_member_outside_the_format_is_found(where: str) -> None:
    *_, doc = full()
    if where == "node":
        doc["nodes"][1]["approved_by"] = "someone"
        expected = ["L3-004"]
    elif where == "edge":
        doc["edges"][0]["weight"] = 1
        expected = ["L3-007"]
    else:
        doc["audit"][0]["note"] = "unhashed"
        expected = ["CIA-003"]
    assert verify(doc).vectors == expected


def test_reverify_fails_the_layer3_of_an_episode_with_junk_edge_properties(
        tmp_path: Path) -> None:
    from test_reverify_layer3 import _episodes, _export, _lines, _write_jsonl

    doc = _episodes(1, 3)[0]
    doc["layer3"], _ = _export(doc)
    for edge in doc["layer3"]["edges"]:
        if edge["name"] != "PRECEDES":
            edge["properties"] = {"junk": None}
    (record,) = _lines(_write_jsonl(tmp_path / "c.jsonl", [doc]))
    assert record["components"]["layer3"] == "failed"
    assert {f["vector"] for f in record["layer3_findings"]} == {"L3-008"}


# --- exports of any shape: findings, never exceptions -------------------------------------------

REPLACEMENTS = [None, True, 0, -1, 2**64, 1.5, math.nan, 10**5000, "", "x", [], {}, [1],
                {"a": None}]


def _members(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """The path of every member, at every depth."""
    found = []
    items = value.items() if isinstance(value, dict) else enumerate(value) \
        if isinstance(value, list) else ()
    for key, item in items:
        found.append((*path, key))
        found.extend(_members(item, (*path, key)))
    return found


def _replace(doc: Any, path: tuple[Any, ...], value: Any) -> None:
    for key in path[:-1]:
        doc = doc[key]
    doc[path[-1]] = value


def _small_export() -> dict[str, Any]:
    ws = workspace()
    wf = declare(ws, intention_id=INTENTION)
    step = execute(ws, wf["node_id"], 1, error_detail=None)
    invoke(ws, step)
    return ws.export()


def test_every_change_to_every_member_is_a_finding_never_an_exception() -> None:
    base = _small_export()
    assert verify(base).ok
    paths = _members(base)
    assert len(paths) >= 150
    for path in paths:
        for value in REPLACEMENTS:
            doc = copy.deepcopy(base)
            _replace(doc, path, value)
            if doc == base:     # the member held that value already
                continue
            report = verify(doc)          # never raises
            assert not report.ok, (path, value)
            json.dumps(report.to_json(), allow_nan=False)  # findings are plain JSON


@pytest.mark.parametrize("path,value", [
    (("audit", 0, "delta_type"), {"a": None}),
    (("nodes", 1, "sequence_index"), [1]),
    (("audit", 1, "forward_delta"), 10**9),        # never taken as a byte count
    (("audit", 2, "forward_delta"), [1, 2, 3]),
    (("nodes", 0, "content_hash"), ["f" * 64]),
], ids=["delta-type-object", "sequence-index-list", "delta-int", "delta-list", "hash-list"])
def test_unhashable_or_mistyped_members_are_findings(path: tuple[Any, ...], value: Any) -> None:
    doc = _small_export()
    _replace(doc, path, value)
    report = verify(doc, episode=None)
    assert not report.ok and report.findings


def test_the_command_line_reports_a_malformed_export_as_findings(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = _small_export()
    doc["audit"][0]["delta_type"] = {"a": None}
    next(n for n in doc["nodes"] if n["node_type"] == "ExecutionNode")["sequence_index"] = [1]
    path = tmp_path / "export.json"
    path.write_text(json.dumps(doc))
    assert cli_main(["astp", "layer3", "verify", str(path), "--json"]) == 1
    out, err = capsys.readouterr()
    assert "Traceback" not in err and err == ""
    report = json.loads(out)
    assert report["ok"] is False and report["findings"]
