"""The published packs a ``Store`` reads, kept mapped between reads: the internal API that
the store's reads and its maintenance (repack, gc, fsck) share.

``refresh`` re-reads the list of published packs (cheap when it did not change);
``snapshot`` is the packs as now known, newest first; ``offset`` looks a digest up in one
pack, dropping a pack whose files shrank under their mappings (``broken`` then says why,
for the reads that miss).
"""
from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType

from ..errors import CorruptObjectError, UnsafePathError
from .packs import PackFile, list_published, located

__all__ = ["PackSet"]


class PackSet:
    """The published packs of the store at ``root``, read with ``kernel``."""

    def __init__(self, root: str, kernel: ModuleType) -> None:
        self.root = root
        self.kernel = kernel
        self._list: list[PackFile] = []
        self._guarded: list[PackFile] = []
        self._names: tuple[str, ...] = ()
        #: pack name -> why it cannot be read
        self.broken: dict[str, CorruptObjectError] = {}
        self.refresh()

    def snapshot(self) -> list[PackFile]:
        """The packs as now known (a copy: a lookup may drop one meanwhile)."""
        return list(self._list)

    def guarded(self) -> list[PackFile]:
        """The packs read by guarded (compiled) readers, newest first, as now known; empty
        when any pack is read otherwise (its size is checked before each read: the full
        path of ``Store.get``). Not a copy: the list is replaced, never changed in place."""
        return self._guarded

    def current(self) -> list[PackFile]:
        """``refresh``, then ``snapshot``: the packs published now."""
        self.refresh()
        return self.snapshot()

    def __iter__(self) -> Iterator[PackFile]:
        return iter(self.snapshot())

    def close(self) -> None:
        """Unmap every pack; the next ``refresh`` maps them again."""
        for pf in self._list:
            pf.close()
        self._list = []
        self._guarded = []
        self._names = ()

    def refresh(self) -> bool:
        """Re-read the list of published packs; True if it changed."""
        names = tuple(list_published(self.root))
        if names == self._names:
            return False
        keep = {pf.hex: pf for pf in self._list}
        packs: list[PackFile] = []
        broken: dict[str, CorruptObjectError] = {}
        for name in names:
            pf = keep.pop(name, None)
            if pf is None:
                try:
                    pf = PackFile.open(self.root, name, self.kernel)
                except FileNotFoundError:  # deleted between listing and opening
                    continue
                except (CorruptObjectError, UnsafePathError) as exc:
                    broken[name] = exc if isinstance(exc, CorruptObjectError) else \
                        CorruptObjectError(str(exc), path=exc.path, detail="unsafe_path")
                    continue
            packs.append(pf)
        for pf in keep.values():
            pf.close()
        # newest first: a fresh pack is likelier to hold what is looked up now
        packs.sort(key=lambda pf: -pf.mtime)
        self._list = packs
        self._guarded_update()
        self._names = names
        self.broken = broken
        return True

    def _guarded_update(self) -> None:
        self._guarded = list(self._list) if all(pf.guarded for pf in self._list) else []

    def offset(self, pf: PackFile, digest: bytes) -> int:
        """``digest``'s entry offset in ``pf``, or -1. A pack whose file shrank under its
        mapping is dropped from the packs read (and reported by reads that miss)."""
        if pf.closed:  # dropped meanwhile
            return -1
        try:
            if not pf.guarded:
                pf.check_intact(pack=False)
            offset: int = pf.index.lookup(digest)
            return offset
        except CorruptObjectError as exc:
            self.drop(pf, exc)
            return -1

    def drop(self, pf: PackFile, exc: CorruptObjectError) -> None:
        if pf in self._list:
            self._list.remove(pf)
            self._guarded_update()
            self.broken[pf.hex] = exc if exc.path else located(exc, pf.idx_rel)
            pf.close()

    def usable(self, pf: PackFile, *, pack: bool = True) -> bool:
        """False (the pack dropped) if ``pf``'s files shrank under their mappings."""
        try:
            pf.check_intact(pack=pack)
        except CorruptObjectError as exc:
            self.drop(pf, exc)
            return False
        return True
