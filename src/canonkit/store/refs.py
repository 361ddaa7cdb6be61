"""Refs: named pointers to addresses, one file each (STORE.md §1, §3).

A ref file holds exactly ``blake3:<64 hex>\\n``. An update takes the ref's lock
(``_RefLock``: two updaters of one ref never interleave, and a crashed one never leaves
it locked), compares the current value when a compare-and-swap was asked for, writes the
new value in ``tmp/``, fsyncs it and renames it over ``refs/<name>``: readers see the old
value or the new one, never a mix. Ref names are checked before any path is
built (``layout.check_ref_name``), and no directory on the way is followed if it is a
symlink.
"""
from __future__ import annotations

import fcntl
import os
import stat
import time

from typing import NamedTuple

from blake3 import blake3

from ..errors import (
    CorruptRefError,
    InvalidRefNameError,
    RefConflictError,
    StoreError,
    UnsafePathError,
)
from . import mutations as fs
from .layout import REFS, TMP, check_ref_name, digest_of_address, printable
from .loose import read_file

__all__ = ["ABSENT", "REF_BYTES", "RefProblem", "RefScan", "compare", "delete", "parse_ref", "read",
           "scan", "write"]

ABSENT = ""  # as ``expect``: the ref must not exist yet
LOCK_WAIT = 1.0  # seconds an update waits for another updater of the same ref
REF_BYTES = 72  # "blake3:" + 64 hex + "\n"


def parse_ref(data: bytes, rel: str) -> str:
    """The address a ref file holds; ``CorruptRefError`` unless exactly one address + LF."""
    text = data.decode("ascii", "replace")
    if len(data) != REF_BYTES or not text.endswith("\n"):
        raise CorruptRefError(f"{rel} does not hold exactly 'blake3:<64 hex>\\n'", path=rel,
                              detail="ref_bad_content")
    address = text[:-1]
    try:
        digest_of_address(address)
    except ValueError:
        raise CorruptRefError(f"{rel} does not hold exactly 'blake3:<64 hex>\\n'", path=rel,
                              detail="ref_bad_content") from None
    return address


def _check_dirs(root: str, segments: list[str]) -> None:
    """Every directory on the way to the ref, if present, is a real directory."""
    path = f"{root}/{REFS}"
    for segment in segments[:-1]:
        path = f"{path}/{segment}"
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            return
        if not stat.S_ISDIR(info.st_mode):
            rel = os.path.relpath(path, root)
            if stat.S_ISLNK(info.st_mode):
                raise UnsafePathError(f"{rel} is a symlink; the store never follows one",
                                      path=rel)
            raise InvalidRefNameError(f"{rel} is a ref, so it cannot hold other refs",
                                      path=rel, detail="/".join(segments))


def read(root: str, name: str) -> str | None:
    """The address ``refs/<name>`` holds, or None."""
    segments = check_ref_name(name)
    _check_dirs(root, segments)
    rel = f"{REFS}/{name}"
    data = read_file(f"{root}/{rel}", rel, limit=REF_BYTES)
    return None if data is None else parse_ref(data, rel)


class RefProblem(NamedTuple):
    """Something under refs/ that is not a readable, valid ref: ``code`` is fsck's finding
    code, ``rel`` the store-relative path (printable), ``detail`` what is wrong."""

    rel: str
    code: str  # ref_bad_name | ref_bad_content | symlink | unexpected_file | unreadable
    detail: str

    def error(self) -> StoreError:
        """The error that stops an operation (gc) which cannot go on past this ref."""
        what = f"{self.rel}: {self.detail} (fsck: {self.code})"
        if self.code == "symlink":
            return UnsafePathError(what, path=self.rel)
        if self.code == "ref_bad_name":
            return InvalidRefNameError(what, path=self.rel, detail=self.rel[len(REFS) + 1:])
        return CorruptRefError(what, path=self.rel, detail=self.code)


class RefScan(NamedTuple):
    """Everything under refs/, read once: the valid refs ``(name, rel, address)`` sorted by
    name, and every entry that is not one. fsck reports the problems; gc refuses to run
    while there is any (a ref it cannot read might be the only root of some objects)."""

    refs: list[tuple[str, str, str]]
    problems: list[RefProblem]

    def first_problem(self) -> StoreError | None:
        if not self.problems:
            return None
        exc = self.problems[0].error()
        if len(self.problems) > 1:
            exc.args = (f"{exc} (and {len(self.problems) - 1} more; run fsck)",)
        return exc


def scan(root: str) -> RefScan:
    """Read every entry under refs/ without following a symlink: the one enumeration of
    the refs that fsck, gc and ``Store.refs`` share."""
    found: list[tuple[str, str, str]] = []
    problems: list[RefProblem] = []

    def walk(rel: str, prefix: str) -> None:
        try:
            entries = sorted(os.scandir(f"{root}/{rel}"), key=lambda e: e.name)
        except FileNotFoundError:
            return
        except OSError as exc:
            problems.append(RefProblem(printable(rel), "unreadable", str(exc)))
            return
        for entry in entries:
            child = f"{rel}/{entry.name}"
            shown = printable(child)
            name = prefix + entry.name
            try:
                if entry.is_symlink():
                    problems.append(RefProblem(shown, "symlink", "never followed"))
                elif entry.is_dir(follow_symlinks=False):
                    walk(child, name + "/")
                elif not entry.is_file(follow_symlinks=False):
                    problems.append(RefProblem(shown, "unexpected_file", "not a regular file"))
                else:
                    _one(name, child, shown)
            except FileNotFoundError:  # removed meanwhile (delete_ref)
                continue

    def _one(name: str, child: str, shown: str) -> None:
        try:
            check_ref_name(name)
        except InvalidRefNameError as exc:
            problems.append(RefProblem(shown, "ref_bad_name", str(exc)))
            return
        try:
            data = read_file(f"{root}/{child}", child, limit=REF_BYTES)
        except (OSError, UnsafePathError) as exc:
            problems.append(RefProblem(shown, "unreadable", str(exc)))
            return
        if data is None:
            return
        try:
            found.append((name, child, parse_ref(data, child)))
        except CorruptRefError as exc:
            problems.append(RefProblem(shown, "ref_bad_content", str(exc)))

    walk(REFS, "")
    found.sort()
    return RefScan(found, problems)


def _lock_path(root: str, name: str) -> str:
    """``tmp/ref-<BLAKE3 of the name, 32 hex>.lock``: fixed-length whatever the name's
    length (a name may be 1024 bytes; a file name only 255)."""
    return f"{root}/{TMP}/ref-{blake3(name.encode()).hexdigest()[:32]}.lock"


class _RefLock:
    """``tmp/ref-<name>.lock`` held with ``flock``: the kernel releases it when its holder
    dies, so a crashed update never leaves a ref locked. The file is removed before the
    lock is let go, and a taker checks that the file it locked is still the one at the
    path (else it raced such a removal and tries again)."""

    def __init__(self, root: str, name: str) -> None:
        self.root = root
        self.name = name
        self.path = _lock_path(root, name)
        self.fd = -1

    def __enter__(self) -> _RefLock:
        deadline = time.monotonic() + LOCK_WAIT
        while True:
            fd = fs.open_lock(self.path)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                if time.monotonic() >= deadline:
                    rel = os.path.relpath(self.path, self.root)
                    raise RefConflictError(
                        f"ref {self.name!r} is being updated by another process (it holds "
                        f"{rel})", path=rel, detail=self.name) from None
                time.sleep(0.005)
                continue
            try:
                same = os.fstat(fd).st_ino == os.lstat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                self.fd = fd
                return self
            os.close(fd)

    def __exit__(self, *exc: object) -> None:
        try:
            fs.unlink(self.path)
        except FileNotFoundError:
            pass
        finally:
            os.close(self.fd)


def _compare(root: str, name: str, expect: str | None) -> None:
    if expect is not None:
        compare(name, read(root, name), expect)


def compare(name: str, current: str | None, expect: str) -> None:
    """``RefConflictError`` unless the ref holding ``current`` (None: absent) holds
    ``expect`` (``ABSENT``: does not exist)."""
    if (current or ABSENT) != expect:
        raise RefConflictError(
            f"ref {name!r} holds {current or 'nothing'}, expected {expect or 'nothing'}",
            path=f"{REFS}/{name}", detail={"expected": expect, "actual": current})


def _make_dirs(root: str, segments: list[str], durable: bool) -> None:
    path = f"{root}/{REFS}"
    for segment in segments[:-1]:
        parent = path
        path = f"{path}/{segment}"
        try:
            fs.mkdir(path)
        except FileExistsError:
            continue
        if durable:
            fs.fsync_dir(parent)
    _check_dirs(root, segments)


def write(root: str, name: str, address: str, *, expect: str | None, durable: bool) -> None:
    """Set ``refs/<name>`` to ``address`` (compare-and-swap on ``expect`` when given)."""
    segments = check_ref_name(name)
    digest_of_address(address)
    if expect is not None and expect != ABSENT:
        digest_of_address(expect)
    _check_dirs(root, segments)
    target = f"{root}/{REFS}/{name}"
    with _RefLock(root, name):
        _compare(root, name, expect)
        tmp = fs.write_temporary(f"{root}/{TMP}", "ref", (address + "\n").encode("ascii"),
                                 durable=durable)
        try:
            _make_dirs(root, segments, durable)
            if os.path.isdir(target) and not os.path.islink(target):
                raise InvalidRefNameError(f"refs/{name} is a directory of other refs",
                                          path=f"{REFS}/{name}", detail=name)
            fs.rename(tmp.path, target)
        except BaseException:
            tmp.discard()
            raise
        finally:
            tmp.close()
        if durable:
            fs.fsync_dir(os.path.dirname(target))


def delete(root: str, name: str, *, expect: str | None, durable: bool) -> bool:
    """Remove ``refs/<name>``; False if it did not exist."""
    segments = check_ref_name(name)
    _check_dirs(root, segments)
    target = f"{root}/{REFS}/{name}"
    with _RefLock(root, name):
        _compare(root, name, expect)
        if read(root, name) is None:
            return False
        fs.unlink(target)
        if durable:
            fs.fsync_dir(os.path.dirname(target))
    return True
