"""``--cache DIR|URL`` (REVERIFY.md §7): a result cache for incremental re-verification,
in a local directory or under a prefix of object storage (``s3://``, ``gs://``, ``az://``).

An entry holds what a report line says about an Episode apart from its source
(``worker.Parts``), under a key that is the BLAKE3 of everything that result depends on:
the document's exact bytes (and its kind), the path and bytes of a Layer 3 export the
document names, the verification version and the package version, and the options that
change a result (the search cap, whether Layer 3 is required). The source is attached
again on read, so a document moved or copied elsewhere is found too.

The lookup runs in the worker, which holds the bytes. An entry carries its own key and a
BLAKE3 of its content and is checked on read: a damaged or foreign entry is recomputed,
rewritten and counted (``corrupt``), never trusted and never an error. Entries are
written to a unique temporary in the entry's directory and renamed into place (in object
storage: one PUT, atomic by itself), so a reader sees a whole entry or none; concurrent
writers of one key write the same bytes. A cache that cannot be reached or written only
costs verification, never a result.
"""
from __future__ import annotations

import os
import uuid
from typing import Any

import orjson
from blake3 import blake3

from .._version import __version__
from ..errors import CacheError
from .layer3_component import Layer3Result
from .worker import VERIFICATION_VERSION, Options, Parts

FORMAT = "canonkit-reverify-cache/1"
_NO_EXPORT = b""
# a Layer 3 export larger than this is not keyed (the document is verified, not cached)
_MAX_EXPORT = 256 * 1024 * 1024
# an entry is a few hundred bytes; one larger than this is damaged
_MAX_ENTRY = 64 * 1024 * 1024


def open_cache(path: str | os.PathLike[str]) -> str:
    """The cache as an absolute directory (made if missing) or a URL prefix of object
    storage (a ``/`` is added); ``CacheError`` when it is not a directory that can be
    written, or a URL no entry can be written under. Called before any work."""
    name = os.fspath(path)
    from .._files.urls import is_url

    if is_url(name):
        return _open_prefix(name)
    try:
        os.makedirs(name, exist_ok=True)
    except OSError as exc:
        raise CacheError(f"{name}: the cache directory cannot be made: "
                         f"{exc.strerror or exc}", detail=name) from None
    if not os.path.isdir(name) or not os.access(name, os.W_OK | os.X_OK):
        raise CacheError(f"{name}: not a writable directory", detail=name)
    return os.path.abspath(name)


def _open_prefix(name: str) -> str:
    from .._files.remote import _obstore, storage_prefix

    prefix = storage_prefix(name, what="cache", local="directory", error=CacheError)
    _obstore()  # MissingDependencyError (a usage error) now, not in every worker
    return prefix


def _named_export(kind: str, payload: bytes, origin: str | None) -> tuple[str, bytes] | None:
    """The resolved path and bytes of the Layer 3 export the document names (``("",
    b"")`` when it names none); None when that cannot be known here (the document cannot
    be read this way, the export is an object or cannot be read): such a document is
    verified and not cached."""
    if b"layer3" not in payload and (kind != "json" or b"\\u" not in payload):
        return "", _NO_EXPORT  # no "layer3" key can be spelled without these bytes
    try:
        if kind == "cbor":
            from .. import cbor

            doc: Any = cbor.decode(payload)
        else:
            doc = orjson.loads(payload)
    except Exception:  # noqa: BLE001 (whatever the document is, it is just not cached)
        return None
    member = doc.get("layer3") if hasattr(doc, "get") else None
    if not isinstance(member, str):
        return "", _NO_EXPORT  # an inline export is part of the document's bytes
    from .layer3_component import note_named_read

    note_named_read()  # a cached result of it depends on a file the journal does not key
    from .._files import read_regular, resolve_within
    from .._files.urls import is_url

    if origin is None or is_url(origin) or not member:
        return None
    try:
        target = resolve_within(os.path.dirname(origin), member)
        return target, read_regular(target, max_bytes=_MAX_EXPORT)
    except (OSError, ValueError):
        return None


def _to_json(parts: Parts) -> dict[str, Any]:
    layer3 = None if parts.layer3 is None else [parts.layer3.state, parts.layer3.findings]
    return {"episode_id": parts.episode_id, "outcome": parts.outcome,
            "components": parts.components, "construction": parts.construction,
            "order": parts.order, "flags": parts.flags, "reason": parts.reason,
            "layer3": layer3}


def _from_json(value: dict[str, Any]) -> Parts:
    layer3 = value["layer3"]
    return Parts(value["episode_id"], value["outcome"], value["components"],
                 value["construction"], value["order"], value["flags"], value["reason"],
                 None if layer3 is None else Layer3Result(layer3[0], layer3[1]))


class ResultCache:
    """The cache at ``directory`` as one unit of work uses it: ``hits`` and ``corrupt``
    count what this instance found."""

    def __init__(self, directory: str) -> None:
        from .._files.urls import is_url

        self.directory = directory
        self._remote = is_url(directory)
        self.hits = 0
        self.corrupt = 0

    def key(self, kind: str, payload: bytes, options: Options, origin: str | None
            ) -> str | None:
        """The entry's key, or None when the document is not to be cached."""
        export = _named_export(kind, payload, origin)
        if export is None:
            return None
        target, data = export
        digest = blake3(b"%b\0%b\0%d\0%d\0%d\0%b\0" % (
            FORMAT.encode(), __version__.encode(), VERIFICATION_VERSION,
            options.search_cap, int(options.require_layer3), kind.encode()))
        digest.update(b"%d\0" % len(payload))
        digest.update(payload)
        name = os.fsencode(target)
        digest.update(b"%d\0%b%d\0" % (len(name), name, len(data)))
        digest.update(data)
        return digest.hexdigest()

    def _path(self, key: str) -> str:
        if self._remote:
            return f"{self.directory}{key[:2]}/{key}"
        return os.path.join(self.directory, key[:2], key)

    def _read(self, key: str) -> bytes | None:
        """The entry's bytes; None when there is none (or it cannot be read: then it is
        recomputed, as a damaged one)."""
        if self._remote:
            from .._files import remote
            from ..errors import ObjectNotFoundError, ObjectStorageError

            try:
                return remote.read_object(remote.head(self._path(key)),
                                          max_bytes=_MAX_ENTRY)
            except ObjectNotFoundError:
                return None
            except (ObjectStorageError, OSError, ValueError):
                self.corrupt += 1
                return None
        try:
            with open(self._path(key), "rb") as f:
                return f.read(_MAX_ENTRY)
        except FileNotFoundError:
            return None
        except OSError:
            self.corrupt += 1
            return None

    def get(self, key: str | None) -> Parts | None:
        if key is None:
            return None
        raw = self._read(key)
        if raw is None:
            return None
        try:
            value = orjson.loads(raw)
            content = orjson.dumps(value["result"])
            if (value["format"] != FORMAT or value["key"] != key
                    or value["blake3"] != blake3(content).hexdigest()):
                raise ValueError("entry does not check")
            parts = _from_json(value["result"])
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, IndexError):
            self.corrupt += 1
            return None
        self.hits += 1
        return parts

    def put(self, key: str | None, parts: Parts) -> None:
        """Store ``parts`` under ``key``; a cache that cannot be written only costs the
        next run the verification (the report never depends on it)."""
        if key is None:
            return
        try:
            content = orjson.dumps(_to_json(parts))
        except (TypeError, orjson.JSONEncodeError):
            return
        entry = b'{"format":"%b","key":"%b","result":%b,"blake3":"%b"}' % (
            FORMAT.encode(), key.encode(), content, blake3(content).hexdigest().encode())
        path = self._path(key)
        if self._remote:  # a PUT is atomic: readers see the whole entry or none
            from .._files import remote
            from ..errors import ObjectStorageError

            try:
                remote.put(path, entry)
            except (ObjectStorageError, OSError, ValueError):
                pass
            return
        tmp = f"{path}.{os.getpid()}.{uuid.uuid4().hex}.tmp"
        try:
            try:
                f = open(tmp, "xb")  # noqa: SIM115
            except FileNotFoundError:  # the first entry of its directory
                os.makedirs(os.path.dirname(path), exist_ok=True)
                f = open(tmp, "xb")  # noqa: SIM115
            with f:
                f.write(entry)
            os.replace(tmp, path)
        except OSError:
            try:
                os.unlink(tmp)
            except OSError:
                pass
