"""canonkit: strict deterministic encoding, content addressing and Merkle verification.

Capabilities live in their own modules (``canonkit.cbor``, ``canonkit.fps``,
``canonkit.astp``, ``canonkit.objects``, ``canonkit.reverify``, ...); importing this
package stays cheap and imports none of them: ``canonkit.cbor`` and the others are
imported on first attribute access (or ``from canonkit import cbor``).
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Literal

from . import errors
from ._capabilities import KERNELS as _KERNELS
from ._version import __version__
from .errors import CanonkitError

if TYPE_CHECKING:  # imported on first access at run time (__getattr__)
    from . import (
        astp, cbor, conformance, dag_json, engines, fps, manifests, objects, reverify, store,
    )

__all__ = [
    "CAPABILITIES", "BackendName", "CanonkitError", "__version__", "astp", "backend", "cbor",
    "conformance", "dag_json", "engines", "errors", "fps", "manifests", "objects", "reverify",
    "store",
]

#: the backend serving a capability: its compiled extension, or its pure-Python twin
BackendName = Literal["compiled", "python"]

#: capability -> public facade module (the capabilities of canonkit._capabilities); each
#: picks its kernels through canonkit._backend.select
CAPABILITIES = {name: f"canonkit.{name}" for name in _KERNELS}

_LAZY = frozenset({"astp", "cbor", "conformance", "dag_json", "engines", "fps", "manifests",
                   "objects", "reverify", "store"})


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def backend() -> dict[str, BackendName]:
    """Which backend each compiled capability uses: ``{"cbor": "compiled" | "python", ...}``.

    Imports the facades it reports on."""
    from . import _backend

    for module in CAPABILITIES.values():
        importlib.import_module(module)
    return {name: _backend.LIVE[name] for name in CAPABILITIES}
