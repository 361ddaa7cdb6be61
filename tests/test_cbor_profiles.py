"""Profile rules of CBOR.md §1: for every rule of the table, at least one
accepted and one rejected input per profile, on both backends; Link behaviour; byte
equality and mutual decoding with cbrrr on random DAG-CBOR values."""
from __future__ import annotations

import hashlib
import math
from types import ModuleType
from typing import Any

import cbrrr
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import dag_values, same

from canonkit import errors
from canonkit.cbor._types import UNDEFINED, FrozenDict, Link, Simple, Tag

CID_V1 = b"\x01\x71\x12\x20" + hashlib.sha256(b"canonkit").digest()
CID_V0 = b"\x12\x20" + hashlib.sha256(b"canonkit").digest()
LINK_HEX = "d82a5825" + "00" + CID_V1.hex()

# rule -> profile -> (accepted: [(hex, python value)], rejected: [(hex, code)])
RULES: dict[str, dict[str, tuple[list[tuple[str, Any]], list[tuple[str, str]]]]] = {
    "shortest heads": {
        p: ([("1818", 24), ("6161", "a"), ("8100", [0])],
            [("1817", "non_shortest_integer"), ("780161", "non_shortest_integer"),
             ("980100", "non_shortest_integer")])
        for p in ("core", "dcbor", "dag-cbor")
    },
    "definite lengths": {
        p: ([("80", []), ("a0", {})], [("9fff", "indefinite_length"),
                                       ("bfff", "indefinite_length")])
        for p in ("core", "dcbor", "dag-cbor")
    },
    "one top-level item": {
        p: ([("f6", None)], [("f6f6", "trailing_data"), ("", "empty_input")])
        for p in ("core", "dcbor", "dag-cbor")
    },
    "valid UTF-8": {
        p: ([("62c3a9", "é")], [("62c328", "invalid_utf8"), ("63eda080", "invalid_utf8")])
        for p in ("core", "dcbor", "dag-cbor")
    },
    "no duplicate keys": {
        p: ([("a2616100616201", {"a": 0, "b": 1})], [("a2616100616101", "duplicate_map_key")])
        for p in ("core", "dcbor", "dag-cbor")
    },
    "map key order": {
        "core": ([("a20a002001", {10: 0, -1: 1}), ("a2617a00626161f6", {"z": 0, "aa": None})],
                 [("a220010a00", "unsorted_map_keys")]),
        "dcbor": ([("a20a002001", {10: 0, -1: 1})], [("a220010a00", "unsorted_map_keys")]),
        "dag-cbor": ([("a2617a0062616101", {"z": 0, "aa": 1})],
                     [("a262616101617a00", "unsorted_map_keys")]),
    },
    "map key types": {
        # any key type; a key is checked like any other item (here: an indefinite array)
        "core": ([("a1800a", {(): 10}), ("a1f600", {None: 0}), ("a1a0f5", {FrozenDict(): True})],
                 [("a19fff00", "indefinite_length")]),
        "dcbor": ([("a1410100", {b"\x01": 0})], [("a19fff00", "indefinite_length")]),
        "dag-cbor": ([("a1616b00", {"k": 0})],
                     [("a10100", "unsupported_item"), ("a1410100", "unsupported_item"),
                      ("a1810000", "unsupported_item")]),
    },
    "integer range": {
        "core": ([("3bffffffffffffffff", -(1 << 64)), ("c249010000000000000000", 1 << 64),
                  ("c349010000000000000000", -(1 << 64) - 1)],
                 [("c24101", "non_shortest_integer"), ("c34900ffffffffffffffff",
                                                       "non_shortest_integer")]),
        "dcbor": ([("3b7fffffffffffffff", -(1 << 63)), ("1bffffffffffffffff", (1 << 64) - 1)],
                  [("3b8000000000000000", "integer_out_of_range"),
                   ("c249010000000000000000", "unsupported_item")]),
        "dag-cbor": ([("3bffffffffffffffff", -(1 << 64))],
                     [("c249010000000000000000", "unsupported_item")]),
    },
    "floats": {
        "core": ([("f93e00", 1.5), ("f93c00", 1.0), ("f98000", -0.0), ("fa47c35000", 100000.0),
                  ("fb3ff199999999999a", 1.1), ("f97c00", math.inf)],
                 [("fa3fc00000", "float_outside_profile"),
                  ("fb3ff8000000000000", "float_outside_profile"),
                  ("fa7f800000", "float_outside_profile")]),
        "dcbor": ([("f93e00", 1.5), ("fa5f800000", 18446744073709551616.0),
                   ("f97c00", math.inf), ("fb3ff199999999999a", 1.1)],
                  [("f93c00", "float_outside_profile"), ("f98000", "float_outside_profile"),
                   ("fa3fc00000", "float_outside_profile"),
                   ("fbc3e0000000000000", "float_outside_profile")]),  # -2^63 reduces
        "dag-cbor": ([("fb3ff8000000000000", 1.5), ("fb3ff0000000000000", 1.0),
                      ("fb0000000000000000", 0.0)],
                     [("f93e00", "float_outside_profile"), ("fa3fc00000", "float_outside_profile"),
                      ("fb8000000000000000", "float_outside_profile"),
                      ("fb7ff0000000000000", "float_outside_profile")]),
    },
    "NaN": {
        "core": ([("f97e00", math.nan), ("f97e01", math.nan), ("fa7fc00001", math.nan),
                  ("fb7ff8000000000001", math.nan)],
                 [("fa7fc00000", "float_outside_profile"),
                  ("fb7ff8000020000000", "float_outside_profile")]),
        "dcbor": ([("f97e00", math.nan)],
                  [("f97e01", "float_outside_profile"), ("fa7fc00001", "float_outside_profile"),
                   ("f9fe00", "float_outside_profile")]),
        "dag-cbor": ([], [("fb7ff8000000000000", "float_outside_profile"),
                          ("f97e00", "float_outside_profile")]),
    },
    "tags": {
        "core": ([("c100", Tag(1, 0)), ("d9ffff00", Tag(65535, 0)),
                  (LINK_HEX, Tag(42, b"\x00" + CID_V1))],
                 [("d9000100", "non_shortest_integer"), ("c201", "unsupported_item")]),
        "dcbor": ([("c100", Tag(1, 0)), (LINK_HEX, Tag(42, b"\x00" + CID_V1))],
                  [("c24101", "unsupported_item"), ("c34101", "unsupported_item")]),
        "dag-cbor": ([(LINK_HEX, Link(CID_V1)), ("d82a5823" + "00" + CID_V0.hex(), Link(CID_V0))],
                     [("c100", "unsupported_item"), ("d82b4100", "unsupported_item"),
                      ("d82a4101", "invalid_link"), ("d82a5824" + CID_V1.hex(), "invalid_link"),
                      ("d82a5826" + "00" + CID_V1.hex() + "00", "invalid_link")]),
    },
    "simple values": {
        "core": ([("f4", False), ("f5", True), ("f6", None), ("f7", UNDEFINED),
                  ("f0", Simple(16)), ("f8ff", Simple(255))],
                 [("f818", "not_well_formed"), ("f801", "not_well_formed")]),
        "dcbor": ([("f4", False), ("f5", True), ("f6", None)],
                  [("f7", "unsupported_item"), ("f0", "unsupported_item"),
                   ("f820", "unsupported_item")]),
        "dag-cbor": ([("f4", False), ("f5", True), ("f6", None)],
                     [("f7", "unsupported_item"), ("f8ff", "unsupported_item")]),
    },
    "text normalization": {
        "core": ([("6365cc81", "e\u0301")], [("6265cc", "invalid_utf8")]),
        "dcbor": ([("62c3a9", "\u00e9"), ("62c385", "\u00c5")],
                  [("6365cc81", "non_nfc_text"), ("63e284ab", "non_nfc_text")]),
        "dag-cbor": ([("6365cc81", "e\u0301")], [("6265cc", "invalid_utf8")]),
    },
}

ACCEPTED = [(rule, profile, hex_, value)
            for rule, per_profile in RULES.items()
            for profile, (accepted, _) in per_profile.items()
            for hex_, value in accepted]
REJECTED = [(rule, profile, hex_, code)
            for rule, per_profile in RULES.items()
            for profile, (_, rejected) in per_profile.items()
            for hex_, code in rejected]


def test_every_rule_has_accepted_and_rejected_inputs_per_profile() -> None:
    for rule, per_profile in RULES.items():
        assert set(per_profile) == {"core", "dcbor", "dag-cbor"}, rule
        for profile, (accepted, rejected) in per_profile.items():
            assert rejected, (rule, profile)
            if not (rule == "NaN" and profile == "dag-cbor"):  # dag-cbor has no NaN at all
                assert accepted, (rule, profile)


@pytest.mark.parametrize("rule,profile,hex_,value", ACCEPTED,
                         ids=[f"{r}-{p}-{h[:16]}" for r, p, h, _ in ACCEPTED])
def test_rule_accepts(cbor_impl: ModuleType, rule: str, profile: str, hex_: str,
                      value: Any) -> None:
    data = bytes.fromhex(hex_)
    decoded = cbor_impl.decode(data, profile=profile)
    if isinstance(value, float) and math.isnan(value):
        assert math.isnan(decoded)
    else:
        assert same(decoded, value)
    assert cbor_impl.encode(decoded, profile=profile) == data


@pytest.mark.parametrize("rule,profile,hex_,code", REJECTED,
                         ids=[f"{r}-{p}-{h[:16]}" for r, p, h, _ in REJECTED])
def test_rule_rejects(cbor_impl: ModuleType, rule: str, profile: str, hex_: str,
                      code: str) -> None:
    with pytest.raises(errors.CODES[code]):
        cbor_impl.decode(bytes.fromhex(hex_), profile=profile)


# --- encoder side of the profile rules --------------------------------------------------

ENCODINGS: list[tuple[str, Any, str]] = [
    ("core", 1.0, "f93c00"),
    ("core", -0.0, "f98000"),
    ("core", 1 << 64, "c249010000000000000000"),
    ("core", -(1 << 64) - 1, "c349010000000000000000"),
    ("core", "e\u0301", "6365cc81"),
    ("core", {10: 0, -1: 1, "z": 2, "aa": 3, (100,): 4, (-1,): 5, False: 6, 100: 7},
     "a80a001864072001617a026261610381186404812005f406"),
    ("dcbor", 1.0, "01"),
    ("dcbor", -0.0, "00"),
    ("dcbor", 12.0, "0c"),
    ("dcbor", -(2.0 ** 63), "3b7fffffffffffffff"),
    ("dcbor", 2.0 ** 64, "fa5f800000"),
    ("dcbor", 1.5, "f93e00"),
    ("dcbor", math.inf, "f97c00"),
    ("dcbor", float.fromhex("-0x1.8p+1000"), "fbfe78000000000000"),
    ("dcbor", {1.0: "a"}, "a1016161"),
    ("dag-cbor", 1.0, "fb3ff0000000000000"),
    ("dag-cbor", -0.0, "fb0000000000000000"),
    ("dag-cbor", 1, "01"),
    ("dag-cbor", -(1 << 64), "3bffffffffffffffff"),
    ("dag-cbor", Link(CID_V1), LINK_HEX),
    ("dag-cbor", b"\x00" + CID_V1, "5825" + "00" + CID_V1.hex()),  # bytes never become links
    ("dag-cbor", {"aa": 1, "z": 0, "b": [1.5]}, "a3616281fb3ff8000000000000617a0062616101"),
]


@pytest.mark.parametrize("profile,value,hex_", ENCODINGS,
                         ids=[f"{p}-{h[:16]}" for p, _, h in ENCODINGS])
def test_profile_encodings(cbor_impl: ModuleType, profile: str, value: Any, hex_: str) -> None:
    assert cbor_impl.encode(value, profile=profile).hex() == hex_


def test_dcbor_nan_payloads_canonicalize(cbor_impl: ModuleType) -> None:
    for bits in (0x7FF8000000000000, 0xFFF8000000000001, 0x7FF0000000000001):
        nan = _nan(bits)
        assert cbor_impl.encode(nan, profile="dcbor") == b"\xf9\x7e\x00"
        assert cbor_impl.encode([nan], profile="dcbor") == b"\x81\xf9\x7e\x00"


def _nan(bits: int) -> float:
    import struct

    return struct.unpack(">d", bits.to_bytes(8, "big"))[0]  # type: ignore[no-any-return]


def test_core_keeps_nan_payloads(cbor_impl: ModuleType) -> None:
    for bits, hex_ in ((0x7FF8000000000000, "f97e00"), (0xFFF8000000000000, "f9fe00"),
                       (0x7FF8000020000000, "fa7fc00001"),
                       (0x7FF8000000000001, "fb7ff8000000000001")):
        encoded = cbor_impl.encode(_nan(bits))
        assert encoded.hex() == hex_
        assert cbor_impl.encode(cbor_impl.decode(encoded)) == encoded


# --- Link -----------------------------------------------------------------------------

def test_link_string_forms() -> None:
    v1 = Link(CID_V1)
    assert str(v1).startswith("bafyrei")
    assert Link.from_string(str(v1)) == v1
    assert Link.from_string("B" + str(v1)[1:].upper()) == v1
    assert str(v1) == cbrrr.CID(CID_V1).encode()
    v0 = Link(CID_V0)
    assert str(v0).startswith("Qm") and len(str(v0)) == 46
    assert Link.from_string(str(v0)) == v0
    assert v0.version == 0 and v1.version == 1
    assert v1.cid_bytes == CID_V1
    assert hash(v1) == hash(Link(bytes(CID_V1))) and v1 != v0 and v1 != CID_V1
    assert {v1: 1}[Link.from_string(str(v1))] == 1


@pytest.mark.parametrize("bad", [b"", b"\x00", b"\x02\x71\x12\x20" + bytes(32),
                                 b"\x01\x71\x12\x21" + bytes(32), b"\x01\x71\x12",
                                 b"\x12\x20" + bytes(31), b"\x01\x80\x00\x12\x00",
                                 b"\x01\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01\x12\x00"])
def test_link_rejects_bad_cids(bad: bytes) -> None:
    with pytest.raises(errors.InvalidLinkError):
        Link(bad)


@pytest.mark.parametrize("bad", ["", "x", "bafy!", "Qm" + "0" * 44, "bafyreibnoelef"])
def test_link_rejects_bad_strings(bad: str) -> None:
    with pytest.raises(errors.InvalidLinkError):
        Link.from_string(bad)


def test_link_is_immutable() -> None:
    with pytest.raises(AttributeError):
        Link(CID_V1).cid_bytes = CID_V0  # type: ignore[misc]


# --- cbrrr interop ----------------------------------------------------------------------

def _to_cbrrr(value: Any) -> Any:
    if isinstance(value, Link):
        return cbrrr.CID(value.cid_bytes)
    if isinstance(value, list):
        return [_to_cbrrr(v) for v in value]
    if isinstance(value, dict):
        return {k: _to_cbrrr(v) for k, v in value.items()}
    return value


def _from_cbrrr(value: Any) -> Any:
    if isinstance(value, cbrrr.CID):
        return Link(value.cid_bytes)
    if isinstance(value, list):
        return [_from_cbrrr(v) for v in value]
    if isinstance(value, dict):
        return {k: _from_cbrrr(v) for k, v in value.items()}
    return value


def _no_negative_zero(value: Any) -> Any:
    """cbrrr still writes -0.0 (the pre-2026 DAG-CBOR rule); canonkit writes 0.0."""
    if isinstance(value, float) and value == 0.0:
        return 0.0
    if isinstance(value, list):
        return [_no_negative_zero(v) for v in value]
    if isinstance(value, dict):
        return {k: _no_negative_zero(v) for k, v in value.items()}
    return value


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=150)
@given(value=dag_values().map(_no_negative_zero))
def test_cbrrr_byte_equality(cbor_impl: ModuleType, value: Any) -> None:
    ours = cbor_impl.encode(value, profile="dag-cbor")
    theirs = cbrrr.encode_dag_cbor(_to_cbrrr(value))
    assert ours == theirs
    assert same(cbor_impl.decode(theirs, profile="dag-cbor"), value)
    assert same(_from_cbrrr(cbrrr.decode_dag_cbor(ours)), value)


def test_cbrrr_decodes_and_reencodes_bench_data(cbor_impl: ModuleType) -> None:
    from conftest import REPO

    files = sorted((REPO / "bench" / "data").glob("*.dagcbor"))
    if not files:
        pytest.skip("no bench/data/*.dagcbor files in this checkout")
    for path in files:
        data = path.read_bytes()
        ours = cbor_impl.decode(data, profile="dag-cbor")
        assert cbor_impl.encode(ours, profile="dag-cbor") == data
        assert same(_from_cbrrr(cbrrr.decode_dag_cbor(data)), ours)


@given(st.binary(min_size=1, max_size=40))
@settings(max_examples=50)
def test_link_round_trip_via_string(digest: bytes) -> None:
    link = Link(b"\x01\x55\x1e" + bytes([len(digest)]) + digest)
    assert Link.from_string(str(link)) == link
    assert Link.from_string("B" + str(link)[1:].upper()) == link
