"""Backend selection, the one selector: ``select(capability, compiled=..., twin=...)``
returns the compiled module of a kernel if its capability is compiled, else the kernel's
pure-Python twin (the yarl/fastavro triple, kept inside each capability package). The
capabilities and kernels are those of ``canonkit._capabilities``.

A capability is compiled only if every one of its compiled modules imports and exposes
exactly its twin's ``__all__`` (a partial or stale build serves all the twins); the choice
is made once per process, at the first ``select`` of the capability.
``CANONKIT_NO_EXTENSIONS=1`` ignores compiled modules at run time.

A capability that falls back to its twins without being asked to is 10-30x slower, so the
first such fallback in a process emits one ``RuntimeWarning`` (naming the capability and
why); ``CANONKIT_NO_EXTENSIONS=1`` asks for the twins and silences it."""
from __future__ import annotations

import importlib
import os
import sys
import warnings
from types import ModuleType
from typing import Literal

from ._capabilities import KERNELS
from .errors import ExtensionFallbackWarning

NO_EXTENSIONS = os.environ.get("CANONKIT_NO_EXTENSIONS") == "1"

# capability -> "compiled" | "python"; filled as capabilities are first selected
LIVE: dict[str, Literal["compiled", "python"]] = {}
# capability -> why the compiled modules are not live (import errors, API gaps or the knob)
WHY_NOT_COMPILED: dict[str, str] = {}
# the first unrequested fallback of the process has warned
_warned = False


def fall_back(name: str, why: str) -> None:
    """Record that capability ``name`` runs on its twins, and warn the first time this
    happens in a process unless the twins were asked for."""
    global _warned
    LIVE[name] = "python"
    WHY_NOT_COMPILED[name] = why
    if NO_EXTENSIONS or _warned:
        return
    _warned = True
    warnings.warn(
        f"canonkit.{name} runs on its pure-Python twin, 10-30x slower: the compiled module "
        f"is unusable ({why}). Reinstall with a C compiler (CANONKIT_REQUIRE_EXTENSIONS=1 "
        "makes a failed build an error), or set CANONKIT_NO_EXTENSIONS=1 to choose the "
        "twins; canonkit.backend() shows every capability.",
        ExtensionFallbackWarning, stacklevel=4)


def api_gap(compiled: ModuleType, twin: ModuleType) -> str | None:
    """Why ``compiled`` does not have exactly ``twin``'s API, or None if it does: the same
    ``__all__``, every name present."""
    want = list(twin.__all__)
    have = getattr(compiled, "__all__", None)
    missing = [name for name in want if not hasattr(compiled, name)]
    if missing:
        return f"{compiled.__name__} lacks {', '.join(missing)}"
    if have is None or sorted(have) != sorted(want):
        extra = sorted(set(have or ()) - set(want))
        return (f"{compiled.__name__}.__all__ differs from {twin.__name__}.__all__"
                + (f" (extra: {', '.join(extra)})" if extra else ""))
    return None


def _decide(capability: str) -> None:
    if NO_EXTENSIONS:
        LIVE[capability] = "python"
        WHY_NOT_COMPILED[capability] = "CANONKIT_NO_EXTENSIONS=1"
        return
    reasons = []
    for compiled, twin in KERNELS[capability].values():
        try:
            module = importlib.import_module(f"canonkit.{capability}.{compiled}")
        except ImportError as exc:
            reasons.append(f"canonkit.{capability}.{compiled}: {exc}")
            continue
        gap = api_gap(module, importlib.import_module(f"canonkit.{capability}.{twin}"))
        if gap:
            reasons.append(gap)
    if reasons:
        fall_back(capability, "; ".join(reasons))
    else:
        LIVE[capability] = "compiled"


def select(capability: str, *, compiled: str, twin: str) -> ModuleType:
    """The live module of one kernel of ``capability``: ``compiled`` (e.g.
    ``"canonkit.store._format"``) when the capability is compiled, else ``twin``. The pair
    must be a kernel of ``canonkit._capabilities.KERNELS``."""
    prefix = f"canonkit.{capability}."
    pair = (compiled.removeprefix(prefix), twin.removeprefix(prefix))
    if not compiled.startswith(prefix) or pair not in KERNELS.get(capability, {}).values():
        raise LookupError(f"{compiled} / {twin} is not a kernel of {capability!r} in "
                          "canonkit._capabilities.KERNELS")
    if capability not in LIVE:
        _decide(capability)
    return importlib.import_module(compiled if LIVE[capability] == "compiled" else twin)


def import_on_twins(package: str) -> ModuleType:
    """A second, separate import of ``package`` (e.g. ``"canonkit.astp"``) whose facades
    bind the pure-Python twins, for running both backends side by side (differential tests,
    benchmarks). The live import of ``package``, ``LIVE`` and ``NO_EXTENSIONS`` are restored
    afterwards."""
    global NO_EXTENSIONS

    def inside(name: str) -> bool:
        return name == package or name.startswith(package + ".")

    saved = {name: sys.modules.pop(name) for name in [n for n in sys.modules if inside(n)]}
    live, why_not, no_extensions = dict(LIVE), dict(WHY_NOT_COMPILED), NO_EXTENSIONS
    parent_name, _, child = package.rpartition(".")
    NO_EXTENSIONS = True
    LIVE.clear()
    try:
        return importlib.import_module(package)
    finally:
        NO_EXTENSIONS = no_extensions
        for name in [n for n in sys.modules if inside(n)]:
            del sys.modules[name]
        sys.modules.update(saved)
        # the import also bound the twin copy as an attribute of the parent package, where
        # a later `from canonkit import astp` would find it: point it back at the live one
        parent = sys.modules.get(parent_name)
        if parent is not None:
            if package in saved:
                setattr(parent, child, saved[package])
            elif hasattr(parent, child):
                delattr(parent, child)
        LIVE.clear()
        LIVE.update(live)
        WHY_NOT_COMPILED.clear()
        WHY_NOT_COMPILED.update(why_not)
