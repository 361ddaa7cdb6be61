"""Fuzz target: the ASTP Episode document reader and seal reproduction, on the compiled
kernels (``canonkit.astp`` as imported) vs a second import bound to the twin kernels.
The input is JSON text; text that is not JSON, or not an object, is skipped."""
from __future__ import annotations

import dataclasses
import json
import os
from datetime import datetime
from typing import Any

import _harness
from _harness import instrumented, outcome, same

with instrumented():
    from canonkit import _backend
    from canonkit import astp as COMPILED

    TWIN = _backend.import_on_twins("canonkit.astp")
    if os.environ.get("CANONKIT_FUZZ_TWIN_ONLY") == "1":
        COMPILED = TWIN

SEARCH_CAP = 24  # tie searches stay small: a fuzz input is not a benchmark


def _plain(value: Any) -> Any:
    """An Episode as plain data comparable across the two imports (their classes differ)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (type(value).__name__,
                {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)})
    if isinstance(value, (frozenset, set)):
        return sorted(map(repr, value))
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def one_input(data: bytes) -> None:
    try:
        document = json.loads(data)
    except (ValueError, RecursionError):
        return
    if not isinstance(document, dict):
        return
    got = outcome(lambda: _plain(COMPILED.read_episode(document)))
    want = outcome(lambda: _plain(TWIN.read_episode(document)))
    same("read_episode", got, want)
    if got[0] != "value":
        return
    same("reproduce",
         outcome(lambda: COMPILED.reproduce(document, search_cap=SEARCH_CAP).to_json()),
         outcome(lambda: TWIN.reproduce(document, search_cap=SEARCH_CAP).to_json()))


if __name__ == "__main__":
    _harness.run(one_input)
