"""Hypothesis properties of FPS/1 on both backends, and the compiled-vs-twin differential.

Sizes: the twin is slow by design, so properties on ``fps_impl`` stay small; the
differential goes up to 64 KiB (plus a fixed 64 KiB + 7 case that crosses the GIL-release
threshold).
"""
from __future__ import annotations

import array
import random
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from conftest import backend_pair
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from strategies_fps import (
    UNIT_BITS,
    Call,
    calls,
    payloads,
    valid_ranges,
    whole_units,
)

from canonkit import errors

# fps_impl only selects a module; nothing in it needs resetting between examples
SMALL = settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                  HealthCheck.too_slow])


def outcome(call: Call, module: ModuleType) -> tuple[str, Any]:
    """("ok", result) or ("error", (code, message, detail, offset)) — the backends agree
    on all four; any other exception propagates (a crash)."""
    try:
        return "ok", call.apply(module)
    except errors.FPSError as exc:
        return "error", (exc.code, str(exc), exc.detail, exc.offset)


@settings(max_examples=500)
@given(calls())
@example(Call("slice", (b"\x01\x23", 4, 8, "bit")))
@example(Call("splice", (b"\x01\x23", 12, 0, b"\xff", "bit")))
@example(Call("reverse", (b"\x01\x02\x03", "word")))
@example(Call("concat", ([],)))
def test_differential_small(call: Call) -> None:
    compiled, twin = backend_pair("fps")
    assert outcome(call, compiled) == outcome(call, twin)


@settings(max_examples=25)
@given(st.data())
def test_differential_up_to_64k(data: st.DataObject) -> None:
    compiled, twin = backend_pair("fps")
    source, level, offset, length = data.draw(valid_ranges(64 * 1024))
    insert = data.draw(payloads(4096))
    for call in (
        Call("slice", (source, offset, length, level)),
        Call("splice", (source, offset, length, insert, level)),
        Call("reverse", (source[: len(source) - len(source) % 4], level)),
        Call("concat", ([source, insert, source],)),
    ):
        assert outcome(call, compiled) == outcome(call, twin), call.op


@pytest.mark.parametrize("phase", range(8))
def test_differential_across_nogil_threshold(phase: int) -> None:
    compiled, twin = backend_pair("fps")
    source = random.Random(phase).randbytes(65536 + 7)
    insert = random.Random(-phase).randbytes(65536 + 3)
    bits = len(source) * 8
    for call in (
        Call("slice", (source, phase, (bits - phase) // 8 * 8 - 8, "bit")),
        Call("splice", (source, phase, 8 * 1000, insert, "bit")),
        Call("reverse", (source, "bit")),
        Call("reverse", (source[:-3], "long")),
        Call("reverse", (source[:-1], "word")),
    ):
        assert outcome(call, compiled) == outcome(call, twin), call


@SMALL
@given(whole_units())
def test_reverse_is_an_involution(fps_impl: ModuleType, case: tuple[bytes, str]) -> None:
    data, level = case
    assert fps_impl.reverse(fps_impl.reverse(data, level), level) == data


@SMALL
@given(payloads(), st.sampled_from(["bit", "byte", "word", "long"]), st.data())
def test_concat_of_two_slices_is_identity(fps_impl: ModuleType, data: bytes, level: str,
                                          draw: st.DataObject) -> None:
    bits = UNIT_BITS[level]
    data = data[: len(data) - len(data) % max(bits // 8, 1)]
    units = len(data) * 8 // bits
    step = 8 // bits if bits < 8 else 1
    k = draw.draw(st.integers(0, units // step)) * step
    head = fps_impl.slice(data, 0, k, level)
    tail = fps_impl.slice(data, k, units - k, level)
    assert fps_impl.concat([head, tail]) == data


@SMALL
@given(valid_ranges())
def test_splice_back_the_slice_is_identity(fps_impl: ModuleType,
                                           case: tuple[bytes, str, int, int]) -> None:
    data, level, offset, length = case
    piece = fps_impl.slice(data, offset, length, level)
    assert fps_impl.splice(data, offset, length, piece, level) == data


@SMALL
@given(valid_ranges(), payloads(64))
def test_slice_of_a_splice_is_the_insert(fps_impl: ModuleType,
                                         case: tuple[bytes, str, int, int],
                                         insert: bytes) -> None:
    data, level, offset, length = case
    spliced = fps_impl.splice(data, offset, length, insert, level)
    assert len(spliced) == len(data) - length * UNIT_BITS[level] // 8 + len(insert)
    # the insert starts at bit offset*unit_bits whatever the level
    start = offset * UNIT_BITS[level]
    assert fps_impl.slice(spliced, start, len(insert) * 8, "bit") == insert


@SMALL
@given(valid_ranges())
def test_out_matches_the_returned_bytes(fps_impl: ModuleType,
                                        case: tuple[bytes, str, int, int]) -> None:
    data, level, offset, length = case
    expected = fps_impl.slice(data, offset, length, level)
    out = bytearray(len(expected))
    assert fps_impl.slice(data, offset, length, level, out=out) == len(expected)
    assert out == expected


EXOTIC_BUFFERS = {
    "numpy-0d": lambda: np.array(5, dtype=np.uint8),
    "numpy-0d-u4": lambda: np.array(7, dtype=">u4"),
    "numpy-2d": lambda: np.arange(6, dtype=np.uint8).reshape(2, 3),
    "numpy-fortran": lambda: np.asfortranarray(np.arange(6, dtype=np.uint8).reshape(2, 3)),
    "numpy-strided": lambda: np.arange(8, dtype=np.uint8)[::2],
    "numpy-bool": lambda: np.array([True, False]),
    "numpy-readonly": lambda: np.frombuffer(b"abcd", dtype=np.uint8),
    "array-double": lambda: array.array("d", [1.5]),
    "empty-memoryview": lambda: memoryview(b""),
}


@pytest.mark.parametrize("make", EXOTIC_BUFFERS.values(), ids=EXOTIC_BUFFERS.keys())
def test_differential_on_exotic_buffers(make: Any) -> None:
    compiled, twin = backend_pair("fps")
    for call in (
        Call("reverse", (make(), "bit")),
        Call("slice", (make(), 1, 0, "bit")),
        Call("splice", (b"\x01\x02", 1, 1, make())),
        Call("concat", ([make(), b"x"],)),
        Call("cid_sha256", (make(),)),
        Call("reverse", (b"abcd", "byte"), {"out": make()}),
    ):
        assert outcome(call, compiled) == outcome(call, twin), call


# --- in-place reversal (out is the input): the compiled kernel swaps from both ends ---

@settings(max_examples=300)
@given(st.sampled_from(sorted(UNIT_BITS)), st.integers(0, 300), st.randoms(use_true_random=False),
       st.sampled_from(["bytearray", "memoryview", "numpy"]))
@example("bit", 1, random.Random(0), "bytearray")       # one byte: only its bits move
@example("word", 2, random.Random(0), "bytearray")      # one unit: nothing moves
@example("long", 12, random.Random(0), "memoryview")    # an odd number of units
@example("bit", 33, random.Random(0), "numpy")          # one vector pair plus a middle byte
def test_in_place_reverse_matches_twin(level: str, units: int, rnd: random.Random,
                                       kind: str) -> None:
    compiled, twin = backend_pair("fps")
    size = units * max(UNIT_BITS[level] // 8, 1)
    data = rnd.randbytes(size)
    buf = bytearray(data)
    target: Any = {"bytearray": buf, "memoryview": memoryview(buf),
                   "numpy": np.frombuffer(buf, dtype=np.uint8)}[kind]
    assert compiled.reverse(target, level, out=target) == size
    assert bytes(buf) == twin.reverse(data, level) == compiled.reverse(data, level)
    twin_buf = bytearray(data)
    twin.reverse(twin_buf, level, out=twin_buf)
    assert twin_buf == buf


@pytest.mark.parametrize("level", sorted(UNIT_BITS))
def test_in_place_reverse_every_size_to_300_bytes(level: str) -> None:
    compiled, twin = backend_pair("fps")
    unit = max(UNIT_BITS[level] // 8, 1)
    rnd = random.Random(level)
    for size in range(0, 301, unit):
        data = rnd.randbytes(size)
        buf = bytearray(data)
        compiled.reverse(buf, level, out=buf)
        assert bytes(buf) == twin.reverse(data, level), size
        out = bytearray(size)
        compiled.reverse(data, level, out=out)  # out of place, same bytes
        assert out == buf


@pytest.mark.parametrize("level", sorted(UNIT_BITS))
def test_in_place_reverse_across_nogil_threshold(level: str) -> None:
    compiled, twin = backend_pair("fps")
    data = random.Random(3).randbytes(64 * 1024 + 12)
    buf = bytearray(data)
    compiled.reverse(buf, level, out=buf)
    assert bytes(buf) == twin.reverse(data, level)


@pytest.mark.parametrize("level", sorted(UNIT_BITS))
def test_partly_overlapping_out_still_correct(level: str) -> None:
    """An out that overlaps the input without being it takes the scratch path."""
    compiled, twin = backend_pair("fps")
    data = random.Random(4).randbytes(4096 + 64)
    for shift in (4, 8, 60):
        backing = bytearray(data)
        view = memoryview(backing)
        src, dst = view[:4096], view[shift:shift + 4096]
        expected = twin.reverse(bytes(src), level)
        compiled.reverse(src, level, out=dst)
        assert bytes(dst) == expected
