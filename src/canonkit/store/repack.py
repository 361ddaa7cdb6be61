"""repack: loose objects (and old packs) into one new pack, in STORE.md §3's order.

Under the store lock:

1. remove leftovers older than the grace period;
2. write the new pack and its index (every object read and verified from its current
   form first; a corrupt one is skipped and left where it is) — in ``tmp/``, fsynced;
   for a store in object storage, in a local scratch directory;
3. publish: the ``.pack`` into place, then the ``.idx`` — on a directory two renames
   with ``packs/`` fsynced after each, in object storage a PUT of the pack and a PUT of
   the index with ``If-None-Match: *`` (``sites``);
4. only then delete the loose objects the new pack holds, and the old packs whose every
   object it holds: every old ``.idx`` first, then the ``.pack`` files — so that no crash
   can keep an index whose pack is gone.

A crash anywhere leaves every object readable: before the publication the old forms are
all in place (and the new files are leftovers); after it, both old and new are
(duplicates, until the next repack). The decisions here run on a ``sites.Site`` and are
the same for both kinds of store; ``write_pack`` is shared with gc.
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ..errors import CorruptObjectError
from .deflate import compress, inflate
from .layout import address_of
from .packs import PackFile, located
from .packwriter import PackWriter
from .._progress import bar
from .stats import RepackStats

if TYPE_CHECKING:
    from .sites import Site
    from .store import Store

__all__ = ["DEFLATE_MODES", "Source", "read_for_pack", "repack", "write_pack"]

DEFLATE_MODES = ("auto", "always", "never")
AUTO_MIN = 64  # bytes: smaller objects are stored raw by "auto" (a stream saves nothing)


def _auto_keeps(stored: int, logical: int) -> bool:
    """"auto" stores DEFLATE when it saves at least an eighth of the bytes: every read of
    a DEFLATE entry pays for inflating it, so a small saving is not worth it."""
    return stored <= logical - logical // 8


Source = tuple[str, Any, int]  # ("loose", rel, 0) | ("packed", PackFile, offset)


def read_for_pack(site: Site, digest: bytes, source: Source, mode: str
                  ) -> tuple[bool, Any, int]:
    """``(deflated, payload, logical length)`` of one object for a new pack, read from
    its current form and verified; an existing DEFLATE stream is reused, not recompressed.
    ``mode``: a ``DEFLATE_MODES`` value, or ``"keep"`` (the current form).
    ``CorruptObjectError`` (located) if the form does not give the object."""
    kind, where, offset = source
    stream: Any = None
    if kind == "loose":
        content = site.read_loose(where)
        if content is None:
            raise FileNotFoundError(where)
        try:
            data = site.kernel.read_loose(content, digest, inflate)
        except CorruptObjectError as exc:
            raise located(exc, where, address_of(digest)) from None
        if content[4] == 1:
            stream = memoryview(content)[13:]
    else:
        pf: PackFile = where
        try:
            form, stored, _ = pf.pack.frame(offset)
            data = pf.pack.entry(offset, digest, inflate)
        except CorruptObjectError as exc:
            raise located(exc, pf.pack_rel, address_of(digest)) from None
        if form == 1:
            stream = pf.payload(offset, stored)
    logical = len(data)
    if mode == "keep":  # gc's rewrite: every object stays in the form it has
        return (True, stream, logical) if stream is not None else (False, data, logical)
    if mode == "never" or (mode == "auto" and logical < AUTO_MIN):
        return False, data, logical
    if stream is None:
        stream = compress(data)
    if mode == "always" or _auto_keeps(len(stream), logical):
        return True, stream, logical
    return False, data, logical


def write_pack(site: Site, items: list[tuple[bytes, Source]], mode: str, *,
               progress: bool | None = False, desc: str = "repack"
               ) -> tuple[PackWriter | None, set[bytes], int]:
    """Write the objects (in the order given: digest order) into a new pack (the site's
    ``writer``), under a progress bar named ``desc`` (``progress`` as ``_progress.bar``
    takes it). Returns the finished writer (None if no object could be packed), the
    digests packed and how many were skipped as corrupt or gone."""
    site.prefetch(source[1] for _, source in items if source[0] == "loose")
    writer = site.writer()
    packed: set[bytes] = set()
    skipped = 0
    shown = bar(progress, len(items), desc, "obj")
    try:
        for digest, source in items:
            try:
                deflated, payload, logical = read_for_pack(site, digest, source, mode)
            except (CorruptObjectError, FileNotFoundError):
                skipped += 1  # left in place; fsck names it
                continue
            writer.add(digest, deflated, payload, logical)
            packed.add(digest)
            shown.update(1)
        if not packed:
            writer.abort()
            return None, packed, skipped
        writer.finish()
    except BaseException:
        writer.abort()
        raise
    finally:
        shown.close()
    return writer, packed, skipped


def repack(store: Store, *, deflate: str = "auto", merge: bool = True,
           grace_seconds: float = 3600.0, progress: bool | None = False) -> RepackStats:
    if deflate not in DEFLATE_MODES:
        raise ValueError(f"deflate must be one of {DEFLATE_MODES}, got {deflate!r}")
    started = time.perf_counter()
    stats = RepackStats()
    site = store._site()
    with site.locked():
        stats.leftovers_removed = site.sweep_leftovers(grace_seconds)
        old = site.packs() if merge else []
        if not merge:
            site.refresh()
        loose = site.loose(with_stat=False)
        if not loose and len(old) <= 1:
            stats.seconds = time.perf_counter() - started
            return stats
        readable = site.readable(old)
        old = [pack for pack, _ in readable]  # one that cannot be read is left alone
        sources: dict[bytes, Source] = {}
        for _, pf in readable:
            for digest, offset in zip(*pf.index.entries()):
                sources.setdefault(digest, ("packed", pf, offset))
        for item in loose:
            sources.setdefault(item.digest, ("loose", item.rel, 0))
        writer, packed, stats.skipped = write_pack(site, sorted(sources.items()), deflate,
                                                   progress=progress)
        if writer is None:
            stats.seconds = time.perf_counter() - started
            return stats
        trailer = writer.trailer
        stats.pack = site.publish(writer, [pf for _, pf in readable])
        stats.objects = len(packed)
        stats.deflated = writer.deflated
        stats.logical_bytes = writer.logical_bytes
        stats.pack_bytes = writer.size
        stats.loose_removed += site.delete_loose([item for item in loose
                                                  if item.digest in packed])
        superseded = [pack for pack in old if pack.hex != trailer.hex()  # (else: the same)
                      and all(d in packed for d in pack.index.entries()[0])]
        site.remove_packs(superseded)
        stats.packs_removed += len(superseded)
        site.refresh()
    stats.seconds = time.perf_counter() - started
    return stats
