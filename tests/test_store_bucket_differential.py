"""A store in object storage against the same bytes in a directory (STORE.md §7), over
damage: fuzz/store_cases.py's small store (every physical form) with one file mutated by
hypothesis is laid out locally and uploaded under a prefix; ``get`` (verified or not),
``get_many`` (verified or not) and fsck give the same values, or the same error class,
code, detail, path and offset, and the same findings and counts."""
from __future__ import annotations

import importlib
import shutil
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from bucket_helpers import comparable, upload
from conftest import REPO
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from services import S3Prefix, needs_obstore
from strategies_store import mutated

from canonkit.store import Store

sys.path.insert(0, str(REPO / "fuzz"))
cases = importlib.import_module("store_cases")

pytestmark = needs_obstore

# each example uploads a store and reads it back over HTTP: a few dozen requests
SETTINGS = settings(max_examples=15, deadline=None, suppress_health_check=[
    HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@pytest.fixture
def root() -> Iterator[Path]:
    path = cases.scratch("bucket-differential")
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _answers(store: Store) -> list[Any]:
    out: list[Any] = []
    for address in cases.ADDRESSES:
        for verify in (True, False):
            out.append(cases._outcome(lambda: store.get(address, verify=verify)))
    for verify in (True, False):
        out.append(cases._outcome(lambda: store.get_many(cases.ADDRESSES, verify=verify)))
    out.append(comparable(store.fsck()))
    return out


def _compare(s3: S3Prefix, root: Path, case: bytes) -> list[Any]:
    cases.write(root, case)
    local = _answers(Store(root, durable=False))
    url = f"{s3.url}{uuid.uuid4().hex[:8]}/"
    upload(root, url)
    assert _answers(Store(url)) == local
    return local


def test_the_intact_store_reads_back_the_same(s3: S3Prefix, root: Path) -> None:
    *reads, report = _compare(s3, root, b"")
    assert all(r[0] == "value" for r in reads) and report["findings"] == []


@SETTINGS
@given(st.data(), st.integers(0, len(cases.FILES) - 1))
@example(None, 0)  # type: ignore[arg-type]
def test_a_mutated_file_gets_the_same_answers(s3: S3Prefix, root: Path, data: st.DataObject,
                                               which: int) -> None:
    intact = cases.IMAGE[cases.FILES[which]]
    damaged = intact if data is None else data.draw(mutated(intact))
    _compare(s3, root, bytes([which]) + damaged)


@pytest.mark.parametrize("name", sorted(p.name for p in (REPO / "fuzz" / "corpus" /
                                                         "store").iterdir()))
def test_the_kept_hostile_cases_get_the_same_answers(s3: S3Prefix, root: Path,
                                                     name: str) -> None:
    case = (REPO / "fuzz" / "corpus" / "store" / name).read_bytes()
    *reads, report = _compare(s3, root, case)
    assert any(r[0] == "error" for r in reads) or report["findings"]
