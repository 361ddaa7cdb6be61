"""DAG-JSON on the real documents (twitter, citm, canada) and 10k records, against the
standard library's ``json`` (which checks none of DAG-JSON's rules) and orjson.

    python -m pytest bench/test_dag_json.py --benchmark-json=/tmp/dagjson.json
    python bench/report.py /tmp/dagjson.json --baseline canonkit

``canonkit`` is ``dag_json.encode`` / strict ``dag_json.decode``; ``canonkit-lenient`` is
``decode(strict=False)`` (the reference reader); ``json`` is ``json.dumps(sort_keys=True,
separators=(",", ":"), ensure_ascii=False)`` / ``json.loads`` on the same DAG-JSON bytes,
``orjson`` is ``orjson.dumps(OPT_SORT_KEYS)`` / ``orjson.loads``. The value for the JSON
libraries is the DAG-JSON document as ``json.loads`` reads it (links and bytes as their
``{"/": ...}`` maps). Inputs are built outside the timed call.
"""
from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

import orjson
import pytest
from cbor_datasets import dataset

from canonkit.cbor import dag_json
from canonkit import cbor

DATASETS = ["records10k", "twitter", "citm", "canada"]


@functools.lru_cache(maxsize=None)
def _inputs(name: str) -> tuple[Any, bytes, Any]:
    """(data-model value, its DAG-JSON bytes, the plain-JSON value of those bytes)."""
    value = cbor.decode(cbor.encode(dataset(name), profile="dag-cbor"), profile="dag-cbor")
    data = dag_json.encode(value)
    return value, data, json.loads(data)


def run(benchmark: Any, group: str, contender: str, nbytes: int,
        fn: Callable[[], object]) -> None:
    benchmark.group = f"dag-json:{group}"
    benchmark.extra_info["contender"] = contender
    benchmark.extra_info["bytes"] = nbytes
    benchmark(fn)


@pytest.mark.parametrize("name", DATASETS)
@pytest.mark.parametrize("contender", ["canonkit", "json", "orjson"])
def test_encode(benchmark: Any, contender: str, name: str) -> None:
    value, data, plain = _inputs(name)
    if contender == "canonkit":
        fn: Callable[[], object] = lambda: dag_json.encode(value)
    elif contender == "json":
        fn = lambda: json.dumps(plain, sort_keys=True, separators=(",", ":"),
                                ensure_ascii=False)
    else:
        fn = lambda: orjson.dumps(plain, option=orjson.OPT_SORT_KEYS)
    run(benchmark, f"encode-{name}", contender, len(data), fn)


@pytest.mark.parametrize("name", DATASETS)
@pytest.mark.parametrize("contender", ["canonkit", "canonkit-lenient", "json", "orjson"])
def test_decode(benchmark: Any, contender: str, name: str) -> None:
    _, data, _ = _inputs(name)
    if contender == "canonkit":
        fn: Callable[[], object] = lambda: dag_json.decode(data)
    elif contender == "canonkit-lenient":
        fn = lambda: dag_json.decode(data, strict=False)
    elif contender == "json":
        fn = lambda: json.loads(data)
    else:
        fn = lambda: orjson.loads(data)
    run(benchmark, f"decode-{name}", contender, len(data), fn)
