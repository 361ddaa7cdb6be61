"""Run one FPS case (a manifest entry or a CLI call) on an FPS backend module.

Byte arguments go through ``load`` (by default strict lowercase hex -> bytes; anything
that is not a string is passed on unchanged so the backend refuses its type with
ERR_ARG_INVALID). A missing required argument is ERR_ARG_INVALID, except a missing
``level`` of ``reverse``, which the backend refuses as ERR_LEVEL_INVALID (FPS.md §2).
"""
from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ..errors import FPSArgumentError

OPS = ("concat", "reverse", "slice", "splice")
ARGUMENTS = ("input", "inputs", "insert", "offset", "length", "level")
REQUIRED = {
    "slice": ("input", "offset", "length"),
    "splice": ("input", "offset", "length", "insert"),
    "reverse": ("input",),
    "concat": ("inputs",),
}
_LOWER_HEX = re.compile(r"(?:[0-9a-f]{2})*")


def decode_hex(value: Any) -> Any:
    """Strict lowercase hex -> bytes; non-strings pass through for the backend to refuse."""
    if not isinstance(value, str):
        return value
    if not _LOWER_HEX.fullmatch(value):
        raise FPSArgumentError(f"malformed hex {value[:40]!r}", detail="hex")
    return bytes.fromhex(value)


def execute(fps: Any, op: str, fields: dict[str, Any],
            load: Callable[[Any], Any] = decode_hex) -> bytes:
    """The output of ``op`` on the arguments in ``fields``; raises the backend's FPSError."""
    if op not in REQUIRED:
        raise FPSArgumentError(f"unknown op {op!r}", detail="op")
    for name in REQUIRED[op]:
        if name not in fields:
            raise FPSArgumentError(f"{op} needs {name}", detail=name)
    if op == "concat":
        inputs = fields["inputs"]
        items = [load(item) for item in inputs] if isinstance(inputs, list) else inputs
        result = fps.concat(items)
    else:
        data = load(fields["input"])
        if op == "reverse":
            result = fps.reverse(data, fields.get("level"))
        elif op == "slice":
            result = fps.slice(data, fields["offset"], fields["length"],
                               fields.get("level", "byte"))
        else:
            result = fps.splice(data, fields["offset"], fields["length"],
                                load(fields["insert"]), fields.get("level", "byte"))
    return bytes(result)
