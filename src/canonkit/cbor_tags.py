"""Opt-in handlers for the registered CBOR tags Python users meet most.

The same module as ``canonkit.cbor.tags``, where the handlers live (see its docstring):
this name is kept importable and re-exports every public name.
"""
from __future__ import annotations

from .cbor.tags import *  # noqa: F403
from .cbor.tags import __all__ as __all__
