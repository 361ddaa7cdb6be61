"""FPS/1 at 64 MiB against bitarray (endian='big'), numpy, a preallocated memcpy and
incremental hashlib (FPS.md §4 anchors).

    python -m pytest bench/test_fps.py --benchmark-json=/tmp/fps.json --benchmark-min-rounds=5
    python bench/report.py /tmp/fps.json

Contenders: ``canonkit-c`` writes into a preallocated ``out=`` buffer (fresh 64 MiB
allocations cost about as much as the work itself: page faults), ``canonkit-c-inplace``
reverses a buffer in place (``out`` is the input, as ``bitarray.reverse()``),
``canonkit-c-alloc`` returns new bytes, ``canonkit-py`` is the twin. Inputs are built
outside the timed call.
"""
from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from backends import backend
from bitarray import bitarray

SIZE = 64 << 20
PHASE = 3  # bits: an unaligned slice/splice
SPLICE_AT = 8 * 1_000_000 + PHASE
SPLICE_CUT = 8 * 4096
PAYLOAD = random.Random(1).randbytes(SIZE)
INSERT = random.Random(2).randbytes(1 << 20)


def _bits(data: bytes) -> bitarray:
    a = bitarray(endian="big")
    a.frombytes(data)
    return a


def run(benchmark: Any, group: str, contender: str, fn: Callable[[], object]) -> None:
    benchmark.group = f"fps:{group}"
    benchmark.extra_info["contender"] = contender
    benchmark.extra_info["bytes"] = SIZE
    benchmark(fn)


def _memcpy_into() -> Callable[[], object]:
    src = np.frombuffer(PAYLOAD, dtype=np.uint8)
    dst = np.empty(SIZE, dtype=np.uint8)
    return lambda: dst.__setitem__(slice(None), src)


# --- unaligned bit slice -------------------------------------------------------------

SLICE_BITS = (SIZE - 1) * 8  # bits [3, 3 + 8(n-1)): every output byte straddles two


@pytest.mark.parametrize("contender", ["canonkit-c", "canonkit-c-alloc", "canonkit-py",
                                       "bitarray", "numpy", "memcpy"])
def test_bit_slice(benchmark: Any, contender: str) -> None:
    if contender == "canonkit-c":
        fps, out = backend("fps", "c"), bytearray(SIZE - 1)
        fn = lambda: fps.slice(PAYLOAD, PHASE, SLICE_BITS, "bit", out=out)
    elif contender == "canonkit-c-alloc":
        fps = backend("fps", "c")
        fn = lambda: fps.slice(PAYLOAD, PHASE, SLICE_BITS, "bit")
    elif contender == "canonkit-py":
        fps = backend("fps", "py")
        fn = lambda: fps.slice(PAYLOAD, PHASE, SLICE_BITS, "bit")
    elif contender == "bitarray":
        a = _bits(PAYLOAD)
        fn = lambda: a[PHASE:PHASE + SLICE_BITS]
    elif contender == "numpy":
        arr = np.frombuffer(PAYLOAD, dtype=np.uint8)
        fn = lambda: np.packbits(np.unpackbits(arr)[PHASE:PHASE + SLICE_BITS])
    else:
        fn = _memcpy_into()
    run(benchmark, "bit-slice-unaligned-64MiB", contender, fn)


# --- full bit reversal ---------------------------------------------------------------

@pytest.mark.parametrize("contender", ["canonkit-c", "canonkit-c-inplace", "canonkit-c-alloc",
                                       "canonkit-py", "bitarray", "numpy+bitarray"])
def test_bit_reverse(benchmark: Any, contender: str) -> None:
    if contender == "canonkit-c":
        fps, out = backend("fps", "c"), bytearray(SIZE)
        fn = lambda: fps.reverse(PAYLOAD, "bit", out=out)
    elif contender == "canonkit-c-inplace":  # out is the input, as bitarray.reverse()
        fps, buf = backend("fps", "c"), bytearray(PAYLOAD)
        fn = lambda: fps.reverse(buf, "bit", out=buf)
    elif contender in ("canonkit-c-alloc", "canonkit-py"):
        fps = backend("fps", "c" if contender == "canonkit-c-alloc" else "py")
        fn = lambda: fps.reverse(PAYLOAD, "bit")
    elif contender == "bitarray":
        a = _bits(PAYLOAD)
        fn = a.reverse  # in place: no allocation at all
    else:  # numpy byte reverse into a bitarray's buffer, then bytereverse() in place
        a = _bits(PAYLOAD)
        view = np.frombuffer(a, dtype=np.uint8)  # writable view of a's buffer
        src = np.frombuffer(PAYLOAD, dtype=np.uint8)

        def fn() -> None:
            np.copyto(view, src[::-1])
            a.bytereverse()
    run(benchmark, "bit-reverse-64MiB", contender, fn)


# --- word / long reversal ------------------------------------------------------------

@pytest.mark.parametrize("level", ["word", "long"])
@pytest.mark.parametrize("contender", ["canonkit-c", "canonkit-c-inplace", "canonkit-c-alloc",
                                       "numpy", "numpy-into", "numpy-inplace", "memcpy"])
def test_unit_reverse(benchmark: Any, level: str, contender: str) -> None:
    dtype = ">u2" if level == "word" else ">u4"
    if contender == "canonkit-c":
        fps, out = backend("fps", "c"), bytearray(SIZE)
        fn = lambda: fps.reverse(PAYLOAD, level, out=out)
    elif contender == "canonkit-c-inplace":
        fps, buf = backend("fps", "c"), bytearray(PAYLOAD)
        fn = lambda: fps.reverse(buf, level, out=buf)
    elif contender == "numpy-inplace":  # numpy's in-place reversal: a copy of the reversed view
        arr = np.frombuffer(bytearray(PAYLOAD), dtype)
        fn = lambda: np.copyto(arr, arr[::-1].copy())
    elif contender == "canonkit-c-alloc":
        fps = backend("fps", "c")
        fn = lambda: fps.reverse(PAYLOAD, level)
    elif contender == "numpy":  # FPS.md's anchor: frombuffer(...)[::-1] copy
        fn = lambda: np.frombuffer(PAYLOAD, dtype)[::-1].copy()
    elif contender == "numpy-into":
        src = np.frombuffer(PAYLOAD, dtype)
        dst = np.empty_like(src)
        fn = lambda: np.copyto(dst, src[::-1])
    else:
        fn = _memcpy_into()
    run(benchmark, f"{level}-reverse-64MiB", contender, fn)


# --- bit-level splice ----------------------------------------------------------------

SPLICE_OUT = SIZE - SPLICE_CUT // 8 + len(INSERT)


@pytest.mark.parametrize("contender", ["canonkit-c", "canonkit-c-alloc", "canonkit-py",
                                       "bitarray", "bitarray-concat"])
def test_bit_splice(benchmark: Any, contender: str) -> None:
    if contender == "canonkit-c":
        fps, out = backend("fps", "c"), bytearray(SPLICE_OUT)
        fn = lambda: fps.splice(PAYLOAD, SPLICE_AT, SPLICE_CUT, INSERT, "bit",
                                out=out)
    elif contender in ("canonkit-c-alloc", "canonkit-py"):
        fps = backend("fps", "c" if contender == "canonkit-c-alloc" else "py")
        fn = lambda: fps.splice(PAYLOAD, SPLICE_AT, SPLICE_CUT, INSERT, "bit")
    elif contender == "bitarray":  # copy, then a resizing slice assignment
        a, ins = _bits(PAYLOAD), _bits(INSERT)

        def fn() -> bitarray:
            c = a.copy()
            c[SPLICE_AT:SPLICE_AT + SPLICE_CUT] = ins
            return c
    else:
        a, ins = _bits(PAYLOAD), _bits(INSERT)
        fn = lambda: a[:SPLICE_AT] + ins + a[SPLICE_AT + SPLICE_CUT:]
    run(benchmark, "bit-splice-64MiB", contender, fn)


# --- content ID ----------------------------------------------------------------------

@pytest.mark.parametrize("contender", ["canonkit-c", "canonkit-py", "hashlib"])
def test_cid_sha256(benchmark: Any, contender: str) -> None:
    if contender == "hashlib":
        def fn() -> str:
            digest = hashlib.sha256(b"CAS:OBJ\x00")
            digest.update(PAYLOAD)
            return digest.hexdigest()
    else:
        fps = backend("fps", "c" if contender == "canonkit-c" else "py")
        fn = lambda: fps.cid_sha256(PAYLOAD)
    run(benchmark, "cid-sha256-64MiB", contender, fn)
