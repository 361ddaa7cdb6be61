"""The lock of a store in object storage: a lease object (STORE.md §7).

``lock`` holds JSON ``{"holder", "host", "started", "expires"}`` and is created with
``If-None-Match: *`` (exactly one of two racing creators wins). While held, a thread
refreshes ``expires`` every ``TTL / 4`` seconds with ``If-Match`` on the ETag it wrote
last; a holder whose refresh lost its condition (someone broke the lock), or whose last
successful refresh is older than ``TTL``, has lost the lease, and ``check()`` raises
before the next destructive step. Past ``expires`` the
lease is stale: a second repack or gc is refused with ``StaleLockError`` and the lock is
broken only explicitly (``Store.break_lock()``: DELETE with ``If-Match`` on the ETag read,
so a lease renewed meanwhile is never removed). Clocks: ``expires`` is the holder's wall
clock; a lease is judged stale only ``SKEW`` seconds after it, to absorb clock skew.
"""
from __future__ import annotations

import json
import os
import secrets
import socket
import threading
import time
from typing import Any

from .._files import loads_json
from ..errors import (
    LockHeldError,
    ObjectStorageError,
    PreconditionFailedError,
    StaleLockError,
)
from .bucket_io import Bucket
from .layout import LOCK
from .lock import LATEST_START, LOCK_LIMIT, MAX_HOST, LockInfo

__all__ = ["Lease", "break_lease", "read_lease"]

TTL = 120.0   # seconds a lease lasts unless refreshed
SKEW = 30.0   # seconds past ``expires`` before a lease is stale


def parse_lease(data: bytes) -> dict[str, Any]:
    """The lease document; ``ValueError`` saying what is wrong unless canonkit could
    have written it."""
    if len(data) > LOCK_LIMIT:
        raise ValueError(f"larger than {LOCK_LIMIT} bytes")
    doc = loads_json(data, source=LOCK)
    if not isinstance(doc, dict) or set(doc) != {"holder", "host", "started", "expires"}:
        raise ValueError('not {"holder", "host", "started", "expires"}')
    if type(doc["holder"]) is not str or not 0 < len(doc["holder"]) <= 128:
        raise ValueError("holder is not a holder's name")
    if type(doc["host"]) is not str or not 0 < len(doc["host"]) <= MAX_HOST:
        raise ValueError("host is not a host name")
    for key in ("started", "expires"):
        if type(doc[key]) not in (int, float) or not 0 <= doc[key] <= LATEST_START:
            raise ValueError(f"{key} {doc[key]!r} is not a time")
    return doc


def _pid_of(holder: str) -> int | None:
    head = holder.split("-", 1)[0]
    return int(head) if head.isdigit() and len(head) < 10 else None


def read_lease(bucket: Bucket) -> tuple[LockInfo, str | None] | None:
    """``(who holds the lease, the ETag read)``, or None when the store is not locked."""
    found = bucket.read(LOCK, max_bytes=LOCK_LIMIT)
    if found is None:
        return None
    data, info = found
    now = time.time()
    try:
        doc = parse_lease(data)
    except ValueError as exc:
        modified = info.last_modified.timestamp() if info.last_modified else now
        stale = now - modified > TTL + SKEW
        return LockInfo(None, None, None, stale,
                        f"unreadable lease ({exc})" + ("; older than a lease lasts"
                                                       if stale else "")), info.etag
    expires = float(doc["expires"])
    stale = now > expires + SKEW
    reason = (f"lease expired {now - expires:.0f} s ago" if stale
              else f"lease valid for {expires - now:.0f} s more")
    return (LockInfo(_pid_of(doc["holder"]), doc["host"], float(doc["started"]), stale,
                     reason), info.etag)


def break_lease(bucket: Bucket, *, force: bool = False) -> LockInfo | None:
    """Remove a stale lease (any lease with ``force``); returns what was removed."""
    found = read_lease(bucket)
    if found is None:
        return None
    info, etag = found
    if not info.stale and not force:
        raise LockHeldError(f"the store lock is held by {info.describe()}; not breaking it "
                            f"(force=True breaks it anyway)", path=LOCK, detail=info.to_dict())
    try:
        bucket.delete(LOCK, if_match=etag)
    except PreconditionFailedError:
        raise LockHeldError("the store lock changed while it was being broken (renewed or "
                            "taken again); look again", path=LOCK) from None
    except FileNotFoundError:
        return None
    return info


class Lease:
    """``with Lease(bucket):`` holds the store's lease for the block."""

    def __init__(self, bucket: Bucket, *, ttl: float = TTL) -> None:
        self.bucket = bucket
        self.ttl = ttl
        self.holder = f"{os.getpid()}-{secrets.token_hex(8)}"
        self.host = socket.gethostname()
        self.started = time.time()
        self.etag: str | None = None
        self.renewed = self.started  # when the lease was last written
        self.lost: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._mutex = threading.Lock()

    def _body(self) -> bytes:
        return json.dumps({"holder": self.holder, "host": self.host,
                           "started": self.started,
                           "expires": time.time() + self.ttl}).encode("ascii")

    def __enter__(self) -> Lease:
        try:
            self.etag = self.bucket.put(LOCK, self._body(), if_none_match=True)
            self.renewed = time.time()
        except PreconditionFailedError as exc:
            if exc.detail == "retried" and self._ours():
                pass  # our first attempt was applied and its response lost
            else:
                self._refuse()
        self._thread = threading.Thread(target=self._refresh_loop, daemon=True,
                                        name="canonkit-lease")
        self._thread.start()
        return self

    def _ours(self) -> bool:
        found = self.bucket.read(LOCK, max_bytes=LOCK_LIMIT)
        if found is None:
            return False
        try:
            if parse_lease(found[0])["holder"] != self.holder:
                return False
        except ValueError:
            return False
        self.etag = found[1].etag
        return True

    def _refuse(self) -> None:
        found = read_lease(self.bucket)
        if found is None:
            raise LockHeldError("the store lock changed hands while it was taken; try again",
                                path=LOCK)
        info = found[0]
        if info.stale:
            raise StaleLockError(f"the store lock is stale: {info.describe()}; break it with "
                                 f"Store.break_lock() or `canonkit store unlock`", path=LOCK,
                                 detail=info.to_dict()) from None
        raise LockHeldError(f"another repack or gc holds the store lock: {info.describe()}",
                            path=LOCK, detail=info.to_dict()) from None

    def _refresh_loop(self) -> None:
        while not self._stop.wait(self.ttl / 4):
            self.refresh()

    def refresh(self) -> None:
        """Extend the lease (``If-Match`` on the last ETag); a lost condition is the
        lease lost, which ``check`` reports."""
        with self._mutex:
            if self.lost is not None or self._stop.is_set():
                return
            try:
                self.etag = self.bucket.put(LOCK, self._body(), if_match=self.etag)
                self.renewed = time.time()
            except PreconditionFailedError as exc:
                if not (exc.detail == "retried" and self._ours()):
                    self.lost = "the lease was broken or taken by another holder"
            except ObjectStorageError as exc:  # unreachable: the next refresh tries again, unless
                if time.time() > self.renewed + self.ttl:  # the lease may have run out
                    self.lost = f"the lease could not be refreshed: {exc}"
            except Exception as exc:  # noqa: BLE001 - reported by check(), never lost
                self.lost = f"the lease could not be refreshed: {exc}"

    def check(self) -> None:
        """Raise ``LockHeldError`` if the lease was lost, or may have run out: its last
        successful write is older than the lease lasts (the holder was held up and its
        refreshes failed or did not run), so another may have broken it meanwhile.
        Called before each destructive step."""
        if self.lost is None and time.time() > self.renewed + self.ttl:
            self.lost = f"the lease was last renewed {time.time() - self.renewed:.0f} s ago"
        if self.lost is not None:
            raise LockHeldError(f"{self.bucket.shown(LOCK)}: {self.lost}; stopping before "
                                f"anything more is deleted", path=LOCK)

    def release(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        with self._mutex:
            if self.lost is None and self.etag is not None:
                try:
                    self.bucket.delete(LOCK, if_match=self.etag)
                except (PreconditionFailedError, FileNotFoundError):
                    pass  # broken meanwhile: nothing of ours to remove
            self.etag = None

    def __exit__(self, *exc: object) -> None:
        self.release()
