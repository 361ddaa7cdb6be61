"""FPS/1 primitives (FPS.md): ``slice``, ``concat``, ``reverse``, ``splice`` over any
buffer, MSB-first bit order, levels bit/byte/word/long, and ``cid_sha256``.

Each operation returns ``bytes``; with ``out=`` (a writable C-contiguous buffer of exactly
the result's size) it writes there instead and returns the number of bytes written.
Refusals raise the ``FPSError`` subclass of ``canonkit.errors`` whose ``code`` is the
FPS.md ``ERR_*`` code. The compiled backend ``canonkit._fps`` serves when built, else the
pure-Python twin ``canonkit._fps_py``; both behave identically.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from . import _backend

if TYPE_CHECKING:
    from ._fps_py import CID_PREFIX, LEVELS, cid_sha256, concat, reverse, slice, splice
else:
    _impl = _backend.load("fps")
    CID_PREFIX = _impl.CID_PREFIX
    LEVELS = _impl.LEVELS
    slice = _impl.slice
    concat = _impl.concat
    reverse = _impl.reverse
    splice = _impl.splice
    cid_sha256 = _impl.cid_sha256

__all__ = ["CID_PREFIX", "LEVELS", "cid_sha256", "concat", "reverse", "slice", "splice"]
