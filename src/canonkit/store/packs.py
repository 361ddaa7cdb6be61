"""Published packs, read through ``mmap`` (STORE.md §2).

``PackFile.open`` maps ``packs/pack-<hex>.pack`` and its ``.idx`` read-only and checks
what is cheap to check on every open: both headers, the index's exact size, and that the
index names the pack's trailer and count. The full checks (every checksum, every entry)
are fsck's. A raw entry read with ``copy=False`` is a memoryview into the mapping; the
mapping stays valid for as long as such a view lives, even after gc deletes the file.

Store files never change in place, but a file can still shrink underneath a mapping
(another process truncates it): a read past its new end would be SIGBUS. The compiled
readers guard their mappings (``GUARDS_MAPPINGS``: the read gives zeros and the reader
reports the file as truncated); with the pure-Python readers ``PackFile.check_intact``
compares the file's size with the mapping's before every read instead (a truncation
that races that very read can still fault there).
"""
from __future__ import annotations

import mmap
import os
import stat
from types import ModuleType
from typing import Any

from ..errors import CorruptObjectError, UnsafePathError
from .layout import PACKS, pack_paths, parse_pack_name

__all__ = ["PackFile", "list_published", "located", "map_file", "size_problem"]

_O_READ = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def map_file(path: str, rel: str, *, whole: bool = False) -> tuple[Any, float]:
    """``(read-only mmap, mtime)`` of a regular file, never through a symlink. An empty
    file maps as ``b""`` (mmap refuses zero bytes). ``whole``: every byte will be read
    (fsck), so the page tables are filled at once (MAP_POPULATE where there is one)
    instead of one page fault per page."""
    try:
        fd = os.open(path, _O_READ)
    except OSError as exc:
        if os.path.islink(path):
            raise UnsafePathError(f"{rel} is a symlink; the store never follows one",
                                  path=rel) from None
        raise exc
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnsafePathError(f"{rel} is not a regular file", path=rel)
        if info.st_size == 0:
            return b"", info.st_mtime
        populate = getattr(mmap, "MAP_POPULATE", 0) if whole else 0
        if populate:
            return (mmap.mmap(fd, 0, flags=mmap.MAP_SHARED | populate, prot=mmap.PROT_READ),
                    info.st_mtime)
        return mmap.mmap(fd, 0, access=mmap.ACCESS_READ), info.st_mtime
    finally:
        os.close(fd)


def size_problem(path: str, rel: str, mapped: int) -> CorruptObjectError | None:
    """A "truncated" error if the file at ``path`` is now shorter than the ``mapped``
    bytes of its mapping (reading them would fault), else None. A file that is gone is
    no problem: its mapping stays valid."""
    try:
        size = os.lstat(path).st_size
    except FileNotFoundError:
        return None
    if size >= mapped:
        return None
    return CorruptObjectError(f"{rel}: truncated: the file shrank from {mapped} to {size} "
                              f"bytes while it was mapped", offset=size, detail="truncated",
                              path=rel)


class PackFile:
    """One published pack: ``pack`` and ``index`` are the kernel's readers."""

    __slots__ = ("_maps", "guarded", "hex", "idx_rel", "index", "mtime", "pack", "pack_rel",
                 "root")

    def __init__(self, hex_name: str, pack: Any, index: Any, maps: list[Any],
                 mtime: float, root: str = "", guarded: bool = True) -> None:
        self.hex = hex_name
        self.pack_rel, self.idx_rel = pack_paths(bytes.fromhex(hex_name))
        self.pack = pack
        self.index = index
        self._maps = maps
        self.mtime = mtime
        self.root = root
        self.guarded = guarded

    @property
    def closed(self) -> bool:
        return not self._maps

    def check_intact(self, *, index: bool = True, pack: bool = True) -> None:
        """``CorruptObjectError`` (detail ``truncated``) if the index or the pack (or
        either) shrank since they were mapped."""
        if not self._maps:
            return
        for rel, reader, mapped, asked in ((self.idx_rel, self.index, self._maps[0], index),
                                           (self.pack_rel, self.pack, self._maps[1], pack)):
            if not asked:
                continue
            if self.guarded:
                if not reader.intact():
                    raise CorruptObjectError(f"{rel}: truncated: the file shrank while it "
                                             f"was mapped", offset=len(mapped),
                                             detail="truncated", path=rel)
            else:
                problem = size_problem(f"{self.root}/{rel}", rel, len(mapped))
                if problem is not None:
                    raise problem

    @classmethod
    def open(cls, root: str, hex_name: str, kernel: ModuleType) -> PackFile:
        """Map and check a published pack; ``CorruptObjectError`` naming the file."""
        pack_rel, idx_rel = pack_paths(bytes.fromhex(hex_name))
        maps: list[Any] = []
        try:
            idx_map, _ = map_file(f"{root}/{idx_rel}", idx_rel)
            maps.append(idx_map)
            pack_map, mtime = map_file(f"{root}/{pack_rel}", pack_rel)
            maps.append(pack_map)
            index = _within(idx_rel, kernel.Index, idx_map)
            pack = _within(pack_rel, kernel.Pack, pack_map)
            if index.pack_trailer != pack.trailer:
                raise CorruptObjectError(
                    f"{idx_rel}: index_pack_mismatch: the index names pack trailer "
                    f"{index.pack_trailer.hex()}, the pack's is {pack.trailer.hex()}",
                    offset=len(idx_map) - 64, detail="index_pack_mismatch", path=idx_rel)
            if index.count != pack.count:
                raise CorruptObjectError(
                    f"{idx_rel}: index_count: the index lists {index.count} entries, the "
                    f"pack header says {pack.count}", offset=8, detail="index_count",
                    path=idx_rel)
        except BaseException:
            for m in maps:
                _close_map(m)
            raise
        return cls(hex_name, pack, index, maps, mtime, root,
                   bool(getattr(kernel, "GUARDS_MAPPINGS", False)))

    def close(self) -> None:
        """Release the kernel's hold and unmap (a mapping still viewed by a ``copy=False``
        result stays until that view is gone)."""
        self.pack.release()
        self.index.release()
        for m in self._maps:
            _close_map(m)
        self._maps = []

    def payload(self, offset: int, stored: int) -> memoryview:
        """The stored bytes of the entry at ``offset`` (framing already checked)."""
        start = offset + 17
        return memoryview(self._maps[1]).cast("B")[start:start + stored]

    def path(self, root: str) -> str:
        return f"{root}/{self.pack_rel}"


def _within(rel: str, reader: Any, buffer: Any) -> Any:
    try:
        return reader(buffer)
    except CorruptObjectError as exc:
        raise located(exc, rel) from None


def located(exc: CorruptObjectError, rel: str, address: str | None = None
            ) -> CorruptObjectError:
    """The kernel's error with the file (store-relative) and address filled in."""
    where = f"{rel}: {exc.detail}: {exc}"
    out = CorruptObjectError(where, offset=exc.offset, detail=exc.detail, path=rel,
                             address=address if address is not None else exc.address)
    return out


def _close_map(m: Any) -> None:
    if isinstance(m, mmap.mmap):
        try:
            m.close()
        except BufferError:  # a copy=False view is still alive: the GC unmaps it later
            pass


def list_published(root: str) -> list[str]:
    """Hex names of the packs whose ``.idx`` exists (publication), sorted."""
    names = []
    try:
        entries = os.listdir(f"{root}/{PACKS}")
    except FileNotFoundError:
        return []
    for name in entries:
        parsed = parse_pack_name(name)
        if parsed is not None and parsed[1] == "idx":
            names.append(parsed[0])
    return sorted(names)
