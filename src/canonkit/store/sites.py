"""Where repack and gc read and write: the one interface their decisions run on.

``repack.py`` and ``gc.py`` decide what to pack, keep and delete, and in which order
(STORE.md §3); a ``Site`` does each step on the medium: ``LocalSite`` on a directory
(files, renames, fsyncs, the lock file), ``bucket_site.BucketSite`` under a prefix of
object storage (requests, the lease). Both stores therefore make the same decisions in
the same order, and only the requests differ.

A site's packs are the published packs as the store reads them (``hex``, ``index``,
``mtime``, ``pack_rel``, ``idx_rel``); ``readable`` gives, for each one whose entries
are to be copied, a ``PackFile`` to copy them from (on a directory: the pack itself).
Destructive steps (``delete_loose``, ``remove_packs``) check first that the lock is
still held (on a directory it cannot be lost while the process lives).
"""
from __future__ import annotations

import os
from collections.abc import Iterable
from contextlib import AbstractContextManager
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import CorruptObjectError, MissingObjectError
from . import mutations as fs
from . import refs
from .inventory import Loose, loose_objects, sweep_leftovers
from .layout import PACKS, address_of, pack_paths
from .lock import StoreLock
from .loose import read_file
from .mark import Marker
from .packs import PackFile
from .packwriter import PackWriter

if TYPE_CHECKING:
    from .store import Store

__all__ = ["LocalSite", "PackLike", "Site", "store_reader"]


class PackLike(Protocol):
    """A published pack as repack and gc see it."""

    hex: str
    index: Any

    @property
    def mtime(self) -> float: ...

    @property
    def pack_rel(self) -> str: ...

    @property
    def idx_rel(self) -> str: ...


class Site(Protocol):
    """The medium under one store's maintenance (see the module's docstring)."""

    kernel: ModuleType

    @property
    def store(self) -> Store:
        """The store maintained."""

    def locked(self) -> AbstractContextManager[object]:
        """Hold the store's lock for the block."""

    def sweep_leftovers(self, grace_seconds: float) -> int:
        """Remove leftovers older than the grace period; how many."""

    def packs(self) -> list[Any]:
        """The packs published now (``PackLike``)."""

    def refresh(self) -> None:
        """Let the store's readers see the packs published now."""

    def loose(self, *, with_stat: bool) -> list[Loose]:
        """Every loose object, in digest order (``with_stat=False``: ages may be 0)."""

    def prefetch(self, rels: Iterable[str]) -> None:
        """``read_loose`` will be asked for these objects, in this order."""

    def read_loose(self, rel: str) -> Any:
        """A loose object's stored bytes, or None when it is gone."""

    def readable(self, packs: list[Any]) -> list[tuple[Any, PackFile]]:
        """``(pack, PackFile to copy its entries from)`` for each of ``packs`` that can
        be read, in their order."""

    def writer(self) -> PackWriter:
        """A new pack being written."""

    def publish(self, writer: PackWriter, sources: list[PackFile]) -> str:
        """Publish the finished pack (STORE.md §3: the pack, then its index); returns the
        pack's store-relative path. ``CorruptObjectError`` (nothing published) if a
        source pack can no longer be trusted."""

    def loose_mtime(self, item: Loose) -> float | None:
        """A loose object's age mark as it is now (None: gone)."""

    def pack_mtime(self, pack: Any) -> float | None:
        """A pack's age mark as it is now (None: gone)."""

    def pack_bytes(self, pack: Any) -> int:
        """The bytes a pack and its index take."""

    def delete_loose(self, items: list[Loose]) -> int:
        """Remove the loose objects; how many were there to remove."""

    def remove_packs(self, packs: list[Any]) -> None:
        """Unpublish the packs (every index first), then remove them."""

    def ref_scan(self) -> refs.RefScan:
        """Everything under refs/, read once."""

    def marker(self) -> Marker:
        """A marker that reads the store's objects (None for a missing one)."""


def store_reader(store: Store) -> Marker:
    """A ``Marker`` over ``store.get`` (a missing object reads as None)."""

    def read(digest: bytes) -> bytes | None:
        try:
            data = store.get(address_of(digest))
        except MissingObjectError:
            return None
        assert isinstance(data, bytes)
        return data

    return Marker(read)


def _size(path: str) -> int:
    try:
        return os.lstat(path).st_size
    except FileNotFoundError:
        return 0


def _mtime(path: str) -> float | None:
    try:
        return os.lstat(path).st_mtime
    except FileNotFoundError:
        return None


class LocalSite:
    """A store in a local directory: files in ``tmp/`` renamed into place, fsynced when
    the store is durable, under the lock file (``lock.StoreLock``)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.kernel = store.kernel
        self.root = store.root

    def locked(self) -> StoreLock:
        return StoreLock(self.root, durable=self.store.durable)

    def sweep_leftovers(self, grace_seconds: float) -> int:
        return sweep_leftovers(self.root, grace_seconds)

    def packs(self) -> list[PackFile]:
        return self.store.packs.current()

    def refresh(self) -> None:
        self.store.packs.refresh()

    def loose(self, *, with_stat: bool) -> list[Loose]:
        return list(loose_objects(self.root, with_stat=with_stat))

    def prefetch(self, rels: Iterable[str]) -> None:
        pass  # a local read is as quick as it gets

    def read_loose(self, rel: str) -> Any:
        return read_file(f"{self.root}/{rel}", rel)

    def readable(self, packs: list[PackFile]) -> list[tuple[PackFile, PackFile]]:
        return [(pf, pf) for pf in packs]

    def writer(self) -> PackWriter:
        return PackWriter(self.root, durable=self.store.durable)

    def publish(self, writer: PackWriter, sources: list[PackFile]) -> str:
        """Rename the pack into ``packs/``, fsync it, then rename the index (the
        publication) and fsync again: from the second rename on, the new pack is what
        readers see, and no power loss can keep the index without its pack (two renames
        into one directory may otherwise persist in either order). Before that, every
        pack read for it is checked to be intact: one that shrank under its mapping while
        being copied gave zeros, never data, and publishing them would lose it."""
        try:
            for pf in sources:
                pf.check_intact()
        except CorruptObjectError:
            writer.abort()
            raise
        pack_rel, idx_rel = pack_paths(writer.trailer)
        try:
            fs.rename(writer.pack_tmp, f"{self.root}/{pack_rel}")
            if self.store.durable:
                fs.fsync_dir(f"{self.root}/{PACKS}")
            fs.rename(writer.idx_tmp, f"{self.root}/{idx_rel}")
        finally:
            writer.close()
        if self.store.durable:
            fs.fsync_dir(f"{self.root}/{PACKS}")
        return pack_rel

    def loose_mtime(self, item: Loose) -> float | None:
        return _mtime(f"{self.root}/{item.rel}")

    def pack_mtime(self, pack: PackFile) -> float | None:
        return _mtime(pack.path(self.root))

    def pack_bytes(self, pack: PackFile) -> int:
        return _size(pack.path(self.root)) + _size(f"{self.root}/{pack.idx_rel}")

    def delete_loose(self, items: list[Loose]) -> int:
        removed = 0
        for item in items:
            try:
                fs.unlink(f"{self.root}/{item.rel}")
            except FileNotFoundError:
                continue
            removed += 1
        return removed

    def remove_packs(self, packs: list[PackFile]) -> None:
        """Unlink every ``.idx``, make that durable, then the ``.pack`` files: in every
        state a power loss may leave, a published index has its pack."""
        if not packs:
            return
        for pf in packs:
            try:
                fs.unlink(f"{self.root}/{pf.idx_rel}")
            except FileNotFoundError:
                pass
        if self.store.durable:
            fs.fsync_dir(f"{self.root}/{PACKS}")
        for pf in packs:
            try:
                fs.unlink(f"{self.root}/{pf.pack_rel}")
            except FileNotFoundError:
                pass

    def ref_scan(self) -> refs.RefScan:
        return refs.scan(self.root)

    def marker(self) -> Marker:
        return store_reader(self.store)
