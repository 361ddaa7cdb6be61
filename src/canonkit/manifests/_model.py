"""The manifest document model shared by every schema: the parsed ``Manifest``, the
``Problem`` records verification returns, and their stable reason codes."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Stable reason codes (programs match on these; ``detail`` is for people).
REASONS = {
    "unreadable": "the file is not UTF-8 JSON with a top-level object",
    "unknown_schema": "the schema field is missing or names no known schema",
    "duplicate_key": "a JSON object repeats a key",
    "missing_field": "a required field is absent",
    "unexpected_field": "a field the schema does not define",
    "wrong_type": "a field has the wrong JSON type",
    "invalid_value": "a field's value is outside its domain",
    "uppercase_hex": "hex with uppercase digits (the schemas require lowercase)",
    "malformed_hex": "not an even number of lowercase hex digits",
    "invalid_reference": "not a valid ReferenceBytes encoding",
    "unsorted_ids": "the id sorts before the previous entry's id",
    "duplicate_id": "the id equals the previous entry's id",
    "artifact_escapes": "the artifact path leaves the manifest's directory",
    "missing_artifact": "the artifact file does not exist or is not a regular file",
    "size_mismatch": "the artifact or output size differs from the manifest",
    "fixture_unverified": "a fixture the case uses failed its own check; the case is not run",
    "digest_mismatch": "the artifact's SHA-256 differs from the manifest",
    "operation_refused": "the FPS operation raised an error the case did not expect",
    "wrong_output": "the FPS operation produced other bytes",
    "wrong_cid": "cid_sha256 differs from the content ID of the produced output",
    "wrong_error": "the FPS operation was refused with another error code",
    "not_refused": "the FPS operation succeeded but the case expects a refusal",
}


@dataclass(frozen=True)
class Problem:
    """One verification finding: which case (its id, ``#index`` if it has none, or None
    for the manifest as a whole), a stable reason code and a human detail."""

    case: str | None
    reason: str
    detail: str

    def as_dict(self) -> dict[str, Any]:
        return {"case": self.case, "reason": self.reason, "detail": self.detail}


@dataclass
class Manifest:
    """A parsed manifest: the raw JSON document plus where it came from.

    ``base`` is the directory artifact paths are relative to (the manifest file's
    directory); ``duplicate_keys`` lists the keys JSON objects repeated, with the byte
    offset of each repeat (JSON parsers keep only the last value, so this is recorded
    while parsing)."""

    document: dict[str, Any]
    base: Path = field(default_factory=Path)
    path: Path | None = None
    duplicate_keys: list[tuple[str, int | None]] = field(default_factory=list)

    @property
    def schema(self) -> Any:
        return self.document.get("schema")


@dataclass
class Context:
    """What verifying one manifest needs besides the entry: the manifest (for its base
    directory) and the FPS backend module that runs cases."""

    manifest: Manifest
    fps: Any
    # per-manifest state a schema's top-level check hands to its entry checks
    shared: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Schema:
    """One manifest schema: its array of entries, the canonical field order, which fields
    the writer normalises, and two checks per entry — ``check`` (structure: fields and
    types; no I/O) and ``verify`` (meaning: artifacts, operations), run only on entries
    whose structure is sound."""

    name: str
    array: str
    field_order: tuple[str, ...]
    check: Callable[[str, dict[str, Any]], list[Problem]]
    verify: Callable[[str, dict[str, Any], Context], list[Problem]]
    hex_fields: frozenset[str] = frozenset()
    hex_list_fields: frozenset[str] = frozenset()
    decimal_fields: frozenset[str] = frozenset()
    # extra top-level fields (besides "schema" and the array) and their check
    top_fields: tuple[str, ...] = ()
    check_top: Callable[[Context], list[Problem]] | None = None
