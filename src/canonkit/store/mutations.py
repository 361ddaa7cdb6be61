"""Every change a store makes to the filesystem goes through this module.

One place for create, write, fsync, rename, link, unlink, mkdir and utime makes the crash
rules of STORE.md §3 testable: with ``CANONKIT_STORE_CRASH_AT=N`` in the environment the
process ends with ``os._exit(137)`` (as a SIGKILL would) right before its N-th mutation,
and the tests drive N over every mutation point of put, set_ref, repack and gc. The count
is per process; ``count()`` reports it and ``arm(n)`` resets it (for forked test children).

Files are created with ``O_EXCL | O_NOFOLLOW``: a store never writes through a symlink.
"""
from __future__ import annotations

import os
import shutil

__all__ = ["arm", "count", "create", "discard", "fsync", "fsync_dir", "link", "mkdir", "open_lock", "pwrite",
           "rename", "rmtree", "unlink", "utime", "write", "write_file"]

_O_CREATE = (os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
             | getattr(os, "O_CLOEXEC", 0))
_O_DIR = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
CRASH_EXIT = 137  # what a shell reports for SIGKILL (128 + 9)


def _from_env() -> int:
    text = os.environ.get("CANONKIT_STORE_CRASH_AT", "")
    return int(text) if text.strip() else 0


_count = 0
_crash_at = _from_env()


def _tick() -> None:
    global _count
    _count += 1
    if _count == _crash_at:
        os._exit(CRASH_EXIT)


def arm(crash_at: int) -> None:
    """Restart the count and crash right before mutation ``crash_at`` (0: never)."""
    global _count, _crash_at
    _count = 0
    _crash_at = crash_at


def count() -> int:
    """Mutations made by this process so far (since the last ``arm``)."""
    return _count


def create(path: str) -> int:
    """A new file for writing (fails if anything exists at ``path``, symlinks included)."""
    _tick()
    return os.open(path, _O_CREATE, 0o644)


def open_lock(path: str) -> int:
    """Open (creating if needed) a lock file for ``flock``."""
    _tick()
    return os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
                   | getattr(os, "O_CLOEXEC", 0), 0o644)


def write(fd: int, data: bytes | bytearray | memoryview) -> None:
    _tick()
    view = memoryview(data).cast("B")
    while view:
        view = view[os.write(fd, view):]


def pwrite(fd: int, data: bytes, offset: int) -> None:
    _tick()
    if os.pwrite(fd, data, offset) != len(data):
        raise OSError(f"short write of {len(data)} bytes at offset {offset}")


def fsync(fd: int) -> None:
    _tick()
    os.fsync(fd)


def fsync_dir(path: str) -> None:
    _tick()
    fd = os.open(path, _O_DIR)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def rename(src: str, dst: str) -> None:
    _tick()
    os.rename(src, dst)


def link(src: str, dst: str) -> None:
    _tick()
    os.link(src, dst, follow_symlinks=False)


def unlink(path: str) -> None:
    _tick()
    os.unlink(path)


def rmtree(path: str) -> None:
    """Remove a directory tree (only leftovers in tmp/ are ever trees)."""
    _tick()
    shutil.rmtree(path)


def mkdir(path: str) -> None:
    _tick()
    os.mkdir(path, 0o755)


def utime(path: str) -> None:
    """Set ``path``'s mtime to now (freshens an object for the grace period)."""
    _tick()
    os.utime(path, follow_symlinks=False)


def discard(path: str) -> None:
    """Remove a temporary on the way out of a failed operation; a failure to remove it
    is not the error to report (it is a leftover the next repack or gc removes)."""
    try:
        unlink(path)
    except OSError:
        pass


def write_file(path: str, data: bytes | bytearray | memoryview, *, durable: bool) -> None:
    """Create ``path`` with ``data`` (fsynced when ``durable``); on failure nothing is left."""
    fd = create(path)
    try:
        write(fd, data)
        if durable:
            fsync(fd)
    except BaseException:
        os.close(fd)
        discard(path)
        raise
    os.close(fd)
