"""ASTP.md §2.3 canonical JSON: RFC 8785 (JCS) after NFC normalization of every string.

Used for the audit record deltas (§14). ``canonical_json`` produces the canonical text,
``parse_canonical`` accepts stored text only when it is already its own canonical form.
Refusals raise ``InvalidFieldError`` naming the JSON path of the offending value.
"""
from __future__ import annotations

import math
import unicodedata
from typing import Any

from canonkit._files import loads_json
from canonkit.errors import InvalidFieldError, JSONInputError

__all__ = ["canonical_json", "canonical_json_bytes", "es_number", "parse_canonical"]

_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r",
            "\t": "\\t"}


def _string(text: str, path: str) -> str:
    out = ['"']
    for ch in text:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ch < " ":
            out.append(f"\\u{ord(ch):04x}")
        elif 0xD800 <= ord(ch) <= 0xDFFF:
            raise InvalidFieldError(f"canonical JSON: lone surrogate in string at {path}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


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


def _emit(value: Any, path: str, out: list[str]) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        out.append(str(value))
    elif isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise InvalidFieldError(f"canonical JSON refuses {value!r} at {path}")
        out.append(es_number(value))
    elif isinstance(value, str):
        out.append(_string(unicodedata.normalize("NFC", value), path))
    elif isinstance(value, (list, tuple)):
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _emit(item, f"{path}[{i}]", out)
        out.append("]")
    elif isinstance(value, dict):
        members: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise InvalidFieldError(f"canonical JSON object key is not text at {path}: {key!r}")
            nfc = unicodedata.normalize("NFC", key)
            if nfc in members:
                raise InvalidFieldError(f"canonical JSON keys collide after NFC at {path}: {nfc!r}")
            members[nfc] = item
        out.append("{")
        for i, key in enumerate(sorted(members, key=lambda k: k.encode("utf-16-be", "surrogatepass"))):
            if i:
                out.append(",")
            out.append(_string(key, path))
            out.append(":")
            _emit(members[key], f"{path}.{key}", out)
        out.append("}")
    else:
        raise InvalidFieldError(f"canonical JSON cannot represent {type(value).__name__} at {path}")


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
