"""Opt-in handlers for the registered CBOR tags Python users meet most.

``canonkit.cbor`` maps only CBOR's own data model; these handlers add the common Python
types as tagged items, each with one canonical form, and refuse a value that has none:

| Python value | tag | content written | refused on encode |
|---|---|---|---|
| aware `datetime.datetime` | 1 (epoch time) | int seconds when whole; else float seconds, if that float gives back the same microsecond | naive datetimes; instants whose float seconds do not give back the microsecond |
| `uuid.UUID` | 37 | its 16 bytes | — |
| `decimal.Decimal` | 4 (decimal fraction) | `[exponent, mantissa]` exactly as the Decimal holds them (`1.0` → `[-1, 10]`, `1.00` → `[-2, 100]`) | NaN, ±Infinity, negative zero |
| `set`, `frozenset` | 258 (finite set) | array in bytewise order of the elements' encodings | elements not all `int`, all `str` or all `bytes` (only those encode alike in every profile, so only their order is fixed) |

Encode with ``cbor.encode(value, default=cbor_tags.default)``. ``default`` returns the
tagged form of a value of these types and any other value unchanged, which the encoder
then refuses with ``unsupported_type``. dag-cbor has no tags other than links, so there
the tagged forms fail with ``encode_unsupported_item``.

Decoding: ``DECODERS`` maps each tag number (0, 1, 4, 37, 258) to a function of the
tag's content, and ``tag_hook(tag)`` applies it to a ``Tag`` (other tags come back
unchanged). Each decoder accepts only content that encodes back to the same bytes,
except tag 0 (an RFC 3339 date/time string), read for interoperability and written back
as tag 1. They raise ``ValueError`` for content they refuse.
"""
from __future__ import annotations

import datetime as _dt
import uuid
from collections.abc import Callable
from decimal import Decimal
from fractions import Fraction
from typing import Any

from ._types import Tag
from .._instant import instant_from_text
from ..errors import EncodeUnsupportedItemError

__all__ = ["DECODERS", "ENCODERS", "decode_datetime_text", "decode_decimal",
           "decode_epoch", "decode_set", "decode_uuid", "default", "encode_datetime",
           "encode_decimal", "encode_set", "encode_uuid", "tag_hook"]

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_MICROSECOND = _dt.timedelta(microseconds=1)
_US = 10**6


# --- encoding -----------------------------------------------------------------------

def encode_datetime(value: _dt.datetime) -> Tag:
    """Tag 1: whole seconds as an int, otherwise float seconds that round to the same
    microsecond."""
    if value.tzinfo is None or value.utcoffset() is None:
        raise EncodeUnsupportedItemError(
            f"a naive datetime names no instant; give it a tzinfo: {value!r}")
    micros = (value - _EPOCH) // _MICROSECOND
    if micros % _US == 0:
        return Tag(1, micros // _US)
    seconds = micros / _US  # the correctly rounded quotient: one float per instant
    if round(Fraction(seconds) * _US) != micros:
        raise EncodeUnsupportedItemError(
            f"{value!r} has no float epoch time exact to the microsecond")
    return Tag(1, seconds)


def encode_uuid(value: uuid.UUID) -> Tag:
    """Tag 37: the UUID's 16 bytes."""
    return Tag(37, value.bytes)


def encode_decimal(value: Decimal) -> Tag:
    """Tag 4: ``[exponent, mantissa]`` of the Decimal as it is (no normalisation)."""
    sign, digits, exponent = value.as_tuple()
    if not isinstance(exponent, int):
        raise EncodeUnsupportedItemError(f"{value!r} has no decimal fraction form")
    mantissa = int("".join(map(str, digits)))
    if sign and mantissa == 0:
        raise EncodeUnsupportedItemError("negative zero has no decimal fraction form")
    return Tag(4, [exponent, -mantissa if sign else mantissa])


_SET_ELEMENT_TYPES = (int, str, bytes)


def _element_key(element: int | str | bytes) -> tuple[int, Any]:
    """The order of the elements' encodings: ints by major type (0, 1, then the core
    bignum tags 2 and 3) and argument; strings by length, then bytes."""
    if type(element) is int:
        if 0 <= element < 2**64:
            return (0, element)
        if -(2**64) <= element < 0:
            return (1, -1 - element)
        return (2, element) if element > 0 else (3, -1 - element)
    raw = element.encode("utf-8", "surrogatepass") if type(element) is str else element
    return (len(raw), raw)  # type: ignore[arg-type]


def encode_set(value: set[Any] | frozenset[Any]) -> Tag:
    """Tag 258: the elements in bytewise order of their encodings."""
    kinds = {type(element) for element in value}
    if len(kinds) > 1 or not kinds <= set(_SET_ELEMENT_TYPES):
        names = ", ".join(sorted(kind.__name__ for kind in kinds))
        raise EncodeUnsupportedItemError(
            f"a set is encoded only when its elements are all int, all str or all bytes "
            f"(got {names})")
    return Tag(258, sorted(value, key=_element_key))


ENCODERS: dict[type, Callable[[Any], Tag]] = {
    _dt.datetime: encode_datetime,
    uuid.UUID: encode_uuid,
    Decimal: encode_decimal,
    set: encode_set,
    frozenset: encode_set,
}


def default(value: Any) -> Any:
    """A ``default`` hook for ``cbor.encode``: the tagged form of a value of the table's
    types (subclasses included), anything else unchanged."""
    handler = ENCODERS.get(type(value))
    if handler is None:
        for cls, candidate in ENCODERS.items():
            if isinstance(value, cls):
                handler = candidate
                break
        else:
            return value
    return handler(value)


# --- decoding -----------------------------------------------------------------------

def decode_epoch(content: Any) -> _dt.datetime:
    """Tag 1 content (int or float seconds) as an aware UTC datetime."""
    if type(content) not in (int, float) or content != content or \
            abs(content) == float("inf"):
        raise ValueError(f"tag 1 content must be an int or a finite float, got {content!r}")
    try:
        result = _EPOCH + _dt.timedelta(microseconds=round(Fraction(content) * _US))
    except OverflowError:
        raise ValueError(f"epoch time {content!r} is outside datetime's range") from None
    if encode_datetime(result).value != content or type(content) is float and \
            content.is_integer():
        raise ValueError(f"epoch time {content!r} is not in its canonical form")
    return result


def decode_datetime_text(content: Any) -> _dt.datetime:
    """Tag 0 content (an RFC 3339 date/time with an offset) as an aware datetime."""
    if type(content) is not str:
        raise ValueError(f"tag 0 content must be text, got {type(content).__name__}")
    result = instant_from_text(content)
    if result.tzinfo is None:
        raise ValueError(f"tag 0 date/time has no offset: {content!r}")
    return result


def decode_uuid(content: Any) -> uuid.UUID:
    """Tag 37 content (16 bytes) as a UUID."""
    if type(content) is not bytes or len(content) != 16:
        raise ValueError("tag 37 content must be 16 bytes")
    return uuid.UUID(bytes=content)


def decode_decimal(content: Any) -> Decimal:
    """Tag 4 content ``[exponent, mantissa]`` (two ints) as a Decimal."""
    if not (type(content) in (list, tuple) and len(content) == 2
            and all(type(part) is int for part in content)):
        raise ValueError("tag 4 content must be [exponent, mantissa] of two ints")
    exponent, mantissa = content
    digits = tuple(int(digit) for digit in str(abs(mantissa)))
    return Decimal((int(mantissa < 0), digits, exponent))


def decode_set(content: Any) -> frozenset[Any]:
    """Tag 258 content (an array of unique, ordered elements) as a frozenset."""
    if type(content) not in (list, tuple):
        raise ValueError("tag 258 content must be an array")
    result = frozenset(content)
    if len(result) != len(content) or list(encode_set(result).value) != list(content):
        raise ValueError("tag 258 elements are not unique, of one type and in order")
    return result


DECODERS: dict[int, Callable[[Any], Any]] = {
    0: decode_datetime_text,
    1: decode_epoch,
    4: decode_decimal,
    37: decode_uuid,
    258: decode_set,
}


def tag_hook(tag: Tag) -> Any:
    """The Python value of a tag in ``DECODERS``; any other tag unchanged."""
    decoder = DECODERS.get(tag.number)
    return tag if decoder is None else decoder(tag.value)
