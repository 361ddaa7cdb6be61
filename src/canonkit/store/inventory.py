"""What is on disk: loose objects, published and unpublished packs, leftovers in tmp/.

Listing never follows a symlink (``os.scandir`` entries are judged without following);
fsck reports what listing skips.

Sweeping leftovers never removes a live writer's file: every file in ``tmp/`` is held
with ``flock`` by its writer for as long as it is in use (``mutations.Temporary``, and
the ref locks), so a sweep removes only files it can lock itself — and removes them while
holding them, which a writer that created its file a moment before notices.
"""
from __future__ import annotations

import fcntl
import os
import stat
import time
from collections.abc import Iterator
from typing import NamedTuple

from . import mutations as fs
from .layout import OBJECTS, PACKS, TMP, parse_loose_name, parse_pack_name

__all__ = ["Leftover", "Loose", "fanouts", "leftovers", "loose_in", "loose_objects",
           "packs_on_disk", "sweep_leftovers"]


class Loose(NamedTuple):
    digest: bytes
    rel: str
    mtime: float
    size: int


class Leftover(NamedTuple):
    rel: str
    mtime: float
    what: str  # "tmp" | "unpublished pack"


def fanouts(root: str) -> list[str]:
    """The fan-out directory names under objects/ (real directories only), sorted."""
    try:
        entries = list(os.scandir(f"{root}/{OBJECTS}"))
    except FileNotFoundError:
        return []
    return sorted(e.name for e in entries
                  if e.is_dir(follow_symlinks=False) and len(e.name) == 2)


def loose_in(root: str, fanout: str, *, with_stat: bool = True) -> Iterator[Loose]:
    """The loose object files of one fan-out directory, sorted by name; ``with_stat=False``
    skips the stat call per file (mtime and size are then 0)."""
    try:
        entries = sorted(os.scandir(f"{root}/{OBJECTS}/{fanout}"), key=lambda e: e.name)
    except (FileNotFoundError, NotADirectoryError):
        return
    for entry in entries:
        digest = parse_loose_name(fanout, entry.name)
        if digest is None or not entry.is_file(follow_symlinks=False):
            continue
        mtime, size = 0.0, 0
        if with_stat:
            try:
                info = entry.stat(follow_symlinks=False)
            except FileNotFoundError:  # removed meanwhile (a repack)
                continue
            mtime, size = info.st_mtime, info.st_size
        yield Loose(digest, f"{OBJECTS}/{fanout}/{entry.name}", mtime, size)


def loose_objects(root: str, *, with_stat: bool = True) -> Iterator[Loose]:
    """Every loose object, in digest order."""
    for fanout in fanouts(root):
        yield from loose_in(root, fanout, with_stat=with_stat)


def packs_on_disk(root: str) -> tuple[dict[str, float], dict[str, float]]:
    """``({hex: mtime} of .pack files, {hex: mtime} of .idx files)``, regular files only."""
    packs: dict[str, float] = {}
    idxs: dict[str, float] = {}
    try:
        entries = list(os.scandir(f"{root}/{PACKS}"))
    except FileNotFoundError:
        return packs, idxs
    for entry in entries:
        parsed = parse_pack_name(entry.name)
        if parsed is None or not entry.is_file(follow_symlinks=False):
            continue
        try:
            mtime = entry.stat(follow_symlinks=False).st_mtime
        except FileNotFoundError:
            continue
        (packs if parsed[1] == "pack" else idxs)[parsed[0]] = mtime
    return packs, idxs


def leftovers(root: str) -> list[Leftover]:
    """Entries of tmp/ and packs without their index, sorted by path."""
    out: list[Leftover] = []
    try:
        entries = list(os.scandir(f"{root}/{TMP}"))
    except FileNotFoundError:
        entries = []
    for entry in entries:
        try:
            mtime = entry.stat(follow_symlinks=False).st_mtime
        except FileNotFoundError:
            continue
        out.append(Leftover(f"{TMP}/{entry.name}", mtime, "tmp"))
    packs, idxs = packs_on_disk(root)
    for hex_name, mtime in packs.items():
        if hex_name not in idxs:
            out.append(Leftover(f"{PACKS}/pack-{hex_name}.pack", mtime, "unpublished pack"))
    return sorted(out)


def sweep_leftovers(root: str, grace_seconds: float, *, keep: frozenset[str] = frozenset()
                    ) -> int:
    """Remove leftovers older than the grace period (all of them with 0); returns how many.
    ``keep`` names paths still in use by this process."""
    now = time.time()
    removed = 0
    for item in leftovers(root):
        if item.rel in keep or now - item.mtime < grace_seconds:
            continue
        path = f"{root}/{item.rel}"
        try:
            info = os.lstat(path)
            if stat.S_ISDIR(info.st_mode):  # nothing canonkit writes; still a leftover
                fs.rmtree(path)
            elif stat.S_ISREG(info.st_mode) and item.what == "tmp":
                if not _unlink_unheld(path):
                    continue  # a live writer's
            else:  # an unpublished pack (its writer renamed it: done with it), a symlink
                fs.unlink(path)
        except FileNotFoundError:
            continue
        removed += 1
    return removed


def _unlink_unheld(path: str) -> bool:
    """Remove a file of tmp/ that nobody holds (holding it while removing, so a writer
    that created or opened it a moment before notices and starts over); False if it is
    held."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        fs.unlink(path)  # cannot be opened (a symlink, no permission): nobody's file
        return True
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fs.unlink(path)
        return True
    finally:
        os.close(fd)
