"""FPS/1 primitives (FPS.md): ``slice``, ``concat``, ``reverse``, ``splice`` over any
buffer, MSB-first bit order, levels bit/byte/word/long, and the content ID
(``cid_sha256_hex`` — also under its FPS.md name ``cid_sha256`` — and ``cid_sha256_digest``).

Each operation returns ``bytes``; with ``out=`` (a writable C-contiguous buffer of exactly
the result's size) it writes there instead and returns the number of bytes written (the
overloads say so to type checkers). ``reverse(buf, level, out=buf)`` reverses in place.
Refusals raise the ``FPSError`` subclass of ``canonkit.errors`` whose ``code`` is the
FPS.md ``ERR_*`` code. The compiled backend ``canonkit.fps._primitives`` serves when built, else the
pure-Python twin ``canonkit.fps._primitives_py``; both behave identically.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .. import _backend

if TYPE_CHECKING:
    from ._primitives_py import (
        CID_PREFIX,
        LEVELS,
        cid_sha256,
        cid_sha256_digest,
        cid_sha256_hex,
        concat,
        reverse,
        slice,
        splice,
    )
else:
    _impl = _backend.select("fps", compiled="canonkit.fps._primitives",
                            twin="canonkit.fps._primitives_py")
    CID_PREFIX = _impl.CID_PREFIX
    LEVELS = _impl.LEVELS
    slice = _impl.slice
    concat = _impl.concat
    reverse = _impl.reverse
    splice = _impl.splice
    cid_sha256_hex = _impl.cid_sha256_hex
    cid_sha256_digest = _impl.cid_sha256_digest
    cid_sha256 = cid_sha256_hex  # FPS.md's name for the hex content ID

__all__ = ["CID_PREFIX", "LEVELS", "cid_sha256", "cid_sha256_digest", "cid_sha256_hex",
           "concat", "reverse", "slice", "splice"]
