"""Frozen CBOR vectors (tests/vectors/cbor) on both backends, every profile they cover."""
from __future__ import annotations

import csv
import json
import math
import struct
from types import ModuleType
from typing import Any

import pytest
from conftest import VECTORS
from strategies import same

from canonkit import errors
from canonkit.cbor._types import UNDEFINED, Simple, Tag

CBOR_VECTORS = VECTORS / "cbor"
APPENDIX_A = json.loads((CBOR_VECTORS / "rfc8949-appendix-a.json").read_text())
NOT_WELL_FORMED = json.loads(
    (CBOR_VECTORS / "rfc8949-appendix-f-not-well-formed.json").read_text())["cases"]
KEY_ORDER = json.loads((CBOR_VECTORS / "rfc8949-key-order-examples.json").read_text())
DCBOR = json.loads((CBOR_VECTORS / "dcbor-draft15-appendix-a.json").read_text())
with (CBOR_VECTORS / "cde-example-table.csv").open(newline="") as f:
    CDE = list(csv.DictReader(f, fieldnames=["kind", "value", "hex", "comment"]))


def _case_id(case: dict[str, Any]) -> str:
    return str(case["hex"])[:40] or "empty"


# Appendix A diagnostics that are not JSON, as the Python values canonkit decodes them to
DIAGNOSTIC_VALUES: dict[str, Any] = {
    "Infinity": math.inf,
    "-Infinity": -math.inf,
    "NaN": math.nan,
    "undefined": UNDEFINED,
    "simple(16)": Simple(16),
    "simple(255)": Simple(255),
    '0("2013-03-21T20:04:00Z")': Tag(0, "2013-03-21T20:04:00Z"),
    "1(1363896240)": Tag(1, 1363896240),
    "1(1363896240.5)": Tag(1, 1363896240.5),
    "23(h'01020304')": Tag(23, b"\x01\x02\x03\x04"),
    "24(h'6449455446')": Tag(24, bytes.fromhex("6449455446")),
    '32("http://www.example.com")': Tag(32, "http://www.example.com"),
    "h''": b"",
    "h'01020304'": b"\x01\x02\x03\x04",
    "{1: 2, 3: 4}": {1: 2, 3: 4},
}


def _expected_code(hex_: str) -> str:
    """The class a deterministic decoder reports for an Appendix A `roundtrip: false` case."""
    if hex_ == "f818":  # CBOR.md §4: RFC 7049-era file; RFC 8949 §3.3 makes it malformed
        return "not_well_formed"
    if hex_[:2] in ("fa", "fb"):
        return "float_outside_profile"
    return "indefinite_length"


@pytest.mark.parametrize("case", APPENDIX_A, ids=_case_id)
def test_rfc8949_appendix_a(cbor_impl: ModuleType, case: dict[str, Any]) -> None:
    data = bytes.fromhex(case["hex"])
    if not case["roundtrip"] or case["hex"] == "f818":
        code = _expected_code(case["hex"])
        with pytest.raises(errors.CODES[code]) as info:
            cbor_impl.decode(data)
        assert info.value.code == code
        return
    value = cbor_impl.decode(data)
    if "decoded" in case:
        expected = case["decoded"]
        if isinstance(expected, float) and expected.is_integer() and data[0] >> 5 != 7:
            expected = int(expected)  # JSON has no big ints: 1e+19 style numbers
        assert value == expected and type(value) is type(expected)
    else:
        expected = DIAGNOSTIC_VALUES[case["diagnostic"]]
        assert same(value, expected) or (
            isinstance(expected, float) and math.isnan(expected) and math.isnan(value))
    assert cbor_impl.encode(value) == data


@pytest.mark.parametrize("row", CDE, ids=lambda r: f"{r['kind']}-{r['hex']}")
def test_cde_example_table(cbor_impl: ModuleType, row: dict[str, str]) -> None:
    data = bytes.fromhex(row["hex"])
    if row["kind"] == "bad":
        code, offset = CDE_BAD_CODES[row["hex"]]
        with pytest.raises(errors.CODES[code]) as info:
            cbor_impl.decode(data)
        assert (info.value.code, info.value.offset) == (code, offset)
        return
    decoded = cbor_impl.decode(data)
    if row["kind"] == "int":
        value: Any = int(row["value"])
        assert type(decoded) is int and decoded == value
        assert cbor_impl.encode(value) == data
        return
    assert isinstance(decoded, float)
    if row["value"] == "NaN":  # payload kept both ways: f97e01 stays f97e01
        assert math.isnan(decoded)
        assert cbor_impl.encode(decoded) == data
        return
    value = float(row["value"].replace("Infinity", "inf"))
    assert struct.pack(">d", decoded) == struct.pack(">d", value)
    assert cbor_impl.encode(value) == data


CDE_BAD_CODES = {  # hex -> (code, offset)
    "a2616200616101": ("unsorted_map_keys", 4),
    "98020405": ("non_shortest_integer", 0),
    "1900ff": ("non_shortest_integer", 0),
    "c34a00010000000000000000": ("non_shortest_integer", 0),
    "fa41280000": ("float_outside_profile", 0),
    "fa7fc00000": ("float_outside_profile", 0),
    "c243010000": ("non_shortest_integer", 0),
    "5f4101420203ff": ("indefinite_length", 0),
    "f818": ("not_well_formed", 0),
    "fc": ("not_well_formed", 0),
}


def test_cde_bad_rows_are_all_known() -> None:
    assert {row["hex"] for row in CDE if row["kind"] == "bad"} == set(CDE_BAD_CODES)


@pytest.mark.parametrize("profile", ["core", "dcbor", "dag-cbor"])
@pytest.mark.parametrize("case", NOT_WELL_FORMED, ids=_case_id)
def test_appendix_f_not_well_formed(cbor_impl: ModuleType, case: dict[str, str],
                                    profile: str) -> None:
    data = bytes.fromhex(case["hex"])
    with pytest.raises(errors.DecodeError) as info:
        cbor_impl.decode(data, profile=profile)
    err = info.value
    if profile == "core":  # other profiles may meet a profile rule first (a dag-cbor int key)
        expected = {"truncated", "not_well_formed", "indefinite_length"}
        if case["hex"] == "a2000000":  # {0: 0, 0: <missing>}: the repeated key comes first
            expected = {"duplicate_map_key"}
        assert err.code in expected
    assert 0 <= err.offset <= len(data)


def test_key_order_examples(cbor_impl: ModuleType) -> None:
    keys = {diag: cbor_impl.decode(bytes.fromhex(h)) for diag, h in
            KEY_ORDER["keys_hex_by_diag"].items()}
    hashable = {d: tuple(v) if isinstance(v, list) else v for d, v in keys.items()}
    # values 0..7 follow the bytewise order in the frozen map
    value = {hashable[d]: i for i, d in enumerate(KEY_ORDER["order_4_2_1_bytewise"])}
    encoded = cbor_impl.encode(value)
    assert encoded.hex() == KEY_ORDER["map_hex_4_2_1_values_0to7"]
    assert cbor_impl.decode(encoded) == value
    with pytest.raises(errors.UnsortedMapKeysError):
        cbor_impl.decode(bytes.fromhex(KEY_ORDER["map_hex_4_2_3_values_0to7"]))


def _dcbor_value(text: str) -> Any:
    word = text.split(" ")[0]
    specials = {"Infinity": math.inf, "-Infinity": -math.inf, "NaN": math.nan}
    if word in specials:
        return specials[word]
    if any(c in word for c in ".e") and not word.lstrip("-").isdigit():
        return float(word)
    return int(word)


@pytest.mark.parametrize("case", DCBOR["valid"], ids=_case_id)
def test_dcbor_valid(cbor_impl: ModuleType, case: dict[str, str]) -> None:
    data = bytes.fromhex(case["hex"])
    value = _dcbor_value(case["value"])
    assert cbor_impl.encode(value, profile="dcbor") == data
    decoded = cbor_impl.decode(data, profile="dcbor")
    if isinstance(value, float) and math.isnan(value):
        assert math.isnan(decoded)
    elif isinstance(value, float) and value.is_integer() and -(1 << 63) <= value < 1 << 64:
        assert type(decoded) is int and decoded == value  # "Reduced."
    else:
        assert decoded == value and type(decoded) is type(value)
    assert cbor_impl.encode(decoded, profile="dcbor") == data


DCBOR_INVALID_CODES = {
    "65-bit negative integer value.": "integer_out_of_range",
    "Can be reduced to 12.": "float_outside_profile",
    "Not preferred encoding.": "float_outside_profile",
    "Not canonical NaN.": "float_outside_profile",
}


@pytest.mark.parametrize("case", DCBOR["invalid"], ids=_case_id)
def test_dcbor_invalid(cbor_impl: ModuleType, case: dict[str, str]) -> None:
    code = DCBOR_INVALID_CODES[case["reason"]]
    with pytest.raises(errors.CODES[code]) as info:
        cbor_impl.decode(bytes.fromhex(case["hex"]), profile="dcbor")
    assert info.value.offset == 0
