"""The live CAR kernel: the compiled ``canonkit.car._car`` or its twin
``canonkit.car._car_py`` (``canonkit.backend()["car"]`` says which), chosen with the state
and the one fallback warning of ``canonkit._backend``. The twin is the reference oracle and
the typed surface."""
from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING

from canonkit import _backend
from canonkit.car import _car_py

__all__ = ["K"]


def _select() -> ModuleType:
    if _backend.NO_EXTENSIONS:
        _backend.WHY_NOT_COMPILED["car"] = "CANONKIT_NO_EXTENSIONS=1"
        _backend.LIVE["car"] = "python"
        return _car_py
    try:
        module = importlib.import_module("canonkit.car._car")
    except ImportError as exc:
        _backend.fall_back("car", str(exc))
        return _car_py
    missing = [name for name in _car_py.__all__ if not hasattr(module, name)]
    if missing:  # a stale build that predates part of the API
        _backend.fall_back("car", f"canonkit.car._car lacks {', '.join(missing)}")
        return _car_py
    _backend.LIVE["car"] = "compiled"
    return module


if TYPE_CHECKING:
    from canonkit.car import _car_py as K
else:
    K: ModuleType = _select()
