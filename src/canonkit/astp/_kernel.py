"""The live ASTP kernel module (compiled ``canonkit._astp`` or the twin ``canonkit._astp_py``).

Every module of ``canonkit.astp`` takes its kernels from here. A compiled module that is
importable but does not yet expose the whole kernel API (a partial build during
development) is not used: the twin is, and the reason is recorded for ``canonkit.backend()``.
"""
from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING

from canonkit import _astp_py, _backend

__all__ = ["K"]


def _select() -> ModuleType:
    module = _backend.load("astp")
    if module is _astp_py:
        return module
    missing = [name for name in _astp_py.__all__ if not hasattr(module, name)]
    if missing:
        _backend.fall_back("astp", f"canonkit._astp lacks {', '.join(missing)}")
        return _astp_py
    return module


if TYPE_CHECKING:  # the twin is the typed surface; both backends share its API
    from canonkit import _astp_py as K
else:
    K: ModuleType = _select()
