"""The one way a benchmark gets a canonkit backend module by name, so every contender
skips (with the import error as reason) the same way when an extension is not built."""
from __future__ import annotations

import importlib
from types import ModuleType

import pytest

from canonkit._capabilities import KERNELS


def backend(capability: str, which: str, kernel: str | None = None) -> ModuleType:
    """The compiled kernel of ``capability`` (``canonkit._capabilities``) for
    ``which == "c"``, else its twin; ``kernel`` names one of a capability with several
    (``astp``: "hasher", "prover", ...). A skip naming the module if it cannot be imported."""
    kernels = KERNELS[capability]
    compiled, twin = kernels[kernel] if kernel else next(iter(kernels.values()))
    name = f"canonkit.{capability}.{compiled if which == 'c' else twin}"
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        pytest.skip(f"{name}: {exc}")
