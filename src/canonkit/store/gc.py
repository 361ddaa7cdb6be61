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
   after checking that its age is still past the grace period (a concurrent ``put`` of
   an existing object refreshes it).

Age is the mtime of the loose file, or of the pack for a packed object (STORE.md §6); in
object storage, their LastModified (§7). The decisions run on a ``sites.Site``, the same
for both kinds of store.
"""
from __future__ import annotations

import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..errors import MissingReachableError
from .layout import digest_of_address
from .mark import Marker
from .repack import Source, write_pack
from .sites import Site, store_reader
from .stats import GCStats

if TYPE_CHECKING:
    from .store import Store

__all__ = ["gc"]

REF_RECHECKS = 8  # rounds of re-reading refs that moved while marking
_reader = store_reader  # a Marker over Store.get (the crash-state harness marks with it)


def gc(store: Store, *, roots: Iterable[str] = (), grace_seconds: float = 3600.0,
       progress: bool | None = False) -> GCStats:
    if grace_seconds < 0:
        raise ValueError(f"grace_seconds must be >= 0, got {grace_seconds}")
    named = [(f"root {a}", digest_of_address(a)) for a in roots]
    started = time.perf_counter()
    stats = GCStats()
    site = store._site()
    with site.locked():
        now = time.time()
        stats.leftovers_removed = site.sweep_leftovers(grace_seconds)
        packs = site.packs()
        loose = site.loose(with_stat=True)

        def young(mtime: float) -> bool:
            return now - mtime < grace_seconds

        # 2. the real roots: a missing object stops everything, and so does any entry
        # under refs/ that is not a valid ref (it may be the only root of something)
        ref_roots = _ref_roots(site)
        marker = site.marker()
        root_list = [(f"ref {n}", digest_of_address(a)) for n, a in ref_roots.items()] + named
        stats.roots = len(root_list)
        _strict(marker, root_list)
        reachable = set(marker.marked)

        # 3. young objects keep what they reference; refs that moved meanwhile too
        fresh = [(f"young {item.rel}", item.digest) for item in loose if young(item.mtime)]
        for pack in packs:
            if young(pack.mtime):
                fresh += [(f"young {pack.pack_rel}", d) for d in pack.index.entries()[0]]
        stats.young_roots = len(fresh)
        marker.mark(fresh, strict=False)
        for _ in range(REF_RECHECKS):
            now_roots = _ref_roots(site)
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
        doomed, new_hex = _rewrite(site, packs, keep, young, stats, progress)

        # 5. delete: unreachable old loose files, then the superseded packs
        for item in loose:
            if item.digest in keep or young(item.mtime):
                continue
            mtime = site.loose_mtime(item)
            if mtime is None or young(mtime):  # gone, or re-put meanwhile
                continue
            if site.delete_loose([item]):  # one at a time: each right after its age
                stats.deleted_loose += 1
                stats.freed_bytes += item.size
        superseded = []
        for pack, dropped in doomed:
            if pack.hex == new_hex:
                continue
            mtime = site.pack_mtime(pack)
            if mtime is None or young(mtime):  # freshened by a put meanwhile: keep it
                continue
            superseded.append(pack)
            stats.freed_bytes += site.pack_bytes(pack)
            stats.deleted += dropped
        site.remove_packs(superseded)
        stats.packs_removed += len(superseded)
        site.refresh()
        stats.deleted += stats.deleted_loose
        stats.kept_young = len(keep - reachable)
    stats.seconds = time.perf_counter() - started
    return stats


def _rewrite(site: Site, packs: list[Any], keep: set[bytes], young: Any, stats: GCStats,
             progress: bool | None) -> tuple[list[tuple[Any, int]], str | None]:
    """Copy the kept objects of every old pack that holds unreachable ones into one new
    pack and publish it. Returns those packs, each with how many objects it drops (empty
    if a kept object could not be copied: then every pack is kept), and the new pack's
    name."""
    holding = [pack for pack in packs if not young(pack.mtime)
               and not all(d in keep for d in pack.index.entries()[0])]
    if not holding:
        return [], None
    doomed: list[tuple[Any, int]] = []
    sources: dict[bytes, Source] = {}
    readable = site.readable(holding)
    for pack, pf in readable:
        dropped = 0
        for d, offset in zip(*pf.index.entries()):
            if d in keep:
                sources.setdefault(d, ("packed", pf, offset))
            else:
                dropped += 1
        doomed.append((pack, dropped))
    if not sources:
        return doomed, None
    writer, _, skipped = write_pack(site, sorted(sources.items()), "keep",
                                    progress=progress, desc="gc")
    if skipped or writer is None:  # a kept object could not be copied: keep all
        if writer is not None:
            writer.abort()
        return [], None
    site.publish(writer, [pf for _, pf in readable])
    stats.packs_written = 1
    stats.freed_bytes -= writer.size
    return doomed, writer.trailer.hex()


def _ref_roots(site: Site) -> dict[str, str]:
    """``{name: address}`` of every ref, read by the enumeration fsck uses; any entry fsck
    would flag stops gc before it deletes anything, naming it."""
    found = site.ref_scan()
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
