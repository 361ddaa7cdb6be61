"""The compiled store readers against their twin, through the whole store: the same
mutated pack, index, raw or DEFLATE loose file given to both, ``get`` (verified,
unverified, without a copy), ``get_many`` and fsck give the same values, or the same
error class, code, path and offset, and the same findings (STORE.md §2, §4). The store
and the comparison are fuzz/store_cases.py's, shared with the atheris target
fuzz/fuzz_store.py; mutations here are hypothesis's."""
from __future__ import annotations

import importlib
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import REPO, backend_pair
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from strategies_store import mutated

sys.path.insert(0, str(REPO / "fuzz"))
cases = importlib.import_module("store_cases")

SETTINGS = settings(max_examples=120, suppress_health_check=[
    HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@pytest.fixture
def root() -> Iterator[Path]:
    path = cases.scratch("differential")
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _compare(root: Path, case: bytes) -> list[object]:
    compiled, twin = backend_pair("store")
    cases.write(root, case)
    got = cases.answers(root, compiled)
    assert got == cases.answers(root, twin)
    return got


def test_the_intact_store_reads_back_on_both(root: Path) -> None:
    got = _compare(root, b"")
    *reads, findings, counts = got
    assert all(r[0] == "value" for r in reads) and findings == []
    assert counts[0] == counts[1] == len(cases.ADDRESSES)


@SETTINGS
@given(st.data(), st.integers(0, len(cases.FILES) - 1))
@example(None, 0)  # type: ignore[arg-type]
def test_a_mutated_file_gets_the_same_answers(root: Path, data: st.DataObject,
                                               which: int) -> None:
    intact = cases.IMAGE[cases.FILES[which]]
    damaged = intact if data is None else data.draw(mutated(intact))
    if data is not None and data.draw(st.booleans()):
        damaged = data.draw(mutated(damaged))  # two mutations
    _compare(root, bytes([which]) + damaged)


@SETTINGS
@given(st.integers(0, len(cases.FILES) - 1), st.binary(max_size=300))
def test_a_file_of_arbitrary_bytes_gets_the_same_answers(root: Path, which: int,
                                                         junk: bytes) -> None:
    _compare(root, bytes([which]) + junk)


@pytest.mark.parametrize("name", sorted(p.name for p in (REPO / "fuzz" / "corpus" /
                                                         "store").iterdir()))
def test_the_kept_hostile_cases_get_the_same_answers(root: Path, name: str) -> None:
    case = (REPO / "fuzz" / "corpus" / "store" / name).read_bytes()
    *reads, findings, _ = _compare(root, case)
    assert any(r[0] == "error" for r in reads) or findings  # each is damage somewhere


def test_the_fuzz_target_catches_a_disagreement(monkeypatch: pytest.MonkeyPatch) -> None:
    harness = importlib.import_module("_harness")
    target = importlib.import_module("fuzz_store")
    twin = target.TWIN

    class Lying:
        """The twin, except that a raw loose object reads back one byte short."""

        def __getattr__(self, name: str) -> object:
            return getattr(twin, name)

        @staticmethod
        def read_loose(data: object, digest: object, inflate: object, copy: bool = True
                       ) -> object:
            out = twin.read_loose(data, digest, inflate, copy)
            return out[:-1] if isinstance(out, (bytes, memoryview)) and out else out

    seed = cases.seeds()[cases.FILES.index(next(
        r for r in cases.FILES if r.startswith("objects/")))]
    target.one_input(seed)
    monkeypatch.setattr(target, "TWIN", Lying())
    with pytest.raises(harness.Mismatch, match="store answer"):
        target.one_input(seed)
