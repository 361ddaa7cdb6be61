"""The store's byte formats (STORE.md §2, §6) on both backends: round trips, the fixed
details, and differential tests — the compiled kernel and the twin return the same
bytes or raise the same finding code at the same offset, on valid and damaged input."""
from __future__ import annotations

import zlib
from types import ModuleType
from typing import Any

import pytest
from blake3 import blake3
from conftest import backend_pair
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from strategies_store import (
    build_pack,
    build_pack_on_disk,
    loose_file,
    mutated,
    object_bytes,
    object_sets,
)

from canonkit.errors import CorruptObjectError, SchemaViolationError
from canonkit.store import deflate
from canonkit.store.deflate import inflate

SETTINGS = settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])


def outcome(fn: Any, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
    """("ok", value) or ("err", class, finding code, offset)."""
    try:
        value = fn(*args, **kwargs)
    except CorruptObjectError as exc:
        return ("err", "CorruptObjectError", exc.detail, exc.offset)
    except (ValueError, IndexError, SchemaViolationError) as exc:
        return ("err", type(exc).__name__)
    if isinstance(value, memoryview):
        value = bytes(value)
    return ("ok", value)


# -- round trips ---------------------------------------------------------------------

@SETTINGS
@given(object_sets())
def test_pack_round_trip_on_both_backends(items: list[tuple[bytes, bool]]) -> None:
    pack_bytes, idx_bytes, offsets = build_pack(items)
    for kernel in backend_pair("store"):
        pack, index = kernel.Pack(pack_bytes), kernel.Index(idx_bytes)
        assert pack.count == index.count == len(items)
        assert index.pack_trailer == pack.trailer == blake3(pack_bytes[:-32]).digest()
        assert index.check() == []
        scanned, problem = pack.scan()
        assert problem is None and sorted(scanned) == sorted(offsets.values())
        digests = b"".join(blake3(d).digest() for d, _ in items)
        assert index.lookup_many(digests) == [offsets[blake3(d).digest()] for d, _ in items]
        out: list[Any] = [None] * len(items)
        assert pack.read_many(index, digests, out, True, inflate) == len(items)
        assert out == [d for d, _ in items]
        for data, deflated in items:
            digest = blake3(data).digest()
            offset = index.lookup(digest)
            assert pack.frame(offset)[0] == (1 if deflated else 0)
            assert pack.entry(offset, digest, inflate) == data
            view = pack.entry(offset, digest, inflate, copy=False)
            assert bytes(view) == data
            assert isinstance(view, memoryview) != deflated
        assert index.lookup(b"\xff" * 32) == -1 or b"\xff" * 32 in offsets
        pack.release()
        index.release()


@settings(max_examples=40)
@given(object_sets())
def test_streaming_writer_and_in_memory_encoder_agree(items: list[tuple[bytes, bool]]) -> None:
    pack, index, _ = build_pack(items)
    assert build_pack_on_disk(items) == (pack, index)


@SETTINGS
@given(object_bytes(3000), st.booleans())
def test_loose_round_trip_on_both_backends(data: bytes, deflated: bool) -> None:
    content = loose_file(data, deflated)
    assert content[:4] == b"CKL1" and content[4] == deflated
    assert int.from_bytes(content[5:13], "big") == len(data)
    if deflated:
        assert zlib.decompress(content[13:]) == data  # any zlib reads it
    for kernel in backend_pair("store"):
        assert kernel.read_loose(content, blake3(data).digest(), inflate) == data
        assert kernel.read_loose(content, None, inflate) == data


def test_fixed_details_of_the_index() -> None:
    """Fan-out entry b counts digests whose first byte is <= b; offsets are absolute
    positions of the entries' form bytes; counts agree."""
    items = [(bytes([i]) * 10, i % 2 == 0) for i in range(40)]
    pack_bytes, idx_bytes, offsets = build_pack(items)
    count = int.from_bytes(idx_bytes[8:16], "big")
    assert count == len(items) == int.from_bytes(pack_bytes[8:16], "big")
    digests = sorted(blake3(d).digest() for d, _ in items)
    for b in range(256):
        fan = int.from_bytes(idx_bytes[16 + 8 * b:24 + 8 * b], "big")
        assert fan == sum(1 for d in digests if d[0] <= b)
    for digest, offset in offsets.items():
        assert pack_bytes[offset] in (0, 1)
    assert idx_bytes[-64:-32] == pack_bytes[-32:]
    assert idx_bytes[-32:] == blake3(idx_bytes[:-32]).digest()
    assert len(idx_bytes) == 16 + 2048 + 40 * count + 64


# -- DEFLATE strictness --------------------------------------------------------------

@pytest.mark.parametrize("implementation", ["zlib", "isal", "zlib-ng"])
def test_inflate_is_strict_with_every_implementation(implementation: str) -> None:
    module, _ = deflate.load(implementation)
    data = b"abc" * 200
    stream = zlib.compress(data)
    assert inflate(stream, len(data), 0, module=module) == data
    cases = {
        "trailing_bytes": (stream + b"\x00", len(data)),
        "deflate_invalid": (stream[:-5], len(data)),
        "length_mismatch": (stream, len(data) - 1),
    }
    preset = zlib.compressobj(zdict=b"abc")
    cases["deflate_invalid "] = (preset.compress(data) + preset.flush(), len(data))
    cases["length_mismatch "] = (stream, len(data) + 1)
    cases["deflate_invalid  "] = (b"\x78", len(data))
    cases["deflate_invalid   "] = (b"\x00\x00" + stream[2:], len(data))
    for code, (payload, logical) in cases.items():
        with pytest.raises(CorruptObjectError) as info:
            inflate(payload, logical, 100, module=module)
        assert info.value.detail == code.strip()
        assert info.value.offset is not None and info.value.offset >= 100


def test_inflate_never_allocates_past_the_declared_length() -> None:
    bomb = zlib.compress(bytes(50 << 20))  # 50 MiB of zeros in ~50 KiB
    with pytest.raises(CorruptObjectError) as info:
        inflate(bomb, 10)
    assert info.value.detail == "length_mismatch"


# -- differential --------------------------------------------------------------------

@SETTINGS
@given(st.data(), object_bytes(), st.booleans())
@example(None, b"", False)  # type: ignore[arg-type]
def test_read_loose_differential(data: Any, content: bytes, deflated: bool) -> None:
    c, py = backend_pair("store")
    valid = loose_file(content, deflated)
    damaged = valid if data is None else data.draw(mutated(valid))
    digest = blake3(content).digest()
    for want in (digest, None):
        assert outcome(c.read_loose, damaged, want, inflate) == outcome(
            py.read_loose, damaged, want, inflate)


def test_a_huge_declared_length_is_a_mismatch_not_a_crash(store_impl: ModuleType) -> None:
    """A DEFLATE file declaring 2^63 bytes: the bound on inflating is the stream itself."""
    content = b"CKL1\x01\x80" + bytes(7) + zlib.compress(b"")
    with pytest.raises(CorruptObjectError) as info:
        store_impl.read_loose(content, None, inflate)
    assert info.value.detail == "length_mismatch"


@SETTINGS
@given(st.data(), object_sets(max_objects=6))
def test_pack_and_index_differential(data: Any, items: list[tuple[bytes, bool]]) -> None:
    c, py = backend_pair("store")
    pack_bytes, idx_bytes, offsets = build_pack(items)
    pack_bytes = data.draw(mutated(pack_bytes))
    idx_bytes = data.draw(mutated(idx_bytes))
    extra = data.draw(st.integers(0, len(pack_bytes) + 9))
    results = []
    for kernel in (c, py):
        got: list[Any] = [outcome(kernel.Pack, pack_bytes)[:1] + outcome(kernel.Pack, pack_bytes)[2:],
                          outcome(kernel.Index, idx_bytes)[:1] + outcome(kernel.Index, idx_bytes)[2:]]
        try:
            pack = kernel.Pack(pack_bytes)
        except CorruptObjectError:
            pack = None
        try:
            index = kernel.Index(idx_bytes)
        except CorruptObjectError:
            index = None
        probes = [blake3(d).digest() for d, _ in items] + [b"\x00" * 32, b"\xff" * 32]
        if index is not None:
            got += [index.count, index.pack_trailer, index.check(),
                    [outcome(index.lookup, d) for d in probes],
                    outcome(index.lookup_many, b"".join(probes))]
        if pack is not None:
            got += [pack.count, pack.trailer, outcome(pack.scan)]
            for offset in [*offsets.values(), 0, 15, 16, 17, len(pack_bytes) - 33,
                           len(pack_bytes), extra]:
                for digest in probes[:2] + [None]:
                    got.append(outcome(pack.entry, offset, digest, inflate))
            if index is not None:
                for verify in (True, False):
                    out: list[Any] = [None] * len(probes)
                    got.append(outcome(pack.read_many, index, b"".join(probes), out, verify,
                                       inflate))
                    got.append(out)
            offs = sorted(offsets.values()) + [extra]
            checked = pack.check_entries(offs, b"".join(probes[0] for _ in offs), inflate)
            got.append([(type(r).__name__, r.detail, r.offset)
                        if isinstance(r, CorruptObjectError) else r for r in checked])
        results.append(got)
    assert results[0] == results[1]


@SETTINGS
@given(st.lists(st.one_of(
    st.builds(lambda d: "blake3:" + d.hex(), st.binary(min_size=32, max_size=32)),
    st.text(max_size=80),
    st.builds(lambda s: "blake3:" + s, st.text(alphabet="0123456789abcdefABCDEF", min_size=64,
                                                 max_size=64))), max_size=5))
def test_parse_addresses_differential(addresses: list[str]) -> None:
    c, py = backend_pair("store")
    assert outcome(c.parse_addresses, addresses) == outcome(py.parse_addresses, addresses)


def test_parse_addresses_rejects_like_objects_parse_address(store_impl: ModuleType) -> None:
    good = "blake3:" + "ab" * 32
    assert store_impl.parse_addresses([good, good]) == bytes.fromhex("ab" * 32) * 2
    for bad in ["blake3:" + "AB" * 32, "blake3:" + "ab" * 31, "sha256:" + "ab" * 32, b"x", None,
                "blake3:" + "ab" * 31 + "g0", "blake3:" + "é" * 64]:
        with pytest.raises(SchemaViolationError) as info:
            store_impl.parse_addresses([good, bad])
        assert info.value.detail == "address" and "addresses[1]" in str(info.value)


def test_released_readers_refuse_use(store_impl: ModuleType) -> None:
    pack_bytes, idx_bytes, offsets = build_pack([(b"x", False)])
    pack, index = store_impl.Pack(pack_bytes), store_impl.Index(idx_bytes)
    pack.release()
    index.release()
    with pytest.raises(ValueError):
        index.lookup(blake3(b"x").digest())
    with pytest.raises(ValueError):
        pack.entry(16, None, inflate)


def test_read_many_reports_the_first_corrupt_object_in_order(store_impl: ModuleType) -> None:
    items = [(bytes([i]) * (50 + i), False) for i in range(20)]
    pack_bytes, idx_bytes, offsets = build_pack(items)
    digests = [blake3(d).digest() for d, _ in items]
    damaged = bytearray(pack_bytes)
    for i in (7, 12):  # two corrupt payloads: the earlier one (by request order) is raised
        damaged[offsets[digests[i]] + 20] ^= 1
    pack, index = store_impl.Pack(bytes(damaged)), store_impl.Index(idx_bytes)
    out: list[Any] = [None] * 20
    with pytest.raises(CorruptObjectError) as info:
        pack.read_many(index, b"".join(digests), out, True, inflate)
    assert info.value.detail == "digest_mismatch"
    assert info.value.offset == offsets[digests[7]] + 17
    assert out[:7] == [d for d, _ in items[:7]] and out[7:] == [None] * 13
    checked = pack.check_entries([offsets[d] for d in digests], b"".join(digests), inflate)
    assert [i for i, r in enumerate(checked) if isinstance(r, CorruptObjectError)] == [7, 12]
