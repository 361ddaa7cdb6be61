"""``canonkit.cbor.diagnose``: RFC 8949 §8 diagnostic notation."""
from __future__ import annotations

import json
import re
from typing import Any

import pytest
from conftest import VECTORS
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import cbor_ish, core_values

from canonkit import cbor, errors

APPENDIX_A = json.loads((VECTORS / "cbor" / "rfc8949-appendix-a.json").read_text())

# Appendix A diagnostics for items that are not in their preferred form: canonkit adds the
# §8.1 encoding indicator; f818 is not well-formed under RFC 8949 (CBOR.md §4)
INDICATED = {"fa7f800000": "Infinity_2", "fa7fc00000": "NaN_2", "faff800000": "-Infinity_2",
             "fb7ff0000000000000": "Infinity_3", "fb7ff8000000000000": "NaN_3",
             "fbfff0000000000000": "-Infinity_3"}


@pytest.mark.parametrize("case", [c for c in APPENDIX_A if "diagnostic" in c],
                         ids=lambda c: c["hex"][:30])
def test_appendix_a_diagnostics(case: dict[str, Any]) -> None:
    data = bytes.fromhex(case["hex"])
    if case["hex"] == "f818":
        with pytest.raises(errors.NotWellFormedError):
            cbor.diagnose(data)
        return
    assert cbor.diagnose(data) == INDICATED.get(case["hex"], case["diagnostic"])


@pytest.mark.parametrize("case", [c for c in APPENDIX_A if "decoded" in c and c["roundtrip"]],
                         ids=lambda c: c["hex"][:30])
def test_appendix_a_decoded_values_match_json(case: dict[str, Any]) -> None:
    text = cbor.diagnose(bytes.fromhex(case["hex"]))
    expected = case["decoded"]
    if case["hex"][:2] in ("c2", "c3"):  # bignums are shown as the tag they are
        assert text == f"{case['hex'][1]}(h'{case['hex'][4:]}')"
    elif isinstance(expected, (dict, list, str)) or expected is None or isinstance(expected, bool):
        assert json.loads(text) == expected
    else:
        assert float(text) == float(expected)


@pytest.mark.parametrize("hex_,text", [
    ("1817", "23_0"),
    ("190001", "1_1"),
    ("3a00000000", "-1_2"),
    ("f93e00", "1.5"),
    ("fa3fc00000", "1.5_2"),
    ("fb3ff8000000000000", "1.5_3"),
    ("fb7ff8000000000001", "NaN"),
    ("f98000", "-0.0"),
    ("fb4415af1d78b58c40", "1.0e+20"),
    ("980100", "[_0 0]"),
    ("b801616100", '{_0 "a": 0}'),
    ("9f01820203ff", "[_ 1, [2, 3]]"),
    ("bf6161f5ff", '{_ "a": true}'),
    ("5f42010243030405ff", "(_ h'0102', h'030405')"),
    ("7f6161ff", '(_ "a")'),
    ("5fff", "''_"),
    ("9fff", "[_ ]"),
    ("d82a4100", "42(h'00')"),
    ("d8184100", "24(h'00')"),
    ("d9ffff00", "65535(0)"),
    ("d8170a", "23_0(10)"),
    ("f0", "simple(16)"),
    ("f820", "simple(32)"),
    ("f7", "undefined"),
    ("63e282ac", '"€"'),
    ('62225c', '"\\"\\\\"'),
    ("a2010203820405", "{1: 2, 3: [4, 5]}"),
])
def test_hand_built(hex_: str, text: str) -> None:
    assert cbor.diagnose(bytes.fromhex(hex_)) == text


@pytest.mark.parametrize("hex_,code,offset", [
    ("", "empty_input", 0),
    ("18", "truncated", 0),
    ("8201", "truncated", 0),
    ("9f01", "truncated", 0),
    ("5f01ff", "not_well_formed", 1),
    ("5f5f40ffff", "not_well_formed", 1),
    ("fc", "not_well_formed", 0),
    ("ff", "indefinite_length", 0),
    ("81ff", "indefinite_length", 1),
    ("62c328", "invalid_utf8", 0),
    ("0000", "trailing_data", 1),
    ("f81f", "not_well_formed", 0),
])
def test_rejects_ill_formed(hex_: str, code: str, offset: int) -> None:
    with pytest.raises(errors.CODES[code]) as info:
        cbor.diagnose(bytes.fromhex(hex_))
    assert info.value.offset == offset


def test_depth_bounded() -> None:
    with pytest.raises(errors.DepthExceededError):
        cbor.diagnose(b"\x81" * 10**5 + b"\x00")
    with pytest.raises(TypeError):
        cbor.diagnose("00")  # type: ignore[arg-type]


@settings(max_examples=200)
@given(st.one_of(cbor_ish, st.binary(max_size=30)))
def test_arbitrary_bytes_give_notation_or_documented_error(data: bytes) -> None:
    try:
        text = cbor.diagnose(data)
    except errors.DecodeError as exc:
        assert exc.code in errors.CODES and 0 <= exc.offset <= len(data)
    else:
        assert isinstance(text, str) and text


@settings(max_examples=100)
@given(core_values())
def test_every_valid_encoding_has_notation_without_indicators(value: Any) -> None:
    text = cbor.diagnose(cbor.encode(value))
    outside_strings = re.sub(r'"(?:[^"\\]|\\.)*"|h\'[0-9a-f]*\'', "S", text)
    assert not re.search(r"_[0-3]|\[_|\{_|\(_", outside_strings), text
