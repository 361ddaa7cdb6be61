"""Reading manifests (strict UTF-8 JSON, repeated keys recorded) and writing their
canonical form: entries sorted by id, fields in schema order, lowercase hex, sizes as
decimal strings, two-space indentation, UTF-8, one trailing newline."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .._files import loads_json_noting_duplicates, read_regular, write_atomic
from ..errors import CanonkitError, FileTooLargeError, JSONInputError, ManifestError
from ._model import Manifest
from .schemas import SCHEMAS, Schema

# A manifest is a list of cases, never a bulk artifact: a larger file is refused unread.
MAX_MANIFEST_BYTES = 64 << 20


def loads(data: bytes | str, *, base: Path | str = ".", path: Path | None = None) -> Manifest:
    """Parse manifest text; ManifestError if it is not strict UTF-8 JSON
    (``canonkit._files``) with a top-level object. A repeated key is recorded, not
    refused: everything else (repeats, schema, fields, order) is left for ``verify``."""
    where = str(path) if path is not None else "<manifest>"
    try:
        document, repeated = loads_json_noting_duplicates(data, source=where)
    except JSONInputError as exc:
        raise ManifestError(str(exc), offset=exc.offset, detail=exc.code) from None
    if not isinstance(document, dict):
        raise ManifestError(f"{where}: the top level must be a JSON object, "
                            f"not {type(document).__name__}")
    return Manifest(document, base=Path(base), path=path, duplicate_keys=repeated)


def read(path: Path | str) -> Manifest:
    """Read the manifest at ``path`` (a regular file, at most ``MAX_MANIFEST_BYTES``);
    artifact paths resolve against its directory."""
    path = Path(path)
    try:
        data = read_regular(path, max_bytes=MAX_MANIFEST_BYTES)
    except (OSError, FileTooLargeError) as exc:
        # chained: a caller can tell "could not read" (an I/O failure, a FIFO) from
        # "not a manifest" (too large, not JSON)
        if isinstance(exc, CanonkitError):  # its message names the path already
            raise ManifestError(f"cannot read: {exc}") from exc
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
    return (json.dumps(ordered, indent=2, ensure_ascii=False, default=_unwritable)
            + "\n").encode("utf-8")


def _unwritable(value: Any) -> Any:
    raise ManifestError(f"cannot write {value!r}: not a manifest value")


def write(manifest: Manifest | dict[str, Any], path: Path | str) -> None:
    """Write the canonical form of ``manifest`` to ``path``, completely or not at all."""
    write_atomic(path, dumps(manifest))
