"""Fuzz target: the CAR verifier and readers on a file that is the fuzzed bytes.

``verify`` (and ``verify(strict=True)``) on the compiled kernel and on its twin must give
the same report, finding for finding; nothing may escape it but what the input door
raises; ``blocks`` may raise nothing but a ``CARError``, and raises one exactly when
``verify`` found an error outside the index (the blocks it yields before are the file's
blocks that verify, in order)."""
from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import _harness
from _harness import Mismatch, instrumented

with instrumented():
    from canonkit import _backend
    from canonkit import car as COMPILED
    from canonkit.errors import CARError

    TWIN = (COMPILED if os.environ.get("CANONKIT_FUZZ_TWIN_ONLY") == "1"
            else _backend.import_on_twins("canonkit.car"))
    if TWIN is not COMPILED and _backend.LIVE.get("car") != "compiled":
        raise ImportError(f"canonkit.car._sections is not built: {_backend.WHY_NOT_COMPILED}")

ROOT = Path(tempfile.mkdtemp(prefix="canonkit-fuzz-car-"))
atexit.register(shutil.rmtree, ROOT, ignore_errors=True)
PATH = ROOT / "fuzzed.car"


def _report(module: Any, strict: bool) -> dict[str, Any]:
    report = module.verify(PATH, strict=strict, limit=20).to_dict()
    report.pop("path")
    return report


def _blocks() -> tuple[list[tuple[int, bytes]], CARError | None]:
    seen = []
    try:
        for block in COMPILED.blocks(PATH):
            seen.append((block.offset, block.cid.cid_bytes))
    except CARError as exc:
        return seen, exc
    return seen, None


def one_input(data: bytes) -> None:
    PATH.write_bytes(data)
    for strict in (False, True):
        compiled, twin = _report(COMPILED, strict), _report(TWIN, strict)
        if compiled != twin:
            for key in compiled:
                if compiled[key] != twin[key]:
                    raise Mismatch(f"verify(strict={strict}) {key}: compiled gave "
                                   f"{str(compiled[key])[:400]}, twin gave {str(twin[key])[:400]}")
    seen, raised = _blocks()
    errors = [f for f in compiled["findings"] if f["severity"] == "error"
              and not f["code"].startswith("car_index") and f["code"] != "car_unknown_index"
              and f["code"] != "car_strict_decode"]
    if (raised is None) != (not errors):
        raise Mismatch(f"blocks raised {raised!r}, but verify found {errors[:3]}")
    if raised is not None and (raised.code, raised.offset) != (errors[0]["code"],
                                                                errors[0]["offset"]):
        raise Mismatch(f"blocks raised {raised.code} at {raised.offset}, verify's first error "
                       f"is {errors[0]['code']} at {errors[0]['offset']}")
    if len(seen) > compiled["blocks"]:
        raise Mismatch(f"blocks yielded {len(seen)} blocks, verify walked {compiled['blocks']}")


if __name__ == "__main__":
    _harness.run(one_input)
