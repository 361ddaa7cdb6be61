"""The store lock: one repack or gc at a time (STORE.md §1, §6).

``lock`` holds JSON ``{"pid", "host", "started"}`` and is created exclusively, content
and all (see ``StoreLock._create``). A second repack/gc fails at once: ``LockHeldError``
while the holder lives, ``StaleLockError`` when its pid is gone on this host. A stale
lock is never broken silently — ``Store.break_lock()`` (``canonkit store unlock``)
removes it; ``force=True`` removes any lock file, whatever it holds.

The content is checked before it is believed: strict JSON of at most ``LOCK_LIMIT``
bytes, a ``pid`` that can be a process (1 to ``MAX_PID``: never 0 or -1, which
``kill()`` reads as a whole process group or every process), a ``host`` of at most 255
characters, a finite ``started`` time. A lock that fails the check (its holder died
between creating and writing it, or something else wrote it) counts as stale once it is
older than ``UNREADABLE_GRACE`` seconds.
"""
from __future__ import annotations

import errno
import json
import os
import socket
import time
from dataclasses import dataclass
from typing import Any

from .._files import loads_json
from ..errors import LockHeldError, StaleLockError, StoreError, UnsafePathError
from . import mutations as fs
from .layout import LOCK, TMP
from .loose import read_file

__all__ = ["LockInfo", "StoreLock", "break_lock", "read_lock"]

UNREADABLE_GRACE = 10.0
LOCK_LIMIT = 4096     # bytes: a lock is one short line of JSON
MAX_PID = 2**22       # Linux's pid_max cannot exceed it; other systems stay far below
MAX_HOST = 255        # characters (a host name's limit)
LATEST_START = 1e11   # seconds since the epoch (year 5138): anything later is not a time


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


def parse_lock(data: bytes) -> tuple[int, str, float]:
    """``(pid, host, started)`` of a lock file's content; ``ValueError`` saying what is
    wrong unless it is a lock canonkit could have written."""
    if len(data) > LOCK_LIMIT:
        raise ValueError(f"larger than {LOCK_LIMIT} bytes")
    doc = loads_json(data, source=LOCK)  # strict: UTF-8, no repeated key, bounded ints
    if not isinstance(doc, dict) or set(doc) != {"pid", "host", "started"}:
        raise ValueError('not {"pid", "host", "started"}')
    pid, host, started = doc["pid"], doc["host"], doc["started"]
    if type(pid) is not int or not 1 <= pid <= MAX_PID:
        raise ValueError(f"pid {pid!r} cannot be a process")
    if type(host) is not str or not 0 < len(host) <= MAX_HOST:
        raise ValueError("host is not a host name")
    if type(started) not in (int, float) or not 0 <= started <= LATEST_START:
        raise ValueError(f"started {started!r} is not a time")
    return pid, host, float(started)


def read_lock(root: str) -> LockInfo | None:
    """The current lock's holder, or None when the store is not locked."""
    path = f"{root}/{LOCK}"
    data = read_file(path, LOCK, limit=LOCK_LIMIT)
    if data is None:
        return None
    try:
        pid, host, started = parse_lock(data)
    except ValueError as exc:
        try:
            age = time.time() - os.lstat(path).st_mtime
        except FileNotFoundError:
            return None
        stale = age > UNREADABLE_GRACE
        return LockInfo(None, None, None, stale,
                        f"unreadable lock file ({exc}), {age:.0f} s old"
                        + ("; its holder died before writing it, or it is not canonkit's"
                           if stale else ""))
    if host != socket.gethostname():
        return LockInfo(pid, host, started, False,
                        "held on another host; cannot tell whether it is alive")
    if _pid_alive(pid):
        return LockInfo(pid, host, started, False, "holder is running")
    return LockInfo(pid, host, started, True, "holder is gone")


def break_lock(root: str, *, force: bool = False) -> LockInfo | None:
    """Remove a stale lock (any lock with ``force``); returns what was removed. With
    ``force`` nothing about the lock file is believed first: whatever it holds — or if it
    is a symlink — it is removed (a directory in its place is ``StoreError``)."""
    path = f"{root}/{LOCK}"
    try:
        info = read_lock(root)
    except (UnsafePathError, OSError) as exc:  # a symlink, a directory, unreadable
        if not force:
            raise
        info = LockInfo(None, None, None, False, f"not a readable lock file ({exc})")
    if info is None:
        return None
    if not info.stale and not force:
        raise LockHeldError(f"the store lock is held by {info.describe()}; not breaking it "
                            f"(force=True breaks it anyway)", path=LOCK, detail=info.to_dict())
    try:
        fs.unlink(path)
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise StoreError(f"{LOCK} is a directory; remove it by hand", path=LOCK) from None
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
        temporary = fs.write_temporary(f"{self.root}/{TMP}", "lock", content,
                                       durable=self.durable)
        tmp = temporary.path
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
            try:
                fs.unlink(tmp)
            finally:
                temporary.close()

    def release(self) -> None:
        if self.held:
            self.held = False
            try:
                fs.unlink(self.path)
            except FileNotFoundError:
                pass

    def __exit__(self, *exc: object) -> None:
        self.release()
