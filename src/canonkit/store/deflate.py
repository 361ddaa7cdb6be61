"""DEFLATE physical forms: standard zlib streams (RFC 1950), decoded strictly.

Any zlib reads what canonkit writes. The implementation is chosen by measurement
(``bench/deflate_choice.py``; docs/store.md has the table): python-isal's ``isal_zlib``
compresses several times faster than the standard library's ``zlib`` at a similar ratio
and decodes faster too. When ``isal`` is not installed (it is the ``fast-deflate`` extra),
the standard library serves; the bytes written differ, the logical bytes never do.

Strictness (STORE.md §6): a stream with a preset dictionary, with bytes after its end, or
whose decoded length differs from the declared logical length is corrupt. Decoding never
allocates more than the declared length plus one byte, however the stream expands.
"""
from __future__ import annotations

import sys
import zlib as _stdlib_zlib
from types import ModuleType
from typing import Any

from ..errors import CorruptObjectError

__all__ = ["IMPLEMENTATION", "LEVEL", "compress", "inflate", "load"]


def load(name: str) -> tuple[ModuleType, int]:
    """``(zlib-compatible module, compression level)`` for ``name`` in ``isal``,
    ``zlib-ng``, ``zlib``; ImportError when that package is absent."""
    if name == "isal":
        from isal import isal_zlib

        return isal_zlib, 2  # isal's levels are 0-3; 2 is its default (measured: bench)
    if name == "zlib-ng":
        from zlib_ng import zlib_ng

        return zlib_ng, 6
    if name == "zlib":
        return _stdlib_zlib, 6
    raise ValueError(f"unknown DEFLATE implementation {name!r}")


def _choose() -> tuple[str, ModuleType, int]:
    for name in ("isal", "zlib"):
        try:
            module, level = load(name)
        except ImportError:
            continue
        return name, module, level
    raise AssertionError("unreachable: the standard library's zlib is always present")


IMPLEMENTATION, _ZLIB, LEVEL = _choose()


def compress(data: Any) -> bytes:
    """``data`` as one zlib stream (no preset dictionary)."""
    return bytes(_ZLIB.compress(data, LEVEL))


def _corrupt(code: str, offset: int, what: str) -> CorruptObjectError:
    return CorruptObjectError(f"{what} at offset {offset}", offset=offset, detail=code)


def inflate(payload: Any, logical: int, base: int = 0, module: ModuleType | None = None
            ) -> bytes:
    """The ``logical`` bytes coded by the zlib stream ``payload``; offsets in errors are
    ``base`` + the offset in ``payload``."""
    zlib = _ZLIB if module is None else module
    view = memoryview(payload).cast("B")
    if len(view) < 2:
        raise _corrupt("deflate_invalid", base + len(view), "zlib header truncated")
    cmf, flg = view[0], view[1]
    if cmf & 0x0F != 8 or cmf >> 4 > 7 or (cmf << 8 | flg) % 31:
        raise _corrupt("deflate_invalid", base, "not a zlib stream header")
    if flg & 0x20:
        raise _corrupt("deflate_invalid", base + 1, "zlib stream uses a preset dictionary")
    decoder = zlib.decompressobj()
    try:  # never more than one byte more than declared (a huge declared length is only a
        # bound: the stream itself limits what is produced)
        out = decoder.decompress(view, min(logical + 1, sys.maxsize))
    except zlib.error as exc:
        raise _corrupt("deflate_invalid", base, f"zlib stream does not decode ({exc})") from None
    if len(out) > logical:
        raise _corrupt("length_mismatch", base, f"zlib stream decodes to more than the "
                                                f"declared {logical} bytes")
    if not decoder.eof:
        raise _corrupt("deflate_invalid", base + len(view), "zlib stream ends early")
    if decoder.unused_data:
        at = len(view) - len(decoder.unused_data)
        raise _corrupt("trailing_bytes", base + at, f"{len(decoder.unused_data)} bytes after "
                                                    f"the end of the zlib stream")
    if len(out) != logical:
        raise _corrupt("length_mismatch", base, f"zlib stream decodes to {len(out)} bytes, "
                                                f"the header says {logical}")
    return bytes(out)
