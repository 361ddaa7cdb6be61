"""``amduat.conformance.fps.v0``: ``cases[]`` of {id, op, input?, inputs?, insert?,
offset?, length?, level?, output, cid_sha256}. Verifying a case runs the operation and
compares both the output bytes and the content ID."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import FPSError
from ._hexfields import field_set_problems, hex_problem, list_problem, uint64_problem
from ._model import Context, Problem, Schema
from .fps_exec import OPS, REQUIRED, execute

NAME = "amduat.conformance.fps.v0"
LEVELS = ("bit", "byte", "word", "long")


def op_problems(case: str, entry: dict[str, Any]) -> list[Problem]:
    op = entry.get("op")
    if "op" in entry and not isinstance(op, str):
        return [Problem(case, "wrong_type", "op must be a string")]
    if "op" in entry and op not in OPS:
        return [Problem(case, "invalid_value", f"op {op!r} is not one of {', '.join(OPS)}")]
    return []


def argument_problems(case: str, entry: dict[str, Any], op: str, result: set[str],
                      byte_check: Callable[[str, str, Any], list[Problem]]) -> list[Problem]:
    """Field set and types of a positive case whose byte arguments ``byte_check`` checks
    (hex for fps.v0, fixture ids for fps_artifacts) and whose result fields are
    ``result``."""
    required = {"id", "op", *REQUIRED[op], *result}
    optional = {"level"} if op in ("slice", "splice") else set()
    if op == "reverse":
        required.add("level")
    problems = field_set_problems(case, entry, required, optional)
    for name in ("input", "insert"):
        if name in entry:
            problems += byte_check(case, name, entry[name])
    if "inputs" in entry:
        found = list_problem(case, "inputs", entry["inputs"])
        problems += found or [p for i, v in enumerate(entry["inputs"])
                              for p in byte_check(case, f"inputs[{i}]", v)]
    for name in ("offset", "length"):
        if name in entry:
            problems += uint64_problem(case, name, entry[name])
    if "level" in entry:
        level = entry["level"]
        if not isinstance(level, str):
            problems.append(Problem(case, "wrong_type", "level must be a string"))
        elif level not in LEVELS:
            problems.append(Problem(case, "invalid_value", f"level {level!r} is unknown"))
    if "cid_sha256" in entry:
        problems += hex_problem(case, "cid_sha256", entry["cid_sha256"], size=32)
    return problems


def check(case: str, entry: dict[str, Any]) -> list[Problem]:
    problems = op_problems(case, entry)
    if problems or "op" not in entry:
        return problems + field_set_problems(case, entry, {"id", "op"}, set(entry) - {"op"})
    problems = argument_problems(case, entry, entry["op"], {"output", "cid_sha256"},
                                 hex_problem)
    if "output" in entry:
        problems += hex_problem(case, "output", entry["output"])
    return problems


def run_and_compare(case: str, entry: dict[str, Any], context: Context,
                    load: Callable[[Any], Any] | None = None) -> tuple[bytes | None,
                                                                      list[Problem]]:
    """Run the case; (output, []) or (None, [operation_refused]); cid compared here."""
    try:
        if load is None:
            output = execute(context.fps, entry["op"], entry)
        else:
            output = execute(context.fps, entry["op"], entry, load)
    except FPSError as exc:
        return None, [Problem(case, "operation_refused", f"{exc.code}: {exc}")]
    problems = []
    cid = context.fps.cid_sha256(output)
    if cid != entry["cid_sha256"]:
        problems.append(Problem(case, "wrong_cid",
                                f"output's cid_sha256 is {cid}, manifest says "
                                f"{entry['cid_sha256']}"))
    return output, problems


def verify(case: str, entry: dict[str, Any], context: Context) -> list[Problem]:
    output, problems = run_and_compare(case, entry, context)
    if output is not None and output.hex() != entry["output"]:
        shown = output.hex()
        problems.insert(0, Problem(case, "wrong_output",
                                   f"produced {shown[:32]}{'…' if len(shown) > 32 else ''} "
                                   f"({len(output)} bytes), manifest says "
                                   f"{len(entry['output']) // 2} bytes"))
    return problems


SCHEMA = Schema(
    name=NAME,
    array="cases",
    field_order=("id", "op", "input", "inputs", "insert", "offset", "length", "level",
                 "output", "cid_sha256"),
    check=check,
    verify=verify,
    hex_fields=frozenset({"input", "insert", "output", "cid_sha256"}),
    hex_list_fields=frozenset({"inputs"}),
)
