"""repack: loose objects (and old packs) into one new pack, in STORE.md §3's order.

Under the store lock:

1. remove leftovers older than the grace period;
2. write the new pack and its index into ``tmp/`` (every object read and verified from
   its current form first; a corrupt one is skipped and left where it is), fsync both;
3. rename the ``.pack`` into ``packs/``, fsync ``packs/``, then rename the ``.idx`` —
   the publication — and fsync ``packs/`` again;
4. only then delete the loose files the new pack holds, and the old packs whose every
   object it holds: every old ``.idx`` first, then ``packs/`` is fsynced, then the
   ``.pack`` files — so that no power loss can keep an index whose pack is gone.

A crash anywhere leaves every object readable: before step 3's second rename the old
forms are all in place (and the new files are leftovers); after it, both old and new are
(duplicates, until the next repack). ``write_pack`` is shared with gc. Before publishing,
every pack read for the new one is checked to be intact: a pack that shrank under its
mapping while being copied gave zeros, never data, and publishing them would lose it.
"""
from __future__ import annotations

import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..errors import CorruptObjectError
from . import mutations as fs
from .deflate import compress, inflate
from .inventory import loose_objects, sweep_leftovers
from .layout import PACKS, address_of, pack_paths
from .lock import StoreLock
from .loose import read_file
from .packs import PackFile, located
from .packwriter import PackWriter
from .._progress import bar
from .stats import RepackStats

if TYPE_CHECKING:
    from .store import Store

__all__ = ["DEFLATE_MODES", "Source", "publish", "read_for_pack", "remove_packs", "repack",
           "write_pack"]

DEFLATE_MODES = ("auto", "always", "never")
AUTO_MIN = 64  # bytes: smaller objects are stored raw by "auto" (a stream saves nothing)


def _auto_keeps(stored: int, logical: int) -> bool:
    """"auto" stores DEFLATE when it saves at least an eighth of the bytes: every read of
    a DEFLATE entry pays for inflating it, so a small saving is not worth it."""
    return stored <= logical - logical // 8


Source = tuple[str, Any, int]  # ("loose", rel, 0) | ("packed", PackFile, offset)


def read_for_pack(store: Store, digest: bytes, source: Source, mode: str
                  ) -> tuple[bool, Any, int]:
    """``(deflated, payload, logical length)`` of one object for a new pack, read from
    its current form and verified; an existing DEFLATE stream is reused, not recompressed.
    ``mode``: a ``DEFLATE_MODES`` value, or ``"keep"`` (the current form).
    ``CorruptObjectError`` (located) if the form does not give the object."""
    kind, where, offset = source
    stream: Any = None
    if kind == "loose":
        content = read_file(f"{store.root}/{where}", where)
        if content is None:
            raise FileNotFoundError(where)
        try:
            data = store.kernel.read_loose(content, digest, inflate)
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


def write_pack(store: Store, items: list[tuple[bytes, Source]], mode: str, *,
               progress: bool | None = False, desc: str = "repack"
               ) -> tuple[PackWriter | None, set[bytes], int]:
    """Write the objects (in the order given: digest order) into a new pack in ``tmp/``,
    under a progress bar named ``desc`` (``progress`` as ``_progress.bar`` takes it).
    Returns the finished writer (None if no object could be packed), the digests packed
    and how many were skipped as corrupt or gone."""
    writer = PackWriter(store.root, durable=store.durable)
    packed: set[bytes] = set()
    skipped = 0
    shown = bar(progress, len(items), desc, "obj")
    try:
        for digest, source in items:
            try:
                deflated, payload, logical = read_for_pack(store, digest, source, mode)
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


def publish(store: Store, writer: PackWriter, trailer: bytes,
            sources: Iterable[PackFile] = ()) -> tuple[str, str]:
    """Rename the pack into ``packs/``, fsync it, then rename the index (the
    publication) and fsync again: from the second rename on, the new pack is what readers
    see, and no power loss can keep the index without its pack (two renames into one
    directory may otherwise persist in either order). Returns the store-relative paths.
    ``CorruptObjectError`` (nothing published) if a pack read for it shrank meanwhile."""
    try:
        for pf in sources:
            pf.check_intact()
    except CorruptObjectError:
        writer.abort()
        raise
    pack_rel, idx_rel = pack_paths(trailer)
    try:
        fs.rename(writer.pack_tmp, f"{store.root}/{pack_rel}")
        if store.durable:
            fs.fsync_dir(f"{store.root}/{PACKS}")
        fs.rename(writer.idx_tmp, f"{store.root}/{idx_rel}")
    finally:
        writer.close()
    if store.durable:
        fs.fsync_dir(f"{store.root}/{PACKS}")
    return pack_rel, idx_rel


def remove_packs(store: Store, packs: list[PackFile]) -> None:
    """Unpublish every pack (its ``.idx``), make that durable, then remove the ``.pack``
    files: in every state a power loss may leave, a published index has its pack."""
    if not packs:
        return
    for pf in packs:
        try:
            fs.unlink(f"{store.root}/{pf.idx_rel}")
        except FileNotFoundError:
            pass
    if store.durable:
        fs.fsync_dir(f"{store.root}/{PACKS}")
    for pf in packs:
        try:
            fs.unlink(f"{store.root}/{pf.pack_rel}")
        except FileNotFoundError:
            pass


def repack(store: Store, *, deflate: str = "auto", merge: bool = True,
           grace_seconds: float = 3600.0, progress: bool | None = False) -> RepackStats:
    if deflate not in DEFLATE_MODES:
        raise ValueError(f"deflate must be one of {DEFLATE_MODES}, got {deflate!r}")
    started = time.perf_counter()
    stats = RepackStats()
    with StoreLock(store.root, durable=store.durable):
        stats.leftovers_removed = sweep_leftovers(store.root, grace_seconds)
        old = store.packs.current() if merge else []
        if not merge:
            store.packs.refresh()
        loose = list(loose_objects(store.root, with_stat=False))
        if not loose and len(old) <= 1:
            stats.seconds = time.perf_counter() - started
            return stats
        sources: dict[bytes, Source] = {}
        for pf in old:
            for digest, offset in zip(*pf.index.entries()):
                sources.setdefault(digest, ("packed", pf, offset))
        for item in loose:
            sources.setdefault(item.digest, ("loose", item.rel, 0))
        writer, packed, stats.skipped = write_pack(store, sorted(sources.items()), deflate,
                                                   progress=progress)
        if writer is None:
            stats.seconds = time.perf_counter() - started
            return stats
        trailer = writer.trailer
        pack_rel, _ = publish(store, writer, trailer, old)
        stats.pack = pack_rel
        stats.objects = len(packed)
        stats.deflated = writer.deflated
        stats.logical_bytes = writer.logical_bytes
        stats.pack_bytes = writer.size
        for item in loose:
            if item.digest in packed:
                try:
                    fs.unlink(f"{store.root}/{item.rel}")
                    stats.loose_removed += 1
                except FileNotFoundError:
                    pass
        superseded = [pf for pf in old if pf.hex != trailer.hex()  # (else: the same pack)
                      and all(d in packed for d in pf.index.entries()[0])]
        remove_packs(store, superseded)
        stats.packs_removed += len(superseded)
        store.packs.refresh()
    stats.seconds = time.perf_counter() - started
    return stats

