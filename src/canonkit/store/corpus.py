"""Putting a conformance corpus into a store (``canonkit store import``)."""
from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from .._files import loads_json, read_regular
from ..errors import JSONInputError, ManifestError
from .._progress import bar

if TYPE_CHECKING:
    from .store import Store

__all__ = ["import_corpus", "read_vectors"]

VECTORS_SCHEMA = "canonkit.conformance.vectors.v1"
MAX_BYTES = 64 << 20  # the corpus checker's limit for a corpus JSON file
_HEX = re.compile(r"(?:[0-9a-f]{2})*")


def read_vectors(corpus: str | os.PathLike[str]) -> list[tuple[str, str, bytes]]:
    """``(name, address, bytes)`` of every vector of ``corpus/vectors.json``;
    ``ManifestError`` if it is not a vectors file."""
    path = os.path.join(corpus, "vectors.json")
    # the input door: a regular file (a FIFO or device refused at once), its size bounded
    # before it is read, strict JSON (a repeated key refused, located)
    raw = read_regular(path, max_bytes=MAX_BYTES)
    try:
        doc = loads_json(raw, source=path)
    except JSONInputError as exc:
        raise ManifestError(f"not strict JSON ({exc.code}): {exc}", detail=path) from None
    if not isinstance(doc, dict) or doc.get("schema") != VECTORS_SCHEMA or not isinstance(
            doc.get("vectors"), list):
        raise ManifestError(f"{path} is not a {VECTORS_SCHEMA} file", detail=path)
    out = []
    for i, entry in enumerate(doc["vectors"]):
        if not (isinstance(entry, dict) and all(isinstance(entry.get(k), str)
                                                for k in ("name", "address", "hex"))
                and _HEX.fullmatch(entry["hex"])):
            raise ManifestError(f"{path}: vectors[{i}] needs text name, address and "
                                f"lowercase hex", detail=path)
        out.append((entry["name"], entry["address"], bytes.fromhex(entry["hex"])))
    return out


def import_corpus(store: Store, corpus: str | os.PathLike[str], *, form: str = "loose",
                  progress: bool | None = None) -> Iterator[tuple[str, str, str]]:
    """Put every vector; yields ``(name, address stored, address the corpus gives)``."""
    vectors = read_vectors(corpus)
    progress_bar = bar(progress, len(vectors), "import", "vector")
    try:
        for name, expected, data in vectors:
            yield name, store.put(data, form=form), expected
            progress_bar.update(1)
    finally:
        progress_bar.close()
