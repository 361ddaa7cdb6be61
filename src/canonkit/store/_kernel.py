"""The live store kernel: the compiled ``canonkit._store`` or the twin ``canonkit._store_py``
(``canonkit.backend()["store"]`` says which). Both read the formats of STORE.md §2
identically; the twin is the reference oracle and the typed surface."""
from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING

from canonkit import _backend, _store_py

__all__ = ["K"]


def _select() -> ModuleType:
    module = _backend.load("store")
    if module is _store_py:
        return module
    missing = [name for name in _store_py.__all__ if not hasattr(module, name)]
    if missing:  # a stale build that predates part of the API
        _backend.LIVE["store"] = "python"
        _backend.WHY_NOT_COMPILED["store"] = f"canonkit._store lacks {', '.join(missing)}"
        return _store_py
    return module


if TYPE_CHECKING:
    from canonkit import _store_py as K
else:
    K: ModuleType = _select()
