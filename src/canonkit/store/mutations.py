"""Every change a store makes to the filesystem goes through this module.

One place for create, write, fsync, rename, link, unlink, mkdir and utime makes the crash
rules of STORE.md §3 testable, two ways:

- with ``CANONKIT_STORE_CRASH_AT=N`` in the environment the process ends with
  ``os._exit(137)`` (as a SIGKILL would) right before its N-th mutation, and the tests
  drive N over every mutation point of put, set_ref, repack and gc. The count is per
  process; ``count()`` reports it and ``arm(n)`` resets it (for forked test children);
- ``record(recorder)`` hands every mutation, once it has happened, to a recorder (the
  crash-state harness of the test suite rebuilds from that trace every state a power loss
  may leave: docs/robustness.md).

A store in object storage counts its mutating requests on the same counter
(``request()``: ``bucket_io``); the files it writes meanwhile (a pack in a local scratch
directory, before it is uploaded) are no mutation of the store, and inside ``scratch()``
this thread's file operations are neither counted nor recorded.

Files are created with ``O_EXCL | O_NOFOLLOW``: a store never writes through a symlink.
A file in ``tmp/`` is a ``Temporary``: its writer holds an ``flock`` on it from the moment
it exists until it is renamed or dropped, so a sweep of leftovers (``inventory``) can tell
a live writer's file from a dead one's without asking the writer anything.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import shutil
import threading
from collections.abc import Iterator
from typing import Any, Protocol

__all__ = ["Recorder", "Temporary", "arm", "count", "create", "discard", "fsync", "fsync_dir",
           "link", "mkdir", "open_lock", "pwrite", "record", "rename", "request", "rmtree",
           "scratch", "tick", "unlink", "utime", "write", "write_temporary"]

_O_CREATE = (os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
             | getattr(os, "O_CLOEXEC", 0))
_O_DIR = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
CRASH_EXIT = 137  # what a shell reports for SIGKILL (128 + 9)


class Recorder(Protocol):
    """Receives each mutation after it happened: ``op`` is the function's name, ``args``
    its arguments (paths absolute as given; ``fd`` for the file operations; the bytes
    written, copied)."""

    def __call__(self, op: str, *args: Any) -> None: ...


def _from_env() -> int:
    text = os.environ.get("CANONKIT_STORE_CRASH_AT", "")
    return int(text) if text.strip() else 0


_count = 0
_crash_at = _from_env()
_recorder: Recorder | None = None
_scratch = threading.local()  # .on: this thread writes scratch files (not the store's)


def tick() -> None:
    """Count one file operation of the store (and end the process at the crash point)."""
    if not getattr(_scratch, "on", False):
        request()


def request() -> None:
    """Count one mutating request of a store in object storage (``bucket_io``)."""
    global _count
    _count += 1
    if _count == _crash_at:
        os._exit(CRASH_EXIT)


@contextlib.contextmanager
def scratch() -> Iterator[None]:
    """Inside the block, this thread's file operations write scratch files, not a store:
    they are neither counted nor recorded (a store in object storage writes a new pack
    locally, then uploads it; only its requests are mutations)."""
    previous = getattr(_scratch, "on", False)
    _scratch.on = True
    try:
        yield
    finally:
        _scratch.on = previous


def arm(crash_at: int) -> None:
    """Restart the count and crash right before mutation ``crash_at`` (0: never)."""
    global _count, _crash_at
    _count = 0
    _crash_at = crash_at


def count() -> int:
    """Mutations made by this process so far (since the last ``arm``)."""
    return _count


@contextlib.contextmanager
def record(recorder: Recorder) -> Iterator[None]:
    """Hand every mutation made inside the block to ``recorder``."""
    global _recorder
    previous, _recorder = _recorder, recorder
    try:
        yield
    finally:
        _recorder = previous


def _note(op: str, *args: Any) -> None:
    if _recorder is not None and not getattr(_scratch, "on", False):
        _recorder(op, *args)


def create(path: str) -> int:
    """A new file for writing (fails if anything exists at ``path``, symlinks included)."""
    tick()
    fd = os.open(path, _O_CREATE, 0o644)
    _note("create", path, fd)
    return fd


def open_lock(path: str) -> int:
    """Open (creating if needed) a lock file for ``flock``."""
    tick()
    fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
                 | getattr(os, "O_CLOEXEC", 0), 0o644)
    _note("open_lock", path, fd)
    return fd


def write(fd: int, data: bytes | bytearray | memoryview) -> None:
    tick()
    view = memoryview(data).cast("B")
    whole = view
    while view:
        view = view[os.write(fd, view):]
    if _recorder is not None and not getattr(_scratch, "on", False):
        _recorder("write", fd, bytes(whole))


def pwrite(fd: int, data: bytes, offset: int) -> None:
    tick()
    if os.pwrite(fd, data, offset) != len(data):
        raise OSError(f"short write of {len(data)} bytes at offset {offset}")
    _note("pwrite", fd, bytes(data), offset)


def fsync(fd: int) -> None:
    tick()
    os.fsync(fd)
    _note("fsync", fd)


def fsync_dir(path: str) -> None:
    tick()
    fd = os.open(path, _O_DIR)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    _note("fsync_dir", path)


def rename(src: str, dst: str) -> None:
    tick()
    os.rename(src, dst)
    _note("rename", src, dst)


def link(src: str, dst: str) -> None:
    tick()
    os.link(src, dst, follow_symlinks=False)
    _note("link", src, dst)


def unlink(path: str) -> None:
    tick()
    os.unlink(path)
    _note("unlink", path)


def rmtree(path: str) -> None:
    """Remove a directory tree (only leftovers in tmp/ are ever trees)."""
    tick()
    shutil.rmtree(path)
    _note("rmtree", path)


def mkdir(path: str) -> None:
    tick()
    os.mkdir(path, 0o755)
    _note("mkdir", path)


def utime(path: str) -> None:
    """Set ``path``'s mtime to now (freshens an object for the grace period)."""
    tick()
    os.utime(path, follow_symlinks=False)
    _note("utime", path)


def discard(path: str) -> None:
    """Remove a temporary on the way out of a failed operation; a failure to remove it
    is not the error to report (it is a leftover the next repack or gc removes)."""
    try:
        unlink(path)
    except OSError:
        pass


class Temporary:
    """A new file in ``directory`` (``tmp/``) named ``<prefix>-<pid>-<random><suffix>``,
    held with ``flock`` by this process until ``close``.

    The hold is the writer's liveness mark: the kernel drops it when the writer dies, and
    a sweep of leftovers removes only files it can lock itself (``inventory``). A sweep
    can come between the ``create`` and the ``flock``; it then removes the file while
    holding it, which the writer notices (the path no longer names the file it locked)
    and it starts over under a new name — so a live writer's temporary is never removed
    from under it. Keep it open until it is renamed into place or discarded."""

    ATTEMPTS = 16

    def __init__(self, directory: str, prefix: str, suffix: str = "") -> None:
        for _ in range(self.ATTEMPTS):
            path = f"{directory}/{prefix}-{os.getpid()}-{secrets.token_hex(8)}{suffix}"
            fd = create(path)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                held = os.fstat(fd).st_ino == os.lstat(path).st_ino
            except (BlockingIOError, FileNotFoundError):  # a sweep is removing it
                held = False
            if held:
                self.path = path
                self.fd: int | None = fd
                return
            os.close(fd)
        raise OSError(f"could not hold a temporary in {directory}: every new file was "
                      f"removed at once (is something sweeping tmp/ without locking?)")

    def close(self) -> None:
        """Let go of the file (after it was renamed into place, or removed)."""
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def discard(self) -> None:
        """Remove the file (best effort) and let go of it."""
        discard(self.path)
        self.close()

    def __enter__(self) -> Temporary:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def write_temporary(directory: str, prefix: str, data: bytes | bytearray | memoryview, *,
                    durable: bool) -> Temporary:
    """A ``Temporary`` holding ``data`` (fsynced when ``durable``), still held: rename it
    into place, then ``close`` it. On failure nothing is left."""
    tmp = Temporary(directory, prefix)
    assert tmp.fd is not None
    try:
        write(tmp.fd, data)
        if durable:
            fsync(tmp.fd)
    except BaseException:
        tmp.discard()
        raise
    return tmp
