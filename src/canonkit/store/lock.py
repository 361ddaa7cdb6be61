"""The store lock: one repack or gc at a time (STORE.md §1, §6).

``lock`` holds JSON ``{"pid", "host", "started"}`` and is created exclusively, content
and all (see ``StoreLock._create``). A second repack/gc fails at once: ``LockHeldError`` while the holder lives,
``StaleLockError`` when its pid is gone on this host. A stale lock is never broken
silently — ``Store.break_lock()`` (``canonkit store unlock``) removes it. A lock whose
content cannot be read (its holder died between creating and writing it) counts as stale
once it is older than ``UNREADABLE_GRACE`` seconds.
"""
from __future__ import annotations

import errno
import json
import os
import secrets
import socket
import time
from dataclasses import dataclass
from typing import Any

from ..errors import LockHeldError, StaleLockError
from . import mutations as fs
from .layout import LOCK, TMP
from .loose import read_file

__all__ = ["LockInfo", "StoreLock", "break_lock", "read_lock"]

UNREADABLE_GRACE = 10.0


@dataclass(frozen=True)
class LockInfo:
    """Who holds the lock: ``pid``, ``host``, ``started`` (Unix time) as recorded, and
    whether the holder is known to be gone (``stale``) with the reason."""

    pid: int | None
    host: str | None
    started: float | None
    stale: bool
    reason: str

    def describe(self) -> str:
        who = f"pid {self.pid} on {self.host}" if self.pid is not None else "an unknown holder"
        since = (time.strftime(" since %Y-%m-%d %H:%M:%S", time.localtime(self.started))
                 if self.started is not None else "")
        return f"{who}{since} ({self.reason})"

    def to_dict(self) -> dict[str, Any]:
        return {"pid": self.pid, "host": self.host, "started": self.started,
                "stale": self.stale, "reason": self.reason}


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def read_lock(root: str) -> LockInfo | None:
    """The current lock's holder, or None when the store is not locked."""
    path = f"{root}/{LOCK}"
    data = read_file(path, LOCK)
    if data is None:
        return None
    try:
        doc = json.loads(data)
        pid, host, started = doc["pid"], doc["host"], doc["started"]
        if type(pid) is not int or type(host) is not str or not isinstance(started, (int,
                                                                                    float)):
            raise ValueError("bad field types")
    except (ValueError, KeyError, TypeError):
        try:
            age = time.time() - os.lstat(path).st_mtime
        except FileNotFoundError:
            return None
        stale = age > UNREADABLE_GRACE
        return LockInfo(None, None, None, stale,
                        f"unreadable lock file, {age:.0f} s old"
                        + ("; its holder died before writing it" if stale else ""))
    if host != socket.gethostname():
        return LockInfo(pid, host, float(started), False,
                        "held on another host; cannot tell whether it is alive")
    if _pid_alive(pid):
        return LockInfo(pid, host, float(started), False, "holder is running")
    return LockInfo(pid, host, float(started), True, "holder is gone")


def break_lock(root: str, *, force: bool = False) -> LockInfo | None:
    """Remove a stale lock (any lock with ``force``); returns what was removed."""
    info = read_lock(root)
    if info is None:
        return None
    if not info.stale and not force:
        raise LockHeldError(f"the store lock is held by {info.describe()}; not breaking it "
                            f"(force=True breaks it anyway)", path=LOCK, detail=info.to_dict())
    try:
        fs.unlink(f"{root}/{LOCK}")
    except FileNotFoundError:
        return None
    return info


class StoreLock:
    """``with StoreLock(root, durable):`` holds the store lock for the block."""

    def __init__(self, root: str, *, durable: bool) -> None:
        self.root = root
        self.durable = durable
        self.path = f"{root}/{LOCK}"
        self.held = False

    def __enter__(self) -> StoreLock:
        content = json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                              "started": time.time()}).encode("ascii")
        for _ in range(3):  # the holder may release between our attempt and our read
            try:
                self._create(content)
                return self
            except FileExistsError:
                info = read_lock(self.root)
                if info is None:
                    continue
                if info.stale:
                    raise StaleLockError(
                        f"the store lock is stale: {info.describe()}; break it with "
                        f"Store.break_lock() or `canonkit store unlock`", path=LOCK,
                        detail=info.to_dict()) from None
                raise LockHeldError(f"another repack or gc holds the store lock: "
                                    f"{info.describe()}", path=LOCK,
                                    detail=info.to_dict()) from None
        raise LockHeldError("the store lock keeps changing hands", path=LOCK)

    def _create(self, content: bytes) -> None:
        """Make ``lock`` appear with its content at once: written in tmp/, then hard-linked
        to ``lock`` — as exclusive as ``O_CREAT | O_EXCL`` (EEXIST if held), but no
        reader ever sees it empty. Where hard links are unsupported, ``O_CREAT | O_EXCL``
        and a write (an empty lock left by a crash is then judged by its age)."""
        tmp = f"{self.root}/{TMP}/lock-{os.getpid()}-{secrets.token_hex(8)}"
        fs.write_file(tmp, content, durable=self.durable)
        try:
            fs.link(tmp, self.path)
        except FileExistsError:
            raise
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.ENOSYS, errno.EXDEV):
                raise
            fd = fs.create(self.path)
            self.held = True
            try:
                fs.write(fd, content)
                if self.durable:
                    fs.fsync(fd)
            finally:
                os.close(fd)
        else:
            self.held = True
        finally:
            fs.unlink(tmp)

    def release(self) -> None:
        if self.held:
            self.held = False
            try:
                fs.unlink(self.path)
            except FileNotFoundError:
                pass

    def __exit__(self, *exc: object) -> None:
        self.release()
