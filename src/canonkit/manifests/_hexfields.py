"""Field checks shared by the schema modules; each returns a list of Problems."""
from __future__ import annotations

import re
from typing import Any

from ._model import Problem

from .._files import UINT64_LIMIT, LongInteger, decimal_uint64

_LOWER_HEX = re.compile(r"(?:[0-9a-f]{2})*")
_ANY_CASE_HEX = re.compile(r"(?:[0-9a-fA-F]{2})*")
_DECIMAL = re.compile(r"0|[1-9][0-9]*")


def hex_problem(case: str | None, name: str, value: Any, *, size: int | None = None
                ) -> list[Problem]:
    """``value`` must be lowercase hex (an even number of digits, no ``0x``); ``size``
    fixes the decoded byte count."""
    if not isinstance(value, str):
        return [Problem(case, "wrong_type", f"{name} must be a hex string, got "
                        f"{type(value).__name__}")]
    if not _LOWER_HEX.fullmatch(value):
        if _ANY_CASE_HEX.fullmatch(value):
            return [Problem(case, "uppercase_hex", f"{name} has uppercase hex digits")]
        return [Problem(case, "malformed_hex", f"{name} is not an even number of hex digits")]
    if size is not None and len(value) != 2 * size:
        return [Problem(case, "malformed_hex",
                        f"{name} must be {2 * size} hex digits, got {len(value)}")]
    return []


def decimal_string_problem(case: str | None, name: str, value: Any) -> list[Problem]:
    if not isinstance(value, str):
        return [Problem(case, "wrong_type",
                        f"{name} must be a decimal string, got {type(value).__name__}")]
    if not _DECIMAL.fullmatch(value):
        return [Problem(case, "invalid_value",
                        f"{name} {value[:40]!r} is not a canonical decimal string")]
    if decimal_uint64(value) is None:
        return [Problem(case, "invalid_value", f"{name} ({len(value)} digits) is not "
                        "below 2**64")]
    return []


def uint64_problem(case: str | None, name: str, value: Any) -> list[Problem]:
    if isinstance(value, LongInteger):  # never converted: bounded while parsing
        return [Problem(case, "invalid_value",
                        f"{name} is an integer of {len(value)} digits, outside 0..2**64-1")]
    if isinstance(value, bool) or not isinstance(value, int):
        return [Problem(case, "wrong_type",
                        f"{name} must be an integer, got {type(value).__name__}")]
    if not 0 <= value < UINT64_LIMIT:
        return [Problem(case, "invalid_value", f"{name} {value} is outside 0..2**64-1")]
    return []


def string_problem(case: str | None, name: str, value: Any) -> list[Problem]:
    if not isinstance(value, str):
        return [Problem(case, "wrong_type",
                        f"{name} must be a string, got {type(value).__name__}")]
    return []


def list_problem(case: str | None, name: str, value: Any) -> list[Problem]:
    if not isinstance(value, list):
        return [Problem(case, "wrong_type",
                        f"{name} must be a list, got {type(value).__name__}")]
    return []


def field_set_problems(case: str | None, entry: dict[str, Any], required: set[str],
                       optional: set[str]) -> list[Problem]:
    problems = [Problem(case, "missing_field", f"{name} is required")
                for name in sorted(required - entry.keys())]
    problems += [Problem(case, "unexpected_field", f"{name} is not a field of this schema")
                 for name in sorted(entry.keys() - required - optional)]
    return problems
