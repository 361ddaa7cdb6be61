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
from canonkit.astp.layer3.synthetic_exports import make_export
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


# --- the journal, read through the strict JSON reader ---------------------------------------------

def _journal(tmp_path: Path) -> tuple[Path, bytes, list[int]]:
    """A journal of three writes: its path, bytes and the offset of each line."""
    path = tmp_path / "ws.jsonl"
    ws = journaled(path)
    wf = declare(ws)
    execute(ws, wf["node_id"], 1)
    data = path.read_bytes()
    starts = [0] + [i + 1 for i, byte in enumerate(data) if byte == 0x0A][:-1]
    return path, data, starts


def _refusal(path: Path, data: bytes) -> InvalidRecordError:
    path.write_bytes(data)
    with pytest.raises(InvalidRecordError) as info:
        Workspace.open(path)
    return info.value


def test_a_torn_last_line_is_refused_with_its_offset_and_never_appended_onto(
        tmp_path: Path) -> None:
    path, data, starts = _journal(tmp_path)
    for cut in (1, 5, len(data) - starts[-1] - 1):      # the last write cut off, even by its \n
        error = _refusal(path, data[:-cut])
        assert (error.detail, error.offset) == ("torn_line", starts[-1])
        assert f":{len(starts)}:" in str(error)
        assert path.read_bytes() == data[:-cut]          # nothing appended, nothing repaired
    error = _refusal(path, data[:starts[-1]])            # cut at a line boundary: whole lines
    assert (error.detail, error.offset) == ("unfinished_write", starts[-2])


def test_a_byte_that_is_not_utf8_is_refused_at_its_offset(tmp_path: Path) -> None:
    path, data, starts = _journal(tmp_path)
    at = starts[2] + 40
    error = _refusal(path, data[:at] + b"\xff" + data[at + 1:])
    assert (error.detail, error.offset) == ("invalid_json_input", at)
    assert not isinstance(error, UnicodeDecodeError)


@pytest.mark.parametrize("line", [0, 1, 2])
def test_a_repeated_key_at_any_depth_is_refused_at_its_offset(tmp_path: Path, line: int) -> None:
    path, data, starts = _journal(tmp_path)
    end = data.index(b"\n", starts[line])
    text = data[starts[line]:end]
    entry = json.loads(text)
    inner = entry.get("audit") or entry.get("apply") or entry
    if "nodes" in inner:
        inner = inner["nodes"][0]
    key = next(iter(inner))
    first = json.dumps(key) + ": " + json.dumps(inner[key])
    repeated = text.replace(first.encode(), (first + ", " + first).encode(), 1)
    assert repeated != text
    error = _refusal(path, data[:starts[line]] + repeated + data[end:])
    assert error.detail == "duplicate_json_key"
    assert error.offset == starts[line] + repeated.index(first.encode(), text.index(
        first.encode()) + 1)


def test_blank_lines_hold_no_entry(tmp_path: Path) -> None:
    path, data, starts = _journal(tmp_path)
    with_blanks = b"\n" + data[:starts[2]] + b"  \t\r\n\n" + data[starts[2]:] + b" \n"
    path.write_bytes(with_blanks)
    again = Workspace.open(path)
    reference = tmp_path / "plain.jsonl"
    reference.write_bytes(data)
    assert again.export() == Workspace.open(reference).export()


def test_journal_lines_split_at_newlines_only(tmp_path: Path) -> None:
    path, data, starts = _journal(tmp_path)
    path.write_bytes(data.replace(b"\n", b"\r\n"))       # a CR is JSON whitespace
    Workspace.open(path)
    error = _refusal(path, data[:starts[1]] + b"{}\r" + data[starts[1]:])
    assert (error.detail, error.offset) == ("invalid_json_input", starts[1] + 3)  # one line


def test_a_line_over_the_limit_is_refused_without_being_read_whole(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from canonkit.astp.layer3 import workspace as module

    path, data, starts = _journal(tmp_path)
    monkeypatch.setattr(module, "MAX_JOURNAL_LINE", 64)
    error = _refusal(path, data)
    assert (error.detail, error.offset) == ("line_too_long", starts[0])


@pytest.mark.parametrize("change,reason", [
    (lambda lines: [b'{"format": "canonkit-layer3-journal/1"}', *lines[1:]], "not_a_journal"),
    (lambda lines: [lines[0].replace(b'"ws-1"', b'""'), *lines[1:]], "not_a_journal"),
    (lambda lines: [lines[0], b"[1]", *lines[1:]], "not_an_entry"),
    (lambda lines: [lines[0], lines[1][:-1] + b', "apply": 1}', *lines[2:]], "out_of_order"),
    (lambda lines: [*lines[:2], b'{"apply": {"nodes": []}}', *lines[3:]], "not_a_write"),
    (lambda lines: [lines[0], lines[2], lines[1], *lines[3:]], "out_of_order"),
])
def test_entries_that_are_not_a_journal_are_refused_with_their_line(
        tmp_path: Path, change: Any, reason: str) -> None:
    path, data, starts = _journal(tmp_path)
    lines = data.split(b"\n")[:-1]
    error = _refusal(path, b"".join(line + b"\n" for line in change(lines)))
    assert error.detail == reason, error


# --- integers no export could carry back -------------------------------------------------------

def test_a_write_holding_an_integer_the_strict_reader_refuses_is_refused(tmp_path: Path) -> None:
    ws = journaled(tmp_path / "ws.jsonl")
    wf = declare(ws)
    before = (tmp_path / "ws.jsonl").read_bytes()
    with pytest.raises(InvalidFieldError) as info:
        execute(ws, wf["node_id"], 1, input_state={"n": [10**4300]})
    assert info.value.detail == "input_state"
    with pytest.raises(InvalidFieldError):
        declare(ws, timeout_ms=10**4301)
    execute(ws, wf["node_id"], 1, input_state={"n": 10**4300 - 1})   # 4300 digits: fine
    with pytest.raises(InvalidFieldError):
        ws.close_workflow(wf["node_id"], "FAILED", status_updated_at=ws._clock(),
                          error_detail={"n": -(10**5000)}, principal=CIA)
    assert (tmp_path / "ws.jsonl").read_bytes().startswith(before)
    again = Workspace.open(tmp_path / "ws.jsonl")
    assert again.export() == ws.export() and verify(again.export()).ok


def test_an_export_round_trips_through_the_strict_reader() -> None:
    from canonkit._files import loads_json

    doc, _ = make_export(random.Random(7))
    assert verify(loads_json(json.dumps(doc).encode())).to_json() == verify(doc).to_json()


def test_verify_in_memory_reports_huge_integers_as_findings() -> None:
    doc = _small_export()
    doc["nodes"][1]["sequence_index"] = 10**5000
    report = verify(doc)
    assert not report.ok and "EX-001" in report.vectors
    assert EP and CIA


def test_a_line_is_parsed_without_its_newline(tmp_path: Path) -> None:
    """An unterminated string is reported where it starts, not at the newline ending the
    line (which is no part of the line's document)."""
    path, data, starts = _journal(tmp_path)
    error = _refusal(path, data[:starts[1]] + b'{"audit": "unterminated\n' + data[starts[2]:])
    assert (error.detail, error.offset) == ("invalid_json_input", starts[1] + 10)


def test_a_number_as_a_delta_is_never_taken_as_a_byte_count() -> None:
    """``bytes(n)`` of a number is n zero bytes: a delta is read only when it is text."""
    import tracemalloc

    doc = _small_export()
    doc["audit"][1]["forward_delta"] = 200_000_000
    tracemalloc.start()
    try:
        report = verify(doc)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "CIA-004" in report.vectors
    assert peak < 20_000_000, peak
