"""FPS/1 primitives in pure Python: the reference oracle for ``canonkit.fps._primitives``.

Deliberately simple: bit-level work goes through ``int.from_bytes`` (the payload as one
big MSB-first integer) and ``bytes.translate``; nothing is optimised. Both backends run
the checks in FPS.md's order: arguments -> level -> range -> alignment. With ``out=``
the result is written into the caller's buffer (which must have exactly the result's
size; checked last, since the size is only known then) and the byte count is returned.
``out`` may overlap the inputs: the result is computed in full before it is written.
"""
from __future__ import annotations

import hashlib
import operator
from typing import TYPE_CHECKING, Any, overload

from ..errors import (
    FPSArgumentError,
    FPSArityError,
    FPSLevelError,
    FPSMisalignedError,
    FPSRangeError,
)

if TYPE_CHECKING:  # typeshed's names for "any object with the buffer protocol"
    from typing import SupportsIndex

    from _typeshed import ReadableBuffer, WriteableBuffer

__all__ = ["CID_PREFIX", "LEVELS", "cid_sha256", "cid_sha256_digest", "cid_sha256_hex",
           "concat", "reverse", "slice", "splice"]

# level -> unit size in bits (FPS.md §1)
LEVELS = {"bit": 1, "byte": 8, "word": 16, "long": 32}
CID_PREFIX = b"CAS:OBJ\x00"
_LIMIT = 1 << 64

# byte -> the byte with its 8 bits in reverse order
_BIT_REVERSED = bytes(int(f"{b:08b}"[::-1], 2) for b in range(256))


def _buffer(value: Any, name: str) -> memoryview:
    """``value`` as a flat read-only byte view (any C-contiguous buffer, no copy)."""
    if isinstance(value, str):
        raise FPSArgumentError(f"{name} must be a bytes-like object, not str", detail=name)
    try:
        view = memoryview(value)
    except TypeError:
        raise FPSArgumentError(
            f"{name} must be a bytes-like object, not {type(value).__name__}", detail=name
        ) from None
    if not view.c_contiguous:
        raise FPSArgumentError(f"{name} must be a C-contiguous buffer", detail=name)
    return view.cast("B") if view.format != "B" or view.ndim != 1 else view


def _out_buffer(out: Any) -> memoryview | None:
    if out is None:
        return None
    view = _buffer(out, "out")
    if view.readonly:
        raise FPSArgumentError("out must be a writable buffer", detail="out")
    return view


def _count(value: Any, name: str) -> int:
    """An offset or length: an integer 0 <= v < 2**64 (bool is not an integer here)."""
    if isinstance(value, bool):
        raise FPSArgumentError(f"{name} must be an integer, not bool", detail=name)
    try:
        number = operator.index(value)
    except TypeError:
        raise FPSArgumentError(
            f"{name} must be an integer, not {type(value).__name__}", detail=name
        ) from None
    if not 0 <= number < _LIMIT:
        raise FPSArgumentError(f"{name} must be in 0..2**64-1, got {number}", detail=name)
    return number


def _unit_bits(level: Any) -> int:
    if not isinstance(level, str) or level not in LEVELS:
        raise FPSLevelError(f"unknown level {level!r} (expected bit, byte, word or long)",
                            detail=level if isinstance(level, str) else None)
    return LEVELS[level]


def _check_range(offset: int, length: int, units: int) -> None:
    if offset + length > units:
        raise FPSRangeError(
            f"units {offset}..{offset + length} exceed the input's {units} units",
            offset=offset, detail="range",
        )


def _check_whole_bytes(length: int, bits: int) -> None:
    if (length * bits) % 8:
        raise FPSMisalignedError(
            f"length {length} x {bits} bits is not a whole number of bytes", detail="length"
        )


def _span(view: memoryview, offset: int, length: int, level: Any) -> tuple[int, int, int]:
    """(input bits, first bit, bit width) of units ``[offset, offset + length)`` at
    ``level``, after the level, range and alignment checks (in that order)."""
    bits = _unit_bits(level)
    total_bits = view.nbytes * 8
    _check_range(offset, length, total_bits // bits)
    _check_whole_bytes(length, bits)
    return total_bits, offset * bits, length * bits


def _deliver(result: bytes, out: memoryview | None) -> bytes | int:
    if out is None:
        return result
    if out.nbytes != len(result):
        raise FPSArgumentError(
            f"out has {out.nbytes} bytes, the result has {len(result)}", detail="out"
        )
    out[:] = result
    return len(result)


def _as_int(view: memoryview) -> int:
    return int.from_bytes(view, "big")


@overload
def slice(data: ReadableBuffer, offset: SupportsIndex, length: SupportsIndex,
          level: str = "byte", *, out: None = None) -> bytes: ...
@overload
def slice(data: ReadableBuffer, offset: SupportsIndex, length: SupportsIndex,
          level: str = "byte", *, out: WriteableBuffer) -> int: ...


def slice(data: Any, offset: Any, length: Any, level: Any = "byte", *,
          out: Any = None) -> bytes | int:
    """Units ``[offset, offset + length)`` of ``data``."""
    view = _buffer(data, "data")
    offset = _count(offset, "offset")
    length = _count(length, "length")
    target = _out_buffer(out)
    total_bits, start, width = _span(view, offset, length, level)
    value = (_as_int(view) >> (total_bits - start - width)) & ((1 << width) - 1)
    return _deliver(value.to_bytes(width // 8, "big"), target)


@overload
def concat(inputs: list[ReadableBuffer] | tuple[ReadableBuffer, ...], *,
           out: None = None) -> bytes: ...
@overload
def concat(inputs: list[ReadableBuffer] | tuple[ReadableBuffer, ...], *,
           out: WriteableBuffer) -> int: ...


def concat(inputs: Any, *, out: Any = None) -> bytes | int:
    """The byte concatenation of ``inputs`` (a list or tuple of buffers) in order."""
    if not isinstance(inputs, (list, tuple)):
        raise FPSArgumentError(
            f"inputs must be a list or tuple, not {type(inputs).__name__}", detail="inputs"
        )
    views = [_buffer(item, f"inputs[{i}]") for i, item in enumerate(inputs)]
    target = _out_buffer(out)
    if not views:
        raise FPSArityError("concat needs at least one input", detail="inputs")
    return _deliver(b"".join(bytes(v) for v in views), target)


@overload
def reverse(data: ReadableBuffer, level: str, *, out: None = None) -> bytes: ...
@overload
def reverse(data: ReadableBuffer, level: str, *, out: WriteableBuffer) -> int: ...


def reverse(data: Any, level: Any = None, *, out: Any = None) -> bytes | int:
    """``data`` with the order of its units reversed (``level`` is required)."""
    view = _buffer(data, "data")
    target = _out_buffer(out)
    bits = _unit_bits(level)
    if (view.nbytes * 8) % bits:
        raise FPSMisalignedError(
            f"input of {view.nbytes} bytes is not a whole number of {level} units",
            detail="data",
        )
    raw = bytes(view)
    if bits == 1:
        result = raw[::-1].translate(_BIT_REVERSED)
    else:
        size = bits // 8
        units = [raw[i:i + size] for i in range(0, len(raw), size)]
        result = b"".join(reversed(units))
    return _deliver(result, target)


@overload
def splice(data: ReadableBuffer, offset: SupportsIndex, length: SupportsIndex,
           insert: ReadableBuffer, level: str = "byte", *, out: None = None) -> bytes: ...
@overload
def splice(data: ReadableBuffer, offset: SupportsIndex, length: SupportsIndex,
           insert: ReadableBuffer, level: str = "byte", *, out: WriteableBuffer) -> int: ...


def splice(data: Any, offset: Any, length: Any, insert: Any, level: Any = "byte", *,
           out: Any = None) -> bytes | int:
    """``data[0:offset] ++ insert ++ data[offset+length:]`` in units of ``level``."""
    view = _buffer(data, "data")
    offset = _count(offset, "offset")
    length = _count(length, "length")
    insert_view = _buffer(insert, "insert")
    target = _out_buffer(out)
    total_bits, start, width = _span(view, offset, length, level)
    tail_bits = total_bits - start - width
    value = _as_int(view)
    head = value >> (total_bits - start)
    tail = value & ((1 << tail_bits) - 1)
    insert_bits = insert_view.nbytes * 8
    result = (head << (insert_bits + tail_bits)) | (_as_int(insert_view) << tail_bits) | tail
    return _deliver(result.to_bytes((start + insert_bits + tail_bits) // 8, "big"), target)


def _cid_hash(data: Any) -> Any:
    view = _buffer(data, "data")
    digest = hashlib.sha256(CID_PREFIX)
    digest.update(view)
    return digest


def cid_sha256_hex(data: ReadableBuffer) -> str:
    """The content ID as FPS.md and the manifests write it: lowercase hex of
    SHA-256(``b"CAS:OBJ\\x00" || data``), hashed incrementally."""
    return str(_cid_hash(data).hexdigest())


def cid_sha256_digest(data: ReadableBuffer) -> bytes:
    """The content ID's 32 raw bytes: SHA-256(``b"CAS:OBJ\\x00" || data``)."""
    return bytes(_cid_hash(data).digest())


cid_sha256 = cid_sha256_hex  # the FPS.md name; returns hex

