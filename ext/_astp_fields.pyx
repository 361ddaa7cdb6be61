"""Compiled ASTP field-encoding kernel: one field, a field list and its hash in the §2.1
encoding of ASTP.md (tag byte, payload).

Twin: ``canonkit._astp_fields_py`` (docs/astp-kernel-api.md); the differential tests keep
the two identical. The kind grammar and the UUID/instant conversions are shared pure Python
(``canonkit._astp_common``).
"""
import struct
import unicodedata

from canonkit._astp_common import U32, U64, short_repr, split_kind, timestamp_ms, uuid_bytes
from canonkit.errors import InvalidFieldError

include "astp_kernel.pxi"

__all__ = ["encode_field", "encode_fields", "hash_fields"]

_FLOAT_BE = struct.Struct(">d")


cdef bytes _enc_string(object value):
    if not isinstance(value, str):
        raise InvalidFieldError(f"STRING needs text, got {type(value).__name__}")
    try:
        data = unicodedata.normalize("NFC", value).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidFieldError(f"STRING is not encodable as UTF-8: {exc.reason}") from None
    if len(data) >= U32:
        raise InvalidFieldError("STRING longer than 2^32-1 bytes")
    return b"\x02" + _u32be(len(data)) + data


cdef bytes _enc_bytes(object value):
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise InvalidFieldError(f"BYTES needs a bytes-like value, got {type(value).__name__}")
    data = bytes(value)
    if len(data) >= U32:
        raise InvalidFieldError("BYTES longer than 2^32-1 bytes")
    return b"\x01" + _u32be(len(data)) + data


cdef bytes _enc_uint(object value):
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidFieldError(f"UINT needs an integer, got {type(value).__name__}")
    if not 0 <= value < U64:
        raise InvalidFieldError(f"UINT out of range [0, 2^64): {short_repr(value)}")
    return b"\x03" + _u64be(<unsigned long long>value)


cdef bytes _enc_float(object value):
    cdef double x
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidFieldError(f"FLOAT needs a number, got {type(value).__name__}")
    try:
        x = float(value)
    except OverflowError:
        raise InvalidFieldError("FLOAT: integer too large for binary64") from None
    if x != x or x == float("inf") or x == -float("inf"):
        raise InvalidFieldError(f"FLOAT refuses {x!r}")
    if x == 0.0:
        x = 0.0  # -0 normalizes to +0
    return b"\x09" + _FLOAT_BE.pack(x)


cdef bytes _enc_bool(object value):
    if not isinstance(value, bool):
        raise InvalidFieldError(f"BOOL needs a boolean, got {type(value).__name__}")
    return b"\x08\x01" if value else b"\x08\x00"


cdef bytes _enc_one(str base, object value):
    cdef uint8_t raw[33]
    if base == "STRING":
        return _enc_string(value)
    if base == "HASH":
        try:
            _parse_digest(value, raw + 1)
        except InvalidHashError as exc:
            raise InvalidHashError(f"HASH field: {exc}", detail=exc.detail) from None
        raw[0] = 0x06
        return PyBytes_FromStringAndSize(<char *>raw, 33)
    if base == "UUID":
        return b"\x04" + uuid_bytes(value)
    if base == "UINT":
        return _enc_uint(value)
    if base == "TIMESTAMP":
        return b"\x05" + _u64be(<unsigned long long>timestamp_ms(value))
    if base == "BYTES":
        return _enc_bytes(value)
    if base == "BOOL":
        return _enc_bool(value)
    if base == "FLOAT":
        return _enc_float(value)
    raise InvalidFieldError(f"kind {base!r} cannot carry a value")


def encode_field(kind, value) -> bytes:
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
        if (isinstance(value, (str, bytes, bytearray, memoryview))
                or not isinstance(value, (list, tuple))):
            raise InvalidFieldError(f"LIST needs a list or tuple, got {type(value).__name__}")
        if len(value) >= U32:
            raise InvalidFieldError("LIST longer than 2^32-1 items")
        parts = [b"\x07", _u32be(len(value))]
        for element in value:
            if element is None:
                raise InvalidFieldError("LIST items must be non-null")
            parts.append(_enc_one(item, element))
        return b"".join(parts)
    return _enc_one(base, value)


def encode_fields(prefix, fields) -> bytes:
    """``prefix ‖ enc(f1) ‖ … ‖ enc(fn)``; ``fields`` is a sequence of (kind, value)."""
    parts = [bytes(prefix)]
    for kind, value in fields:
        parts.append(encode_field(kind, value))
    return b"".join(parts)


def hash_fields(prefix, fields) -> bytes:
    """``H(encode_fields(prefix, fields))``, 32 raw bytes."""
    cdef bytes data = encode_fields(prefix, fields)
    cdef const uint8_t *p = <const uint8_t *>PyBytes_AS_STRING(data)
    cdef size_t n = <size_t>PyBytes_GET_SIZE(data)
    cdef uint8_t out[32]
    if n >= 4096:  # below this releasing the GIL costs more than it saves
        with nogil:
            ck_sha3_256(p, n, out)
    else:
        ck_sha3_256(p, n, out)
    return PyBytes_FromStringAndSize(<char *>out, 32)
