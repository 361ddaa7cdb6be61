"""The published packs of a store in object storage, read by ranged GETs (STORE.md §7).

An index is read once per open (and again when a listing shows it is new): refused
unless its size equals what its count implies, then checked by the kernel's ``Index``
(header, exact size) and kept in memory. A packed object is one ranged GET of its entry,
whose extent is known without reading the pack: entries are contiguous, so an entry
ends where the next offset of the index begins (the last one at the trailer). An entry
whose stored length disagrees with that extent is corrupt — the pack was not written by
a canonkit store, or the index lies — and the object is looked for in its other forms.
"""
from __future__ import annotations

import bisect
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from ..errors import CorruptObjectError, FileChangedError, ObjectNotFoundError
from ._format_py import (
    DIGEST,
    ENTRY_HEADER,
    FANOUT,
    INDEX_HEADER,
    LOOSE_HEADER,
    LOOSE_MAGIC,
    PACK_HEADER,
    TRAILER,
)
from .bucket_io import Bucket, ObjectInfo, modified
from .deflate import inflate
from .layout import PACKS, pack_paths, parse_pack_name
from .packs import located

__all__ = ["COALESCE_GAP", "BucketPack", "BucketPacks", "index_size"]

COALESCE_GAP = 64 << 10  # bytes: neighbouring entries closer than this share one GET
MAX_RANGE = 16 << 20     # bytes: a coalesced GET never asks for more


def index_size(count: int) -> int:
    """The exact size of an index of ``count`` entries (STORE.md §2)."""
    return INDEX_HEADER + FANOUT + count * (DIGEST + 8) + 2 * TRAILER


@dataclass
class BucketPack:
    """One published pack: its hex name, the pack object as listed, its index."""

    hex: str
    pack: ObjectInfo
    idx: ObjectInfo
    index: Any
    starts: array[int] = field(default_factory=lambda: array("Q"))  # entry offsets, ascending

    @property
    def pack_rel(self) -> str:
        return pack_paths(bytes.fromhex(self.hex))[0]

    @property
    def idx_rel(self) -> str:
        return pack_paths(bytes.fromhex(self.hex))[1]

    @property
    def mtime(self) -> float:
        """The pack's age for the grace period: its LastModified."""
        return modified(self.pack)

    def extent(self, offset: int) -> int:
        """Where the entry at ``offset`` ends: the next entry's offset, or the trailer."""
        i = bisect.bisect_right(self.starts, offset)
        return self.starts[i] if i < len(self.starts) else self.pack.size - TRAILER


def decode_entry(kernel: ModuleType, bp: BucketPack, offset: int, raw: Any,
                 want: bytes | None, address: str | None) -> bytes:
    """The logical bytes of the entry at ``offset`` given its bytes ``raw`` (exactly its
    extent), through the kernel's strict loose reader: the entry's framing is a loose
    file's with the stored length in place of the magic."""
    view = memoryview(raw)
    if len(view) < ENTRY_HEADER:
        raise CorruptObjectError(f"{bp.pack_rel}: entry at offset {offset} is shorter than "
                                 f"its header", offset=offset, detail="truncated",
                                 path=bp.pack_rel, address=address)
    form, stored = view[0], int.from_bytes(view[1:9], "big")
    if stored != len(view) - ENTRY_HEADER:
        raise CorruptObjectError(
            f"{bp.pack_rel}: entry at offset {offset} stores {stored} bytes but the index "
            f"gives it {len(view) - ENTRY_HEADER}", offset=offset + 1,
            detail="length_mismatch", path=bp.pack_rel, address=address)
    content = LOOSE_MAGIC + bytes((form,)) + bytes(view[9:17]) + view[ENTRY_HEADER:]
    try:
        out: bytes = kernel.read_loose(content, want, inflate)
    except CorruptObjectError as exc:
        at = offset + ENTRY_HEADER - LOOSE_HEADER + (exc.offset or 0)  # a pack offset
        text = str(exc).replace(f"at offset {exc.offset}", f"at offset {at}")
        moved = CorruptObjectError(text, offset=at, detail=exc.detail)
        raise located(moved, bp.pack_rel, address) from None
    return out


class BucketPacks:
    """The published packs of one store, each index read once and kept."""

    def __init__(self, bucket: Bucket, kernel: ModuleType) -> None:
        self.bucket = bucket
        self.kernel = kernel
        self.packs: dict[str, BucketPack] = {}
        self.broken: dict[str, CorruptObjectError] = {}
        self.listed = False

    def forget(self) -> None:
        """Drop every cached index; the next use lists the packs again."""
        self.packs.clear()
        self.listed = False

    def __iter__(self) -> Iterator[BucketPack]:
        return iter(self.snapshot())

    def snapshot(self) -> list[BucketPack]:
        """The packs as now known (listed on first use): ``PackSet.snapshot``'s answer."""
        if not self.listed:
            self.refresh()
        return list(self.packs.values())

    @staticmethod
    def offset(bp: BucketPack, digest: bytes) -> int:
        """Where ``bp``'s index puts ``digest`` (-1: not listed), as ``PackSet.offset``."""
        found: int = bp.index.lookup(digest)
        return found

    def refresh(self) -> bool:
        """List ``packs/`` again: open new indexes, forget removed ones. True if
        anything changed."""
        objects = {self.bucket.rel(i)[len(PACKS) + 1:]: i for i in self.bucket.list(PACKS + "/")}
        published: dict[str, tuple[ObjectInfo, ObjectInfo]] = {}
        for name, info in objects.items():
            parsed = parse_pack_name(name)
            if parsed is not None and parsed[1] == "idx" and f"pack-{parsed[0]}.pack" in objects:
                published[parsed[0]] = (objects[f"pack-{parsed[0]}.pack"], info)
        changed = not self.listed or set(published) != set(self.packs)
        self.listed = True
        for gone in set(self.packs) - set(published):
            del self.packs[gone]
        for hex_name, (pack, idx) in sorted(published.items()):
            known = self.packs.get(hex_name)
            if known is not None and known.pack.etag == pack.etag and known.idx.etag == idx.etag:
                continue
            try:
                self.packs[hex_name] = self.open(hex_name, pack, idx)
            except CorruptObjectError as exc:
                self.broken[hex_name] = exc
                self.packs.pop(hex_name, None)
            except (ObjectNotFoundError, FileChangedError):  # removed or replaced since
                self.packs.pop(hex_name, None)  # listed: the next listing tells
                changed = True
            else:
                self.broken.pop(hex_name, None)
        return changed

    def open(self, hex_name: str, pack: ObjectInfo, idx: ObjectInfo) -> BucketPack:
        """Read and check one index; ``CorruptObjectError`` when it is not usable."""
        rel = pack_paths(bytes.fromhex(hex_name))[1]
        if idx.size < INDEX_HEADER:
            raise CorruptObjectError(f"{rel}: {idx.size} bytes, shorter than an index header",
                                     offset=idx.size, detail="truncated", path=rel)
        head = self.bucket.read_range(idx, 0, INDEX_HEADER)
        count = int.from_bytes(head[8:16], "big")
        if count > (idx.size // (DIGEST + 8)) or index_size(count) != idx.size:
            raise CorruptObjectError(
                f"{rel}: an index of {count} entries is {index_size(count)} bytes, the "
                f"object is {idx.size}", offset=8, detail="truncated", path=rel)
        data = self.bucket.read_range(idx, 0, idx.size)
        try:
            index = self.kernel.Index(data)
        except CorruptObjectError as exc:
            raise located(exc, rel) from None
        if index.pack_trailer.hex() != hex_name:
            raise CorruptObjectError(f"{rel}: names pack trailer {index.pack_trailer.hex()}",
                                     offset=idx.size - 2 * TRAILER,
                                     detail="index_pack_mismatch", path=rel)
        starts = array("Q", sorted(index.entries()[1]))
        return BucketPack(hex_name, pack, idx, index, starts)

    def locate(self, digest: bytes) -> Iterator[tuple[BucketPack, int]]:
        """Every (pack, offset) whose index lists ``digest``."""
        for bp in self:
            offset = bp.index.lookup(digest)
            if offset >= 0:
                yield bp, offset

    def read(self, bp: BucketPack, offset: int, want: bytes | None,
             address: str | None) -> bytes:
        """One packed object: one ranged GET of its entry."""
        end = bp.extent(offset)
        if not ENTRY_HEADER <= end - offset or end > bp.pack.size - TRAILER:
            raise CorruptObjectError(f"{bp.pack_rel}: the index points at offset {offset}, "
                                     f"outside the pack's entries", offset=offset,
                                     detail="bad_offset", path=bp.pack_rel, address=address)
        raw = self.bucket.read_range(bp.pack, offset, end)
        return decode_entry(self.kernel, bp, offset, raw, want, address)

    def read_many(self, bp: BucketPack, wanted: list[tuple[int, int, bytes | None]],
                  out: list[Any]) -> None:
        """Fill ``out[i]`` for ``(offset, i, digest)`` of one pack, neighbouring entries
        coalesced into one ranged GET (gaps under ``COALESCE_GAP``, at most ``MAX_RANGE``
        per request). A corrupt entry leaves its slot None, for the caller's slow path."""
        spans = sorted((offset, bp.extent(offset), i, digest) for offset, i, digest in wanted)
        start = 0
        while start < len(spans):
            first, last_end = spans[start][0], spans[start][1]
            stop = start + 1
            while stop < len(spans):
                offset, end = spans[stop][0], spans[stop][1]
                if offset - last_end > COALESCE_GAP or end - first > MAX_RANGE:
                    break
                last_end = max(last_end, end)
                stop += 1
            if last_end > bp.pack.size - TRAILER or first < PACK_HEADER:
                start = stop  # outside the entries: left to the slow path, which names it
                continue
            block = memoryview(self.bucket.read_range(bp.pack, first, last_end))
            for offset, end, i, digest in spans[start:stop]:
                try:
                    out[i] = decode_entry(self.kernel, bp, offset,
                                          block[offset - first:end - first], digest, None)
                except CorruptObjectError:
                    pass
            start = stop
