"""The compiled decoder's two paths agree with the twin: items a container reads itself
(scalars valid as they stand, small arrays of them, short ASCII map keys through the key
cache) and everything else, read from its head with every check. Values, errors (class,
code, offset, message) and the limits (max_depth, max_items, max_size) are compared on
record-like values, their encodings cut short at every length, and edits of them."""
from __future__ import annotations

import struct
from typing import Any

import pytest
from conftest import backend_pair
from hypothesis import example, given, settings
from hypothesis import strategies as st
from strategies import mutated
from test_cbor_default_path import _agree as _agree_outcomes
from test_cbor_default_path import _outcome

from canonkit import errors

PROFILES = ["core", "dcbor", "dag-cbor"]


def _agree(data: bytes, profile: str, **options: Any) -> None:
    """decode and decode_prefix of ``data``: compiled, twin and a compiled Decoder agree."""
    compiled, twin = backend_pair("cbor")
    for call in ("decode", "decode_prefix"):
        _agree_outcomes([
            _outcome(getattr(compiled, call), data, profile=profile, **options),
            _outcome(getattr(twin, call), data, profile=profile, **options),
            _outcome(getattr(compiled.Decoder(profile=profile, **options), call), data)])


def _twin_encode(value: Any, profile: str) -> bytes:
    from canonkit.cbor import _codec_py

    return _codec_py.encode(value, profile=profile)


# keys of every length around the short-key path's bounds (23/24: the head's form; 32/33:
# the key cache's limit), ASCII and not
_KEY_LENGTHS = [0, 1, 2, 7, 8, 9, 15, 16, 17, 23, 24, 25, 31, 32, 33, 40]
ascii_keys = st.builds(lambda n, c: (c * n)[:n], st.sampled_from(_KEY_LENGTHS),
                       st.sampled_from(["k", "ab", "xyz_", "Q"]))
keys = st.one_of(ascii_keys, st.text(max_size=34), st.sampled_from(["é", "ké", "\u00e9" * 12]))


def _float_bits(bits: int) -> float:
    return struct.unpack(">d", bits.to_bytes(8, "big"))[0]  # type: ignore[no-any-return]


# scalars at the edges of the common kinds: every int head size, floats of every width and
# the special ones, text and bytes at the head-size boundaries, ASCII and not
scalars = st.one_of(
    st.integers(-(1 << 64), (1 << 64) - 1),
    st.sampled_from([0, 23, 24, 255, 256, 65535, 65536, (1 << 32) - 1, 1 << 32, (1 << 63) - 1,
                     1 << 63, -1, -24, -25, -256, -257, -(1 << 63), -(1 << 63) - 1]),
    st.floats(),
    st.floats(width=32),
    st.sampled_from([0.0, -0.0, 1.5, _float_bits(0x7FF8000000000001), float("inf")]),
    st.builds(lambda n, c: c * n, st.sampled_from([0, 1, 23, 24, 255, 256, 300]),
              st.sampled_from(["a", "é", "\U0001f600"])),
    st.text(max_size=30),
    st.binary(max_size=40),
    st.booleans(),
    st.none(),
)
small_arrays = st.lists(scalars, max_size=25)


def records(profile: str) -> st.SearchStrategy[Any]:
    """Maps (and lists of maps) whose keys and values exercise both decode paths."""
    def valid(value: Any) -> bool:
        try:
            _twin_encode(value, profile)
        except errors.EncodeError:
            return False
        return True

    value = st.recursive(
        st.one_of(scalars, small_arrays),
        lambda inner: st.one_of(st.lists(inner, max_size=6),
                                st.dictionaries(keys, inner, max_size=8)),
        max_leaves=25,
    )
    return value.filter(valid)


def encodings(profile: str) -> st.SearchStrategy[bytes]:
    return records(profile).map(lambda v: _twin_encode(v, profile))


@pytest.mark.parametrize("profile", PROFILES)
def test_records_and_their_edits_agree(profile: str) -> None:
    @settings(max_examples=200)
    @given(st.one_of(encodings(profile), mutated(encodings(profile))))
    def run(data: bytes) -> None:
        _agree(data, profile)

    run()


@pytest.mark.parametrize("profile", PROFILES)
def test_records_cut_short_at_every_length(profile: str) -> None:
    """A truncated input fails alike wherever it ends (an item's head, a key read by the
    short-key path, a scalar read by its container, a small array)."""
    @settings(max_examples=40)
    @given(encodings(profile))
    def run(data: bytes) -> None:
        for end in range(len(data)):
            _agree(data[:end], profile)

    run()


@pytest.mark.parametrize("profile", PROFILES)
def test_records_under_limits_agree(profile: str) -> None:
    """max_depth at every nesting (a small array read in one step still counts as a level),
    max_items (the common items are counted with their container) and max_size (the common
    items never read past it)."""
    @settings(max_examples=120)
    @given(st.one_of(encodings(profile), mutated(encodings(profile))), st.integers(0, 5),
           st.integers(0, 60), st.integers(0, 80))
    def run(data: bytes, max_depth: int, max_items: int, max_size: int) -> None:
        _agree(data, profile, max_depth=max_depth)
        _agree(data, profile, max_items=max_items)
        compiled, twin = backend_pair("cbor")
        padded = data + b"\x00" * 20  # decode_prefix reads max_size bytes of a longer input
        _agree_outcomes([_outcome(module.decode_prefix, padded, 0, profile=profile,
                                  max_size=max_size) for module in (compiled, twin)])

    run()


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("hex_data", [
    # a 24-byte key in its shortest head, then one in a non-shortest head
    "a1" + "7818" + "6b" * 24 + "01",
    "a1" + "7817" + "6b" * 23 + "01",
    # a key of exactly 32 bytes and one of 33 (past the key cache), at the input's end
    "a1" + "7820" + "6b" * 32 + "f6",
    "a1" + "7821" + "6b" * 33 + "f6",
    # keys out of order and equal, both read by the short-key path
    "a2616201616101", "a2616101616101", "a2617a01617901",
    # a non-ASCII key after an ASCII one, and one with invalid UTF-8
    "a26161016263c3a902", "a2616101626380ff02",
    # small arrays: every scalar kind, then one that stops at an item of another kind
    "8300f5f6", "83006161a0", "8301fb7ff8000000000000", "8301fb8000000000000000",
    "8301fb3ff0000000000000", "8301fa3fc00000", "8301f93e00", "82181801", "8218170a",
    # an array cut inside a float, a text string and a key
    "82fb3ff0", "826461", "a1646b6b",
    # a map value that is a small array, then a map value that is a map
    "a261618201026162a1616301",
])
def test_pinned_inputs_agree(profile: str, hex_data: str) -> None:
    data = bytes.fromhex(hex_data)
    _agree(data, profile)
    for max_depth in range(4):
        _agree(data, profile, max_depth=max_depth)


def test_key_cache_replacement_keeps_every_key() -> None:
    """More distinct keys than the key cache has slots, then the first ones again: keys
    replaced in the cache still decode to equal strs, and keys that share their first 16
    bytes and length are told apart."""
    compiled, twin = backend_pair("cbor")
    value = {f"key-{i:05d}": i for i in range(3000)}
    value.update({"a" * 16 + f"{i:08d}": i for i in range(200)})
    data = twin.encode(value, profile="dag-cbor")
    for _ in range(2):
        assert compiled.decode(data, profile="dag-cbor") == value
    shuffled = [{f"key-{i:05d}": i} for i in range(0, 3000, 7)]
    assert compiled.decode(twin.encode(shuffled)) == shuffled


@example(0)
@given(st.integers(0, 300))
@settings(max_examples=60)
def test_small_ints_and_one_character_strings_are_values_like_any(i: int) -> None:
    """The shared small ints and one-character strs the decoder hands out equal what
    int() and chr() give, inside containers and alone."""
    compiled, _ = backend_pair("cbor")
    value = [i, -i, chr(i % 128), {chr(i % 128): i}]
    data = compiled.encode(value)
    decoded = compiled.decode(data)
    assert decoded == value
    assert all(type(x) is type(y) for x, y in zip(decoded, value))
