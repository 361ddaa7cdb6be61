"""The compiled CAR kernel against its twin (the oracle): SHA-256 in C against hashlib on
both compression functions, the section scanner and the index entry checker on generated
files (valid, broken and arbitrary bytes), fed in buffers of any size — the same problem
tuples, statistics, recorded offsets and flags."""
from __future__ import annotations

import functools
import hashlib
import io
import os
from array import array
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from conftest import backend_module
from hypothesis import example, given, settings
from hypothesis import strategies as st
from strategies_car import car_payloads, index_entries

from canonkit import _backend, cbor
from canonkit.car.verifier import walk

REQUIRED = os.environ.get("CANONKIT_REQUIRE_EXTENSIONS") == "1"
TWIN = backend_module("car", "py")


def compiled() -> ModuleType:
    """The compiled kernel; skips the test when it is not built."""
    return backend_module("car", "c")


@pytest.mark.skipif(not REQUIRED, reason="CANONKIT_REQUIRE_EXTENSIONS is not set")
def test_the_compiled_kernel_is_built_and_live() -> None:
    import canonkit

    module = compiled()
    assert module.__file__ is not None and not module.__file__.endswith(".py")
    assert canonkit.backend()["car"] == "compiled"
    assert _backend.LIVE["car"] == "compiled"


# --- SHA-256 ---------------------------------------------------------------------------

@pytest.fixture(params=["sha-extensions", "portable"])
def sha_c(request: pytest.FixtureRequest) -> Any:
    module = compiled()
    if request.param == "sha-extensions" and not module._sha256_has_shani():
        pytest.skip("this CPU has no SHA extensions")
    module._set_sha256_portable(request.param == "portable")
    yield module
    module._set_sha256_portable(False)


def test_sha256_at_every_padding_boundary(sha_c: Any) -> None:
    data = bytes(range(256)) * 20
    for n in list(range(300)) + [1000, 4095, 4096, 4097, len(data)]:
        assert sha_c.sha256(data[:n]) == hashlib.sha256(data[:n]).digest(), n


def test_sha256_of_large_and_unaligned_inputs(sha_c: Any) -> None:
    big = os.urandom(3 << 20)
    assert sha_c.sha256(big) == hashlib.sha256(big).digest()
    view = memoryview(big)[3:100_003]
    assert sha_c.sha256(view) == hashlib.sha256(view).digest()


@given(st.binary(max_size=5000))
@settings(max_examples=300)
def test_sha256_matches_hashlib(data: bytes) -> None:
    module = compiled()
    for portable in (False, True):
        module._set_sha256_portable(portable)
        try:
            assert module.sha256(data) == hashlib.sha256(data).digest()
        finally:
            module._set_sha256_portable(False)
    assert TWIN.sha256(data) == hashlib.sha256(data).digest()


# --- the scanner -----------------------------------------------------------------------

def _scan(kernel: ModuleType, data: bytes, start: int, chunk: int, roots: set[bytes]) -> Any:
    scanner = kernel.Scanner(0, start, len(data), roots=roots, record=True, limit=50,
                             strict=functools.partial(cbor.check, profile="dag-cbor"))
    walk(io.BytesIO(data), scanner, start, len(data), chunk=chunk)
    scanner.finish()
    return (scanner.problems, scanner.counts, scanner.blocks, scanner.block_bytes,
            scanner.verified, scanner.codecs, scanner.hashes, scanner.roots_found,
            list(scanner.offsets), bytes(scanner.flags), bytes(scanner.keys),
            list(scanner.key_ends), scanner.done, scanner.stopped_at, scanner.position)


def _roots(data: bytes) -> set[bytes]:
    return {cbor.Link.for_block(b"root").cid_bytes, data[-36:]}


@given(car_payloads(), st.integers(1, 600))
@settings(max_examples=400)
def test_the_scanner_matches_its_twin(case: tuple[bytes, int], chunk: int) -> None:
    data, start = case
    module = compiled()
    roots = _roots(data)
    twin = _scan(TWIN, data, start, 1 << 20, roots)
    assert _scan(module, data, start, chunk, roots) == twin
    assert _scan(TWIN, data, start, chunk, roots) == twin  # the buffer size is invisible


@given(st.binary(max_size=400), st.integers(1, 64))
@settings(max_examples=300)
@example(b"\xff" * 9 + b"\x01", 3)
@example(b"\x05\x12\x20\x00\x00\x00", 1)
@example(b"\x00\x00\x04\x01\x55\x00\x00", 2)
def test_arbitrary_bytes_scan_alike(data: bytes, chunk: int) -> None:
    module = compiled()
    assert _scan(module, data, 0, chunk, set()) == _scan(TWIN, data, 0, chunk, set())


def test_a_scanner_refuses_a_feed_from_elsewhere() -> None:
    for kernel in (TWIN, compiled()):
        scanner = kernel.Scanner(0, 10, 20)
        with pytest.raises(ValueError, match="stands at 10"):
            scanner.feed(memoryview(bytes(5)), 11)


def test_many_roots_are_looked_up_alike() -> None:
    module = compiled()
    blocks = [cbor.Link.for_block(b"%d" % i, "raw") for i in range(20)]
    from canonkit.car import encode

    data = encode(blocks, [(link, b"%d" % i) for i, link in enumerate(blocks)])
    start = len(encode(blocks, []))
    roots = {link.cid_bytes for link in blocks}
    got = _scan(module, data, start, 64, roots)
    assert got == _scan(TWIN, data, start, 64, roots) and got[7] == roots


# --- the entry checker -----------------------------------------------------------------

def _walked(data: bytes, start: int) -> Any:
    """The twin's scanner after the walk: what the entry checker is given."""
    scanner = TWIN.Scanner(0, start, len(data), record=True)
    walk(io.BytesIO(data), scanner, start, len(data))
    return scanner


def _digests(scanner: Any) -> list[bytes]:
    from canonkit.car.format import read_varint

    out, start = [], 0
    for end in scanner.key_ends:
        multihash = bytes(scanner.keys[start:end])
        _, p = read_varint(multihash, 0, len(multihash))
        _, p = read_varint(multihash, p, len(multihash))
        out.append(multihash[p:])
        start = end
    return out


def _check(kernel: ModuleType, path: Path, data_end: int, scanner: Any,
           buckets: list[tuple[int, int | None, bytes]], fully: bool, chunk: int) -> Any:
    own_flags = bytearray(scanner.flags)
    with open(path, "rb") as handle:
        checker = kernel.EntryChecker(handle.fileno(), 0, data_end, scanner.offsets,
                                      own_flags, scanner.keys, scanner.key_ends,
                                      fully_indexed=fully, limit=50)
        pos = data_end
        for width, code, body in buckets:
            checker.bucket(width, code)
            step = max(1, chunk // width) * width
            for i in range(0, len(body), step):
                checker.feed(body[i:i + step], pos + i)
            pos += len(body)
        checker.missing()
    return checker.problems, checker.counts, checker.entries, bytes(own_flags)


@given(st.data())
@settings(max_examples=200)
def test_the_entry_checker_matches_its_twin(tmp_path_factory: pytest.TempPathFactory,
                                            data: st.DataObject) -> None:
    module = compiled()
    payload, start = data.draw(car_payloads())
    scanner = _walked(payload, start)
    offsets, digests = list(scanner.offsets), _digests(scanner)
    buckets = []
    for code in data.draw(st.lists(st.sampled_from([None, 0x12, 0xB220, 0x00]), max_size=3)):
        width = data.draw(st.sampled_from([8, 9, 40, 41, 72, 2**32 - 1]))
        buckets.append((width, code, data.draw(index_entries(offsets, digests, width))))
    path = tmp_path_factory.mktemp("car") / "a.car"
    path.write_bytes(payload + b"".join(body for _, _, body in buckets))
    fully = data.draw(st.booleans())
    chunk = data.draw(st.integers(1, 200))
    twin = _check(TWIN, path, len(payload), scanner, buckets, fully, 1 << 20)
    assert _check(module, path, len(payload), scanner, buckets, fully, chunk) == twin


def test_a_huge_bucket_width_allocates_nothing() -> None:
    """An empty bucket may declare any width: nothing is sized by it."""
    import tracemalloc

    for kernel in (TWIN, compiled()):
        checker = kernel.EntryChecker(0, 0, 0, array("Q"), bytearray(), bytearray(),
                                      array("Q"), fully_indexed=False)
        tracemalloc.start()
        try:
            checker.bucket(2**32 - 1, None)
            checker.feed(b"", 100)
            checker.missing()
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 1 << 16 and checker.problems == []
