"""The compiled batch readers (``Pack.check_entries_summary`` for fsck, ``Pack.read_many``
for ``get_many``) inflate and hash the small entries of a batch on two threads (BLAKE3 in
portable C, ``store_blake3.h``) and take the rest one by one; the twin reads every entry
one by one. Both give the same answers on packs larger than one batch (more than 1024
entries; more than 8 MiB of DEFLATE output), damaged anywhere or not: the same leaves,
counts, values and errors (code and offset). The portable BLAKE3 gives the blake3
package's digest on every length around its block, chunk and tree boundaries."""
from __future__ import annotations

from functools import cache
from typing import Any

from blake3 import blake3
from conftest import backend_pair
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from strategies_store import build_pack

import pytest

from canonkit.errors import CorruptObjectError
from canonkit.store.deflate import inflate
from canonkit.store.fsck_units import _inflate as fsck_inflate

BOUNDARIES = sorted({n + d for n in (0, 64, 1024, 2048, 3072, 4096, 8192, 16384, 1 << 20)
                     for d in (-1, 0, 1) if n + d >= 0} | {5 * 1024 + 17, 33 * 1024})

SETTINGS = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


@cache
def many_small() -> tuple[bytes, bytes, dict[bytes, int]]:
    """1100 objects, most DEFLATE, some raw, some starting with a CBOR map head."""
    items = [((b"\xa1" if i % 7 == 0 else b"\x00") + i.to_bytes(4, "big") * (20 + i % 50),
              i % 5 != 0) for i in range(1100)]
    return build_pack(items)


@cache
def few_large() -> tuple[bytes, bytes, dict[bytes, int]]:
    """Twelve DEFLATE objects of 1 MiB (a batch holds at most 8 MiB) and small ones."""
    items = [(bytes([i]) * (1 << 20), True) for i in range(12)]
    items += [(b"small " * (i + 1), True) for i in range(6)]
    return build_pack(items)


PACKS = {"many small": many_small, "few large": few_large}


def damage(pack: bytes, spots: list[tuple[int, int]]) -> bytes:
    out = bytearray(pack)
    for at, bit in spots:
        out[at % (len(out) - 32)] ^= 1 << bit  # inside the entries (the trailer is not read)
    return bytes(out)


def plain(value: Any) -> Any:
    if isinstance(value, CorruptObjectError):
        return ("err", value.detail, value.offset)
    return ("bytes", bytes(value))


def summary(kernel: Any, pack_bytes: bytes, offsets: list[int], digests: bytes,
            copy: bool) -> Any:
    pack = kernel.Pack(pack_bytes)
    rest: list[Any] = []
    try:
        leaves, leaf_bytes, deflated, deflated_bytes, rest = pack.check_entries_summary(
            offsets, digests, fsck_inflate, copy)
        return leaves, leaf_bytes, deflated, deflated_bytes, [(i, plain(v)) for i, v in rest]
    finally:
        del rest
        pack.release()


def read_many(kernel: Any, pack_bytes: bytes, idx_bytes: bytes, digests: bytes,
              verify: bool, copy: bool) -> Any:
    pack, index = kernel.Pack(pack_bytes), kernel.Index(idx_bytes)
    out: list[Any] = [None] * (len(digests) // 32)
    try:
        filled = pack.read_many(index, digests, out, verify, inflate, copy)
        return filled, [None if v is None else (type(v).__name__, bytes(v)) for v in out]
    except CorruptObjectError as exc:
        return ("raised", exc.detail, exc.offset)
    finally:
        pack.release()
        index.release()


@SETTINGS
@given(st.sampled_from(sorted(PACKS)),
       st.lists(st.tuples(st.integers(16, 1 << 24), st.integers(0, 7)), max_size=3),
       st.booleans())
@example("many small", [], False)
@example("few large", [], True)
def test_fsck_batches_agree_with_the_twin(which: str, spots: list[tuple[int, int]],
                                          copy: bool) -> None:
    pack_bytes, _, offsets = PACKS[which]()
    order = sorted(offsets, key=offsets.__getitem__)
    listed = [offsets[d] for d in order]
    damaged = damage(pack_bytes, spots)
    c, py = backend_pair("store")
    got = summary(c, damaged, listed, b"".join(order), copy)
    assert got == summary(py, damaged, listed, b"".join(order), copy)
    if not spots:
        assert len(got[0]) // 32 + len(got[4]) == len(order) and got[2] > 0


@SETTINGS
@given(st.sampled_from(sorted(PACKS)),
       st.lists(st.tuples(st.integers(16, 1 << 24), st.integers(0, 7)), max_size=2),
       st.booleans(), st.booleans(), st.randoms(use_true_random=False))
@example("few large", [], True, True, None)
@example("many small", [], True, False, None)
def test_get_many_batches_agree_with_the_twin(which: str, spots: list[tuple[int, int]],
                                              verify: bool, copy: bool, rng: Any) -> None:
    pack_bytes, idx_bytes, offsets = PACKS[which]()
    wanted = sorted(offsets)
    if rng is not None:
        rng.shuffle(wanted)
        wanted += [blake3(b"not stored").digest()] + wanted[:3]  # a miss, repeats
    damaged = damage(pack_bytes, spots)
    c, py = backend_pair("store")
    got = read_many(c, damaged, idx_bytes, b"".join(wanted), verify, copy)
    assert got == read_many(py, damaged, idx_bytes, b"".join(wanted), verify, copy)
    if not spots and rng is None:
        assert got[0] == len(wanted)


def _portable() -> Any:
    c, _ = backend_pair("store")
    if not hasattr(c, "_portable_blake3"):
        pytest.skip("the compiled store readers are not built")
    return c._portable_blake3


@pytest.mark.parametrize("n", BOUNDARIES)
def test_the_portable_blake3_at_every_boundary(n: int) -> None:
    data = bytes((i * 131 + n) & 0xFF for i in range(n))
    assert _portable()(data) == blake3(data).digest()


@settings(max_examples=300)
@given(st.binary(max_size=9000))
def test_the_portable_blake3_on_any_bytes(data: bytes) -> None:
    assert _portable()(data) == blake3(data).digest()
