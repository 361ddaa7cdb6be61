"""The compiled BLAKE3 of small inputs against its twin (the blake3 package): every
length across the one-chunk boundary, random inputs, every buffer type."""
from __future__ import annotations

import array
import os

from blake3 import blake3
from conftest import backend_pair
from hypothesis import given, settings
from hypothesis import strategies as st


def test_every_length_around_the_chunk_boundary() -> None:
    compiled, twin = backend_pair("blake3")
    data = bytes(i % 251 for i in range(2100))
    for n in range(0, 2100):
        piece = data[:n]
        want = blake3(piece).digest()
        assert compiled.digest(piece) == twin.digest(piece) == want, n
        assert compiled.address(piece) == twin.address(piece) == "blake3:" + want.hex()


def test_buffers_and_batches() -> None:
    compiled, twin = backend_pair("blake3")
    raw = os.urandom(300)
    for buffer in (bytearray(raw), memoryview(raw), array.array("B", raw)):
        assert compiled.address(buffer) == twin.address(raw)
    items = [raw[:n] for n in (0, 1, 64, 65, 1024, 1025, 300)]
    assert compiled.addresses(items) == twin.addresses(items) == [twin.address(x) for x in items]
    assert compiled.PREFIX == twin.PREFIX == "blake3:"


@settings(max_examples=300)
@given(st.binary(max_size=1500))
def test_differential(data: bytes) -> None:
    compiled, twin = backend_pair("blake3")
    assert compiled.address(data) == twin.address(data)
    assert compiled.digest(data) == twin.digest(data)
