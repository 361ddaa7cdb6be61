"""ASTP.md §2.3 canonical JSON: RFC 8785 (JCS) after NFC normalization of every string.

Used for the audit record deltas (§14). ``canonical_json`` produces the canonical text,
``parse_canonical`` accepts stored text only when it is already its own canonical form.
Refusals raise ``InvalidFieldError`` naming the JSON path of the offending value; a value
nested deeper than ``CANONICAL_MAX_DEPTH`` containers is refused. The work runs in the
compiled audit kernel when built, else in its twin (``canonkit.astp._py.audit``).
"""
from __future__ import annotations

from typing import Any

from canonkit.astp._live import auditor
from canonkit.astp._py.audit import es_number
from canonkit.astp._py.common import CANONICAL_MAX_DEPTH

__all__ = ["CANONICAL_MAX_DEPTH", "canonical_json", "canonical_json_bytes", "es_number",
           "parse_canonical"]


def canonical_json(value: Any) -> str:
    """The canonical text of a JSON-compatible value (dict/list/str/int/float/bool/None)."""
    return auditor.canonical_json(value)


def canonical_json_bytes(value: Any) -> bytes:
    """UTF-8 bytes of ``canonical_json(value)``."""
    return auditor.canonical_json_bytes(value)


def parse_canonical(text: str | bytes) -> Any:
    """Parse stored canonical JSON, refusing (``InvalidFieldError``) text that is not JSON or
    is not byte-identical to its own canonical form."""
    return auditor.parse_canonical(text)
