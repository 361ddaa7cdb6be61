"""ASTP Layer 3 Form B kernel, pure-Python twin (the reference oracle of
``canonkit.astp._formb``): ASTP.md §19.2 exactly as written there, ``json.dumps`` of the
field-ordered payload with ``separators=(",", ":")`` and ``ensure_ascii=False``, UTF-8, and
its SHA3-256. See docs/astp-kernel-api.md; the differential tests hold the two to it.

``layout`` is a sequence of ``(name, kind, nullable, allowed)`` (``canonkit.astp._py.common``
``L3_*`` kinds); ``fields`` a mapping that holds every named field (absent is refused).
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from canonkit.astp._py.common import decimal_text, l3_field, l3_value
from canonkit.errors import InvalidFieldError

__all__ = ["form_b", "form_b_hash", "json_value"]


def form_b(layout: Sequence[tuple[str, int, bool, Any]], fields: Mapping[str, Any]) -> bytes:
    """The Form B preimage: the layout's fields, in order, as compact JSON in UTF-8."""
    if not isinstance(fields, Mapping):
        raise InvalidFieldError(f"Form B fields must be a mapping, got {type(fields).__name__}")
    payload = {}
    for name, kind, nullable, allowed in layout:
        if name not in fields:
            raise InvalidFieldError(f"{name}: missing (every field takes part, null or not)",
                                    detail=name)
        payload[name] = l3_field(name, kind, nullable, allowed, fields[name])
    try:
        try:
            text = json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
        except ValueError:  # an integer beyond Python's int-to-text digit limit
            text = _dumps(payload)
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidFieldError(f"Form B text is not encodable as UTF-8: {exc.reason}") from None


def _dumps(value: Any) -> str:
    """``json.dumps(value, separators=(",", ":"), ensure_ascii=False)`` of exact JSON types,
    with integers of any magnitude (``json`` stops at the int-to-text digit limit)."""
    if type(value) is int:
        return decimal_text(value)
    if type(value) is dict:
        return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + _dumps(v)
                              for k, v in value.items()) + "}"
    if type(value) is list:
        return "[" + ",".join(_dumps(item) for item in value) + "]"
    return json.dumps(value, ensure_ascii=False)


def form_b_hash(layout: Sequence[tuple[str, int, bool, Any]], fields: Mapping[str, Any]) -> str:
    """SHA3-256 of ``form_b(layout, fields)``, as hex."""
    return hashlib.sha3_256(form_b(layout, fields)).hexdigest()


def json_value(value: Any) -> Any:
    """``l3_value(value)``: the exact JSON types Form B serializes (a deep copy of
    containers)."""
    return l3_value(value)
