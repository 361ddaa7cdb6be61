"""The one way a benchmark gets a canonkit backend module by name, so every contender
skips (with the import error as reason) the same way when an extension is not built."""
from __future__ import annotations

import importlib
from types import ModuleType

import pytest


def backend(capability: str, which: str) -> ModuleType:
    """``canonkit._<capability>`` for ``which == "c"``, else the twin
    ``canonkit._<capability>_py``; a skip naming the module if it cannot be imported."""
    name = f"canonkit._{capability}" if which == "c" else f"canonkit._{capability}_py"
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        pytest.skip(f"{name}: {exc}")
