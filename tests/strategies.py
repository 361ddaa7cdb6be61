"""Hypothesis strategies for CBOR values (per profile) and for hostile byte strings.

Sizes are bounded (``max_leaves``) so a property run stays fast on the twin.
"""
from __future__ import annotations

import hashlib
import math
import struct
import unicodedata
from typing import Any

from hypothesis import strategies as st

from canonkit.cbor._types import UNDEFINED, FrozenDict, Link, Simple, Tag

U64 = 1 << 64
I63 = 1 << 63

# --- leaves ---------------------------------------------------------------------------

core_ints = st.one_of(
    st.integers(-24, 23),
    st.integers(-(U64), U64 - 1),
    st.integers(-(1 << 200), 1 << 200),  # bignums (tags 2/3)
    st.sampled_from([U64 - 1, U64, -U64, -U64 - 1, 255, 256, -256, -257, 65535, 65536]),
)
dcbor_ints = st.integers(-I63, U64 - 1)
dag_ints = st.integers(-U64, U64 - 1)


def _float_from_bits(bits: int) -> float:
    return struct.unpack(">d", bits.to_bytes(8, "big"))[0]  # type: ignore[no-any-return]


# NaNs with payloads that survive each width, plus ordinary floats of every width
nan_payloads = st.builds(
    lambda sign, mantissa: _float_from_bits(sign << 63 | 0x7FF << 52 | mantissa),
    st.integers(0, 1),
    st.one_of(st.integers(1, (1 << 52) - 1), st.integers(1, 1023).map(lambda m: m << 42),
              st.integers(1, (1 << 23) - 1).map(lambda m: m << 29)),
)
core_floats = st.one_of(
    st.floats(),
    st.floats(width=16),
    st.floats(width=32),
    nan_payloads,
)
dcbor_floats = st.one_of(st.floats(), st.floats(width=16), st.floats(width=32))
dag_floats = st.floats(allow_nan=False, allow_infinity=False)

texts = st.text(max_size=12)
nfc_texts = texts.map(lambda s: unicodedata.normalize("NFC", s))
blobs = st.binary(max_size=24)
simples = st.one_of(st.integers(0, 19), st.integers(32, 255)).map(Simple)
tag_numbers = st.one_of(st.integers(0, 1), st.integers(4, 300), st.integers(4, U64 - 1))


def _cid(digest_seed: bytes, v0: bool) -> Link:
    digest = hashlib.sha256(digest_seed).digest()
    if v0:
        return Link(b"\x12\x20" + digest)
    return Link(b"\x01\x71\x12\x20" + digest)


links = st.builds(_cid, st.binary(max_size=8), st.booleans())


# --- values per profile -------------------------------------------------------------

def _hashable(leaves: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Map keys: hashable leaves, tuples and FrozenDicts of them."""
    return st.recursive(
        leaves,
        lambda inner: st.one_of(
            st.lists(inner, max_size=3).map(tuple),
            st.dictionaries(inner, inner, max_size=3).map(FrozenDict),
        ),
        max_leaves=6,
    )


def _nested(leaves: st.SearchStrategy[Any],
            key_leaves: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Arrays, maps (keys from ``_hashable(key_leaves)``) and tags over ``leaves``."""
    return st.recursive(
        leaves,
        lambda inner: st.one_of(
            st.lists(inner, max_size=5),
            st.dictionaries(_hashable(key_leaves), inner, max_size=5),
            st.builds(Tag, tag_numbers, inner),
        ),
        max_leaves=20,
    )


def core_values() -> st.SearchStrategy[Any]:
    # NaN keys are left out: two NaN keys with one payload are a duplicate key
    key_leaves = st.one_of(core_ints, st.floats(allow_nan=False), texts, blobs, st.booleans(),
                           st.none(), simples)
    leaves = st.one_of(core_ints, core_floats, texts, blobs, st.booleans(), st.none(),
                       simples, st.just(UNDEFINED))
    return _nested(leaves, key_leaves)


def dcbor_values() -> st.SearchStrategy[Any]:
    key_leaves = st.one_of(dcbor_ints, nfc_texts, blobs, st.booleans(), st.none())
    leaves = st.one_of(dcbor_ints, dcbor_floats, nfc_texts, blobs, st.booleans(), st.none())
    return _nested(leaves, key_leaves)


def dag_values(with_links: bool = True) -> st.SearchStrategy[Any]:
    leaf_list = [dag_ints, dag_floats, texts, blobs, st.booleans(), st.none()]
    if with_links:
        leaf_list.append(links)
    return st.recursive(
        st.one_of(*leaf_list),
        lambda inner: st.one_of(
            st.lists(inner, max_size=5),
            st.dictionaries(texts, inner, max_size=5),
        ),
        max_leaves=20,
    )


PROFILE_VALUES = {"core": core_values, "dcbor": dcbor_values, "dag-cbor": dag_values}


def expected_after_roundtrip(value: Any, profile: str, in_key: bool = False) -> Any:
    """What ``decode(encode(value))`` must equal: lists stay lists (tuples outside keys
    become lists), dcbor reduces integral floats and -0.0 to ints and every NaN to the
    one NaN, dag-cbor turns -0.0 into 0.0."""
    if isinstance(value, float):
        if profile == "dcbor":
            if math.isnan(value):
                return math.nan
            if value.is_integer() and -I63 <= value < U64:
                return int(value)
        if profile == "dag-cbor" and value == 0.0:
            return 0.0
        return value
    if isinstance(value, (list, tuple)):
        items = [expected_after_roundtrip(v, profile, in_key) for v in value]
        return tuple(items) if in_key else items
    if isinstance(value, FrozenDict) or (isinstance(value, dict) and in_key):
        return FrozenDict({expected_after_roundtrip(k, profile, True):
                           expected_after_roundtrip(v, profile, True) for k, v in value.items()})
    if isinstance(value, dict):
        return {expected_after_roundtrip(k, profile, True): expected_after_roundtrip(v, profile)
                for k, v in value.items()}
    if isinstance(value, Tag):
        return Tag(value.number, expected_after_roundtrip(value.value, profile, in_key))
    return value


def same(a: Any, b: Any) -> bool:
    """Structural equality with exact types; floats compared bit for bit (NaN payloads,
    -0.0), so ``same(x, x)`` holds for NaN."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return struct.pack(">d", a) == struct.pack(">d", b) or (
            math.isnan(a) and math.isnan(b) and _nan_payload_equal(a, b))
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, (dict, FrozenDict)):
        if len(a) != len(b):
            return False
        # NaN keys equal nothing, not even themselves: match every key structurally
        return all(any(same(k, k2) and same(v, b[k2]) for k2 in b) for k, v in a.items())
    if isinstance(a, Tag):
        return a.number == b.number and same(a.value, b.value)
    return bool(a == b)


def _nan_payload_equal(a: float, b: float) -> bool:
    return struct.pack(">d", a) == struct.pack(">d", b)


# --- hostile bytes --------------------------------------------------------------------

def _mutate(data: bytes, edits: list[tuple[int, int, int]]) -> bytes:
    buf = bytearray(data)
    for kind, where, byte in edits:
        if not buf:
            buf.append(byte)
            continue
        i = where % len(buf)
        if kind == 0:
            buf[i] = byte
        elif kind == 1:
            buf.insert(i, byte)
        elif kind == 2:
            del buf[i]
        else:
            buf[i] ^= 1 << (byte % 8)
    return bytes(buf)


def mutated(valid: st.SearchStrategy[bytes]) -> st.SearchStrategy[bytes]:
    """A valid encoding with a few byte edits (set, insert, delete, bit flip)."""
    edit = st.tuples(st.integers(0, 3), st.integers(0, 1 << 16), st.integers(0, 255))
    return st.builds(_mutate, valid, st.lists(edit, min_size=1, max_size=3))


# byte strings built from plausible heads, so the decoder gets deep before failing
heads = st.one_of(
    st.integers(0, 255).map(lambda b: bytes([b])),
    st.builds(lambda ib, n: bytes([ib]) + n, st.integers(0, 255), st.binary(min_size=1, max_size=8)),
    st.sampled_from([b"\x81", b"\xa1", b"\xd8\x2a", b"\x61a", b"\xf9\x7e\x00", b"\x58\x25\x00"]),
)
cbor_ish = st.lists(heads, max_size=12).map(b"".join)
