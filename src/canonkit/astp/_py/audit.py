"""ASTP audit kernel, pure-Python twin (the reference oracle of ``canonkit.astp._audit``):
§2.3 canonical JSON — RFC 8785 (JCS) after NFC normalization of every string — and the
§14 audit record v2 hash, whose two deltas are canonical JSON.

``canonical_json`` produces the canonical text, ``parse_canonical`` accepts stored text
only when it is already its own canonical form, ``audit_record_hash`` hashes a record's
stored fields and ``audit_record_digest`` gives that hash with the forward delta as read,
so a verifier reads each record once. Refusals raise ``InvalidFieldError`` naming the JSON
path of the offending value (or the record field). See docs/astp-kernel-api.md; the
differential tests hold the two backends to it.
"""
from __future__ import annotations

import json.encoder
import math
import unicodedata
from collections.abc import Callable, Mapping
from typing import Any

from canonkit.astp._py.common import AUDIT_FIELDS, CANONICAL_MAX_DEPTH, decimal_text
from canonkit.astp._py.hash import hash_fields
from canonkit._files import loads_json
from canonkit.errors import InvalidFieldError, JSONInputError

__all__ = ["audit_record_digest", "audit_record_hash", "canonical_json", "canonical_json_bytes",
           "es_number", "parse_canonical", "sealed_record"]

# json's own string encoder escapes exactly what §2.3 escapes: '"', '\\', the short forms
# \b \f \n \r \t and every other character below U+0020 as \u00xx (lowercase); the rest raw
_encode_string: Callable[[str], str] = json.encoder.encode_basestring


#: a JSON path, built only when a refusal names it: "$", or (parent path, key or index)
Path = Any


def _where(path: Path) -> str:
    parts = []
    while isinstance(path, tuple):
        path, step = path
        parts.append(f"[{step}]" if isinstance(step, int) else f".{step}")
    return str(path) + "".join(reversed(parts))


def _string(text: str, path: Path) -> str:
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidFieldError(
                f"canonical JSON: lone surrogate in string at {_where(path)}") from None
    return _encode_string(text)


def es_number(x: float) -> str:
    """ECMAScript ``Number::toString`` of a finite binary64 (RFC 8785 §3.2.2.3)."""
    if x == 0:
        return "0"
    sign = "-" if x < 0 else ""
    text = repr(abs(x))
    mantissa, _, exp = text.partition("e")
    whole, _, frac = mantissa.partition(".")
    digits = whole + frac
    point = len(whole) + (int(exp) if exp else 0)
    stripped = digits.lstrip("0")
    point -= len(digits) - len(stripped)
    digits = stripped.rstrip("0")
    k, n = len(digits), point  # value = 0.d1..dk × 10^n
    if k <= n <= 21:
        body = digits + "0" * (n - k)
    elif 0 < n <= 21:
        body = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        body = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        body = digits[0] + ("." + digits[1:] if k > 1 else "") + ("e+" if e >= 0 else "e-") + str(abs(e))
    return sign + body


def _emit(value: Any, path: Path, out: list[str], depth: int = 0) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        out.append(decimal_text(value))   # whatever its magnitude
    elif isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise InvalidFieldError(f"canonical JSON refuses {value!r} at {_where(path)}")
        out.append(es_number(value))
    elif isinstance(value, str):
        out.append(_string(unicodedata.normalize("NFC", value), path))
    elif isinstance(value, (list, tuple, dict)) and depth >= CANONICAL_MAX_DEPTH:
        raise InvalidFieldError(f"canonical JSON nested deeper than {CANONICAL_MAX_DEPTH} "
                                f"containers at {_where(path)}")
    elif isinstance(value, (list, tuple)):
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _emit(item, (path, i), out, depth + 1)
        out.append("]")
    elif isinstance(value, dict):
        members: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise InvalidFieldError(
                    f"canonical JSON object key is not text at {_where(path)}: {key!r}")
            nfc = unicodedata.normalize("NFC", key)
            if nfc in members:
                raise InvalidFieldError(
                    f"canonical JSON keys collide after NFC at {_where(path)}: {nfc!r}")
            members[nfc] = item
        out.append("{")
        for i, key in enumerate(sorted(members, key=lambda k: k.encode("utf-16-be", "surrogatepass"))):
            if i:
                out.append(",")
            out.append(_string(key, path))
            out.append(":")
            _emit(members[key], (path, key), out, depth + 1)
        out.append("}")
    else:
        raise InvalidFieldError(
            f"canonical JSON cannot represent {type(value).__name__} at {_where(path)}")


def canonical_json(value: Any) -> str:
    """The canonical text of a JSON-compatible value (dict/list/str/int/float/bool/None)."""
    out: list[str] = []
    _emit(value, "$", out)
    return "".join(out)


def canonical_json_bytes(value: Any) -> bytes:
    """UTF-8 bytes of ``canonical_json(value)``."""
    return canonical_json(value).encode("utf-8")


def parse_canonical(text: str | bytes) -> Any:
    """Parse stored canonical JSON, refusing (``InvalidFieldError``) text that is not JSON or
    is not byte-identical to its own canonical form."""
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidFieldError(f"canonical JSON is not UTF-8 at byte {exc.start}") from None
    try:
        value = loads_json(text, source="canonical JSON")
    except JSONInputError as exc:
        raise InvalidFieldError(str(exc), offset=exc.offset) from None
    canonical = canonical_json(value)
    if canonical != text:
        at = next((i for i, (a, b) in enumerate(zip(canonical, text)) if a != b),
                  min(len(canonical), len(text)))
        raise InvalidFieldError(f"JSON text is not in canonical form (first difference at offset {at})",
                                offset=at)
    return value


def _delta(value: Any, name: str) -> bytes:
    """A delta as canonical JSON bytes: stored text must already be canonical; an object is
    canonicalized."""
    if isinstance(value, str):
        try:
            parse_canonical(value)
        except InvalidFieldError as exc:
            raise InvalidFieldError(f"{name}: {exc}", offset=exc.offset) from None
        return value.encode("utf-8")
    return canonical_json_bytes(value)


def audit_record_hash(record: Mapping[str, Any]) -> str:
    """``AUDIT_RECORD:v2:`` hash of a record's stored fields (hex)."""
    values = []
    for name, kind in AUDIT_FIELDS:
        if name not in record and not kind.endswith("|NULL"):
            raise InvalidFieldError(f"audit record: missing field {name!r}", detail=name)
        value = record.get(name)
        if name == "chain_key" and (not isinstance(value, str) or not value):
            raise InvalidFieldError("audit record: chain_key must be non-empty text", detail=name)
        if name in ("forward_delta", "reverse_delta"):
            value = _delta(value, name)
        values.append((kind, value))
    return hash_fields(b"AUDIT_RECORD:v2:", values).hex()


def audit_record_digest(record: Mapping[str, Any]) -> tuple[str, Any]:
    """``(audit_record_hash(record), forward)``: ``forward`` is the forward delta as
    ``parse_canonical`` reads it when it is stored text, else None. Refusals are those of
    ``audit_record_hash``."""
    digest = audit_record_hash(record)
    forward = record.get("forward_delta")
    return digest, parse_canonical(forward) if isinstance(forward, str) else None


def sealed_record(record: Mapping[str, Any]) -> tuple[str, str, str]:
    """``(forward, reverse, record_hash)`` of a record whose deltas are values: each delta's
    canonical text (a delta stored as text, as it is) and ``audit_record_hash(record)``.
    Refusals are those of ``canonical_json`` of a delta, then of ``audit_record_hash``."""
    texts = [value if isinstance(value, str) else canonical_json(value)
             for value in (record.get("forward_delta"), record.get("reverse_delta"))]
    return texts[0], texts[1], audit_record_hash(record)
