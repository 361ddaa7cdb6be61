"""The fields check of simple object kinds: the twin of ``canonkit.objects._plans``.

A kind whose fields are all required and of simple types (bytes, text, uint, int, bool,
those or null, arrays of them) is checked from a *plan*: a tuple of
``(name, op, arg)`` triples built by ``canonkit.objects.schema``.
``FieldsCheck(plan).match`` is a predicate like the generated one it replaces: True only for a dict with exactly
those fields, each of its type; False for anything else (the precise checker then says
why). Ops: the low bits name the type, ``NULLABLE`` and ``ARRAY`` wrap it.
"""
from __future__ import annotations

from typing import Any

__all__ = ["ARRAY", "BOOL", "BYTES", "BYTES_SIZED", "INT", "NULLABLE", "TEXT",
           "TEXT_NON_EMPTY", "UINT", "FieldsCheck"]

BYTES, BYTES_SIZED, TEXT, TEXT_NON_EMPTY, UINT, INT, BOOL = 1, 2, 3, 4, 5, 6, 7
NULLABLE, ARRAY = 16, 32
_U64 = 1 << 64


def _simple(op: int, arg: int, value: Any) -> bool:
    kind = type(value)
    if op == BYTES:
        return kind is bytes
    if op == BYTES_SIZED:
        return kind is bytes and len(value) == arg
    if op == TEXT:
        return kind is str
    if op == TEXT_NON_EMPTY:
        return kind is str and len(value) > 0
    if op == UINT:
        return kind is int and 0 <= value < _U64
    if op == INT:
        return kind is int and -_U64 <= value < _U64
    if op == BOOL:
        return kind is bool
    return False


def _matches(op: int, arg: int, value: Any) -> bool:
    if op & NULLABLE and value is None:
        return True
    base = op & 15
    if op & ARRAY:
        if type(value) is not list and type(value) is not tuple:
            return False
        return all(_simple(base, arg, item) for item in value)
    return _simple(base, arg, value)


class FieldsCheck:
    """``FieldsCheck(plan).match(fields)``: whether ``fields`` is a dict with exactly the
    plan's fields, each of its type."""

    __slots__ = ("plan",)

    def __init__(self, plan: tuple[tuple[str, int, int], ...]) -> None:
        self.plan = plan

    def match(self, fields: Any) -> bool:
        if type(fields) is not dict or len(fields) != len(self.plan):
            return False
        for name, op, arg in self.plan:
            if name not in fields or not _matches(op, arg, fields[name]):
                return False
        return True
