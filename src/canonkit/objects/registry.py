"""The kind registry: ``(t, v)`` → ``Kind``, with canonkit's own kinds (OBJECTS.md §1).

Users add their own with ``register_kind``; canonkit's kinds cannot be replaced, because
the frozen corpus (``conformance/v1``) pins their bytes.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import UnknownKindError, UnsupportedVersionError
from .schema import REF, Array, FieldType, Int, Kind, Nullable, Record, Text, Tuple, UInt, violation

__all__ = ["BUILTIN_KINDS", "get_kind", "register_kind", "registered_kinds", "unregister_kind"]

_KINDS: dict[tuple[str, int], Kind] = {}
_V1: dict[str, Kind] = {}  # the version-1 kinds by name: the common lookup, no tuple key
_LOCK = threading.Lock()  # registration is rare; lookups read the dict without locking


def _check_chunk_manifest(fields: Mapping[str, Any]) -> None:
    total = sum(pair[1] for pair in fields["chunks"])
    if total != fields["size"]:
        raise violation("size", f"is {fields['size']} but the chunk sizes add up to {total}")


BUILTIN_KINDS: tuple[Kind, ...] = (
    Kind("blob", 1, raw=True),
    Kind("chunk", 1, raw=True),
    Kind("chunk-manifest", 1,
         fields={"size": UInt(), "chunks": Array(Tuple(REF, UInt()))},
         check=_check_chunk_manifest),
    Kind("tree", 1,
         fields={"entries": Array(
             Record({"name": Text(non_empty=True, forbid="/"), "mode": UInt(), "ref": REF}),
             order_by="name")}),
    Kind("commit", 1,
         fields={"tree": REF, "parents": Array(REF), "author": Text(), "time": Int(),
                 "message": Text()}),
    Kind("conflict", 1,
         fields={"path": Text(), "base": Nullable(REF), "ours": Nullable(REF),
                 "theirs": Nullable(REF)}),
)
_BUILTIN = {(k.name, k.version) for k in BUILTIN_KINDS}


def register_kind(kind: Kind | str, version: int = 1, *,
                  fields: Mapping[str, FieldType] | None = None,
                  optional: Mapping[str, FieldType] | None = None,
                  check: Callable[[Mapping[str, Any]], None] | None = None,
                  raw: bool = False, replace: bool = False) -> Kind:
    """Register a kind and return it.

    Either pass a ``Kind`` or its parts: ``register_kind("note", 1, fields={"title":
    Text(), "ref": REF}, optional={"tags": Array(Text(), order_by="self")})``.
    Registering an existing ``(name, version)`` raises ``ValueError`` unless
    ``replace=True``; canonkit's own kinds can never be replaced.
    """
    if not isinstance(kind, Kind):
        kind = Kind(kind, version, fields=fields, optional=optional, check=check, raw=raw)
    elif fields is not None or optional is not None or check is not None or raw:
        raise ValueError("pass either a Kind or its parts, not both")
    key = (kind.name, kind.version)
    with _LOCK:
        if key in _BUILTIN and key in _KINDS:
            raise ValueError(f"{kind.name!r} v{kind.version} is a canonkit kind; it is frozen")
        if key in _KINDS and not replace:
            raise ValueError(f"{kind.name!r} v{kind.version} is already registered")
        _KINDS[key] = kind
        if kind.version == 1:
            _V1[kind.name] = kind
    return kind


def unregister_kind(name: str, version: int = 1) -> None:
    """Remove a user kind (tests, plugins being unloaded). canonkit's kinds stay."""
    with _LOCK:
        if (name, version) in _BUILTIN:
            raise ValueError(f"{name!r} v{version} is a canonkit kind; it is frozen")
        _KINDS.pop((name, version), None)
        if version == 1:
            _V1.pop(name, None)


def get_kind(name: str, version: int) -> Kind:
    """The kind for ``(name, version)``: ``UnknownKindError`` if no version of ``name``
    is registered, ``UnsupportedVersionError`` if others are."""
    kind = _KINDS.get((name, version))
    if kind is not None:
        return kind
    known = sorted(v for (n, v) in list(_KINDS) if n == name)
    if not known:
        raise UnknownKindError(f"unknown kind {name!r}", detail=name)
    raise UnsupportedVersionError(
        f"kind {name!r} has no format version {version} (registered: "
        f"{', '.join(map(str, known))})", detail=version)


def registered_kinds() -> list[Kind]:
    """Every registered kind, sorted by (name, version)."""
    return [_KINDS[key] for key in sorted(_KINDS)]


for _kind in BUILTIN_KINDS:
    register_kind(_kind)
