"""canonkit: strict deterministic encoding, content addressing and Merkle verification.

Capabilities live in their own modules (``canonkit.cbor``, ``canonkit.fps``,
``canonkit.astp``, ``canonkit.objects``, ``canonkit.reverify``); importing this package
stays cheap and imports none of them.
"""
from __future__ import annotations

import importlib

from . import errors
from .errors import CanonkitError

__version__ = "0.1.0"
__all__ = ["CAPABILITIES", "CanonkitError", "__version__", "backend", "errors"]

# capability -> public facade module; each facade picks its backend through _backend.load
CAPABILITIES = {"cbor": "canonkit.cbor", "fps": "canonkit.fps", "astp": "canonkit.astp",
                "store": "canonkit.store"}


def backend() -> dict[str, str]:
    """Which backend each compiled capability uses: ``{"cbor": "compiled" | "python", ...}``.

    Imports the facades it reports on; a capability whose facade does not exist yet is
    left out.
    """
    from . import _backend

    for module in CAPABILITIES.values():
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
    return dict(_backend.LIVE)
