"""Hostile-input safety on both backends: no allocation by claimed length, bounded depth
on 10^6-deep input (decode and encode), no leaks over many encode/decode cycles."""
from __future__ import annotations

import gc
import sys
import tracemalloc
from types import ModuleType
from typing import Any

import pytest

from canonkit import errors
from canonkit.cbor._types import Tag

DEEP = 10**6


@pytest.mark.parametrize("hex_", [
    "5b8000000000000000",  # byte string of 2^63 bytes
    "7b8000000000000000",  # text string of 2^63 bytes
    "9b8000000000000000",  # array of 2^63 items
    "bb8000000000000000",  # map of 2^63 pairs
    "5bffffffffffffffff",
])
def test_claimed_huge_length_fails_fast_without_allocating(cbor_impl: ModuleType,
                                                            hex_: str) -> None:
    data = bytes.fromhex(hex_)
    assert len(data) == 9
    tracemalloc.start()
    try:
        with pytest.raises(errors.TruncatedError) as info:
            cbor_impl.decode(data)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert info.value.offset == 0
    assert peak < 256 * 1024, f"peak {peak} bytes while rejecting a 9-byte input"


@pytest.mark.parametrize("unit", [b"\x81", b"\xa1\x00", b"\xc1", b"\x9f"])
def test_decode_million_deep(cbor_impl: ModuleType, unit: bytes) -> None:
    data = unit * DEEP + b"\x00"
    with pytest.raises(errors.DecodeError) as info:
        cbor_impl.decode(data)
    if unit == b"\x9f":  # indefinite arrays are rejected at the first head
        assert (info.value.code, info.value.offset) == ("indefinite_length", 0)
    else:
        assert info.value.code == "depth_exceeded"
        assert info.value.offset == 512 * len(unit)


def test_decode_million_deep_dag_links(cbor_impl: ModuleType) -> None:
    data = b"\xa1\x61k" * DEEP + b"\x00"
    with pytest.raises(errors.DepthExceededError) as info:
        cbor_impl.decode(data, profile="dag-cbor")
    assert info.value.offset == 512 * 3


@pytest.fixture(scope="module")
def million_deep() -> list[tuple[Any, str]]:
    """10^6-deep list, tag and map nests, built once for both backends."""
    deep: Any = 0
    for _ in range(DEEP):
        deep = [deep]
    tagged: Any = 0
    for _ in range(DEEP):
        tagged = Tag(6, tagged)
    nested: Any = 0
    for _ in range(DEEP):
        nested = {"k": nested}
    return [(deep, "core"), (tagged, "core"), (nested, "dag-cbor")]


def test_encode_million_deep(cbor_impl: ModuleType, million_deep: list[tuple[Any, str]]) -> None:
    for value, profile in million_deep:
        with pytest.raises(errors.EncodeDepthExceededError):
            cbor_impl.encode(value, profile=profile)


SAMPLE = {"name": "réseau", "size": 123456, "sha": bytes(range(32)), "children": [1, 2, -3],
          "ok": True, "f": 1.5, "n": None}
BAD = bytes.fromhex("a2617401617402")  # duplicate key: exercises the error path


TINY = [1, "a", b"b", 2.5]
DAY = Tag(100, 19000)


def _cycle(impl: ModuleType, rounds: int) -> None:
    """Every public entry point, success and error paths, ``rounds`` times."""
    encode, decode = impl.encode, impl.decode
    encoder, decoder = impl.Encoder(profile="dcbor"), impl.Decoder(profile="dcbor")
    for _ in range(rounds):
        decode(encode(SAMPLE))
        decoder.decode(encoder.encode(SAMPLE))
        try:
            decode(BAD)
        except errors.DuplicateMapKeyError:
            pass
        try:
            encode([1 << 70], profile="dag-cbor")
        except errors.EncodeIntegerOutOfRangeError:
            pass
        try:
            encode({"a": [1, {"b": object()}]}, default=lambda v: v)
        except errors.UnsupportedTypeError:
            pass
        out = bytearray(b"x")
        impl.encode_into(SAMPLE, out, 1)
        encoder.encode_into({"d": DAY}, out, 0)


@pytest.mark.slow
def test_no_leaks_over_many_cycles(cbor_impl: ModuleType) -> None:
    """Allocated blocks stay flat over 10^6 encode/decode cycles of a tiny value on the
    compiled backend (10^4 on the twin) and 10^4 rounds of every entry point; a leak of
    one object per cycle would show as thousands of blocks."""
    compiled = cbor_impl.__name__ == "canonkit.cbor._codec"
    encode, decode = cbor_impl.encode, cbor_impl.decode
    _cycle(cbor_impl, 1000)  # warm caches (interned keys, free lists)
    for _ in range(1000):
        decode(encode(TINY))
    gc.collect()
    before = sys.getallocatedblocks()
    for _ in range(10**6 if compiled else 10**4):
        decode(encode(TINY))
    _cycle(cbor_impl, 10**4 if compiled else 10**3)
    gc.collect()
    grown = sys.getallocatedblocks() - before
    assert grown < 1000, f"{grown} more memory blocks after the cycles"


def test_no_leaks_tracemalloc(cbor_impl: ModuleType) -> None:
    _cycle(cbor_impl, 200)
    gc.collect()
    tracemalloc.start()
    try:
        _cycle(cbor_impl, 100)
        gc.collect()
        first, _ = tracemalloc.get_traced_memory()
        _cycle(cbor_impl, 2000 if cbor_impl.__name__ == "canonkit.cbor._codec" else 500)
        gc.collect()
        second, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert second - first < 64 * 1024, f"traced memory grew {second - first} bytes"
