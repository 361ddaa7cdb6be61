"""Encode + address of one small object, and batch addressing.

    python -m pytest bench/test_objects.py --benchmark-json=/tmp/objects.json
    python bench/report.py /tmp/objects.json

``objects:commit-5-field``: a ``commit`` (5 fields + the ``t``/``v`` envelope, 162 bytes).
canonkit is timed from ``(kind, fields)`` — schema validation, envelope, encoding and
hashing; the peers get the finished 7-key map (no validation at all), encode it and hash
it with the same ``blake3`` package. All contenders produce the same bytes (asserted).
``blake3-only`` and ``canonkit-address-only`` are the floors: the hash call alone on the
finished bytes (plain, and through canonkit's reused hasher).

``objects:addresses-1000x162B``: 1000 such encodings addressed in one call vs. a loop of
``blake3(x).hexdigest()``.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import cbor2
import cbrrr
import pytest
from blake3 import blake3

from canonkit.objects import ObjectCodec, address, addresses

FIELDS = {"tree": bytes(range(32)), "parents": [bytes(range(1, 33))],
          "author": "Ada Lovelace <ada@example.org>", "time": 1767225600000,
          "message": "initial import\n"}
ENVELOPE = {"t": "commit", "v": 1, **FIELDS}


def _codec(which: str) -> ObjectCodec:
    name = "canonkit.cbor._codec" if which == "c" else "canonkit.cbor._codec_py"
    try:
        return ObjectCodec(importlib.import_module(name))
    except ImportError as exc:
        pytest.skip(f"{name} not built: {exc}")


def _cbrrr() -> str:
    return "blake3:" + blake3(cbrrr.encode_dag_cbor(ENVELOPE)).hexdigest()


def _cbor2() -> str:
    return "blake3:" + blake3(cbor2.dumps(ENVELOPE, canonical=True)).hexdigest()


def _canonkit(which: str) -> Callable[[], str]:
    address_object = _codec(which).address_object
    return lambda: address_object("commit", FIELDS)


CONTENDERS: dict[str, Callable[[], Callable[[], str]]] = {
    "canonkit-c": lambda: _canonkit("c"),
    "canonkit-py": lambda: _canonkit("py"),
    "cbrrr+blake3": lambda: _cbrrr,
    "cbor2-canonical+blake3": lambda: _cbor2,
}


@pytest.mark.parametrize("contender", list(CONTENDERS))
def test_encode_and_address_commit(benchmark: Any, contender: str) -> None:
    run = CONTENDERS[contender]()
    expected = "blake3:" + blake3(cbrrr.encode_dag_cbor(ENVELOPE)).hexdigest()
    assert run() == expected  # same bytes, same address
    benchmark.group = "objects:commit-5-field"
    benchmark.extra_info["contender"] = contender
    benchmark(run)


@pytest.mark.parametrize("contender", ["blake3-only", "canonkit-address-only"])
def test_hash_only_floor(benchmark: Any, contender: str) -> None:
    """The floors: the plain hash call, and canonkit's ``address`` (reused hasher)."""
    data = cbrrr.encode_dag_cbor(ENVELOPE)
    benchmark.group = "objects:commit-5-field"
    benchmark.extra_info["contender"] = contender
    if contender == "blake3-only":
        benchmark(lambda: "blake3:" + blake3(data).hexdigest())
    else:
        benchmark(address, data)


ITEMS = [cbrrr.encode_dag_cbor({**ENVELOPE, "time": i}) for i in range(1000)]


@pytest.mark.parametrize("contender", ["canonkit-c", "blake3-loop"])
def test_batch_addresses(benchmark: Any, contender: str) -> None:
    def loop() -> list[str]:
        return ["blake3:" + blake3(x).hexdigest() for x in ITEMS]

    run = (lambda: addresses(ITEMS)) if contender == "canonkit-c" else loop
    assert run() == loop()
    benchmark.group = "objects:addresses-1000x162B"
    benchmark.extra_info["contender"] = contender
    benchmark(run)
