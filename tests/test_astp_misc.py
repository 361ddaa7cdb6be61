"""Canonical JSON, audit chains, chain root, G-1, context refusals, 4.x proofs and backend
reporting for ``canonkit.astp``."""
from __future__ import annotations

import copy
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies_astp import EP, H
from test_astp_vectors import CC, SC

import canonkit
from canonkit import astp
from canonkit.astp.canonical_json import es_number
from canonkit.errors import (
    EmptyTreeError,
    InvalidFieldError,
    InvalidHashError,
    UnknownIdentifierError,
    WriteGuardError,
)


def test_backend_is_reported() -> None:
    live = canonkit.backend()
    assert live["astp"] in ("compiled", "python")
    assert astp.__backend__ == live["astp"]


# --- canonical JSON ---------------------------------------------------------------------------

@pytest.mark.parametrize("x,text", [
    (1e21, "1e+21"), (1e20, "100000000000000000000"), (1e-7, "1e-7"), (1e-6, "0.000001"), (0.5, "0.5"),
    (-0.0, "0"), (1.0, "1"), (-7.25, "-7.25"), (123e-20, "1.23e-18"), (5e-324, "5e-324"),
    (1.7976931348623157e308, "1.7976931348623157e+308"), (333333333.3333333, "333333333.3333333"),
    (4.5, "4.5"), (0.002, "0.002"), (1e30, "1e+30"), (123456789012.5, "123456789012.5"),
])
def test_es_number(x: float, text: str) -> None:
    assert es_number(x) == text


@settings(max_examples=200, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_es_number_round_trips(x: float) -> None:
    text = es_number(x)
    assert float(text) == x
    assert "e" not in text or text.split("e")[1][0] in "+-"


@pytest.mark.parametrize("value", [float("nan"), float("inf"), {1: 2}, {"a": b"x"}, (1, {2}), {"e\u0301": 1, "\u00e9": 2},
                                   "\ud800", object()])
def test_canonical_json_refusals(value: object) -> None:
    with pytest.raises(InvalidFieldError):
        astp.canonical_json(value)


def test_canonical_json_strings_and_keys() -> None:
    assert astp.canonical_json({"a": "\x00\x1f\"\\/\u007f\u2028😀\n"}) == '{"a":"\\u0000\\u001f\\"\\\\/\u007f\u2028😀\\n"}'
    assert astp.canonical_json({"b": [True, None, 10**30], "a": {}}) == '{"a":{},"b":[true,null,1000000000000000000000000000000]}'
    assert astp.canonical_json_bytes({"é": 1}) == '{"é":1}'.encode()


def test_canonical_json_writes_integers_of_any_magnitude() -> None:
    value = 10**5000 + 12345
    text = astp.canonical_json({"n": [value, -value]})
    digits = "1" + "0" * 4995 + "12345"
    assert text == '{"n":[' + digits + ",-" + digits + "]}"


@pytest.mark.parametrize("text", ['{"b":1, "a":2}', '{"b":1,"a":2}', '{"a":1.0}', '{"a":1,"a":1}', '{"a":NaN}',
                                  '[1,2', '{"e\u0301":1}', b"\xff"])
def test_parse_canonical_refuses(text: str) -> None:
    with pytest.raises(InvalidFieldError):
        astp.parse_canonical(text)


def test_parse_canonical_accepts_the_vectors() -> None:
    for case in SC["canonical_json"].values():
        value = astp.parse_canonical(case["canonical"])
        assert astp.canonical_json(value) == case["canonical"]


# --- audit record v2 ------------------------------------------------------------------------

def _chain() -> list[dict]:
    return copy.deepcopy(SC["audit_records_v2"]["chain"])


@pytest.mark.parametrize("index,change,reason", [
    (0, {"delta_sequence": 2}, "delta_sequence"),
    (1, {"delta_sequence": 1}, "delta_sequence"),
    (2, {"chain_key": "other"}, "chain_key"),
    (0, {"prior_audit_hash": "00" * 32}, "prior_audit_hash must be null"),
    (1, {"prior_audit_hash": None}, "prior_audit_hash does not link"),
    (1, {"agent_id": "mallory"}, "record_hash does not recompute"),
    (2, {"human_actor": ""}, "record_hash does not recompute"),
    (2, {"forward_delta": '{"b":1, "a":2}'}, "malformed record"),
    (2, {"record_hash": "zz"}, "malformed record"),
])
def test_audit_chain_reports_the_first_failure(index: int, change: dict, reason: str) -> None:
    chain = _chain()
    chain[index].update(change)
    verdict = astp.verify_audit_chain(chain)
    assert not verdict.ok and verdict.index == index and reason in verdict.reason


def test_audit_chain_edges() -> None:
    assert astp.verify_audit_chain([]).ok
    assert not astp.verify_audit_chain(_chain()[1:]).ok
    record = dict(_chain()[0])
    as_object = dict(record, forward_delta=json.loads(record["forward_delta"]))
    assert astp.audit_record_hash(as_object) == record["record_hash"]
    for bad in ({"wall_clock_time": "2026-01-01T00:00:00"}, {"chain_key": ""}, {"detection_window_open": 1},
                {"affected_nodes": "x"}):
        with pytest.raises(InvalidFieldError):
            astp.audit_record_hash(dict(record, **bad))
    missing = dict(record)
    del missing["caught_by"]
    with pytest.raises(InvalidFieldError, match="caught_by"):
        astp.audit_record_hash(missing)
    # the stored instant is the truncated one: 999 999 µs and the truncated text hash alike
    r2 = _chain()[1]
    assert r2["wall_clock_time"].endswith("02.122000Z")
    assert astp.audit_record_hash(dict(r2, wall_clock_time="2026-01-01T00:00:02.122999Z")) == r2["record_hash"]


# --- chain root, G-1, sets --------------------------------------------------------------------

def test_chain_root() -> None:
    roots = [SC["spine_root_sav2"]["1"], SC["spine_root_sav2"]["7"]]
    assert astp.chain_root(roots) == "ca8e19838988c3cc7759b1ba4e68b27ba23a583b91f01221936c511209d0c6da"
    assert astp.chain_root([bytes.fromhex(r) for r in roots]) == astp.chain_root(roots)
    assert astp.chain_root(roots[::-1]) != astp.chain_root(roots)
    with pytest.raises(EmptyTreeError):
        astp.chain_root([])
    with pytest.raises(InvalidHashError):
        astp.chain_root(["00"])


def test_guard_refuses_unknown_status() -> None:
    with pytest.raises(UnknownIdentifierError):
        astp.check_write("FROZEN")
    with pytest.raises(WriteGuardError, match="CLOSED"):
        astp.check_write("CLOSED", "a Signal")


@pytest.mark.parametrize("version", [0, 3, True, "1", None])
def test_set_versions(version: object) -> None:
    with pytest.raises(UnknownIdentifierError):
        astp.signal_manifest_hash([], version=version)  # type: ignore[arg-type]
    with pytest.raises(UnknownIdentifierError):
        astp.exclusion_hash([], version=version)  # type: ignore[arg-type]


# --- context refusals -------------------------------------------------------------------------

def _entry(i: int) -> dict:
    return {k: v for k, v in CC["entries"][i].items() if k != "entry_hash"}


@pytest.mark.parametrize("change", [
    {"entry_type": "memory"}, {"capture_state": "partial"}, {"verifiability_at_seal": "maybe"},
    {"content_hash": None}, {"verifiability_at_seal": None}, {"provided_at": "2026-01-01T00:00:00"},
    {"entry_id": "x"}, {"salted": 0},
])
def test_entry_refusals(change: dict) -> None:
    with pytest.raises((InvalidFieldError, InvalidHashError)):
        astp.entry_hash(dict(_entry(0), **change))


def test_declared_incomplete_rules_and_resolves() -> None:
    incomplete = _entry(5)
    with pytest.raises(InvalidFieldError):
        astp.entry_hash(dict(incomplete, content_hash=H("x")))
    with pytest.raises(InvalidFieldError):
        astp.entry_hash(dict(incomplete, salted=True))
    resolver = _entry(6)
    with pytest.raises(InvalidFieldError, match="not in this Episode"):
        astp.entry_hashes([resolver])
    with pytest.raises(InvalidFieldError, match="declared_incomplete"):
        astp.entry_hashes([_entry(0), dict(resolver, resolves=_entry(0)["entry_id"])])
    with pytest.raises(InvalidFieldError, match="duplicate"):
        astp.entry_hashes([_entry(0), _entry(0)])


def test_context_content_and_manifest_refusals() -> None:
    with pytest.raises(InvalidFieldError):
        astp.context_content_hash(b"x", b"\x00" * 31)
    with pytest.raises(UnknownIdentifierError):
        astp.context_manifest_hash("some", 0, None)
    with pytest.raises(InvalidFieldError):
        astp.context_manifest_hash("none", 1, None)


# --- 4.x proofs, derived check value (ASTP.md §10.1) -------------------------------------

def test_v1_proof_derived_value() -> None:
    segs = [H(f"leaf-{i}") for i in range(7)]
    proof = astp.inclusion_proof_v1(segs, 6)
    assert proof.spine_root == "0654211304f104a768b81432567776c7f13f65b97e4937f114f5c65e8dbc5fed"
    assert proof.merkle_path == ["629a584c654b5538710044544d15d84db0cdd3cf84504d738a65ac08d928e027",
                                 "809f135f0834f823c395fb795698d0146e0d9122ba2c96cdde8525e185f78a46"]
    assert proof.path_directions == ["left", "left"] and proof.verify()
    assert not astp.verify_inclusion_proof_v1(proof.leaf_hash, proof.merkle_path, ["right", "left"],
                                              proof.spine_root)


def test_field_encoding_public_surface() -> None:
    assert astp.encode_fields(b"P", [("UINT", 1), ("NULL", None)]) == b"P\x03" + (1).to_bytes(8, "big") + b"\x00"
    assert astp.hash_fields(b"P", []) == astp.sha3_256(b"P")
    assert astp.uuid_text(EP.upper()) == EP
    assert astp.timestamp_ms("1970-01-01T00:00:01.0019+00:00") == 1001


# --- proof chains (ASTP.md §11) ---------------------------------------------------------------

def _links() -> list[dict]:
    proofs = SC["inclusion_proofs_v2"]
    r1, r7 = SC["spine_root_sav2"]["1"], SC["spine_root_sav2"]["7"]
    v1 = astp.inclusion_proof_v1([H(f"leaf-{i}") for i in range(7)], 6)
    return [
        {"node_id": EP, "parent_node_id": None, "spine_root": r1,
         "proof": dict(proofs["leaf_0_of_1"]), "anchor": {"log_timestamp": "2026-01-01T00:00:00Z"}},
        {"node_id": "00000000-0000-4000-8000-000000000003", "parent_node_id": EP, "spine_root": r7,
         "proof": dict(proofs["leaf_3_of_7"])},
        {"node_id": "00000000-0000-4000-8000-000000000009", "parent_node_id": "00000000-0000-4000-8000-000000000003",
         "spine_root": v1.spine_root,
         "proof": {"leaf_hash": v1.leaf_hash, "merkle_path": v1.merkle_path,
                   "path_directions": v1.path_directions, "spine_root": v1.spine_root},
         "anchor": {"log_timestamp": "2026-01-01T00:00:01+00:00"}},
    ]


def _root(links: list[dict]) -> str:
    return astp.chain_root([link["spine_root"] for link in links])


def test_proof_chain_verifies() -> None:
    links = _links()
    assert astp.verify_proof_chain(links, _root(links)).ok
    assert astp.verify_proof_chain(links[:2], _root(links[:2])).ok
    assert astp.chain_root([links[0]["spine_root"], links[1]["spine_root"]]) == \
        "ca8e19838988c3cc7759b1ba4e68b27ba23a583b91f01221936c511209d0c6da"


@pytest.mark.parametrize("mutate,index,reason", [
    (lambda ls: ls.clear(), None, "empty"),
    (lambda ls: ls[1]["proof"].update(leaf_index=2), 1, "inclusion proof"),
    (lambda ls: ls[2]["proof"].update(path_directions=["right", "left"]), 2, "inclusion proof"),
    (lambda ls: ls[1].update(spine_root=ls[0]["spine_root"]), None, "chain_root does not recompute"),
    (lambda ls: ls[2].update(parent_node_id=EP), 2, "causal order"),
    (lambda ls: ls[1].update(parent_node_id="00000000-0000-4000-8000-0000000000ff"), 1, "causal order"),
    (lambda ls: ls.reverse(), 1, "causal order"),
    (lambda ls: ls[2]["anchor"].update(log_timestamp="2025-12-31T23:59:59Z"), 2, "decreases"),
    (lambda ls: ls[2]["anchor"].update(log_timestamp="2026-01-01T00:00:01"), 2, "malformed anchor"),
    (lambda ls: ls[1].update(node_id=5), 1, "malformed link"),
])
def test_proof_chain_first_failure(mutate: object, index: int | None, reason: str) -> None:
    links = _links()
    root = _root(links)
    mutate(links)  # type: ignore[operator]
    verdict = astp.verify_proof_chain(links, root)
    assert not verdict.ok and verdict.index == index and reason in verdict.reason


def test_proof_chain_wrong_root_whatever_the_links() -> None:
    links = _links()
    verdict = astp.verify_proof_chain(links, _root(links[:2]))
    assert (verdict.ok, verdict.index, verdict.reason) == (False, None, "chain_root does not recompute")
    assert "malformed chain_root" in astp.verify_proof_chain(links, "zz").reason
