"""Reading manifests (strict UTF-8 JSON, repeated keys recorded) and writing their
canonical form: entries sorted by id, fields in schema order, lowercase hex, sizes as
decimal strings, two-space indentation, UTF-8, one trailing newline."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import ManifestError
from ._model import Manifest
from .schemas import SCHEMAS, Schema


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def loads(data: bytes | str, *, base: Path | str = ".", path: Path | None = None) -> Manifest:
    """Parse manifest text; ManifestError if it is not UTF-8 JSON with a top-level object.
    Everything else (schema, fields, order) is left for ``verify`` to report."""
    where = str(path) if path is not None else "<manifest>"
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ManifestError(f"{where}: not UTF-8: {exc}", offset=exc.start) from None
    else:
        text = data
    repeated: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        obj: dict[str, Any] = {}
        for key, value in items:
            if key in obj:
                repeated.append(key)
            obj[key] = value
        return obj

    try:
        document = json.loads(text, object_pairs_hook=pairs, parse_constant=_refuse_constant)
    except (ValueError, RecursionError) as exc:
        offset = getattr(exc, "pos", None)
        raise ManifestError(f"{where}: not JSON: {exc}", offset=offset) from None
    if not isinstance(document, dict):
        raise ManifestError(f"{where}: the top level must be a JSON object, "
                            f"not {type(document).__name__}")
    return Manifest(document, base=Path(base), path=path, duplicate_keys=repeated)


def read(path: Path | str) -> Manifest:
    """Read the manifest at ``path``; artifact paths resolve against its directory."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        # chained: a caller can tell "could not read" (an I/O failure) from "not a manifest"
        raise ManifestError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    return loads(data, base=path.parent, path=path)


def _canonical_entry(schema: Schema, entry: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in list(schema.field_order) + sorted(entry.keys() - set(schema.field_order)):
        if name not in entry:
            continue
        value = entry[name]
        if name in schema.hex_fields and isinstance(value, str):
            value = value.lower()
        elif name in schema.hex_list_fields and isinstance(value, list):
            value = [v.lower() if isinstance(v, str) else v for v in value]
        elif name in schema.decimal_fields and isinstance(value, int) \
                and not isinstance(value, bool):
            value = str(value)
        out[name] = value
    return out


def dumps(manifest: Manifest | dict[str, Any]) -> bytes:
    """The canonical bytes of a manifest (ManifestError if it cannot be put in order:
    unknown schema, entries that are not objects with string ids)."""
    document = manifest.document if isinstance(manifest, Manifest) else manifest
    schema = SCHEMAS.get(document.get("schema"))  # type: ignore[arg-type]
    if schema is None:
        raise ManifestError(f"cannot write unknown schema {document.get('schema')!r}")
    entries = document.get(schema.array, [])
    if not isinstance(entries, list) or not all(
        isinstance(e, dict) and isinstance(e.get("id"), str) for e in entries
    ):
        raise ManifestError(f"cannot write: {schema.array} must be a list of objects "
                            "with string ids")
    ordered: dict[str, Any] = {"schema": schema.name}
    for name in schema.top_fields:
        if name in document:
            ordered[name] = document[name]
    for name in sorted(document.keys() - {"schema", schema.array, *schema.top_fields}):
        ordered[name] = document[name]
    ordered[schema.array] = [
        _canonical_entry(schema, e) for e in sorted(entries, key=lambda e: e["id"])
    ]
    return (json.dumps(ordered, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def write(manifest: Manifest | dict[str, Any], path: Path | str) -> None:
    """Write the canonical form of ``manifest`` to ``path``."""
    Path(path).write_bytes(dumps(manifest))
