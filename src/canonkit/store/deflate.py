"""DEFLATE physical forms: standard zlib streams (RFC 1950), decoded strictly.

Any zlib reads what canonkit writes. The implementation is chosen by measurement
(``bench/deflate_choice.py``; docs/store.md has the table): python-isal's ``isal_zlib``
compresses several times faster than the standard library's ``zlib`` at a similar ratio
and decodes faster too. When ``isal`` is not installed (it is the ``fast-deflate`` extra),
the standard library serves; the bytes written differ, the logical bytes never do.

Strictness (STORE.md §6): a stream with a preset dictionary, with bytes after its end, or
whose decoded length differs from the declared logical length is corrupt. Memory follows
what the stream really decodes to, never the length it declares: a large object is
checked a small buffer at a time (its output hashed as it comes) before one buffer of the
proven length is filled, and fsck never holds more than that small buffer (``stream``).
"""
from __future__ import annotations

import zlib as _stdlib_zlib
from collections.abc import Callable
from types import ModuleType
from typing import Any, NamedTuple, TypeVar

from blake3 import blake3

from ..errors import CorruptObjectError

__all__ = ["IMPLEMENTATION", "LEVEL", "Inflated", "compress", "inflate", "inlinable", "load",
           "stream"]


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


SMALL = 1 << 20   # declared lengths up to this are inflated in one call
STEP = 1 << 16    # output bytes per step when streaming


def _header(payload: Any, base: int) -> memoryview:
    view = memoryview(payload).cast("B")
    if len(view) < 2:
        raise _corrupt("deflate_invalid", base + len(view), "zlib header truncated")
    cmf, flg = view[0], view[1]
    if cmf & 0x0F != 8 or cmf >> 4 > 7 or (cmf << 8 | flg) % 31:
        raise _corrupt("deflate_invalid", base, "not a zlib stream header")
    if flg & 0x20:
        raise _corrupt("deflate_invalid", base + 1, "zlib stream uses a preset dictionary")
    return view


def _verify(digest: bytes | None, got: bytes, base: int) -> None:
    if digest is not None and got != digest:
        raise _corrupt("digest_mismatch", base, "BLAKE3 of the logical bytes differs from "
                                                "the object's digest")


def _ending(decoder: Any, view: memoryview, produced: int, logical: int, base: int) -> None:
    """The checks after the last output: the stream ended, nothing follows it, and it
    gave exactly the declared length."""
    if not decoder.eof:
        raise _corrupt("deflate_invalid", base + len(view), "zlib stream ends early")
    if decoder.unused_data:
        at = len(view) - len(decoder.unused_data)
        raise _corrupt("trailing_bytes", base + at, f"{len(decoder.unused_data)} bytes after "
                                                    f"the end of the zlib stream")
    if produced != logical:
        raise _corrupt("length_mismatch", base, f"zlib stream decodes to {produced} bytes, "
                                                f"the header says {logical}")


def stream(payload: Any, logical: int, base: int = 0, digest: bytes | None = None, *,
           module: ModuleType | None = None,
           keep: Callable[[int], bool] | None = None) -> Inflated:
    """Check the zlib stream ``payload`` as ``inflate`` does — strictly, and against
    ``digest`` — while holding at most ``STEP`` bytes of its output at a time: the output
    goes into BLAKE3 as it is produced. ``keep(first byte)`` says whether to keep the
    output too (fsck keeps what may be a structured object, to follow its references).
    Never produces more than ``logical + 1`` bytes, however the stream expands."""
    zlib = _ZLIB if module is None else module
    view = _header(payload, base)
    decoder = zlib.decompressobj()
    hasher = blake3()
    kept: bytearray | None = None
    first: int | None = None
    produced = 0
    data: Any = view
    while True:
        try:  # the cap keeps the total at logical + 1, as one bounded call would
            chunk = decoder.decompress(data, min(STEP, logical + 1 - produced))
        except zlib.error as exc:
            raise _corrupt("deflate_invalid", base,
                           f"zlib stream does not decode ({exc})") from None
        if chunk:
            if first is None:
                first = chunk[0]
                kept = bytearray() if keep is not None and keep(first) else None
            produced += len(chunk)
            if produced > logical:
                raise _corrupt("length_mismatch", base, f"zlib stream decodes to more than "
                                                        f"the declared {logical} bytes")
            hasher.update(chunk)
            if kept is not None:
                kept += chunk
        data = decoder.unconsumed_tail
        if decoder.eof or (not chunk and not data):
            break
    _ending(decoder, view, produced, logical, base)
    _verify(digest, hasher.digest(), base)
    return Inflated(produced, first, kept)


class Inflated(NamedTuple):
    """What ``stream`` keeps of a checked object: its length, its first byte (None when
    empty) and its bytes when they were asked for (else None)."""

    size: int
    first: int | None
    data: bytearray | None


_Inflater = TypeVar("_Inflater", bound=Callable[..., Any])


def inlinable(fn: _Inflater) -> _Inflater:
    """Mark ``fn`` as an inflater that, for a declared length of at most ``SMALL`` bytes,
    returns exactly what ``inflate`` returns (and raises what it raises). The compiled
    store readers then inflate such objects themselves, in C with zlib, and call ``fn``
    only for larger ones: no Python per object in a batch of small DEFLATE objects."""
    fn.inline_limit = SMALL  # type: ignore[attr-defined]
    return fn


@inlinable
def inflate(payload: Any, logical: int, base: int = 0, digest: bytes | None = None, *,
            module: ModuleType | None = None) -> bytes:
    """The ``logical`` bytes coded by the zlib stream ``payload``, checked strictly and,
    with ``digest``, against their BLAKE3 (``digest_mismatch`` at ``base``); offsets in
    errors are ``base`` + the offset in ``payload``.

    Memory follows the stream, never the declared length: up to ``SMALL`` declared bytes
    are inflated in one bounded call; a larger object is first checked by ``stream`` (its
    output hashed as it comes, a small buffer at a time) and only then, its length proven,
    inflated into one buffer of exactly that size."""
    zlib = _ZLIB if module is None else module
    view = _header(payload, base)
    if logical > SMALL:
        private = bytes(view)  # the compressed bytes, so both passes read the same ones
        stream(private, logical, base, digest, module=zlib)
        out = zlib.decompress(private, 15, logical)
        if len(out) != logical:  # a zlib that disagrees with itself: still never wrong
            raise _corrupt("length_mismatch", base, f"zlib stream decodes to {len(out)} "
                                                    f"bytes, the header says {logical}")
        return bytes(out)
    decoder = zlib.decompressobj()
    try:  # never more than one byte more than declared
        out = decoder.decompress(view, logical + 1)
    except zlib.error as exc:
        raise _corrupt("deflate_invalid", base, f"zlib stream does not decode ({exc})") from None
    if len(out) > logical:
        raise _corrupt("length_mismatch", base, f"zlib stream decodes to more than the "
                                                f"declared {logical} bytes")
    _ending(decoder, view, len(out), logical, base)
    if digest is not None:
        _verify(digest, blake3(out).digest(), base)
    return bytes(out)
