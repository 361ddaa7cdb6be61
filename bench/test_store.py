"""The object store: reads, batch reads, fsck and repack, against the floors that bound
them (a bare ``blake3`` loop over the same bytes) and against the other forms.

    python -m pytest bench/test_store.py --benchmark-json=/tmp/store.json
    python bench/report.py /tmp/store.json --baseline canonkit-packed

Objects are 1 KiB of CBOR (slices of ``bench/data``'s DAG-CBOR files, each with a unique
8-byte prefix) or 1 MiB of random bytes. Stores are built once per pytest run with
``durable=False`` (no fsync: benchmarks) in the temporary directory, outside the timed
calls. Groups:

- ``store:get-1KiB``: ``get`` of 1000 random 1 KiB objects (one call each) from a pack
  (raw entries), from loose raw files, and the same with the pure-Python readers;
- ``store:get_many-1e5``: ``get_many`` of 10^5 random addresses vs a Python loop of
  ``get`` over the same list (a store of 10^5 packed objects);
- ``store:fsck-64x1MiB``: fsck (one worker) of 64 MiB in 1 MiB objects, packed and
  loose, vs ``blake3(x).digest()`` over the same 64 objects in memory;
- ``store:fsck-1e5x1KiB``: fsck of the 10^5-object store vs the blake3 loop;
- ``store:repack-1e5x1KiB``: repack (``deflate="auto"``) of 10^5 loose objects
  (``extra_info``: objects/s, pack size / sum of object sizes).
"""
from __future__ import annotations

import importlib
import os
import random
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from blake3 import blake3
from store_datasets import objects_1k, objects_1m

from canonkit.store import Store

N = 100_000


@pytest.fixture(scope="session")
def workdir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="canonkit-bench-store-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _build(path: Path, items: list[bytes], *, pack: bool, deflate: str = "never") -> Store:
    store = Store.init(path, durable=False)
    for data in items:
        store.put(data)
    if pack:
        store.repack(deflate=deflate)
    return store


@pytest.fixture(scope="session")
def small_items() -> list[bytes]:
    return objects_1k(1000)


@pytest.fixture(scope="session")
def big_items() -> list[bytes]:
    return objects_1k(N)


@pytest.fixture(scope="session")
def loose_1k(workdir: Path, small_items: list[bytes]) -> Store:
    return _build(workdir / "loose-1k", small_items, pack=False)


@pytest.fixture(scope="session")
def packed_1k(workdir: Path, small_items: list[bytes]) -> Store:
    return _build(workdir / "packed-1k", small_items, pack=True)


@pytest.fixture(scope="session")
def loose_1e5(workdir: Path, big_items: list[bytes]) -> Path:
    _build(workdir / "loose-1e5", big_items, pack=False)
    return workdir / "loose-1e5"


@pytest.fixture(scope="session")
def packed_1e5(workdir: Path, big_items: list[bytes]) -> Store:
    return _build(workdir / "packed-1e5", big_items, pack=True)


def _twin(store: Store) -> Store:
    """The same store read by the pure-Python readers."""
    return Store(store.root, durable=False,
                 backend=importlib.import_module("canonkit.store._format_py"))


def _get_all(store: Store, addresses: list[str], **kw: Any) -> Callable[[], None]:
    get = store.get

    def run() -> None:
        for a in addresses:
            get(a, **kw)
    return run


@pytest.mark.parametrize("contender", ["canonkit-packed", "canonkit-loose",
                                       "canonkit-packed-nocopy", "canonkit-py-packed",
                                       "canonkit-py-loose"])
def test_get_1k(benchmark: Any, contender: str, packed_1k: Store, loose_1k: Store,
                small_items: list[bytes]) -> None:
    addresses = ["blake3:" + blake3(d).hexdigest() for d in small_items]
    random.Random(1).shuffle(addresses)
    store = packed_1k if "packed" in contender else loose_1k
    if "-py-" in contender:
        store = _twin(store)
    kw = {"copy": False} if contender.endswith("nocopy") else {}
    assert store.get(addresses[0], **kw) is not None
    assert store.form(addresses[0]) == ("packed" if "packed" in contender else "loose")
    benchmark.group = "store:get-1KiB"
    benchmark.extra_info["contender"] = contender
    benchmark.extra_info["calls_per_round"] = len(addresses)
    benchmark(_get_all(store, addresses, **kw))


@pytest.mark.parametrize("contender", ["canonkit-get_many", "canonkit-get-loop",
                                       "canonkit-get_many-noverify",
                                       "canonkit-get-loop-noverify"])
def test_get_many(benchmark: Any, contender: str, packed_1e5: Store,
                  big_items: list[bytes]) -> None:
    rng = random.Random(2)
    addresses = ["blake3:" + blake3(rng.choice(big_items)).hexdigest() for _ in range(N)]
    verify = not contender.endswith("noverify")
    if "get_many" in contender:
        got = packed_1e5.get_many(addresses[:100], verify=verify)
        run: Callable[[], Any] = lambda: packed_1e5.get_many(addresses, verify=verify)
    else:
        got = [packed_1e5.get(a, verify=verify) for a in addresses[:100]]
        run = _get_all(packed_1e5, addresses, verify=verify)
    assert [blake3(g).hexdigest() for g in got] == [a[7:] for a in addresses[:100]]
    benchmark.group = "store:get_many-1e5"
    benchmark.extra_info["contender"] = contender
    benchmark.pedantic(run, rounds=5, iterations=1, warmup_rounds=1)


@pytest.fixture(scope="session")
def mib_items() -> list[bytes]:
    return objects_1m(64)


@pytest.mark.parametrize("contender", ["canonkit-fsck-packed", "canonkit-fsck-loose",
                                       "blake3-loop"])
def test_fsck_1mib(benchmark: Any, contender: str, workdir: Path,
                   mib_items: list[bytes]) -> None:
    benchmark.group = "store:fsck-64x1MiB"
    benchmark.extra_info["contender"] = contender
    benchmark.extra_info["bytes"] = sum(map(len, mib_items))
    if contender == "blake3-loop":
        benchmark.pedantic(lambda: [blake3(x).digest() for x in mib_items], rounds=7,
                           iterations=1, warmup_rounds=1)
        return
    path = workdir / contender
    if not path.exists():
        _build(path, mib_items, pack="packed" in contender)
    store = Store(path, durable=False)
    report = store.fsck()
    assert report.ok and report.objects == 64
    benchmark.pedantic(store.fsck, rounds=7, iterations=1, warmup_rounds=1)


@pytest.mark.parametrize("contender", ["canonkit-fsck-packed", "blake3-loop"])
def test_fsck_1e5(benchmark: Any, contender: str, packed_1e5: Store,
                  big_items: list[bytes]) -> None:
    benchmark.group = "store:fsck-1e5x1KiB"
    benchmark.extra_info["contender"] = contender
    benchmark.extra_info["objects"] = N
    if contender == "blake3-loop":
        benchmark.pedantic(lambda: [blake3(x).digest() for x in big_items], rounds=5,
                           iterations=1, warmup_rounds=1)
        return
    assert packed_1e5.fsck().objects == N
    benchmark.pedantic(packed_1e5.fsck, rounds=5, iterations=1, warmup_rounds=1)


def test_repack_1e5(benchmark: Any, loose_1e5: Path, workdir: Path,
                    big_items: list[bytes]) -> None:
    rounds: list[Path] = []

    def setup() -> tuple[tuple[Store], dict[str, Any]]:
        copy = workdir / f"repack-{len(rounds)}"
        shutil.copytree(loose_1e5, copy, copy_function=os.link)  # files are never edited
        rounds.append(copy)
        return (Store(copy, durable=False),), {}

    stats: list[Any] = []
    benchmark.group = "store:repack-1e5x1KiB"
    benchmark.extra_info["contender"] = "canonkit-repack-auto"
    benchmark.pedantic(lambda s: stats.append(s.repack(deflate="auto")), setup=setup,
                       rounds=3, iterations=1)
    last = stats[-1]
    assert last.objects == N
    benchmark.extra_info["pack_ratio"] = last.pack_bytes / sum(map(len, big_items))
    benchmark.extra_info["deflated"] = last.deflated
    for path in rounds:
        shutil.rmtree(path, ignore_errors=True)
