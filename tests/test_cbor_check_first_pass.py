"""``check``'s first pass (ext/cbor/cbor_check.h) against the full validator it stands in
front of: with the pass on and off, ``check``, ``check_prefix`` and ``check_sequence``
give the same verdict, end, error class, code, offset and message on hostile input, for
every UTF-8 kernel this CPU runs (the pass has a baseline and an AVX-512 build, chosen with
the kernel); what the pass accepts alone, the full validator accepts with the same end;
and it does accept the documents it is there for (JSON-like values, coordinate arrays,
links), so ``check`` does not quietly take the long way."""
from __future__ import annotations

import importlib
import unicodedata
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from strategies import PROFILE_VALUES, cbor_ish, links, mutated

from canonkit import errors

PROFILES = ["core", "dcbor", "dag-cbor"]
FIXTURE_OK = settings(suppress_health_check=[HealthCheck.function_scoped_fixture],
                      max_examples=150)
# bytes after the item, so the pass's vector tests have room to read past short strings
# (high bytes: a test that trusted them would see non-ASCII text)
PADDING = b"\xff" * 80


def _outcome(fn: Any, *args: Any, **kwargs: Any) -> tuple[str, Any]:
    try:
        return "ok", fn(*args, **kwargs)
    except errors.CanonkitError as exc:
        return "error", (type(exc), exc.code, exc.offset, str(exc))


def _checks(c: ModuleType, data: bytes, profile: str, options: dict[str, Any]) -> list[Any]:
    padded = data + PADDING
    return [_outcome(c.check, data, profile=profile, **options),
            _outcome(c.Decoder(profile=profile, **options).check, data),
            _outcome(c.check_prefix, data, 0, profile=profile, **options),
            _outcome(c.check_prefix, padded, 0, profile=profile, **options),
            _outcome(c.check_sequence, data, profile=profile, **options)]


def assert_same_with_and_without(cbor_pair: Any, data: bytes, profile: str,
                                 options: dict[str, Any]) -> None:
    c, py, dec = cbor_pair
    previous = dec._check_first_pass(True)
    try:
        with_pass = _checks(c, data, profile, options)
        dec._check_first_pass(False)
        without = _checks(c, data, profile, options)
    finally:
        dec._check_first_pass(previous)
    assert with_pass == without, data.hex()
    # and both are the twin's
    assert with_pass[0] == _outcome(py.check, data, profile=profile, **options), data.hex()
    # what the pass accepts alone, the full validator accepts, ending at the same byte
    # (the hook reads up to the end of the buffer: without max_size)
    for buf in (data, data + PADDING) if "max_size" not in options else ():
        end = dec._first_pass(buf, profile, options.get("max_depth", 10_000))
        if end is not None:
            assert without[3 if buf is not data else 2] == ("ok", end), data.hex()


# --- inputs ---------------------------------------------------------------------------

def _nfc(s: str) -> str:
    return unicodedata.normalize("NFC", s)


# JSON-like documents, the pass's common case: text keys of every length (short ones are
# taken by its key path, 24 bytes and more by the general one), long and non-ASCII text,
# numbers, and arrays of numbers (read without opening a frame)
json_keys = st.one_of(st.text(max_size=6), st.text(min_size=20, max_size=40)).map(_nfc)
json_text = st.one_of(st.text(max_size=30), st.text(min_size=60, max_size=200)).map(_nfc)
json_leaves = st.one_of(st.integers(-(1 << 63), (1 << 64) - 1), st.floats(allow_nan=False, allow_infinity=False),
                        json_text, st.booleans(), st.none(), st.binary(max_size=40))
json_values = st.recursive(
    json_leaves,
    lambda inner: st.one_of(st.lists(inner, max_size=6),
                            st.lists(st.floats(allow_nan=False, allow_infinity=False), max_size=4),
                            st.dictionaries(json_keys, inner, max_size=6)),
    max_leaves=30)
dag_json_values = st.recursive(
    st.one_of(json_leaves, links),
    lambda inner: st.one_of(st.lists(inner, max_size=6),
                            st.dictionaries(json_keys, inner, max_size=6)),
    max_leaves=30)


def _encodings(profile: str) -> st.SearchStrategy[bytes]:
    from canonkit.cbor import _codec_py

    values = st.one_of(PROFILE_VALUES[profile](),
                       dag_json_values if profile == "dag-cbor" else json_values)
    return values.map(lambda v: _codec_py.encode(v, profile=profile))


def _hostile(profile: str) -> st.SearchStrategy[bytes]:
    valid = _encodings(profile)
    return st.one_of(valid, mutated(valid), cbor_ish, st.binary(max_size=40))


limits = st.fixed_dictionaries({}, optional={
    "max_depth": st.integers(0, 8),
    "max_size": st.one_of(st.none(), st.integers(0, 64)),
})


# --- the pass and the full validator agree ----------------------------------------------

@pytest.mark.parametrize("profile", PROFILES)
def test_same_verdict_with_and_without_the_first_pass(cbor_pair: Any, utf8_kernel: str,
                                                      profile: str) -> None:
    @FIXTURE_OK
    @given(_hostile(profile), limits)
    @example(bytes.fromhex("a2616201616102"), {})  # keys out of order
    @example(bytes.fromhex("a2616101616101"), {})  # a duplicate key
    @example(bytes.fromhex("82818180"), {"max_depth": 2})  # max_depth on an empty array
    @example(bytes.fromhex("8301fb3ff0000000000000f4"), {})  # 1.0 as a double
    @example(bytes.fromhex("a1781861616161616161616161616161616161616161616161616101"), {})
    def run(data: bytes, options: dict[str, Any]) -> None:
        assert_same_with_and_without(cbor_pair, data, profile, options)

    run()


# items the pass leaves to the full validator, and items at its edges
EDGE_CASES = [
    ("core", "a1820102f5"),  # an array as a map key
    ("core", "a1c10100"),  # a tag as a map key
    ("core", "c249010000000000000000"),  # a bignum
    ("core", "c24100"),  # a bignum that fits an integer
    ("core", "d9d9f780"),  # any other tag
    ("core", "f818"),  # simple value 24 in two bytes
    ("core", "f820"),  # simple value 32
    ("core", "f7"),  # undefined
    ("core", "fa3fc00000"),  # 1.5 as a single: fits a half
    ("core", "fa47c35000"),  # 100000.0: a single that is no half
    ("core", "fb3ff8000000000000"),  # 1.5 as a double: fits a single
    ("core", "fb3fb999999999999a"),  # 0.1
    ("core", "fb7ff8000000000000"),  # a NaN as a double
    ("core", "fb0000000000000001"),  # the smallest subnormal
    ("core", "f90001"),  # a half subnormal
    ("dcbor", "f97e00"),  # the one NaN
    ("dcbor", "f97e01"),  # another NaN
    ("dcbor", "fa7fc00000"),  # a NaN as a single
    ("dcbor", "f93c00"),  # 1.0: must be the integer 1
    ("dcbor", "f93e00"),  # 1.5
    ("dcbor", "3b8000000000000000"),  # -2^63 - 1
    ("dcbor", "3b7fffffffffffffff"),  # -2^63
    ("dcbor", "62c3a9"),  # é, NFC
    ("dcbor", "6365cc81"),  # e + combining acute: not NFC
    ("dcbor", "a16365cc8101"),  # the same as a key
    ("dcbor", "c24101"),  # a bignum tag
    ("dcbor", "f4"),
    ("dcbor", "f7"),  # undefined
    ("dag-cbor", "d82a582300017112200000000000000000000000000000000000000000000000000000000000000000"),
    ("dag-cbor", "d82a5823000171122000000000000000000000000000000000000000000000000000000000000000"),
    ("dag-cbor", "d82a4100"),  # no CID after the 0x00
    ("dag-cbor", "d82b4100"),  # tag 43
    ("dag-cbor", "d82a6161"),  # a link that is text
    ("dag-cbor", "a10101"),  # an integer key
    ("dag-cbor", "a14100"),  # a byte string key, and no value
    ("dag-cbor", "a1410001"),  # a byte string key
    ("dag-cbor", "a1f401"),  # false as a key
    ("dag-cbor", "f93c00"),  # a half
    ("dag-cbor", "fb8000000000000000"),  # -0.0
    ("dag-cbor", "fb7ff0000000000000"),  # infinity
    ("dag-cbor", "f6"),
    ("dag-cbor", "f817"),  # undefined in two bytes
]


@pytest.mark.parametrize("profile,hex_", EDGE_CASES)
def test_edge_cases(cbor_pair: Any, utf8_kernel: str, profile: str, hex_: str) -> None:
    data = bytes.fromhex(hex_)
    for options in ({}, {"max_depth": 0}, {"max_depth": 1}, {"max_size": len(data) - 1}):
        assert_same_with_and_without(cbor_pair, data, profile, options)
        # the same item inside an array and a map, deeper in the input
        assert_same_with_and_without(cbor_pair, b"\x82\x01" + data, profile, options)
        assert_same_with_and_without(cbor_pair, b"\xa1\x61a" + data, profile, options)


@pytest.mark.parametrize("depth", [1, 63, 64, 65, 200])
def test_nesting_past_the_pass_depth(cbor_pair: Any, utf8_kernel: str, depth: int) -> None:
    """The pass keeps 64 frames; deeper items go to the full validator, maps and arrays
    alike, and max_depth refuses at the same offset either way."""
    for opener in (b"\x81", b"\xa1\x61k"):
        data = opener * depth + b"\x01"
        for options in ({}, {"max_depth": depth}, {"max_depth": depth - 1}):
            assert_same_with_and_without(cbor_pair, data, "core", options)
            assert_same_with_and_without(cbor_pair, data, "dag-cbor", options)


# --- the pass does its job ------------------------------------------------------------------

@pytest.mark.parametrize("profile", PROFILES)
def test_the_pass_accepts_json_like_documents(cbor_pair: Any, utf8_kernel: str,
                                              profile: str) -> None:
    from canonkit.cbor import _codec_py

    dec = cbor_pair[2]
    values = dag_json_values if profile == "dag-cbor" else json_values

    @FIXTURE_OK
    @given(values)
    def run(value: Any) -> None:
        data = _codec_py.encode(value, profile=profile)
        assert dec._first_pass(data, profile) == len(data), data.hex()
        assert dec._first_pass(data + PADDING, profile) == len(data), data.hex()

    run()
