"""Several-MiB inputs at every bit phase, compiled backend, against numpy's
unpackbits/packbits (an independent MSB-first bit reference) and the twin on windows."""
from __future__ import annotations

import random
from types import ModuleType

import numpy as np
import pytest
from conftest import backend_module

SIZE = 3 * 1024 * 1024 + 5  # several MiB, not a multiple of 8 (exercises kernel tails)


@pytest.fixture(scope="module")
def compiled() -> ModuleType:
    return backend_module("fps", "c")


@pytest.fixture(scope="module")
def payload() -> bytes:
    return random.Random(4).randbytes(SIZE)


@pytest.fixture(scope="module")
def bits(payload: bytes) -> np.ndarray:
    return np.unpackbits(np.frombuffer(payload, dtype=np.uint8))


@pytest.mark.parametrize("phase", range(8))
def test_large_bit_slice_every_phase(compiled: ModuleType, payload: bytes, bits: np.ndarray,
                                     phase: int) -> None:
    length = (len(bits) - phase) // 8 * 8 - 8 * (phase % 2)
    expected = np.packbits(bits[phase:phase + length]).tobytes()
    assert compiled.slice(payload, phase, length, "bit") == expected
    out = np.zeros(length // 8, dtype=np.uint8)
    assert compiled.slice(payload, phase, length, "bit", out=out) == length // 8
    assert out.tobytes() == expected


@pytest.mark.parametrize("phase", range(8))
def test_large_bit_splice_every_phase(compiled: ModuleType, payload: bytes, bits: np.ndarray,
                                      phase: int) -> None:
    insert = random.Random(phase).randbytes(100_003)
    offset, cut = 8 * 777_777 + phase, 8 * 12_345
    expected = np.packbits(np.concatenate([
        bits[:offset],
        np.unpackbits(np.frombuffer(insert, dtype=np.uint8)),
        bits[offset + cut:],
    ])).tobytes()
    assert compiled.splice(payload, offset, cut, insert, "bit") == expected


def test_large_full_bit_reversal(compiled: ModuleType, payload: bytes, bits: np.ndarray) -> None:
    expected = np.packbits(bits[::-1]).tobytes()
    assert compiled.reverse(payload, "bit") == expected


@pytest.mark.parametrize(("level", "dtype"), [("byte", "u1"), ("word", "V2"), ("long", "V4")])
def test_large_unit_reversal(compiled: ModuleType, payload: bytes, level: str,
                             dtype: str) -> None:
    size = np.dtype(dtype).itemsize
    data = payload[: len(payload) - len(payload) % size]
    expected = np.frombuffer(data, dtype=dtype)[::-1].tobytes()
    assert compiled.reverse(data, level) == expected
    assert compiled.reverse(np.frombuffer(data, dtype=np.uint8), level) == expected


def test_large_in_place_reversal_through_out(compiled: ModuleType, payload: bytes) -> None:
    buffer = bytearray(payload)
    assert compiled.reverse(buffer, "bit", out=buffer) == len(payload)
    assert compiled.reverse(buffer, "bit") == payload


def test_large_windows_match_twin(compiled: ModuleType, payload: bytes) -> None:
    twin = backend_module("fps", "py")
    rng = random.Random(9)
    for _ in range(16):
        offset = rng.randrange(len(payload) * 8 - 80_000)
        length = rng.randrange(0, 70_000) // 8 * 8
        assert compiled.slice(payload, offset, length, "bit") == \
            twin.slice(payload, offset, length, "bit")
    assert compiled.cid_sha256(payload) == twin.cid_sha256(payload)
