"""The encode options cost nothing when unused, and the tag handlers against cbor2.

    python -m pytest bench/test_cbor_hooks.py --benchmark-json=/tmp/hooks.json
    python bench/report.py /tmp/hooks.json

``cbor:encode-options:<dataset>`` — canonkit-c's plain ``Encoder().encode`` against the
same encoder built with a ``default`` hook the data never calls (``canonkit-c-default``)
and with ``max_depth=4096`` (``canonkit-c-max-depth``), with libipld for scale: the
no-hook path must not pay for the hooks, so the three canonkit rows stay within noise.

``cbor:encode-tagged:records1k`` — 1000 records holding an aware datetime, a UUID and a
Decimal, encoded with ``default=cbor_tags.default`` (tags 1, 37, 4) against cbor2's
canonical encoder with its built-in handlers (``datetime_as_timestamp=True``).
"""
from __future__ import annotations

import datetime as dt
import uuid
from decimal import Decimal
from typing import Any

import pytest
from backends import backend
from cbor_datasets import dataset

from canonkit.cbor import tags as cbor_tags

OPTION_DATASETS = ["records10k", "twitter", "citm", "canada"]


def _unused_hook(value: Any) -> Any:  # the data has no value without a CBOR mapping
    raise AssertionError(f"called for {type(value).__name__}")


OPTION_CONTENDERS = {
    "canonkit-c": {},
    "canonkit-c-default": {"default": _unused_hook},
    "canonkit-c-max-depth": {"max_depth": 4096},
}


@pytest.mark.parametrize("contender", [*OPTION_CONTENDERS, "libipld"])
@pytest.mark.parametrize("name", OPTION_DATASETS)
def test_encode_options(benchmark: Any, name: str, contender: str) -> None:
    value = dataset(name)
    if contender == "libipld":
        enc = pytest.importorskip("libipld").encode_dag_cbor
    else:
        enc = backend("cbor", "c").Encoder(**OPTION_CONTENDERS[contender]).encode
    benchmark.group = f"cbor:encode-options:{name}"
    benchmark.extra_info["contender"] = contender
    benchmark(enc, value)


UTC = dt.timezone.utc
RECORDS = [{"id": uuid.UUID(int=i * 7919), "at": dt.datetime(2026, 1, 1, tzinfo=UTC)
            + dt.timedelta(seconds=i * 37), "price": Decimal(i) / 100, "n": i}
           for i in range(1000)]


@pytest.mark.parametrize("contender", ["canonkit-c", "canonkit-py", "cbor2"])
def test_encode_tagged(benchmark: Any, contender: str) -> None:
    if contender == "cbor2":
        cbor2 = pytest.importorskip("cbor2")

        def run() -> bytes:
            return cbor2.dumps(RECORDS, canonical=True,  # type: ignore[no-any-return]
                               datetime_as_timestamp=True)
    else:
        which = "py" if contender == "canonkit-py" else "c"
        encoder = backend("cbor", which).Encoder(default=cbor_tags.default)

        def run() -> bytes:
            return encoder.encode(RECORDS)  # type: ignore[no-any-return]
    run()
    benchmark.group = "cbor:encode-tagged:records1k"
    benchmark.extra_info["contender"] = contender
    benchmark(run)
