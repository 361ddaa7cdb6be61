"""gc: delete what no root reaches, never what a writer may still need (STORE.md §3).

Under the store lock:

1. remove leftovers older than the grace period;
2. mark from every ref and every root the caller names — a reachable object that is
   missing (or unreadable) stops gc before it deletes anything (``MissingReachableError``
   names the path from the root), and so does anything under refs/ that fsck would flag
   (the refs are read by fsck's enumeration, ``refs.scan``): a ref gc cannot read may be
   the only root of objects it would otherwise collect;
3. mark also from every object younger than the grace period — so a writer that put a
   new commit over old trees keeps those trees, as git does — and again from any ref that
   changed while marking;
4. rewrite the reachable objects of every old pack that holds unreachable ones into one
   new pack, and publish it (as repack does);
5. only then delete the unreachable loose files and the superseded packs — each one
   after checking that its mtime is still older than the grace period (a concurrent
   ``put`` of an existing object refreshes it).

Age is the mtime of the loose file, or of the pack for a packed object (STORE.md §6).
"""
from __future__ import annotations

import os
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..errors import MissingObjectError, MissingReachableError
from . import mutations as fs
from . import refs
from .inventory import loose_objects, sweep_leftovers
from .layout import address_of, digest_of_address
from .lock import StoreLock
from .mark import Marker
from .packs import PackFile
from .repack import Source, publish, remove_packs, write_pack
from .stats import GCStats

if TYPE_CHECKING:
    from .store import Store

__all__ = ["gc"]

REF_RECHECKS = 8  # rounds of re-reading refs that moved while marking


def _reader(store: Store) -> Marker:
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


def gc(store: Store, *, roots: Iterable[str] = (), grace_seconds: float = 3600.0,
       progress: bool | None = False) -> GCStats:
    if grace_seconds < 0:
        raise ValueError(f"grace_seconds must be >= 0, got {grace_seconds}")
    named = [(f"root {a}", digest_of_address(a)) for a in roots]
    started = time.perf_counter()
    stats = GCStats()
    with StoreLock(store.root, durable=store.durable):
        now = time.time()
        stats.leftovers_removed = sweep_leftovers(store.root, grace_seconds)
        packs: list[PackFile] = store.packs.current()
        loose = list(loose_objects(store.root))

        def young(mtime: float) -> bool:
            return now - mtime < grace_seconds

        # 2. the real roots: a missing object stops everything, and so does any entry
        # under refs/ that is not a valid ref (it may be the only root of something)
        ref_roots = _ref_roots(store)
        marker = _reader(store)
        root_list = [(f"ref {n}", digest_of_address(a)) for n, a in ref_roots.items()] + named
        stats.roots = len(root_list)
        _strict(marker, root_list)
        reachable = set(marker.marked)

        # 3. young objects keep what they reference; refs that moved meanwhile too
        fresh = [(f"young {item.rel}", item.digest) for item in loose if young(item.mtime)]
        for pf in packs:
            if young(pf.mtime):
                fresh += [(f"young {pf.pack_rel}", d) for d in pf.index.entries()[0]]
        stats.young_roots = len(fresh)
        marker.mark(fresh, strict=False)
        for _ in range(REF_RECHECKS):
            now_roots = _ref_roots(store)
            moved = [(f"ref {n}", digest_of_address(a)) for n, a in now_roots.items()
                     if ref_roots.get(n) != a]
            if not moved:
                break
            ref_roots.update(now_roots)
            _strict(marker, moved)
        keep = marker.marked
        stats.reachable = len(reachable)
        stats.unfollowed = len(marker.unfollowed)

        # 4. rewrite old packs that hold unreachable objects
        doomed: list[PackFile] = []
        sources: dict[bytes, Source] = {}
        dropped: dict[str, int] = {}
        for pf in packs:
            if young(pf.mtime):
                continue
            digests, offsets = pf.index.entries()
            if all(d in keep for d in digests):
                continue
            doomed.append(pf)
            for d, offset in zip(digests, offsets):
                if d in keep:
                    sources.setdefault(d, ("packed", pf, offset))
                else:
                    dropped[pf.hex] = dropped.get(pf.hex, 0) + 1
        new_hex = None
        if sources:
            writer, packed, skipped = write_pack(store, sorted(sources.items()), "keep",
                                                 progress=progress, desc="gc")
            if skipped or writer is None:  # a kept object could not be copied: keep all
                if writer is not None:
                    writer.abort()
                doomed = []
            else:
                publish(store, writer, writer.trailer, doomed)
                new_hex = writer.trailer.hex()
                stats.packs_written = 1
                stats.freed_bytes -= writer.size

        # 5. delete: unreachable old loose files, then the superseded packs
        for item in loose:
            if item.digest in keep or young(item.mtime):
                continue
            path = f"{store.root}/{item.rel}"
            mtime = _mtime(path)
            if mtime is None or young(mtime):  # gone, or re-put meanwhile
                continue
            fs.unlink(path)
            stats.deleted_loose += 1
            stats.freed_bytes += item.size
        superseded = []
        for pf in doomed:
            if pf.hex == new_hex:
                continue
            mtime = _mtime(pf.path(store.root))
            if mtime is None or young(mtime):  # freshened by a put meanwhile: keep it
                continue
            superseded.append(pf)
            stats.freed_bytes += _size(pf.path(store.root)) + _size(
                f"{store.root}/{pf.idx_rel}")
            stats.deleted += dropped.get(pf.hex, 0)
        remove_packs(store, superseded)
        stats.packs_removed += len(superseded)
        store.packs.refresh()
        stats.deleted += stats.deleted_loose
        stats.kept_young = len(keep - reachable)
    stats.seconds = time.perf_counter() - started
    return stats


def _ref_roots(store: Store) -> dict[str, str]:
    """``{name: address}`` of every ref, read by the enumeration fsck uses; any entry fsck
    would flag stops gc before it deletes anything, naming it."""
    found = refs.scan(store.root)
    problem = found.first_problem()
    if problem is not None:
        problem.args = (f"gc stopped before deleting anything: {problem}",)
        raise problem
    return {name: address for name, _, address in found.refs}


def _strict(marker: Marker, roots: list[tuple[str, bytes]]) -> None:
    missing = marker.mark(roots, strict=True)
    if missing:
        path = marker.path_to(missing[0])
        raise MissingReachableError(
            f"gc stopped before deleting anything: {path[-1]} is reachable but missing "
            f"(path from the root: {' -> '.join(path)}); run fsck",
            address=path[-1], detail=path)
