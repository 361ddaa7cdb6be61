"""The published packs of a store in object storage, read by ranged GETs (STORE.md §7).

An index is read once per open (and again when a listing shows it is new): refused
unless its size equals what its count implies, then checked by the kernel's ``Index``
(header, exact size) and kept in memory, with the pack's header and trailer checked
against it — what a local store checks when it maps a pack, with the same errors. A
packed object is one ranged GET of its entry, whose extent is known without reading the
pack: entries are contiguous, so an entry ends where the next offset of the index begins
(the last one at the trailer). Its header is checked as the format readers check it
(``frame``); one whose stored length disagrees with that extent (a damaged pack, or one
canonkit did not write) is read again by its stored length, as the local readers read
it, so that a damaged pack gives the same answers on both kinds of store.
"""
from __future__ import annotations

import bisect
import threading
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
    FORM_DEFLATE,
    FORM_RAW,
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
SMALL_PACK = 64 << 10    # bytes: a pack this small is read whole to check its ends


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


def _corrupt(bp: BucketPack, code: str, offset: int, detail: str,
             address: str | None) -> CorruptObjectError:
    return CorruptObjectError(f"{bp.pack_rel}: {code}: {detail}", offset=offset, detail=code,
                              path=bp.pack_rel, address=address)


def frame(bp: BucketPack, offset: int, head: Any, address: str | None
          ) -> tuple[int, int, int]:
    """``(form, stored, logical)`` of the entry at ``offset`` from its first bytes
    ``head``: the checks of the format readers' ``Pack.frame``, in their order and with
    their errors, against the pack's size as listed."""
    end = bp.pack.size - TRAILER
    if offset < PACK_HEADER or offset >= end:
        raise _corrupt(bp, "bad_offset", offset, "entry offset outside the pack's entries",
                       address)
    if offset + ENTRY_HEADER > end:
        raise _corrupt(bp, "truncated", offset, "entry header runs into the trailer", address)
    form = head[0]
    stored = int.from_bytes(head[1:9], "big")
    logical = int.from_bytes(head[9:17], "big")
    if form not in (FORM_RAW, FORM_DEFLATE):
        raise _corrupt(bp, "bad_form", offset, f"unknown form byte {form:#04x}", address)
    if stored > end - offset - ENTRY_HEADER:
        raise _corrupt(bp, "truncated", offset + 1,
                       f"stored length {stored} runs past the pack's entries", address)
    if form == FORM_RAW and stored != logical:
        raise _corrupt(bp, "length_mismatch", offset + 9,
                       f"raw entry stores {stored} bytes but says {logical}", address)
    return form, stored, logical


def decode_entry(kernel: ModuleType, bp: BucketPack, offset: int, form: int, logical: int,
                 payload: Any, want: bytes | None, address: str | None) -> bytes:
    """The logical bytes of the entry at ``offset`` (framed by ``frame``) from its stored
    bytes, through the kernel's strict loose reader: an entry is a loose file with the
    stored length in place of the magic. Offsets in errors are the pack's."""
    content = LOOSE_MAGIC + bytes((form,)) + logical.to_bytes(8, "big") + payload
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
        self._lock = threading.Lock()  # one refresh at a time

    def forget(self) -> None:
        """Drop every cached index; the next use lists the packs again."""
        with self._lock:
            self.packs, self.listed = {}, False

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
        anything changed. The known packs are replaced, never changed in place, so that
        other threads reading (gc's marking) see the old set or the new one."""
        with self._lock:
            listed = {self.bucket.rel(i)[len(PACKS) + 1:]: i
                      for i in self.bucket.list(PACKS + "/")}
            published: dict[str, tuple[ObjectInfo, ObjectInfo]] = {}
            for name, info in listed.items():
                parsed = parse_pack_name(name)
                if (parsed is not None and parsed[1] == "idx"
                        and f"pack-{parsed[0]}.pack" in listed):
                    published[parsed[0]] = (listed[f"pack-{parsed[0]}.pack"], info)
            changed = not self.listed or set(published) != set(self.packs)
            packs: dict[str, BucketPack] = {}
            broken: dict[str, CorruptObjectError] = {}
            for hex_name, (pack, idx) in sorted(published.items()):
                known = self.packs.get(hex_name)
                if (known is not None and known.pack.etag == pack.etag
                        and known.idx.etag == idx.etag):
                    packs[hex_name] = known
                    continue
                try:
                    packs[hex_name] = self.open(hex_name, pack, idx)
                except CorruptObjectError as exc:
                    broken[hex_name] = exc
                except (ObjectNotFoundError, FileChangedError):  # removed or replaced
                    changed = True  # since listed: the next listing tells
            self.packs, self.broken, self.listed = packs, broken, True
            return changed

    def open(self, hex_name: str, pack: ObjectInfo, idx: ObjectInfo) -> BucketPack:
        """Read and check one index, and the pack's header and trailer: what a local open
        checks (``PackFile.open``), with the same errors; ``CorruptObjectError`` when the
        pack is not usable. The index is read whole only once its size is the one its
        count implies."""
        pack_rel, idx_rel = pack_paths(bytes.fromhex(hex_name))
        index = self._index(idx, idx_rel)
        if pack.size <= SMALL_PACK:  # header and trailer in one request
            data = self.bucket.read_range(pack, 0, pack.size)
            ends = data if len(data) < PACK_HEADER + TRAILER else (
                data[:PACK_HEADER] + data[-TRAILER:])
        else:
            ends = (self.bucket.read_range(pack, 0, PACK_HEADER)
                    + self.bucket.read_range(pack, pack.size - TRAILER, pack.size))
        try:
            header = self.kernel.Pack(ends)  # the header's checks, and the trailer
        except CorruptObjectError as exc:
            raise located(exc, pack_rel) from None
        try:
            trailer, count = header.trailer, header.count
        finally:
            header.release()
        if index.pack_trailer != trailer:
            raise CorruptObjectError(
                f"{idx_rel}: index_pack_mismatch: the index names pack trailer "
                f"{index.pack_trailer.hex()}, the pack's is {trailer.hex()}",
                offset=idx.size - 2 * TRAILER, detail="index_pack_mismatch", path=idx_rel)
        if index.count != count:
            raise CorruptObjectError(
                f"{idx_rel}: index_count: the index lists {index.count} entries, the pack "
                f"header says {count}", offset=8, detail="index_count", path=idx_rel)
        starts = array("Q", sorted(index.entries()[1]))
        return BucketPack(hex_name, pack, idx, index, starts)

    def _index(self, idx: ObjectInfo, rel: str) -> Any:
        """The kernel's reader of the index ``idx``, read whole only when its size is
        what its count implies (else the error the reader would give for that size)."""
        if idx.size >= index_size(0):
            head = self.bucket.read_range(idx, 0, INDEX_HEADER)
            try:  # magic and version, checked by the reader itself
                self.kernel.Index(head[:8] + bytes(index_size(0) - 8)).release()
            except CorruptObjectError as exc:
                raise located(exc, rel) from None
            count = int.from_bytes(head[8:16], "big")
            expected = index_size(count)
            if expected != idx.size:
                raise CorruptObjectError(
                    f"{rel}: {'truncated' if idx.size < expected else 'trailing_bytes'}: "
                    f"index of {count} entries must be {expected} bytes, is {idx.size}",
                    offset=min(idx.size, expected),
                    detail="truncated" if idx.size < expected else "trailing_bytes", path=rel)
        data = self.bucket.read_range(idx, 0, idx.size)
        try:
            return self.kernel.Index(data)
        except CorruptObjectError as exc:
            raise located(exc, rel) from None

    def locate(self, digest: bytes) -> Iterator[tuple[BucketPack, int]]:
        """Every (pack, offset) whose index lists ``digest``."""
        for bp in self:
            offset = bp.index.lookup(digest)
            if offset >= 0:
                yield bp, offset

    def read(self, bp: BucketPack, offset: int, want: bytes | None,
             address: str | None) -> bytes:
        """One packed object: one ranged GET of its entry (its extent by the index), or
        two when its header disagrees with that extent (a pack canonkit did not write, or
        a damaged one: the stored length read is then what the local readers follow)."""
        end = bp.pack.size - TRAILER
        stop = min(max(bp.extent(offset), offset + ENTRY_HEADER), end)
        raw = memoryview(self.bucket.read_range(bp.pack, offset, stop)
                         if PACK_HEADER <= offset < stop else b"")
        form, stored, logical = frame(bp, offset, raw, address)
        payload = raw[ENTRY_HEADER:]
        if len(payload) != stored:
            start = offset + ENTRY_HEADER
            payload = memoryview(self.bucket.read_range(bp.pack, start, start + stored))
        return decode_entry(self.kernel, bp, offset, form, logical, payload, want, address)

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
                raw = block[offset - first:end - first]
                try:
                    form, stored, logical = frame(bp, offset, raw, None)
                    if len(raw) == ENTRY_HEADER + stored:  # else: the slow path reads it
                        out[i] = decode_entry(self.kernel, bp, offset, form, logical,
                                              raw[ENTRY_HEADER:], digest, None)
                except CorruptObjectError:
                    pass  # left to the slow path, which names it
            start = stop
