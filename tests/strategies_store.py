"""Hypothesis strategies for the store's byte formats: object sets, their forms, and
mutations of valid files (flipped bytes, truncations, extensions)."""
from __future__ import annotations

import os
import random
import tempfile
from pathlib import Path

from blake3 import blake3
from hypothesis import strategies as st

from canonkit.store import deflate, loose
from canonkit.store.packwriter import PackWriter, encode_pack


def object_bytes(max_size: int = 600) -> st.SearchStrategy[bytes]:
    """Object contents: small random bytes, or compressible text of a seeded size."""
    text = st.builds(lambda n, seed: (f"{seed} text " * (n // 8 + 1)).encode()[:n],
                     st.integers(0, max_size), st.integers(0, 99))
    return st.one_of(st.binary(max_size=min(64, max_size)), text,
                     st.builds(lambda n, seed: random.Random(seed).randbytes(n),
                               st.integers(0, max_size), st.integers(0, 2**16)))


@st.composite
def object_sets(draw: st.DrawFn, max_objects: int = 12) -> list[tuple[bytes, bool]]:
    """Distinct objects, each with a flag: stored DEFLATE or raw."""
    items = draw(st.lists(object_bytes(), min_size=0, max_size=max_objects,
                          unique_by=lambda b: b))
    return [(data, draw(st.booleans())) for data in items]


def build_pack(items: list[tuple[bytes, bool]]) -> tuple[bytes, bytes, dict[bytes, int]]:
    """``(pack bytes, idx bytes, {digest: offset})`` of the objects, in digest order, as
    the store's writer lays them out (compared with PackWriter's files below)."""
    entries = []
    for data, deflated in sorted(items, key=lambda i: blake3(i[0]).digest()):
        payload = deflate.compress(data) if deflated else data
        entries.append((blake3(data).digest(), deflated, payload, len(data)))
    pack, index = encode_pack(entries)
    offsets, at = {}, 16
    for digest, _, payload, _ in entries:
        offsets[digest] = at
        at += 17 + len(payload)
    return pack, index, offsets


def build_pack_on_disk(items: list[tuple[bytes, bool]]) -> tuple[bytes, bytes]:
    """The same objects through the store's streaming ``PackWriter``."""
    with tempfile.TemporaryDirectory() as base:
        os.mkdir(f"{base}/tmp")
        writer = PackWriter(base, durable=False)
        for data, deflated in sorted(items, key=lambda i: blake3(i[0]).digest()):
            payload = deflate.compress(data) if deflated else data
            writer.add(blake3(data).digest(), deflated, payload, len(data))
        writer.finish()
        return Path(writer.pack_tmp).read_bytes(), Path(writer.idx_tmp).read_bytes()


def loose_file(data: bytes, deflated: bool) -> bytes:
    return loose.encode(data, deflated)


@st.composite
def mutated(draw: st.DrawFn, data: bytes) -> bytes:
    """``data`` with one mutation: a flipped byte, a truncation, or appended bytes."""
    what = draw(st.sampled_from(["flip", "truncate", "extend", "same"]))
    if what == "flip" and data:
        i = draw(st.integers(0, len(data) - 1))
        bit = 1 << draw(st.integers(0, 7))
        return data[:i] + bytes((data[i] ^ bit,)) + data[i + 1:]
    if what == "truncate":
        return data[:draw(st.integers(0, len(data)))]
    if what == "extend":
        return data + draw(st.binary(min_size=1, max_size=40))
    return data
