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
import pickle
from collections.abc import Mapping, Sequence
from typing import Any

from canonkit.astp._py.common import L3_MAX_DEPTH, decimal_text, l3_field, l3_value, readable
from canonkit.errors import InvalidFieldError

__all__ = ["copy_stored", "form_b", "form_b_hash", "json_value", "stored_node"]


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


def stored_node(layout: Sequence[tuple[str, int, bool, Any]], fields: Mapping[str, Any]
                ) -> tuple[dict[str, Any], str]:
    """``(node, content_hash)``: the layout's fields as ``json_value`` makes them, in layout
    order (a node as a Layer 3 writer stores it), and ``form_b_hash(layout, fields)``.
    Refused as ``form_b`` refuses; then a field holding an integer of more than
    ``MAX_INTEGER_DIGITS`` digits, which the strict JSON reader would not read back
    (``InvalidFieldError`` naming the field)."""
    digest = form_b_hash(layout, fields)
    node = {name: l3_value(fields[name]) for name, _, _, _ in layout}
    for name, value in node.items():
        readable(name, value)
    return node, digest


class _Other(Exception):
    """A value ``copy_stored`` leaves to pickle."""


def _copy(value: Any, depth: int) -> Any:
    kind = type(value)
    if kind in (str, int, float, bool) or value is None:
        return value
    if depth >= L3_MAX_DEPTH or kind not in (list, dict):
        raise _Other
    if kind is list:
        return [_copy(item, depth + 1) for item in value]
    return {key: _copy(item, depth + 1) for key, item in value.items()}


def copy_stored(value: Any) -> Any:
    """A deep copy of stored values: exact dicts, lists, text, integers of any size, floats,
    booleans and None; anything else (or nested deeper than ``L3_MAX_DEPTH``) by a pickle
    round trip."""
    try:
        return _copy(value, 0)
    except _Other:
        copied = pickle.loads(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
        return copied
