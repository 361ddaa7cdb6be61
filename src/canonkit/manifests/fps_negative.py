"""``canonkit.conformance.fps_negative.v0``: ``cases[]`` of {id, op, ...arguments, error}
(FPS.md §3). Arguments are deliberately unchecked here — a negative case may carry a
negative offset, bad hex or a missing argument — and verifying a case runs it and
expects the backend to refuse it with exactly ``error``."""
from __future__ import annotations

from typing import Any

from ..errors import CODES, FPSError
from ._hexfields import field_set_problems
from ._model import Context, Problem, Schema
from .fps_cases import op_problems
from .fps_exec import ARGUMENTS, execute

NAME = "canonkit.conformance.fps_negative.v0"
ERROR_CODES = tuple(sorted(code for code, cls in CODES.items() if issubclass(cls, FPSError)))


def check(case: str, entry: dict[str, Any]) -> list[Problem]:
    problems = field_set_problems(case, entry, {"id", "op", "error"}, set(ARGUMENTS))
    problems += op_problems(case, entry)
    if "error" in entry:
        error = entry["error"]
        if not isinstance(error, str):
            problems.append(Problem(case, "wrong_type", "error must be a string"))
        elif error not in ERROR_CODES:
            problems.append(Problem(case, "invalid_value",
                                    f"error {error!r} is not one of {', '.join(ERROR_CODES)}"))
    return problems


def verify(case: str, entry: dict[str, Any], context: Context) -> list[Problem]:
    try:
        output = execute(context.fps, entry["op"], entry)
    except FPSError as exc:
        if exc.code != entry["error"]:
            return [Problem(case, "wrong_error",
                            f"refused with {exc.code} ({exc}), manifest says {entry['error']}")]
        return []
    return [Problem(case, "not_refused",
                    f"produced {len(output)} bytes, manifest expects {entry['error']}")]


SCHEMA = Schema(
    name=NAME,
    array="cases",
    field_order=("id", "op", *ARGUMENTS, "error"),
    check=check,
    verify=verify,
)
