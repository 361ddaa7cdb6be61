"""The CAR fuzz target (fuzz/fuzz_car.py) is a check that can fail: it passes its seeds,
and it raises Mismatch when the twin's report differs or when ``blocks`` and ``verify``
disagree about where a file breaks."""
from __future__ import annotations

import importlib
import sys
from typing import Any

import pytest
from conftest import REPO

sys.path.insert(0, str(REPO / "fuzz"))


def target() -> Any:
    try:
        return importlib.import_module("fuzz_car")
    except ImportError as exc:  # the compiled kernel is not built
        pytest.skip(f"fuzz_car: {exc}")


def seed() -> bytes:
    seeds = importlib.import_module("seeds")
    return seeds.seeds("car")[2]


class Twisted:
    """A canonkit.car whose verify reports one more block than the real one."""

    def __init__(self, real: Any) -> None:
        self._real = real

    def verify(self, *args: Any, **kwargs: Any) -> Any:
        report = self._real.verify(*args, **kwargs)
        report.blocks += 1
        return report


def test_the_target_catches_a_report_that_differs(monkeypatch: pytest.MonkeyPatch) -> None:
    module = target()
    harness = importlib.import_module("_harness")
    module.one_input(seed())
    monkeypatch.setattr(module, "TWIN", Twisted(module.TWIN))
    with pytest.raises(harness.Mismatch, match="blocks"):
        module.one_input(seed())


def test_the_target_catches_blocks_that_disagree_with_verify(
        monkeypatch: pytest.MonkeyPatch) -> None:
    module = target()
    harness = importlib.import_module("_harness")
    monkeypatch.setattr(module, "_blocks", lambda: ([], None))
    broken = seed()[:-3]  # a truncated last section: verify finds an error
    with pytest.raises(harness.Mismatch, match="blocks raised None"):
        module.one_input(broken)
