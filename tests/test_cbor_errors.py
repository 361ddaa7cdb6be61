"""Hand-built rejected inputs: every error class with its exact code and offset, on both
backends, plus the encode-side errors."""
from __future__ import annotations

import math
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from canonkit import errors
from canonkit.cbor._types import UNDEFINED, FrozenDict, Link, Simple, Tag

# (hex, profile, code, offset)
DECODE_CASES: list[tuple[str, str, str, int]] = [
    # empty_input
    ("", "core", "empty_input", 0),
    ("", "dcbor", "empty_input", 0),
    ("", "dag-cbor", "empty_input", 0),
    # non_shortest_integer: integer, length, count, tag, negative, 8-byte form
    ("a261741817617601", "core", "non_shortest_integer", 3),  # CBOR.md §2 example
    ("1817", "core", "non_shortest_integer", 0),
    ("190017", "core", "non_shortest_integer", 0),
    ("1a0000ffff", "core", "non_shortest_integer", 0),
    ("1b00000000ffffffff", "core", "non_shortest_integer", 0),
    ("3817", "core", "non_shortest_integer", 0),
    ("5801ff", "core", "non_shortest_integer", 0),
    ("780161", "dag-cbor", "non_shortest_integer", 0),
    ("8201980100", "core", "non_shortest_integer", 2),
    ("b80100", "core", "non_shortest_integer", 0),
    ("d80100", "core", "non_shortest_integer", 0),
    ("c2420100", "core", "non_shortest_integer", 0),  # bignum that fits major 0
    ("c349000000000000000001", "core", "non_shortest_integer", 0),  # leading zero byte
    ("c240", "core", "non_shortest_integer", 0),  # empty bignum = 0
    # indefinite_length
    ("bf61740161760fff", "core", "indefinite_length", 0),  # CBOR.md §2 example
    ("9f00ff", "core", "indefinite_length", 0),
    ("5fff", "core", "indefinite_length", 0),
    ("7fff", "dcbor", "indefinite_length", 0),
    ("ff", "core", "indefinite_length", 0),  # stray break
    ("8200ff", "core", "indefinite_length", 2),
    ("a1617401ff", "dag-cbor", "trailing_data", 4),  # break after a complete item: trailing
    # unsorted_map_keys
    ("a2617601617401", "core", "unsorted_map_keys", 4),  # CBOR.md §2 example
    ("a2200000", "core", "unsorted_map_keys", 3),  # -1 (0x20) before 0 (0x00)
    ("a2f40000", "core", "unsorted_map_keys", 3),
    ("a262616100617a00", "dag-cbor", "unsorted_map_keys", 5),  # "aa" before "z": length-first
    # duplicate_map_key
    ("a2617401617402", "core", "duplicate_map_key", 4),  # CBOR.md §2 example
    ("a200000001", "core", "duplicate_map_key", 3),
    ("a2f93c0000f93c0001", "core", "duplicate_map_key", 5),
    ("a201000101", "core", "duplicate_map_key", 3),
    # unrepresentable_map: distinct keys (valid CBOR) equal as Python values
    ("a2010af93c000b", "core", "unrepresentable_map", 3),  # 1 and 1.0
    ("a2f9000000f9800001", "core", "unrepresentable_map", 5),  # 0.0 and -0.0
    ("a20a00f9490000", "core", "unrepresentable_map", 3),  # 10 and 10.0
    # invalid_utf8
    ("a1617462c328", "core", "invalid_utf8", 3),  # CBOR.md §2 example
    ("62c328", "core", "invalid_utf8", 0),
    ("63eda080", "core", "invalid_utf8", 0),  # a surrogate
    ("62c0af", "dcbor", "invalid_utf8", 0),  # overlong
    ("a162ff6101", "dag-cbor", "invalid_utf8", 1),
    ("8261616180", "core", "invalid_utf8", 3),
    # trailing_data
    ("a161740100", "core", "trailing_data", 4),  # CBOR.md §2 example
    ("0000", "core", "trailing_data", 1),
    ("8000ff", "dcbor", "trailing_data", 1),
    ("f6f6", "dag-cbor", "trailing_data", 1),
    # float_outside_profile
    ("a16174fa3f800000", "core", "float_outside_profile", 3),  # CBOR.md §2 example
    ("fb3ff0000000000000", "core", "float_outside_profile", 0),
    ("fa7fc00000", "core", "float_outside_profile", 0),  # NaN fits f97e00
    ("fb7ff8000000000000", "core", "float_outside_profile", 0),
    ("fb7ff8000020000000", "core", "float_outside_profile", 0),  # payload fits binary32
    ("f93c00", "dag-cbor", "float_outside_profile", 0),
    ("fa3fc00000", "dag-cbor", "float_outside_profile", 0),
    ("fb7ff8000000000000", "dag-cbor", "float_outside_profile", 0),
    ("fb7ff0000000000000", "dag-cbor", "float_outside_profile", 0),
    ("fb8000000000000000", "dag-cbor", "float_outside_profile", 0),
    ("f94a00", "dcbor", "float_outside_profile", 0),  # 12.0 reduces to 12
    ("f90000", "dcbor", "float_outside_profile", 0),
    ("f98000", "dcbor", "float_outside_profile", 0),
    ("f97e01", "dcbor", "float_outside_profile", 0),
    ("f9fe00", "dcbor", "float_outside_profile", 0),
    # truncated: head, string payload, missing child (at the enclosing container)
    ("a2617401617664626c6f", "core", "truncated", 6),  # CBOR.md §2 example
    ("18", "core", "truncated", 0),
    ("1b0000", "core", "truncated", 0),
    ("5b8000000000000000", "core", "truncated", 0),  # claims a 2^63-byte string
    ("7a7fffffff61", "dcbor", "truncated", 0),
    ("8301", "core", "truncated", 0),
    ("820181", "core", "truncated", 2),
    ("a10a", "core", "truncated", 0),
    ("c1", "core", "truncated", 0),
    ("9b7fffffffffffffff00", "core", "truncated", 0),  # huge count, not preallocated
    ("d82a", "dag-cbor", "truncated", 0),
    # not_well_formed
    ("1c", "core", "not_well_formed", 0),
    ("5d", "core", "not_well_formed", 0),
    ("fe", "core", "not_well_formed", 0),
    ("1f", "core", "not_well_formed", 0),
    ("3f", "core", "not_well_formed", 0),
    ("df", "core", "not_well_formed", 0),
    ("f800", "core", "not_well_formed", 0),
    ("f81f", "dcbor", "not_well_formed", 0),
    ("811c", "core", "not_well_formed", 1),
    # unsupported_item
    ("f7", "dcbor", "unsupported_item", 0),
    ("f0", "dag-cbor", "unsupported_item", 0),
    ("f820", "dcbor", "unsupported_item", 0),
    ("c101", "dag-cbor", "unsupported_item", 0),
    ("c249010000000000000000", "dcbor", "unsupported_item", 0),
    ("a10100", "dag-cbor", "unsupported_item", 1),  # integer map key
    ("a1410100", "dag-cbor", "unsupported_item", 1),  # byte-string map key
    ("c201", "core", "unsupported_item", 0),  # bignum content not a byte string
    # integer_out_of_range
    ("3b8000000000000000", "dcbor", "integer_out_of_range", 0),
    ("3bffffffffffffffff", "dcbor", "integer_out_of_range", 0),
    ("82003b8000000000000000", "dcbor", "integer_out_of_range", 2),
    # non_nfc_text
    ("6365cc81", "dcbor", "non_nfc_text", 0),  # "e" + combining acute (NFD of é)
    ("a16365cc8100", "dcbor", "non_nfc_text", 1),
    ("8163e284ab", "dcbor", "non_nfc_text", 1),  # U+212B ANGSTROM SIGN, NFC is U+00C5
    # invalid_link
    ("d82a4100", "dag-cbor", "invalid_link", 0),
    ("d82a420112", "dag-cbor", "invalid_link", 0),
    ("d82a6100", "dag-cbor", "invalid_link", 0),
    ("d82a5823011220" + "00" * 32, "dag-cbor", "invalid_link", 0),  # no 0x00 prefix
    ("d82a5822001220" + "00" * 31, "dag-cbor", "invalid_link", 0),  # CIDv0 too short
    ("d82a58240001711220" + "00" * 31, "dag-cbor", "invalid_link", 0),  # digest 1 byte short
    # depth_exceeded with the default limit is in test_cbor_safety.py; here limits of 0..2
]

# (hex, max_depth, offset of the container that is one too deep)
DEPTH_CASES = [
    ("8100", 0, 0),
    ("818100", 1, 1),
    ("a1008100", 1, 2),
    ("c1c100", 1, 1),
    ("d82a", 0, 0),
]


def _ids(case: tuple[Any, ...]) -> str:
    return f"{case[1]}-{case[0][:24] or 'empty'}"


@pytest.mark.parametrize("case", DECODE_CASES, ids=[_ids(c) for c in DECODE_CASES])
def test_decode_rejects(cbor_impl: ModuleType, case: tuple[str, str, str, int]) -> None:
    hex_, profile, code, offset = case
    data = bytes.fromhex(hex_)
    with pytest.raises(errors.CODES[code]) as info:
        cbor_impl.decode(data, profile=profile)
    err = info.value
    assert (err.code, err.offset) == (code, offset)
    assert isinstance(err, errors.DecodeError) and isinstance(err, ValueError)
    assert f"offset {offset}" in str(err)


def test_every_decode_class_has_three_cases() -> None:
    counts: dict[str, int] = {}
    for _, _, code, _ in DECODE_CASES:
        counts[code] = counts.get(code, 0) + 1
    nine = ["empty_input", "non_shortest_integer", "indefinite_length", "unsorted_map_keys",
            "duplicate_map_key", "invalid_utf8", "trailing_data", "float_outside_profile",
            "truncated"]
    further = ["not_well_formed", "unsupported_item", "integer_out_of_range", "non_nfc_text",
               "invalid_link"]
    for code in nine + further:
        assert counts.get(code, 0) >= 3, code


@pytest.mark.parametrize("hex_,max_depth,offset", DEPTH_CASES)
def test_depth_limit(cbor_impl: ModuleType, hex_: str, max_depth: int, offset: int) -> None:
    data = bytes.fromhex(hex_)
    with pytest.raises(errors.DepthExceededError) as info:
        cbor_impl.decode(data, profile="dag-cbor" if hex_.startswith("d82a") else "core",
                         max_depth=max_depth)
    assert info.value.offset == offset


def test_depth_limit_is_inclusive(cbor_impl: ModuleType) -> None:
    assert cbor_impl.decode(bytes.fromhex("818100"), max_depth=2) == [[0]]
    assert cbor_impl.decode(b"\x00", max_depth=0) == 0


@pytest.mark.parametrize("bad", ["cbor", "CORE", "", None])
def test_unknown_profile(cbor_impl: ModuleType, bad: Any) -> None:
    with pytest.raises(ValueError):
        cbor_impl.decode(b"\x00", profile=bad)
    with pytest.raises(ValueError):
        cbor_impl.encode(0, profile=bad)
    with pytest.raises(ValueError):
        cbor_impl.Encoder(profile=bad)
    with pytest.raises(ValueError):
        cbor_impl.Decoder(profile=bad)


@pytest.mark.parametrize("bad", ["00", 0, None, [0], 1.5])
def test_decode_needs_a_buffer(cbor_impl: ModuleType, bad: Any) -> None:
    with pytest.raises(TypeError):
        cbor_impl.decode(bad)


def test_decode_accepts_any_contiguous_buffer(cbor_impl: ModuleType) -> None:
    raw = bytes.fromhex("a2616101616282f5f6")
    expected = {"a": 1, "b": [True, None]}
    for data in (raw, bytearray(raw), memoryview(raw), np.frombuffer(raw, dtype=np.uint8)):
        assert cbor_impl.decode(data) == expected
    assert cbor_impl.decode(memoryview(b"\xff" + raw)[1:]) == expected


# --- encode-side errors ---------------------------------------------------------------

class Opaque:
    pass


ENCODE_CASES: list[tuple[Any, str, type[errors.CanonkitError]]] = [
    (Opaque(), "core", errors.UnsupportedTypeError),
    ({1, 2}, "core", errors.UnsupportedTypeError),
    ([1, object()], "dcbor", errors.UnsupportedTypeError),
    (complex(1, 2), "dag-cbor", errors.UnsupportedTypeError),
    (1 << 64, "dcbor", errors.EncodeIntegerOutOfRangeError),
    (-(1 << 63) - 1, "dcbor", errors.EncodeIntegerOutOfRangeError),
    (1 << 64, "dag-cbor", errors.EncodeIntegerOutOfRangeError),
    (-(1 << 64) - 1, "dag-cbor", errors.EncodeIntegerOutOfRangeError),
    (math.nan, "dag-cbor", errors.EncodeFloatOutsideProfileError),
    (math.inf, "dag-cbor", errors.EncodeFloatOutsideProfileError),
    ([-math.inf], "dag-cbor", errors.EncodeFloatOutsideProfileError),
    (UNDEFINED, "dcbor", errors.EncodeUnsupportedItemError),
    (Simple(16), "dag-cbor", errors.EncodeUnsupportedItemError),
    (Tag(1, 0), "dag-cbor", errors.EncodeUnsupportedItemError),
    (Tag(2, b"\x01" * 9), "core", errors.EncodeUnsupportedItemError),
    ({1: 2}, "dag-cbor", errors.EncodeUnsupportedItemError),
    ({b"k": 2}, "dag-cbor", errors.EncodeUnsupportedItemError),
    (Link(b"\x01\x71\x12\x20" + bytes(32)), "core", errors.EncodeUnsupportedItemError),
    ("\ud800", "core", errors.EncodeUnsupportedItemError),  # lone surrogate
    ("e\u0301", "dcbor", errors.EncodeNonNFCTextError),
    ({"\u212b": 1}, "dcbor", errors.EncodeNonNFCTextError),
    ({math.nan: 1, -math.nan: 2, float("nan"): 3}, "dcbor", errors.EncodeDuplicateMapKeyError),
]


@pytest.mark.parametrize("case", ENCODE_CASES, ids=lambda c: f"{c[1]}-{c[2].__name__}"
                         if isinstance(c, tuple) else str(c))
def test_encode_rejects(cbor_impl: ModuleType, case: tuple[Any, str, type[Exception]]) -> None:
    value, profile, cls = case
    with pytest.raises(cls) as info:
        cbor_impl.encode(value, profile=profile)
    assert isinstance(info.value, errors.EncodeError)
    assert info.value.offset is None


def test_duplicate_nan_keys_core(cbor_impl: ModuleType) -> None:
    # two distinct NaN objects with one payload encode identically
    with pytest.raises(errors.EncodeDuplicateMapKeyError):
        cbor_impl.encode({float("nan"): 1, float("nan"): 2})
    # different payloads are different keys
    a = float("nan")
    b = -a
    assert cbor_impl.decode(cbor_impl.encode({a: 1, b: 2})).keys().__len__() == 2


def test_encode_depth_and_self_reference(cbor_impl: ModuleType) -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(errors.EncodeDepthExceededError):
        cbor_impl.encode(loop)
    mapping: dict[str, Any] = {}
    mapping["self"] = mapping
    with pytest.raises(errors.EncodeDepthExceededError):
        cbor_impl.encode(mapping, profile="dag-cbor")
    deep: Any = 0
    for _ in range(512):
        deep = [deep]
    assert cbor_impl.decode(cbor_impl.encode(deep)) == deep
    with pytest.raises(errors.EncodeDepthExceededError):
        cbor_impl.encode([deep])
    tags: Any = 0
    for _ in range(513):
        tags = Tag(7, tags)
    with pytest.raises(errors.EncodeDepthExceededError):
        cbor_impl.encode(tags)


def test_frozen_keys_encode_back(cbor_impl: ModuleType) -> None:
    data = bytes.fromhex("a2" "820102" "01" "a10102" "02")
    value = cbor_impl.decode(data)
    assert value == {(1, 2): 1, FrozenDict({1: 2}): 2}
    assert cbor_impl.encode(value) == data
