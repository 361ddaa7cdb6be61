"""The §2.1 field encoding of ASTP.md, written once: one field, a field list. Pure Python
that both backends share (its type checks and kind dispatch are not what Cython speeds
up); each backend's hasher re-exports ``encode_field`` and ``encode_fields`` and hashes
their bytes in ``hash_fields`` with its own SHA3-256.
"""
from __future__ import annotations

import math
import struct
import unicodedata
from collections.abc import Iterable
from typing import Any

from canonkit.astp._py.common import (
    U32,
    U64,
    hash_bytes,
    short_repr,
    split_kind,
    timestamp_ms,
    uuid_bytes,
)
from canonkit.errors import InvalidFieldError, InvalidHashError

__all__ = ["encode_field", "encode_fields"]


def _enc_string(value: Any) -> bytes:
    if not isinstance(value, str):
        raise InvalidFieldError(f"STRING needs text, got {type(value).__name__}")
    try:
        data = unicodedata.normalize("NFC", value).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidFieldError(f"STRING is not encodable as UTF-8: {exc.reason}") from None
    if len(data) >= U32:
        raise InvalidFieldError("STRING longer than 2^32-1 bytes")
    return b"\x02" + struct.pack(">I", len(data)) + data


def _enc_bytes(value: Any) -> bytes:
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise InvalidFieldError(f"BYTES needs a bytes-like value, got {type(value).__name__}")
    data = bytes(value)
    if len(data) >= U32:
        raise InvalidFieldError("BYTES longer than 2^32-1 bytes")
    return b"\x01" + struct.pack(">I", len(data)) + data


def _enc_uint(value: Any) -> bytes:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidFieldError(f"UINT needs an integer, got {type(value).__name__}")
    if not 0 <= value < U64:
        raise InvalidFieldError(f"UINT out of range [0, 2^64): {short_repr(value)}")
    return b"\x03" + struct.pack(">Q", value)


def _enc_float(value: Any) -> bytes:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidFieldError(f"FLOAT needs a number, got {type(value).__name__}")
    try:
        x = float(value)
    except OverflowError:
        raise InvalidFieldError("FLOAT: integer too large for binary64") from None
    if math.isnan(x) or math.isinf(x):
        raise InvalidFieldError(f"FLOAT refuses {x!r}")
    if x == 0.0:
        x = 0.0  # -0 normalizes to +0
    return b"\x09" + struct.pack(">d", x)


def _enc_bool(value: Any) -> bytes:
    if not isinstance(value, bool):
        raise InvalidFieldError(f"BOOL needs a boolean, got {type(value).__name__}")
    return b"\x08\x01" if value else b"\x08\x00"


def _enc_one(base: str, value: Any) -> bytes:
    if base == "STRING":
        return _enc_string(value)
    if base == "HASH":
        try:
            return b"\x06" + hash_bytes(value)
        except InvalidHashError as exc:
            raise InvalidHashError(f"HASH field: {exc}", detail=exc.detail) from None
    if base == "UUID":
        return b"\x04" + uuid_bytes(value)
    if base == "UINT":
        return _enc_uint(value)
    if base == "TIMESTAMP":
        return b"\x05" + struct.pack(">Q", timestamp_ms(value))
    if base == "BYTES":
        return _enc_bytes(value)
    if base == "BOOL":
        return _enc_bool(value)
    if base == "FLOAT":
        return _enc_float(value)
    raise InvalidFieldError(f"kind {base!r} cannot carry a value")


def encode_field(kind: str, value: Any) -> bytes:
    """One field in the §2.1 encoding: tag byte then payload.

    ``kind`` is a type name of ASTP.md §2.1 (``"UINT"``), optionally nullable
    (``"HASH|NULL"``), or a list with its item kind (``"LIST(HASH)"``). ``"NULL"`` takes
    ``None``. ``None`` for a kind not marked nullable is refused.
    """
    base, nullable, item = split_kind(kind)
    if base == "NULL":
        if value is not None:
            raise InvalidFieldError(f"NULL takes None, got {type(value).__name__}")
        return b"\x00"
    if value is None:
        if nullable:
            return b"\x00"
        raise InvalidFieldError(f"None for non-nullable field kind {kind!r}")
    if base == "LIST":
        if isinstance(value, (str, bytes, bytearray, memoryview)) or not isinstance(value, (list, tuple)):
            raise InvalidFieldError(f"LIST needs a list or tuple, got {type(value).__name__}")
        if len(value) >= U32:
            raise InvalidFieldError("LIST longer than 2^32-1 items")
        parts = [b"\x07", struct.pack(">I", len(value))]
        for element in value:
            if element is None:
                raise InvalidFieldError("LIST items must be non-null")
            parts.append(_enc_one(item, element))  # type: ignore[arg-type]
        return b"".join(parts)
    return _enc_one(base, value)


def encode_fields(prefix: bytes, fields: Iterable[tuple[str, Any]]) -> bytes:
    """``prefix ‖ enc(f1) ‖ … ‖ enc(fn)``; ``fields`` is a sequence of (kind, value)."""
    parts = [bytes(prefix)]
    for kind, value in fields:
        parts.append(encode_field(kind, value))
    return b"".join(parts)
