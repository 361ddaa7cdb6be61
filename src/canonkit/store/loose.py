"""Loose objects: one file per object, raw or DEFLATE (STORE.md §2).

    b"CKL1" | form (0x00 raw, 0x01 DEFLATE) | logical length (8 bytes BE) | payload

``write`` follows §3's put: the file is written in ``tmp/``, fsynced, and renamed into
``objects/ab/<62 hex>`` (an object already there wins: the temporary is dropped and the
existing file's mtime refreshed), then the fan-out directory is fsynced when durable.
"""
from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from typing import Any

from ._format_py import FORM_DEFLATE, FORM_RAW, LOOSE_MAGIC
from ..errors import UnsafePathError
from . import mutations as fs
from .deflate import compress
from .layout import OBJECTS, TMP

__all__ = ["encode", "read_file", "read_into", "write"]

_O_READ = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def encode(data: Any, deflate: bool, *, compress: Callable[[Any], bytes] = compress
           ) -> bytes:
    """The bytes of a loose file holding ``data`` (DEFLATE: through ``compress``)."""
    logical = memoryview(data).nbytes
    payload = compress(data) if deflate else bytes(data)
    form = FORM_DEFLATE if deflate else FORM_RAW
    return LOOSE_MAGIC + bytes((form,)) + logical.to_bytes(8, "big") + payload


def read_into(path: str, rel: str, buffer: bytearray) -> memoryview | None:
    """The whole content of the regular file ``path`` read into ``buffer`` (grown as
    needed): a view of it, valid until the next read; None if the file does not exist.
    For reading many files without allocating (and faulting in) a new buffer for each."""
    fd = _open(path, rel)
    if fd is None:
        return None
    try:
        size = _regular_size(fd, rel)
        if len(buffer) < size:
            buffer.extend(bytes(size - len(buffer)))
        view = memoryview(buffer)[:size]
        got = 0
        while got < size:
            n = os.readv(fd, [view[got:]])
            if n == 0:
                return view[:got]
            got += n
        return view
    finally:
        os.close(fd)


def _open(path: str, rel: str) -> int | None:
    try:
        return os.open(path, _O_READ)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK):
            raise UnsafePathError(f"{rel} is a symlink; the store never follows one",
                                  path=rel) from None
        if exc.errno == errno.ENOTDIR:
            return None
        raise


def _regular_size(fd: int, rel: str) -> int:
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise UnsafePathError(f"{rel} is not a regular file", path=rel)
    return info.st_size


def read_file(path: str, rel: str, *, limit: int | None = None) -> bytes | None:
    """The whole content of the regular file ``path`` (None if it does not exist); a
    symlink or anything but a regular file is ``UnsafePathError`` — never followed.
    With ``limit``, at most ``limit + 1`` bytes are read (whatever the file's size says):
    a result longer than ``limit`` means the file is too large for its kind."""
    fd = _open(path, rel)
    if fd is None:
        return None
    try:
        size = _regular_size(fd, rel)
        want = size if limit is None else min(size, limit + 1)
        data = os.read(fd, want)  # store files never change in place: fstat's size holds
        if len(data) < want:  # a short read (or a file shrunk underneath): read on to EOF
            chunks = [data]
            got = len(data)
            while got < want and (block := os.read(fd, min(1 << 20, want - got))):
                chunks.append(block)
                got += len(block)
            data = b"".join(chunks)
        return data
    finally:
        os.close(fd)


def write(root: str, rel: str, content: bytes, *, durable: bool,
          known_dirs: set[str]) -> bool:
    """Put the loose file ``content`` at ``rel`` (``objects/ab/<rest>``); False if an
    object was already there (its mtime is then refreshed). ``known_dirs`` caches the
    fan-out directories already checked to be real directories."""
    target = f"{root}/{rel}"
    fanout = rel[:len(OBJECTS) + 3]
    if fanout not in known_dirs:  # first: never look through a symlinked directory
        _ensure_dir(root, fanout, durable)
        known_dirs.add(fanout)
    if _exists(target, rel):
        fs.utime(target)
        return False
    tmp = fs.write_temporary(f"{root}/{TMP}", "obj", content, durable=durable)
    try:
        if _exists(target, rel):  # another writer won meanwhile: keep theirs
            tmp.discard()
            fs.utime(target)
            return False
        fs.rename(tmp.path, target)
    except BaseException:
        tmp.discard()
        raise
    finally:
        tmp.close()
    if durable:
        fs.fsync_dir(f"{root}/{fanout}")
    return True


def _exists(path: str, rel: str) -> bool:
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return False
    if not stat.S_ISREG(info.st_mode):
        raise UnsafePathError(f"{rel} is not a regular file (a symlink?); the store never "
                              f"follows one", path=rel)
    return True


def _ensure_dir(root: str, rel: str, durable: bool) -> None:
    """``rel`` exists as a real directory (created, and its parent fsynced, if needed)."""
    path = f"{root}/{rel}"
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        try:
            fs.mkdir(path)
        except FileExistsError:
            pass
        else:
            if durable:
                fs.fsync_dir(os.path.dirname(path))
        info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode):
        raise UnsafePathError(f"{rel} is not a directory (a symlink?); the store never "
                              f"follows one", path=rel)
