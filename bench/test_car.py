"""CAR verification against libipld's ``decode_car`` plus a hashlib pass over every block,
on the same files (bench/car_datasets.py).

    python -m pytest bench/test_car.py --benchmark-json=/tmp/car.json
    python bench/report.py /tmp/car.json
    python bench/car_vs_libipld.py            # the interleaved table of docs/car.md

Groups (ratios are to ``canonkit-c``):

* ``car:verify:<dataset>`` — ``canonkit.car.verify(path)`` (framing, every CID recomputed,
  the index checked) on the compiled kernel and on the twin, against
  ``libipld+hashlib``: read the file, ``libipld.decode_car`` (framing, every block decoded
  to Python objects; of the CARv1 payload for a CARv2, as it reads CARv1 only), then ``hashlib.sha256`` of every block — the block bytes sliced out
  beforehand, so the peer is not charged for finding them;
* ``car:verify-strict:<dataset>`` — ``verify(path, strict=True)`` (every dag-cbor block
  also checked as strict DAG-CBOR, like decoding it) against the same peer.

For ``big-raw`` the peer is ``hashlib`` alone (libipld's ``decode_car`` reads dag-cbor
blocks only): the floor of any verifier that hashes with OpenSSL.
"""
from __future__ import annotations

import hashlib
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from car_datasets import write_all
from car_vs_libipld import carv1_payload

from canonkit import _backend

DATASETS = ["repo", "repo-v2", "big-dagcbor", "big-raw"]


@pytest.fixture(scope="session")
def files() -> Iterator[dict[str, Path]]:
    directory = Path(tempfile.mkdtemp(prefix="canonkit-bench-car-"))
    yield write_all(directory)
    shutil.rmtree(directory, ignore_errors=True)


def block_bytes(path: Path) -> list[bytes]:
    """Every block's bytes, for the peer's hash pass (sliced outside the timed call)."""
    from canonkit import car

    return [block.data for block in car.blocks(path)]


def peer(path: Path, blocks: list[bytes], *, decode: bool) -> Callable[[], Any]:
    libipld = pytest.importorskip("libipld") if decode else None
    sha256 = hashlib.sha256

    def run() -> None:
        data = path.read_bytes()
        if libipld is not None:
            libipld.decode_car(carv1_payload(data))
        for block in blocks:
            sha256(block).digest()

    return run


def verifier(which: str) -> Any:
    from canonkit import car

    if which == "c":
        if _backend.LIVE.get("car") != "compiled":
            pytest.skip(f"canonkit.car._sections: {_backend.WHY_NOT_COMPILED.get('car')}")
        return car
    return _backend.import_on_twins("canonkit.car")


@pytest.mark.parametrize("contender", ["canonkit-c", "canonkit-py", "libipld+hashlib"])
@pytest.mark.parametrize("dataset", DATASETS)
def test_verify(benchmark: Any, files: dict[str, Path], dataset: str, contender: str) -> None:
    path = files[dataset]
    benchmark.group = f"car:verify:{dataset}"
    name = contender if not (dataset == "big-raw" and contender == "libipld+hashlib") \
        else "hashlib"
    benchmark.extra_info["contender"] = name
    if contender.startswith("canonkit"):
        car = verifier("c" if contender == "canonkit-c" else "py")
        report = benchmark(car.verify, path)
        assert report.ok and report.verified == report.blocks
    else:
        benchmark(peer(path, block_bytes(path), decode=dataset != "big-raw"))


@pytest.mark.parametrize("contender", ["canonkit-c", "libipld+hashlib"])
@pytest.mark.parametrize("dataset", ["repo", "big-dagcbor"])
def test_verify_strict(benchmark: Any, files: dict[str, Path], dataset: str,
                       contender: str) -> None:
    path = files[dataset]
    benchmark.group = f"car:verify-strict:{dataset}"
    benchmark.extra_info["contender"] = contender
    if contender == "canonkit-c":
        report = benchmark(verifier("c").verify, path, strict=True)
        assert report.ok
    else:
        benchmark(peer(path, block_bytes(path), decode=True))
