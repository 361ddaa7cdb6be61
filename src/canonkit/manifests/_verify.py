"""Fail-closed verification of a parsed manifest: every problem is collected, none
raised. Order: repeated JSON keys, schema, top-level fields, the id order of the entries,
then each entry's structure and — only if that is sound — its meaning."""
from __future__ import annotations

from typing import Any

from ._model import Context, Manifest, Problem
from .schemas import SCHEMAS


def _id_problems(entries: list[Any]) -> list[Problem]:
    problems: list[Problem] = []
    seen: set[str] = set()
    previous: str | None = None
    for index, entry in enumerate(entries):
        ident = entry.get("id") if isinstance(entry, dict) else None
        if not isinstance(ident, str):
            if ident is not None:  # a missing id is reported by the entry's field check
                problems.append(Problem(f"#{index}", "wrong_type", "id must be a string"))
            continue
        if ident in seen:
            problems.append(Problem(ident, "duplicate_id", f"id {ident!r} appears again "
                                    f"at index {index}"))
        elif previous is not None and ident < previous:
            problems.append(Problem(ident, "unsorted_ids",
                                    f"id {ident!r} at index {index} sorts before {previous!r}"))
        seen.add(ident)
        previous = ident
    return problems


def verify_manifest(manifest: Manifest, *, fps: Any = None,
                    expect: str | None = None,
                    shared: dict[str, Any] | None = None) -> list[Problem]:
    """Every problem of ``manifest`` (empty list: it verifies). ``fps`` is the backend
    module that runs FPS cases (default: the live ``canonkit.fps``); ``expect`` requires a
    particular schema; ``shared`` receives what the schema's checks record (the fixtures
    that verified, for a manifest that runs cases on them)."""
    if fps is None:
        from .. import fps as live

        fps = live
    document = manifest.document
    problems = [Problem(None, "duplicate_key", f"a JSON object repeats key {key!r}"
                        + (f" (at byte {offset})" if offset is not None else ""))
                for key, offset in manifest.duplicate_keys]
    name = document.get("schema")
    schema = SCHEMAS.get(name) if isinstance(name, str) else None
    if schema is None or (expect is not None and schema.name != expect):
        wanted = expect or "one of " + ", ".join(SCHEMAS)
        return problems + [Problem(None, "unknown_schema",
                                   f"schema {document.get('schema')!r}; expected {wanted}")]
    context = Context(manifest, fps, shared if shared is not None else {})
    allowed = {"schema", schema.array, *schema.top_fields}
    problems += [Problem(None, "unexpected_field", f"top-level field {key!r}")
                 for key in sorted(document.keys() - allowed)]
    if schema.check_top is not None:
        problems += schema.check_top(context)
    if schema.array not in document:
        return problems + [Problem(None, "missing_field", f"{schema.array} is required")]
    entries = document[schema.array]
    if not isinstance(entries, list):
        return problems + [Problem(None, "wrong_type", f"{schema.array} must be a list")]
    problems += _id_problems(entries)
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict):
            problems.append(Problem(f"#{index}", "wrong_type", "an entry must be an object"))
            continue
        label = entry["id"] if isinstance(entry.get("id"), str) else f"#{index}"
        structural = schema.check(label, entry)
        problems += structural
        if not structural:
            problems += schema.verify(label, entry, context)
    return problems
