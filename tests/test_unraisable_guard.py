"""The suite's guard against "Exception ignored" (tests/conftest.py) sees child processes:
a child started with the suite's environment, and a child forked from the test process,
each leave a record the guard reads (and here consumes, so this test itself passes)."""
from __future__ import annotations

import multiprocessing
import subprocess
import sys

import pytest
from conftest import _children_unraisable

LEAK = """
class Leaky:
    def __del__(self):
        raise ValueError("leaked from a finalizer")

leaky = Leaky()
del leaky
"""


def _leak() -> None:
    exec(LEAK, {})


def test_exception_ignored_in_a_child_process_is_recorded() -> None:
    done = subprocess.run([sys.executable, "-c", LEAK], capture_output=True, text=True,
                          timeout=60, check=True)
    assert "Exception ignored" in done.stderr  # still printed as usual
    found = _children_unraisable()
    assert len(found) == 1 and "ValueError: leaked from a finalizer" in found[0], found


def test_exception_ignored_in_a_forked_child_is_recorded() -> None:
    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("no fork start method here: no child inherits the guard's hook")
    child = multiprocessing.get_context("fork").Process(target=_leak)
    child.start()
    child.join(60)
    found = _children_unraisable()
    assert len(found) == 1 and "ValueError: leaked from a finalizer" in found[0], found


def test_a_clean_child_leaves_no_record() -> None:
    subprocess.run([sys.executable, "-c", "import canonkit.cbor"], timeout=60, check=True)
    assert _children_unraisable() == []
