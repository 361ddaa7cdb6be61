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

import hashlib
from pathlib import Path
from typing import Any

from .._files import read_regular
from ..errors import FileTooLargeError, ManifestError
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
    """Verify the referenced fixtures manifest; index the fixtures that passed their own
    check (only those are ever read again) and note the ones that did not."""
    from ._verify import verify_manifest  # imported late: _verify reaches this module
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
    recorded: dict[str, Any] = {}
    own = verify_manifest(fixtures, fps=context.fps, expect="amduat.conformance.fixtures.v0",
                          shared=recorded)
    failed = {p.case for p in own}  # a repeated id is a problem too: never trusted
    verified: dict[str, tuple[Path, int, str]] = recorded.get("verified", {})
    context.shared["artifacts"] = {ident: found for ident, found in verified.items()
                                   if ident not in failed}
    entries = fixtures.document.get("fixtures")
    context.shared["listed"] = {e["id"] for e in entries if isinstance(e, dict)
                                and isinstance(e.get("id"), str)} \
        if isinstance(entries, list) else set()
    return [Problem(f"fixtures:{p.case}" if p.case else "fixtures", p.reason, p.detail)
            for p in own]


def _payload(case: str, ident: str, path: Path, size: int, digest: str) -> bytes | Problem:
    """The fixture's bytes, read once more and checked against what was verified (the
    file may have changed since)."""
    try:
        data = read_regular(path, max_bytes=size)
    except (OSError, FileTooLargeError) as exc:
        return Problem(case, "missing_artifact", f"fixture {ident!r} cannot be read: {exc}")
    if len(data) != size or hashlib.sha256(data).hexdigest() != digest:
        return Problem(case, "digest_mismatch",
                       f"fixture {ident!r} changed after it was verified")
    return data


def verify(case: str, entry: dict[str, Any], context: Context) -> list[Problem]:
    index: dict[str, tuple[Path, int, str]] = context.shared.get("artifacts", {})
    listed: set[str] = context.shared.get("listed", set())
    wanted = [entry[name] for name in ("input", "insert") if name in entry]
    wanted = list(dict.fromkeys(wanted + entry.get("inputs", [])))
    problems = [
        Problem(case, "fixture_unverified",
                f"fixture {ident!r} failed its own check; the case is not run")
        if ident in listed else
        Problem(case, "missing_artifact", f"no readable fixture {ident!r} in the fixtures "
                "manifest")
        for ident in wanted if ident not in index]
    if problems:  # nothing is read, no output built, for a case that cannot pass
        return problems
    payloads: dict[str, bytes] = {}
    for ident in wanted:
        got = _payload(case, ident, *index[ident])
        if isinstance(got, Problem):
            return [got]
        payloads[ident] = got
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
