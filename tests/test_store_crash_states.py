"""The crash-state harness (tests/crash_states.py; docs/robustness.md, "Crash states"):
a bounded run over the four operations, and the proof that it fails when the store's
ordering is wrong — a pack published before it was fsynced, a new index renamed into
packs/ with no fsync after its pack's rename, an old index unlinked with no fsync before
its pack is."""
from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import crash_states
import pytest

STRIDE = 97  # of about 11,000 distinct states, check about 120 (the full run: all)


@pytest.fixture
def work() -> Iterator[Path]:
    base = Path("/dev/shm") if Path("/dev/shm").is_dir() else None
    path = Path(tempfile.mkdtemp(prefix="canonkit-crash-states-", dir=base))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.mark.slow
def test_every_operation_survives_its_crash_states(work: Path) -> None:
    results = [crash_states.explore(name, work / name, stride=STRIDE)
               for name in crash_states.OPERATIONS]
    for result in results:
        assert result.failures == [], (result.operation, result.failures[:3])
        assert result.checked >= 1 and result.crash_points == result.trace_ops + 1
    states = {r.operation: r.states for r in results}
    assert sum(states.values()) >= 10_000, states
    assert states["repack"] > 5000 and states["gc"] > 4000, states


def _without(ops: list[tuple[Any, ...]], drop: int) -> list[tuple[Any, ...]]:
    return ops[:drop] + ops[drop + 1:]


def _no_fsync_before_publication(ops: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """The pack renamed into packs/ without its data fsynced first."""
    (inode,) = {op[3] for op in ops if op[0] == "rename" and op[2].endswith(".pack")}
    return [op for op in ops if op != ("fsync", inode)]


def _no_fsync_between_index_and_pack(ops: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """An old index and its pack unlinked with no fsync of packs/ in between."""
    first = next(j for j, op in enumerate(ops)
                 if op[0] == "unlink" and op[1].endswith(".idx"))
    sync = next(j for j in range(first, len(ops)) if ops[j] == ("fsync_dir", "packs"))
    return _without(ops, sync)


def _no_fsync_between_pack_and_index(ops: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """The new pack and its index renamed into packs/ with no fsync in between."""
    first = next(j for j, op in enumerate(ops)
                 if op[0] == "rename" and op[2].endswith(".pack"))
    assert ops[first + 1] == ("fsync_dir", "packs")
    return _without(ops, first + 1)


def test_the_small_repack_survives_every_crash_state(work: Path) -> None:
    result = crash_states.explore("repack-small", work)
    assert result.failures == [] and result.checked == result.states > 100


@pytest.mark.parametrize("plant, symptom", [
    (_no_fsync_before_publication, "fsck: error"),
    (_no_fsync_between_index_and_pack, "pack_missing"),
    (_no_fsync_between_pack_and_index, "pack_missing"),
])
def test_the_harness_finds_a_wrong_order(work: Path, plant: Any, symptom: str) -> None:
    result = crash_states.explore("repack-small", work, edit=plant)
    assert result.failures, "the planted bug went unnoticed"
    assert any(symptom in problem for _, problems in result.failures for problem in problems)
