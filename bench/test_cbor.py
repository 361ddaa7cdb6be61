"""CBOR encode/decode against cbor2, cbrrr and libipld (docs/spec/CBOR.md §5).

    python -m pytest bench/test_cbor.py --benchmark-json=/tmp/cbor.json
    python bench/report.py /tmp/cbor.json
    python bench/cbor_targets.py /tmp/cbor.json

Groups (one table each; ratios are to ``canonkit-c``):

* ``cbor:encode:<dataset>`` / ``cbor:decode:<dataset>`` — canonkit under the default
  ``core`` profile against every peer's default (cbor2 ``canonical=True``; cbrrr and
  libipld write DAG-CBOR). Each decoder decodes its own encoding of the dataset (they are
  byte-identical except for floats: DAG-CBOR writes every float in 64 bits).
* ``cbor:encode-dag:<dataset>`` / ``cbor:decode-dag:<dataset>`` — canonkit under
  ``profile="dag-cbor"`` against cbrrr and libipld on the DAG-CBOR datasets.
* ``cbor:encode-profiles:records10k`` / ``cbor:decode-profiles:records10k`` — canonkit's
  three profiles side by side (dcbor must stay within 1.3x of core).
* ``cbor:check:<dataset>`` — ``Decoder.check`` (validate only) against decoding the same
  bytes, under core and dag-cbor.
* ``cbor:decode-hooks:<dataset>`` — decoding with no hook, with a ``tag_hook`` that the
  tag-free data never calls, and with an ``object_hook`` called for every map.
* the 8 MiB byte string also has ``memcpy`` (``dst[:] = src`` into a preallocated
  buffer) and ``memcpy-alloc`` (``bytearray(src)``: a fresh buffer, like an encoder's).

canonkit's decoders are strict (every rule of the profile checked); libipld's is lax and
cbrrr's checks DAG-CBOR only. Inputs are built outside the timed call, and every
contender is timed the same way (see ``_run``): for inputs of 4 KiB or more, one call per
round with the previous result freed outside the timed call. Under load, pass
``--benchmark-timer=time.thread_time`` to time CPU spent by the benchmark's own thread.
"""
from __future__ import annotations

import os
import time
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
BUDGET = float(os.environ.get("CANONKIT_BENCH_BUDGET", "1.0"))  # seconds per benchmark


def _run(benchmark: Any, group: str, contender: str, fn: Callable[[], object],
         size: int) -> None:
    """Time ``fn`` the same way for every contender of a group.

    Inputs of SMALL bytes or more: one call per round, and the previous round's result is
    freed in the round's setup, outside the timed call (freeing a decoded document costs
    about as much as building it, and it is the same work whichever decoder built it).
    Rounds fill BUDGET seconds. Smaller inputs: fixed batches of 500 calls (results freed
    inside the batch), because pytest-benchmark's calibration may otherwise settle on one
    sub-microsecond call per round, which the timer's own overhead dominates."""
    benchmark.group = group
    benchmark.extra_info["contender"] = contender
    benchmark.extra_info["bytes"] = size
    if size < SMALL:
        benchmark.pedantic(fn, rounds=200, iterations=500, warmup_rounds=5)
        return
    kept: list[object] = []

    def call() -> None:
        kept.append(fn())

    def free_previous() -> None:
        kept.clear()

    start = time.perf_counter()
    for _ in range(3):  # warm-up, and an estimate of one call's cost
        free_previous()
        call()
    each = (time.perf_counter() - start) / 3
    free_previous()
    rounds = max(15, min(2000, int(BUDGET / max(each, 1e-6))))
    benchmark.pedantic(call, setup=free_previous, rounds=rounds, iterations=1)
    free_previous()


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


CHECK_DATASETS = ["records10k", "twitter", "citm", "canada"]
CHECK_CONTENDERS = {"canonkit-c": ("core", "decode"), "canonkit-c-check": ("core", "check"),
                    "canonkit-c-dag": ("dag-cbor", "decode"),
                    "canonkit-c-dag-check": ("dag-cbor", "check")}


@pytest.mark.parametrize("contender", list(CHECK_CONTENDERS))
@pytest.mark.parametrize("name", CHECK_DATASETS)
def test_check(benchmark: Any, name: str, contender: str) -> None:
    """Validate-only (``Decoder.check``) against decoding the same bytes."""
    profile, method = CHECK_CONTENDERS[contender]
    _, encoded = _prepare("canonkit-c", name, profile)
    fn = getattr(backend("cbor", "c").Decoder(profile=profile), method)
    _run(benchmark, f"cbor:check:{name}", contender, lambda: fn(encoded), len(encoded))


def _identity(value: Any) -> Any:
    return value


HOOK_CONTENDERS = {"canonkit-c": {}, "canonkit-c-taghook": {"tag_hook": _identity},
                   "canonkit-c-objhook": {"object_hook": _identity}}


@pytest.mark.parametrize("contender", list(HOOK_CONTENDERS))
@pytest.mark.parametrize("name", ["records10k", "twitter"])
def test_decode_hooks(benchmark: Any, name: str, contender: str) -> None:
    """Hooks cost nothing until called: a tag_hook on tag-free data decodes as fast as no
    hook; an object_hook called for every map shows the cost of one Python call each."""
    _, encoded = _prepare("canonkit-c", name, "core")
    dec = backend("cbor", "c").Decoder(**HOOK_CONTENDERS[contender]).decode
    _run(benchmark, f"cbor:decode-hooks:{name}", contender, lambda: dec(encoded),
         len(encoded))
