"""The corpus directory's files, their schemas and their exact serialization (OBJECTS.md §2).

One place builds the bytes of every corpus file, so ``record`` and the tests agree on
them: JSON with two-space indentation, keys in the documented order, UTF-8, LF line
endings, one trailing newline.
"""
from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from typing import Any

from ..objects import ObjectCodec, address
from .fixtures import NEGATIVE_FIXTURES, OBJECT_FIXTURES, NegativeFixture, ObjectFixture
from .forms import build_forms

__all__ = ["MANIFEST", "MANIFEST_SCHEMA", "NEGATIVE", "NEGATIVE_SCHEMA", "VECTORS",
           "VECTORS_SCHEMA", "VECTOR_FILES", "build_corpus", "dump_json", "file_entry",
           "version_of"]

VECTORS = "vectors.json"
NEGATIVE = "negative.json"
MANIFEST = "manifest.json"
VECTOR_FILES = (NEGATIVE, VECTORS)  # the files whose entries the manifest lists, sorted

VECTORS_SCHEMA = "canonkit.conformance.vectors.v1"
NEGATIVE_SCHEMA = "canonkit.conformance.negative.v1"
MANIFEST_SCHEMA = "canonkit.conformance.manifest.v1"
PROFILE = "core"

_VERSION_DIR = re.compile(r"v([1-9][0-9]*)")


def version_of(dirname: str) -> int | None:
    """``3`` for a directory named ``v3``; None for any other name."""
    match = _VERSION_DIR.fullmatch(dirname)
    return int(match.group(1)) if match else None


def dump_json(doc: Any) -> bytes:
    """The exact bytes of a corpus JSON file."""
    return (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def file_entry(path: str, data: bytes) -> dict[str, str]:
    """One ``files`` entry of the manifest: size as a decimal string, SHA-256 hex."""
    return {"path": path, "bytes": str(len(data)), "sha256": hashlib.sha256(data).hexdigest()}


def vector_entry(fixture: ObjectFixture, codec: ObjectCodec) -> dict[str, str]:
    data = codec.encode_object(fixture.kind, fixture.fields, version=fixture.version)
    return {"name": fixture.name, "kind": fixture.kind, "description": fixture.description,
            "address": address(data), "hex": data.hex()}


def negative_entry(fixture: NegativeFixture) -> dict[str, str]:
    return {"name": fixture.name, "class": fixture.cls, "description": fixture.description,
            "hex": fixture.hex}


def build_corpus(version: int, codec: ObjectCodec,
                 objects: Iterable[ObjectFixture] = OBJECT_FIXTURES,
                 negatives: Iterable[NegativeFixture] = NEGATIVE_FIXTURES) -> dict[str, bytes]:
    """Every file of a corpus of format ``version``, encoded by ``codec`` (the live
    encoder when recording): ``{path: bytes}`` (``forms/...`` paths included), the
    manifest last."""
    objects = sorted(objects, key=lambda f: f.name)
    negatives = sorted(negatives, key=lambda f: f.name)
    vectors = [vector_entry(f, codec) for f in objects]
    files = {
        VECTORS: dump_json({"schema": VECTORS_SCHEMA, "vectors": vectors}),
        NEGATIVE: dump_json({"schema": NEGATIVE_SCHEMA, "profile": PROFILE,
                             "cases": [negative_entry(f) for f in negatives]}),
    }
    # the store's physical forms of every vector (forms.py; STORE.md §5)
    files.update(build_forms((v["name"], bytes.fromhex(v["hex"])) for v in vectors))
    listed = [{"file": NEGATIVE, "name": f.name, "family": f.cls,
               "requirements": f.all_requirements()} for f in negatives]
    listed += [{"file": VECTORS, "name": f.name, "family": f.kind,
                "requirements": f.all_requirements()} for f in objects]
    manifest = {
        "schema": MANIFEST_SCHEMA,
        "format_version": version,
        "digest": "sha256",
        "files": [file_entry(name, files[name]) for name in sorted(files)],
        "vectors": sorted(listed, key=lambda e: (e["file"], e["name"])),
    }
    files[MANIFEST] = dump_json(manifest)
    return files
