"""Where repack and gc of a store in object storage do their steps (``sites.Site``,
STORE.md §7): the decisions are ``repack.py``'s and ``gc.py``'s, the same as on a
directory; here each step is a request.

- **The lock** is the lease (``bucket_lease``); every destructive request (a DELETE) is
  preceded by ``Lease.check()``, so a holder that lost its lease stops before it deletes.
- **A new pack** is written by the local ``PackWriter`` into a scratch directory (the
  system's temporary directory, ``TMPDIR``), then published: a PUT of the ``.pack``
  streamed from the file (multipart when large), then a PUT of the ``.idx`` with
  ``If-None-Match: *``. An index already there (our own first attempt, whose answer was
  lost, or the same pack published before) is read back: the same bytes are the
  publication; other bytes under that name are a damaged index, replaced (``If-Match``).
  The scratch files are no mutation of the store (``mutations.scratch``): the crash knob
  counts requests only.
- **Old packs whose entries are copied** (repack's merge, gc's rewrite) are downloaded
  into the scratch directory and read there by the local readers (``PackFile``), each
  entry verified as it is copied; a pack that cannot be opened is left alone.
- **Loose objects** are read a few ahead of their use (``bucket_io.read_ahead``), pinned to
  the ETag their listing saw; gc's marking reads its objects a batch at a time,
  concurrently.
- **Ages** are ``LastModified``; gc HEADs an object (or a pack) right before it deletes it,
  so a concurrent ``put`` that refreshed its age keeps it. repack deletes the loose
  objects it packed in batches (S3's DeleteObjects: 1000 per request), the lease checked
  before each.
"""
from __future__ import annotations

import contextlib
import os
import tempfile
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import CorruptObjectError, MissingObjectError, PreconditionFailedError
from . import mutations as fs
from . import refs
from .bucket_io import DELETE_BATCH, ObjectInfo, modified, read_ahead
from .bucket_lease import Lease
from .bucket_packs import BucketPack
from .inventory import Loose
from .layout import PACKS, TMP, address_of, pack_paths, parse_pack_name
from .mark import Marker
from .packs import PackFile
from .packwriter import PackWriter

if TYPE_CHECKING:
    from .bucket import BucketStore

__all__ = ["BucketSite", "leftovers"]

_READERS = 8  # gc's marking: objects read at once


def leftovers(listed: dict[str, ObjectInfo]) -> list[tuple[str, ObjectInfo, str]]:
    """``(rel, info, what)`` of the leftovers among ``listed`` (store-relative path ->
    object): every object under ``tmp/`` ("tmp") and every ``.pack`` without its
    ``.idx`` ("unpublished pack"), sorted by path."""
    out = []
    for rel, info in listed.items():
        if rel.startswith(TMP + "/"):
            out.append((rel, info, "tmp"))
        elif rel.startswith(PACKS + "/"):
            parsed = parse_pack_name(rel[len(PACKS) + 1:])
            if (parsed is not None and parsed[1] == "pack"
                    and f"{PACKS}/pack-{parsed[0]}.idx" not in listed):
                out.append((rel, info, "unpublished pack"))
    return sorted(out)


class BucketSite:
    """The steps of repack and gc on a ``BucketStore`` (see the module's docstring)."""

    def __init__(self, store: BucketStore) -> None:
        self.store = store
        self.kernel = store.kernel
        self.bucket = store.bucket
        self._lease: Lease | None = None
        self._scratch = ""
        self._infos: dict[str, ObjectInfo] = {}
        self._ahead: Iterator[tuple[str, Future[bytes | None]]] | None = None
        self._opened: list[PackFile] = []
        self._readers: ThreadPoolExecutor | None = None

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        with Lease(self.bucket) as lease, tempfile.TemporaryDirectory(
                prefix="canonkit-store-") as scratch, fs.scratch():
            os.mkdir(f"{scratch}/{TMP}")
            os.mkdir(f"{scratch}/{PACKS}")
            self._lease, self._scratch = lease, scratch
            try:
                yield
            finally:
                self._end_ahead()
                for pf in self._opened:
                    pf.close()
                self._opened = []
                if self._readers is not None:
                    self._readers.shutdown(cancel_futures=True)
                    self._readers = None
                self._lease = None

    def _check(self) -> None:
        assert self._lease is not None, "a destructive step outside locked()"
        self._lease.check()

    # -- what is there -------------------------------------------------------------

    def sweep_leftovers(self, grace_seconds: float) -> int:
        now = time.time()
        listed = {self.bucket.rel(i): i for i in self.bucket.list(PACKS + "/")}
        listed.update((self.bucket.rel(i), i) for i in self.bucket.list(TMP + "/"))
        removed = 0
        for rel, info, _ in leftovers(listed):
            if now - modified(info) < grace_seconds:
                continue
            self._check()
            self.bucket.delete(rel)
            removed += 1
        return removed

    def packs(self) -> list[BucketPack]:
        self.store._packs.refresh()
        return self.store._packs.snapshot()

    def refresh(self) -> None:
        self.store._packs.refresh()

    def loose(self, *, with_stat: bool) -> list[Loose]:
        listed = self.store.loose_objects()
        self._infos = {self.bucket.rel(info): info for _, info in listed}
        return [Loose(digest, self.bucket.rel(info), modified(info), info.size)
                for digest, info in listed]

    # -- reading ---------------------------------------------------------------------

    def prefetch(self, rels: Iterable[str]) -> None:
        self._end_ahead()
        infos = self._infos
        self._ahead = read_ahead(list(rels), self._fetch,
                                 lambda rel: infos[rel].size if rel in infos else 0)

    def _end_ahead(self) -> None:
        if self._ahead is not None:
            self._ahead.close()  # type: ignore[attr-defined]
            self._ahead = None

    def _fetch(self, rel: str) -> bytes | None:
        info = self._infos.get(rel)
        if info is None:
            found = self.bucket.read(rel)
            return None if found is None else found[0]
        return self.bucket.read_listed(info)

    def read_loose(self, rel: str) -> Any:
        if self._ahead is not None:
            for key, future in self._ahead:
                if key == rel:
                    return future.result()
            self._ahead = None
        return self._fetch(rel)

    def readable(self, packs: list[BucketPack]) -> list[tuple[BucketPack, PackFile]]:
        out = []
        for bp in packs:
            for info, rel in ((bp.idx, bp.idx_rel), (bp.pack, bp.pack_rel)):
                path = f"{self._scratch}/{rel}"
                if not os.path.exists(path):
                    self.bucket.download(info, path)
            try:
                pf = PackFile.open(self._scratch, bp.hex, self.kernel)
            except CorruptObjectError:
                continue  # not a pack its objects can be copied from: left as it is
            self._opened.append(pf)
            out.append((bp, pf))
        return out

    def marker(self) -> Marker:
        return Marker(self._read_object, self._read_objects)

    def _read_object(self, digest: bytes) -> bytes | None:
        try:
            data = self.store.get(address_of(digest))
        except MissingObjectError:
            return None
        assert isinstance(data, bytes)
        return data

    def _read_objects(self, digests: list[bytes]) -> list[bytes | None]:
        if self._readers is None:
            self._readers = ThreadPoolExecutor(_READERS, thread_name_prefix="canonkit-mark")
        return list(self._readers.map(self._read_object, digests))

    def ref_scan(self) -> refs.RefScan:
        return self.store.ref_scan()

    # -- writing ---------------------------------------------------------------------

    def writer(self) -> PackWriter:
        return PackWriter(self._scratch, durable=False)

    def publish(self, writer: PackWriter, sources: list[PackFile]) -> str:
        """PUT the pack, then its index with ``If-None-Match: *``; the sources were read
        from downloaded copies, which cannot change under them."""
        pack_rel, idx_rel = pack_paths(writer.trailer)
        try:
            self.bucket.put(pack_rel, Path(writer.pack_tmp))
            self._publish_index(idx_rel, Path(writer.idx_tmp).read_bytes())
        finally:
            writer.abort()  # the scratch copies: uploaded, or of no more use
        return pack_rel

    def _publish_index(self, rel: str, data: bytes) -> None:
        for _ in range(2):
            try:
                self.bucket.put(rel, data, if_none_match=True)
                return
            except PreconditionFailedError:
                pass  # an index is there: ours (its answer lost), the same one, or not
            info = self.bucket.head(rel)
            if info is None:
                continue  # removed again meanwhile: publish it now
            if info.size == len(data) and self.bucket.read_listed(info) == data:
                return
            # a damaged index under this pack's name: the right one replaces it
            self.bucket.put(rel, data, if_match=info.etag)
            return
        raise PreconditionFailedError(f"{self.bucket.shown(rel)}: the index was written "
                                      f"and removed twice while it was published; run "
                                      f"repack again", url=self.bucket.shown(rel))

    # -- ages and deletions ------------------------------------------------------------

    def loose_mtime(self, item: Loose) -> float | None:
        info = self.bucket.head(item.rel)
        return None if info is None else modified(info)

    def pack_mtime(self, pack: BucketPack) -> float | None:
        info = self.bucket.head(pack.pack_rel)
        return None if info is None else modified(info)

    def pack_bytes(self, pack: BucketPack) -> int:
        return pack.pack.size + pack.idx.size

    def delete_loose(self, items: list[Loose]) -> int:
        """In batches (``Bucket.delete_many``), the lease checked before each."""
        rels = [item.rel for item in items]
        for at in range(0, len(rels), DELETE_BATCH):
            self._check()
            self.bucket.delete_many(rels[at:at + DELETE_BATCH])
        return len(rels)

    def remove_packs(self, packs: list[BucketPack]) -> None:
        """Every ``.idx`` first (unpublished), then the ``.pack`` objects."""
        for bp in packs:
            self._check()
            self.bucket.delete(bp.idx_rel)
        for bp in packs:
            self._check()
            self.bucket.delete(bp.pack_rel)
