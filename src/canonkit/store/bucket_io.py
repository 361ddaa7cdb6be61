"""Every request a store in object storage makes goes through this module (STORE.md §7).

A :class:`Bucket` is the store's prefix (``s3://bucket/prefix/``) and names objects by
their path relative to it (``objects/ab/<62 hex>``, ``packs/pack-<hex>.idx``, ``refs/main``),
the same relative paths a local store uses. The requests themselves are
:mod:`canonkit._files.remote`'s (retries, ETag checks, redacted errors).

Every mutating request (PUT, DELETE) first counts itself on the counter of
:mod:`canonkit.store.mutations`, so ``CANONKIT_STORE_CRASH_AT=N`` ends the process right
before its N-th mutating request as it does before the N-th file operation of a local
store: the crash tests drive N over every request of put, set_ref, repack and gc.

Many objects read in a known order (repack's loose objects, an fsck unit's) are fetched a
few at a time ahead of their use (``read_ahead``): object storage answers in tens of
milliseconds, and requests in flight overlap.
"""
from __future__ import annotations

import shutil
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from .._files import remote
from .._files.remote import ObjectInfo
from .._files.urls import ObjectURL, parse_url
from ..errors import FileChangedError, ObjectNotFoundError, UnsupportedURLError
from . import mutations as fs

__all__ = ["AHEAD_BYTES", "AHEAD_OBJECTS", "Bucket", "ObjectInfo", "modified", "read_ahead"]

K = TypeVar("K")
R = TypeVar("R")

AHEAD_OBJECTS = 16      # objects fetched ahead of their use, at most ...
AHEAD_BYTES = 64 << 20  # ... and at most this many bytes of them (but always one)
_THREADS = 8            # requests in flight
COPY_BLOCK = 1 << 20    # bytes per write of a download
DELETE_BATCH = 1000     # objects per batched deletion (S3's DeleteObjects limit)


def read_ahead(keys: Iterable[K], fetch: Callable[[K], R], size: Callable[[K], int]
               ) -> Iterator[tuple[K, Future[R]]]:
    """``(key, future of fetch(key))`` in the order of ``keys``, each fetch started ahead
    of its turn while fewer than ``AHEAD_OBJECTS`` objects and ``AHEAD_BYTES`` bytes (by
    ``size``) are waiting; the caller takes each ``result()`` (its exception, if any)."""
    pool = ThreadPoolExecutor(_THREADS, thread_name_prefix="canonkit-ahead")
    pending: deque[tuple[K, Future[R], int]] = deque()
    waiting = 0
    keys = iter(keys)
    try:
        for key in keys:
            n = size(key)
            while pending and (len(pending) >= AHEAD_OBJECTS or waiting + n > AHEAD_BYTES):
                head, future, m = pending.popleft()
                waiting -= m
                yield head, future
            pending.append((key, pool.submit(fetch, key), n))
            waiting += n
        while pending:
            head, future, _ = pending.popleft()
            yield head, future
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def modified(info: ObjectInfo) -> float:
    """An object's age mark for the grace period: its LastModified (Unix time; 0 when the
    server sent none, which makes it old)."""
    return info.last_modified.timestamp() if info.last_modified else 0.0


class Bucket:
    """The objects under one prefix of object storage."""

    def __init__(self, url: str) -> None:
        try:
            parsed = parse_url(url if url.endswith("/") else url + "/")
        except ValueError as exc:
            raise UnsupportedURLError(f"{remote.redact(url)}: {exc}",
                                      detail=remote.redact(url)) from None
        if parsed.scheme not in ("s3", "gs", "az"):
            raise UnsupportedURLError(
                f"{parsed}: a store lives on a local path or under an s3://, gs:// or az:// "
                f"prefix (http(s) is read-only; a file:// URL is a local path: give the path)",
                detail=str(parsed))
        self.prefix: ObjectURL = parsed
        self.url = str(parsed)  # canonical, ends in "/"

    def __repr__(self) -> str:
        return f"Bucket({self.url!r})"

    def child(self, rel: str) -> ObjectURL:
        return self.prefix.child(self.prefix.key + rel)

    def shown(self, rel: str) -> str:
        """The URL of ``rel`` as messages print it."""
        return self.url + rel

    def rel(self, info: ObjectInfo) -> str:
        """The store-relative path of an object a listing returned."""
        return info.url[len(self.url):]

    # -- reads ---------------------------------------------------------------------

    def head(self, rel: str) -> ObjectInfo | None:
        try:
            return remote.head(self.child(rel))
        except ObjectNotFoundError:
            return None

    def list(self, rel_prefix: str = "") -> list[ObjectInfo]:
        """Every object under ``rel_prefix`` (``""``: the whole store), in walk order."""
        return remote.list_prefix(self.child(rel_prefix))

    def read(self, rel: str, *, max_bytes: int | None = None
             ) -> tuple[bytes, ObjectInfo] | None:
        """The whole object and what it is (None when absent); FileTooLargeError, before
        reading, when it is larger than ``max_bytes`` (None: its listed size bounds it)."""
        for attempt in range(2):
            info = self.head(rel)
            if info is None:
                return None
            try:
                return remote.read_object(info, max_bytes=max_bytes), info
            except ObjectNotFoundError:  # removed between the HEAD and the GET
                return None
            except FileChangedError:  # written again meanwhile: read the new version
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def read_listed(self, info: ObjectInfo) -> bytes | None:
        """The whole object a listing saw (None once it is gone); written again since
        (a re-put refreshing its age), its new version."""
        try:
            return remote.read_object(info)
        except ObjectNotFoundError:
            return None
        except FileChangedError:
            found = self.read(self.rel(info))
            return None if found is None else found[0]

    @staticmethod
    def read_range(info: ObjectInfo, start: int, end: int) -> bytes:
        return remote.read_range(info, start, end)

    @staticmethod
    def download(info: ObjectInfo, path: str) -> None:
        """The object a listing saw into the local file ``path`` (created), streamed a
        block at a time: never whole in memory."""
        with remote.open_range(info) as source, open(path, "xb") as target:
            shutil.copyfileobj(source, target, COPY_BLOCK)

    # -- mutations (each one counted: the crash knob) --------------------------------

    def put(self, rel: str, data: bytes | bytearray | memoryview | Path, *,
            if_none_match: bool = False, if_match: str | None = None) -> str:
        fs.request()
        return remote.put(self.child(rel), data, if_none_match=if_none_match,
                          if_match=if_match)

    def delete(self, rel: str, *, if_match: str | None = None) -> None:
        fs.request()
        remote.delete(self.child(rel), if_match=if_match)

    def delete_many(self, rels: Sequence[str]) -> None:
        """Delete the objects, ``DELETE_BATCH`` per request (S3's DeleteObjects; one
        request each on a service without batches), each batch counted as one."""
        for at in range(0, len(rels), DELETE_BATCH):
            fs.request()
            remote.delete_many([self.child(rel) for rel in rels[at:at + DELETE_BATCH]])
