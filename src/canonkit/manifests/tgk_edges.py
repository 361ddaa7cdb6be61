"""``amduat.conformance.tgk_edges.v0``: ``edges[]`` of {id, type, from[], to[], payload,
notes?}; from/to hold ReferenceBytes hex, payload is hex. Nothing can be recomputed
from artifacts (FPS.md §3), so verification is structural: every reference must parse."""
from __future__ import annotations

from typing import Any

from ._hexfields import field_set_problems, hex_problem, list_problem, string_problem
from ._model import Context, Problem, Schema
from .refbytes import parse_reference

NAME = "amduat.conformance.tgk_edges.v0"
TYPE_LIMIT = 1 << 32  # edge types are u32 in TGK


def check(case: str, entry: dict[str, Any]) -> list[Problem]:
    problems = field_set_problems(case, entry, {"id", "type", "from", "to", "payload"},
                                  {"notes"})
    if "type" in entry:
        value = entry["type"]
        if isinstance(value, bool) or not isinstance(value, int):
            problems.append(Problem(case, "wrong_type", "type must be an integer"))
        elif not 0 <= value < TYPE_LIMIT:
            problems.append(Problem(case, "invalid_value", f"type {value} is outside u32"))
    for side in ("from", "to"):
        if side not in entry:
            continue
        refs = entry[side]
        found = list_problem(case, side, refs)
        if found:
            problems += found
            continue
        for i, ref in enumerate(refs):
            bad = hex_problem(case, f"{side}[{i}]", ref)
            if bad:
                problems += bad
                continue
            try:
                parse_reference(bytes.fromhex(ref))
            except ValueError as exc:
                problems.append(Problem(case, "invalid_reference", f"{side}[{i}]: {exc}"))
    if "payload" in entry:
        problems += hex_problem(case, "payload", entry["payload"])
    if "notes" in entry:
        problems += string_problem(case, "notes", entry["notes"])
    return problems


def verify(case: str, entry: dict[str, Any], context: Context) -> list[Problem]:
    return []


SCHEMA = Schema(
    name=NAME,
    array="edges",
    field_order=("id", "type", "from", "to", "payload", "notes"),
    check=check,
    verify=verify,
    hex_fields=frozenset({"payload"}),
    hex_list_fields=frozenset({"from", "to"}),
)
