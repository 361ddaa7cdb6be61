"""The reversible JSON form of decoded CBOR values used by ``canonkit cbor decode`` and
read by ``canonkit cbor encode`` for the ``core`` and ``dcbor`` profiles (``dag-cbor``
uses DAG-JSON, ``canonkit.cbor.dag_json``). The ``$bytes`` and ``$link`` objects are spelled
as in the AT Protocol's JSON data model: base64 without padding, and the CID string.

JSON null/true/false, strings, integers (any size) and finite floats map to themselves
(a float always keeps its ``.0`` or exponent, so ``1.0`` stays a float and ``1`` an int;
``-0.0`` is written as ``-0.0``). Everything else is a one-purpose object whose keys start
with ``$``:

=====================================  ==================================================
``{"$bytes": "<base64>"}``             byte string (RFC 4648 §4 alphabet, no padding)
``{"$float": "NaN"}``                  the quiet NaN ``0x7ff8000000000000``
``{"$float": "Infinity"}``             also ``"-Infinity"``
``{"$float": "0x<16 hex digits>"}``    any other NaN, as its binary64 bits (payload kept)
``{"$tag": n, "value": v}``            a tag other than bignums (and links in dag-cbor)
``{"$simple": n}``                     simple value 0–19 or 32–255
``{"$undefined": true}``               undefined
``{"$link": "<CID string>"}``          a dag-cbor link (``bafy...`` or ``Qm...``)
``{"$map": [[k, v], ...]}``            a map whose keys are not all text, or whose text
                                       keys include one starting with ``$``
=====================================  ==================================================

On input every JSON object that has a key starting with ``$`` must be exactly one of these
forms (anything else is an error), so the form is unambiguous: ``encode(from_json(
to_json(decode(b)))) == b`` for every accepted ``b`` of every profile.
"""
from __future__ import annotations

import math
import struct
from typing import Any

from ..cbor._types import UNDEFINED, FrozenDict, Link, Simple, Tag, UndefinedType
from ..cbor._cid import b64decode_unpadded, b64encode_unpadded

__all__ = ["JSONFormError", "from_json", "to_json"]

_QUIET_NAN_BITS = 0x7FF8000000000000


class JSONFormError(ValueError):
    """A JSON document that is not in the form above."""


def to_json(value: Any) -> Any:
    """A JSON-serialisable structure (for ``json.dumps``) for a decoded CBOR value."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        if math.isinf(value):
            return {"$float": "Infinity" if value > 0 else "-Infinity"}
        bits = int.from_bytes(struct.pack(">d", value), "big")
        return {"$float": "NaN" if bits == _QUIET_NAN_BITS else f"0x{bits:016x}"}
    if isinstance(value, bytes):
        return {"$bytes": b64encode_unpadded(value)}
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    if isinstance(value, (dict, FrozenDict)):
        if all(isinstance(k, str) and not k.startswith("$") for k in value):
            return {k: to_json(v) for k, v in value.items()}
        return {"$map": [[to_json(k), to_json(v)] for k, v in value.items()]}
    if isinstance(value, Link):
        return {"$link": str(value)}
    if isinstance(value, Tag):
        return {"$tag": value.number, "value": to_json(value.value)}
    if isinstance(value, Simple):
        return {"$simple": value.value}
    if isinstance(value, UndefinedType):
        return {"$undefined": True}
    raise TypeError(f"no JSON form for {type(value).__name__}")


def _float_from(text: Any) -> float:
    if text == "NaN":
        return math.nan
    if text == "Infinity":
        return math.inf
    if text == "-Infinity":
        return -math.inf
    if isinstance(text, str) and text.startswith("0x") and len(text) == 18:
        bits = int(text, 16)
        value: float = struct.unpack(">d", bits.to_bytes(8, "big"))[0]
        if not math.isnan(value):
            raise JSONFormError(f'"$float": {text!r} is not a NaN; write the number itself')
        return value
    raise JSONFormError(f'"$float" must be "NaN", "Infinity", "-Infinity" or 0x<16 hex>, '
                        f"got {text!r}")


def _special(obj: dict[str, Any], in_key: bool) -> Any:
    keys = set(obj)
    try:
        if keys == {"$bytes"} and isinstance(obj["$bytes"], str):
            return b64decode_unpadded(obj["$bytes"])
        if keys == {"$float"}:
            return _float_from(obj["$float"])
        if keys == {"$tag", "value"}:
            return Tag(obj["$tag"], from_json(obj["value"], in_key))
        if keys == {"$simple"}:
            return Simple(obj["$simple"])
        if keys == {"$undefined"} and obj["$undefined"] is True:
            return UNDEFINED
        if keys == {"$link"} and isinstance(obj["$link"], str):
            return Link.from_string(obj["$link"])
        if keys == {"$map"} and isinstance(obj["$map"], list):
            pairs = obj["$map"]
            if not all(isinstance(p, list) and len(p) == 2 for p in pairs):
                raise JSONFormError('"$map" must be a list of [key, value] pairs')
            result = {from_json(k, True): from_json(v, in_key) for k, v in pairs}
            if len(result) != len(pairs):
                raise JSONFormError('"$map" has two equal keys')
            return FrozenDict(result) if in_key else result
    except (TypeError, ValueError) as exc:
        if isinstance(exc, JSONFormError):
            raise
        raise JSONFormError(f"bad {sorted(keys)} object: {exc}") from None
    raise JSONFormError(f"an object with '$' keys must be one special form, got {sorted(keys)}")


def from_json(obj: Any, in_key: bool = False) -> Any:
    """The Python value for the JSON form ``obj`` (as parsed by ``json.loads``); inside a
    map key, arrays become tuples and maps FrozenDicts so they stay hashable."""
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, list):
        items = [from_json(v, in_key) for v in obj]
        return tuple(items) if in_key else items
    if isinstance(obj, dict):
        if any(k.startswith("$") for k in obj):
            return _special(obj, in_key)
        result = {k: from_json(v, in_key) for k, v in obj.items()}
        return FrozenDict(result) if in_key else result
    raise JSONFormError(f"not a JSON value: {type(obj).__name__}")
