"""CBOR encode/decode against cbor2, cbrrr and libipld (CBOR.md §5, issues 2 and 3).

    python -m pytest bench/test_cbor.py --benchmark-json=/tmp/cbor.json --benchmark-min-rounds=5
    python bench/report.py /tmp/cbor.json

Groups (one table each; ratios are to ``canonkit-c``):

* ``cbor:encode:<dataset>`` / ``cbor:decode:<dataset>`` — canonkit under the default
  ``core`` profile against every peer's default (cbor2 ``canonical=True``; cbrrr and
  libipld write DAG-CBOR). Each decoder decodes its own encoding of the dataset (they are
  byte-identical except for floats: DAG-CBOR writes every float in 64 bits).
* ``cbor:encode-dag:<dataset>`` / ``cbor:decode-dag:<dataset>`` — canonkit under
  ``profile="dag-cbor"`` against cbrrr and libipld on the DAG-CBOR datasets.
* ``cbor:encode-profiles:records10k`` / ``cbor:decode-profiles:records10k`` — canonkit's
  three profiles side by side (dcbor must stay within 1.3x of core).
* the 8 MiB byte string also has ``memcpy`` (``dst[:] = src`` into a preallocated
  buffer) and ``memcpy-alloc`` (``bytearray(src)``: a fresh buffer, like an encoder's).

canonkit's decoders are strict (every rule of the profile checked); libipld's is lax and
cbrrr's checks DAG-CBOR only. Inputs are built outside the timed call.
"""
from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from backends import backend
from cbor_datasets import DATASETS, REAL_FILES, TWIN_DATASETS, dataset

CORE_DATASETS = list(DATASETS)
DAG_DATASETS = ["record", "records10k", "tree", *REAL_FILES]


def _peer(name: str) -> ModuleType:
    return pytest.importorskip(name)


def encoder(contender: str, profile: str) -> Callable[[Any], bytes]:
    """The contender's encode function (canonkit under ``profile``)."""
    if contender == "canonkit-c":
        return backend("cbor", "c").Encoder(profile=profile).encode  # type: ignore[no-any-return]
    if contender == "canonkit-py":
        return backend("cbor", "py").Encoder(profile=profile).encode  # type: ignore[no-any-return]
    if contender == "cbor2":
        cbor2 = _peer("cbor2")
        return lambda obj: cbor2.dumps(obj, canonical=True)  # type: ignore[no-any-return]
    if contender == "cbrrr":
        return _peer("cbrrr").encode_dag_cbor  # type: ignore[no-any-return]
    if contender == "libipld":
        return _peer("libipld").encode_dag_cbor  # type: ignore[no-any-return]
    raise KeyError(contender)


def decoder(contender: str, profile: str) -> Callable[[bytes], Any]:
    if contender == "canonkit-c":
        return backend("cbor", "c").Decoder(profile=profile).decode  # type: ignore[no-any-return]
    if contender == "canonkit-py":
        return backend("cbor", "py").Decoder(profile=profile).decode  # type: ignore[no-any-return]
    if contender == "cbor2":
        return _peer("cbor2").loads  # type: ignore[no-any-return]
    if contender == "cbrrr":
        return _peer("cbrrr").decode_dag_cbor  # type: ignore[no-any-return]
    if contender == "libipld":
        return _peer("libipld").decode_dag_cbor  # type: ignore[no-any-return]
    raise KeyError(contender)


def _prepare(contender: str, name: str, profile: str) -> tuple[Any, bytes]:
    """The dataset value and this contender's encoding of it, or a skip with the reason."""
    if contender == "canonkit-py" and name not in TWIN_DATASETS:
        pytest.skip("the pure-Python twin is only timed on small datasets")
    value = dataset(name)
    try:
        encoded = encoder(contender, profile)(value)
    except Exception as exc:  # a peer that cannot represent this dataset
        pytest.skip(f"{contender} cannot encode {name}: {type(exc).__name__}: {exc}")
    return value, encoded


SMALL = 4096  # bytes: timed in fixed batches, see _run


def _run(benchmark: Any, group: str, contender: str, fn: Callable[[], object],
         size: int) -> None:
    benchmark.group = group
    benchmark.extra_info["contender"] = contender
    benchmark.extra_info["bytes"] = size
    if size < SMALL:
        # Sub-microsecond calls: pytest-benchmark's calibration may settle on one call per
        # round (after a slow first call), and then the timer's own overhead dominates.
        # Every contender gets the same fixed batch instead.
        benchmark.pedantic(fn, rounds=200, iterations=500, warmup_rounds=5)
    else:
        benchmark(fn)


CONTENDERS = ["canonkit-c", "canonkit-py", "cbor2", "cbrrr", "libipld"]


@pytest.mark.parametrize("contender", CONTENDERS)
@pytest.mark.parametrize("name", CORE_DATASETS)
def test_encode(benchmark: Any, name: str, contender: str) -> None:
    value, encoded = _prepare(contender, name, "core")
    enc = encoder(contender, "core")
    _run(benchmark, f"cbor:encode:{name}", contender, lambda: enc(value), len(encoded))


@pytest.mark.parametrize("contender", CONTENDERS)
@pytest.mark.parametrize("name", CORE_DATASETS)
def test_decode(benchmark: Any, name: str, contender: str) -> None:
    value, encoded = _prepare(contender, name, "core")
    dec = decoder(contender, "core")
    try:
        dec(encoded)
    except Exception as exc:
        pytest.skip(f"{contender} cannot decode its own encoding of {name}: {exc}")
    _run(benchmark, f"cbor:decode:{name}", contender, lambda: dec(encoded), len(encoded))


@pytest.mark.parametrize("contender", ["memcpy", "memcpy-alloc"])
def test_encode_blob_memcpy(benchmark: Any, contender: str) -> None:
    blob = dataset("blob8m")["blob"]
    if contender == "memcpy":
        src = np.frombuffer(blob, dtype=np.uint8)
        dst = np.empty(len(blob), dtype=np.uint8)

        def copy() -> None:
            dst[:] = src
    else:
        def copy() -> None:
            bytearray(blob)
    _run(benchmark, "cbor:encode:blob8m", contender, copy, len(blob))


DAG_CONTENDERS = ["canonkit-c", "cbrrr", "libipld"]


@pytest.mark.parametrize("contender", DAG_CONTENDERS)
@pytest.mark.parametrize("name", DAG_DATASETS)
def test_encode_dag(benchmark: Any, name: str, contender: str) -> None:
    value, encoded = _prepare(contender, name, "dag-cbor")
    enc = encoder(contender, "dag-cbor")
    _run(benchmark, f"cbor:encode-dag:{name}", contender, lambda: enc(value), len(encoded))


@pytest.mark.parametrize("contender", DAG_CONTENDERS)
@pytest.mark.parametrize("name", DAG_DATASETS)
def test_decode_dag(benchmark: Any, name: str, contender: str) -> None:
    value, encoded = _prepare(contender, name, "dag-cbor")
    dec = decoder(contender, "dag-cbor")
    _run(benchmark, f"cbor:decode-dag:{name}", contender, lambda: dec(encoded), len(encoded))


PROFILE_CONTENDERS = {"canonkit-c": "core", "canonkit-c-dcbor": "dcbor",
                      "canonkit-c-dag": "dag-cbor"}


@pytest.mark.parametrize("contender", list(PROFILE_CONTENDERS))
def test_encode_profiles(benchmark: Any, contender: str) -> None:
    profile = PROFILE_CONTENDERS[contender]
    value, encoded = _prepare("canonkit-c", "records10k", profile)
    enc = encoder("canonkit-c", profile)
    _run(benchmark, "cbor:encode-profiles:records10k", contender, lambda: enc(value),
         len(encoded))


@pytest.mark.parametrize("contender", list(PROFILE_CONTENDERS))
def test_decode_profiles(benchmark: Any, contender: str) -> None:
    profile = PROFILE_CONTENDERS[contender]
    value, encoded = _prepare("canonkit-c", "records10k", profile)
    dec = decoder("canonkit-c", profile)
    _run(benchmark, "cbor:decode-profiles:records10k", contender, lambda: dec(encoded),
         len(encoded))
