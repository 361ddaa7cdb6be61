"""``amduat.conformance.fixtures.v0``: ``fixtures[]`` of {id, artifact, size, sha256,
notes?}; each artifact must exist under the manifest's directory with that size and
SHA-256."""
from __future__ import annotations

from typing import Any

from .._files import check_regular
from ._artifacts import resolve_artifact, sha256_file
from ._hexfields import decimal_string_problem, field_set_problems, hex_problem, string_problem
from ._model import Context, Problem, Schema

NAME = "amduat.conformance.fixtures.v0"


def check(case: str, entry: dict[str, Any]) -> list[Problem]:
    problems = field_set_problems(case, entry, {"id", "artifact", "size", "sha256"}, {"notes"})
    if "artifact" in entry:
        problems += string_problem(case, "artifact", entry["artifact"])
    if "size" in entry:
        problems += decimal_string_problem(case, "size", entry["size"])
    if "sha256" in entry:
        problems += hex_problem(case, "sha256", entry["sha256"], size=32)
    if "notes" in entry:
        problems += string_problem(case, "notes", entry["notes"])
    return problems


def verify(case: str, entry: dict[str, Any], context: Context) -> list[Problem]:
    """Size first (from ``stat``: an artifact of the wrong size is never read), then the
    SHA-256 streamed. A fixture that passes is recorded in ``context.shared["verified"]``
    as ``(path, size, sha256)`` for the manifests that use its bytes."""
    found = resolve_artifact(context.manifest.base, entry["artifact"], case)
    if isinstance(found, Problem):
        return [found]
    expected = int(entry["size"])  # check() bounded it: a canonical decimal below 2**64
    try:
        size = check_regular(found).st_size
        if size != expected:
            return [Problem(case, "size_mismatch",
                            f"artifact has {size} bytes, manifest says {entry['size']}")]
        size, digest = sha256_file(found)
    except OSError as exc:
        return [Problem(case, "missing_artifact", f"artifact cannot be read: {exc}")]
    problems = []
    if size != expected:
        problems.append(Problem(case, "size_mismatch", f"artifact changed while read: "
                                f"{size} bytes, manifest says {entry['size']}"))
    if digest != entry["sha256"]:
        problems.append(Problem(case, "digest_mismatch",
                                f"artifact sha256 is {digest}, manifest says {entry['sha256']}"))
    if not problems:
        context.shared.setdefault("verified", {})[case] = (found, size, digest)
    return problems


SCHEMA = Schema(
    name=NAME,
    array="fixtures",
    field_order=("id", "artifact", "size", "sha256", "notes"),
    check=check,
    verify=verify,
    hex_fields=frozenset({"sha256"}),
    decimal_fields=frozenset({"size"}),
)
