"""``canonkit.conformance.fps_artifacts.v0`` — FPS cases over inputs too large to inline.

fps.v0 carries payloads as inline hex, which does not scale to MiB inputs. This sibling
schema names its byte arguments by fixture id in a fixtures.v0 manifest (the top-level
``fixtures`` field, a path relative to this manifest), which pins each artifact's size and
SHA-256; a case stores ``output_size`` (decimal string) and ``cid_sha256`` instead of the
output itself, the content ID pinning the bytes.

{"schema": NAME, "fixtures": "fixtures.json",
 "cases": [{id, op, input?, inputs?, insert?, offset?, length?, level?, output_size,
            cid_sha256}]}
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import ManifestError
from ._artifacts import resolve_artifact
from ._hexfields import decimal_string_problem, string_problem
from ._model import Context, Problem, Schema
from .fps_cases import argument_problems, op_problems, run_and_compare

NAME = "canonkit.conformance.fps_artifacts.v0"


def _fixture_id(case: str, name: str, value: Any) -> list[Problem]:
    return string_problem(case, name, value)


def check(case: str, entry: dict[str, Any]) -> list[Problem]:
    problems = op_problems(case, entry)
    if problems or "op" not in entry:
        return problems or [Problem(case, "missing_field", "op is required")]
    problems = argument_problems(case, entry, entry["op"], {"output_size", "cid_sha256"},
                                 _fixture_id)
    if "output_size" in entry:
        problems += decimal_string_problem(case, "output_size", entry["output_size"])
    return problems


def check_top(context: Context) -> list[Problem]:
    """Verify the referenced fixtures manifest and index its artifacts by id."""
    from . import verify_manifest  # the package entry point; imported late (cycle)
    from ._io import read

    relative = context.manifest.document.get("fixtures")
    if not isinstance(relative, str):
        return [Problem(None, "missing_field" if relative is None else "wrong_type",
                        "fixtures must name a fixtures.v0 manifest")]
    found = resolve_artifact(context.manifest.base, relative, "<fixtures>", "fixtures")
    if isinstance(found, Problem):
        return [Problem(None, found.reason, found.detail)]
    try:
        fixtures = read(found)
    except ManifestError as exc:
        return [Problem(None, "unreadable", f"fixtures manifest: {exc}")]
    problems = [Problem(f"fixtures:{p.case}" if p.case else "fixtures", p.reason, p.detail)
                for p in verify_manifest(fixtures, fps=context.fps,
                                         expect="amduat.conformance.fixtures.v0")]
    entries = fixtures.document.get("fixtures")
    index: dict[str, Path | Problem] = {}
    if isinstance(entries, list):
        for entry in entries:
            if isinstance(entry, dict) and isinstance(entry.get("id"), str) \
                    and isinstance(entry.get("artifact"), str):
                index[entry["id"]] = resolve_artifact(fixtures.base, entry["artifact"],
                                                      entry["id"])
    context.shared["artifacts"] = index
    return problems


def verify(case: str, entry: dict[str, Any], context: Context) -> list[Problem]:
    index: dict[str, Path | Problem] = context.shared.get("artifacts", {})
    wanted = [entry[name] for name in ("input", "insert") if name in entry]
    wanted += entry.get("inputs", [])
    paths = {ident: index.get(ident) for ident in wanted}
    missing = [ident for ident, path in paths.items() if not isinstance(path, Path)]
    if missing:
        return [Problem(case, "missing_artifact",
                        f"no readable fixture {ident!r} in the fixtures manifest")
                for ident in missing]
    try:
        payloads = {ident: path.read_bytes() for ident, path in paths.items()
                    if isinstance(path, Path)}
    except OSError as exc:
        return [Problem(case, "missing_artifact", f"a fixture cannot be read: {exc}")]
    output, problems = run_and_compare(case, entry, context, load=payloads.__getitem__)
    if output is not None and len(output) != int(entry["output_size"]):
        problems.insert(0, Problem(case, "size_mismatch",
                                   f"produced {len(output)} bytes, manifest says "
                                   f"{entry['output_size']}"))
    return problems


SCHEMA = Schema(
    name=NAME,
    array="cases",
    field_order=("id", "op", "input", "inputs", "insert", "offset", "length", "level",
                 "output_size", "cid_sha256"),
    check=check,
    verify=verify,
    hex_fields=frozenset({"cid_sha256"}),
    decimal_fields=frozenset({"output_size"}),
    top_fields=("fixtures",),
    check_top=check_top,
)
