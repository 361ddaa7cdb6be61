"""Backend selection: the compiled ``canonkit._<name>`` if built, else the twin
``canonkit._<name>_py`` (the yarl/fastavro triple). ``CANONKIT_NO_EXTENSIONS=1`` ignores
compiled modules at run time. Each facade module calls ``load`` once at import.

A capability that falls back to its twin without being asked to is 10-30x slower, so the
first such fallback in a process emits one ``RuntimeWarning`` (naming the capability and
why); ``CANONKIT_NO_EXTENSIONS=1`` asks for the twins and silences it."""
from __future__ import annotations

import importlib
import os
import sys
import warnings
from types import ModuleType
from typing import Literal

from .errors import ExtensionFallbackWarning

NO_EXTENSIONS = os.environ.get("CANONKIT_NO_EXTENSIONS") == "1"

# capability -> "compiled" | "python"; filled as facades import
LIVE: dict[str, Literal["compiled", "python"]] = {}
# capability -> why the compiled module is not live (import error text or the knob)
WHY_NOT_COMPILED: dict[str, str] = {}
# the first unrequested fallback of the process has warned
_warned = False


def fall_back(name: str, why: str) -> None:
    """Record that capability ``name`` runs on its twin, and warn the first time this
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
        ExtensionFallbackWarning, stacklevel=3)


def load(name: str) -> ModuleType:
    """Return the live backend module for capability ``name`` and record the choice."""
    if NO_EXTENSIONS:
        WHY_NOT_COMPILED[name] = "CANONKIT_NO_EXTENSIONS=1"
        LIVE[name] = "python"
    else:
        try:
            module = importlib.import_module(f"canonkit._{name}")
        except ImportError as exc:
            fall_back(name, str(exc))
        else:
            LIVE[name] = "compiled"
            return module
    return importlib.import_module(f"canonkit._{name}_py")


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
