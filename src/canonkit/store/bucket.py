"""``Store("s3://bucket/prefix")``: the store of STORE.md under a prefix of object storage
(STORE.md §7, docs/store.md "In object storage").

The layout is §1's, relative to the prefix. Every mutation is one atomic request, so
there is no ``tmp/``: a loose object is one PUT with ``If-None-Match: *`` (an existing
object wins); a ref is a compare-and-swap on its ETag; a pack is published by its
``.idx``, PUT with ``If-None-Match: *`` after the ``.pack``. Reads: a loose object is one
GET; a packed one a ranged GET of its entry (``bucket_packs``); every read is checked
against the ETag its listing saw and every object against its BLAKE3 address, as on a
local store. Ages for the grace period are ``LastModified``. repack and gc are the local
store's decisions (``repack``, ``gc``) on a ``bucket_site.BucketSite``, under the lease;
fsck runs on the engines, each worker reading its own packs and loose objects
(``bucket_fsck``).

``durable`` has no effect here: a request that succeeded is durable.
"""
from __future__ import annotations

import os
import time
from collections.abc import Iterator, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

from blake3 import blake3

from ..errors import (
    CorruptObjectError,
    CorruptRefError,
    FileChangedError,
    FileTooLargeError,
    InvalidRefNameError,
    MissingObjectError,
    ObjectNotFoundError,
    PreconditionFailedError,
    RefConflictError,
    StoreInitError,
)
from . import loose, refs
from .bucket_io import Bucket, ObjectInfo, modified
from .bucket_lease import break_lease, read_lease
from .bucket_packs import BucketPack, BucketPacks
from .deflate import inflate
from .layout import (
    MARKER,
    MARKER_BYTES,
    OBJECTS,
    REFS,
    address_of,
    check_ref_name,
    digest_of_address,
    loose_path,
    parse_loose_name,
)
from .lock import LockInfo
from .packs import located
from .store import FORMS, MARKER_LIMIT, Store, check_marker, format_kernel, not_found

if TYPE_CHECKING:
    from .bucket_site import BucketSite
    from .findings import FsckReport

__all__ = ["FRESHEN_AFTER", "BucketStore"]

#: a put of an object older than this many seconds refreshes its age (half the default
#: grace period: STORE.md §7)
FRESHEN_AFTER = 1800.0


class BucketStore(Store):
    """A version-1 canonkit store under a prefix of object storage (``s3://``, ``gs://``,
    ``az://``). ``Store(URL)`` returns one; the API is :class:`Store`'s."""

    def __init__(self, path: str | os.PathLike[str], *, durable: bool = True,
                 backend: ModuleType | None = None) -> None:
        self.bucket = Bucket(os.fspath(path))
        self.root = self.bucket.url
        self.path = self.root  # type: ignore[assignment]
        self.durable = durable
        self.kernel = format_kernel() if backend is None else backend
        found = self.bucket.read(MARKER, max_bytes=MARKER_LIMIT + 1)
        check_marker(None if found is None else found[0], self.root.rstrip("/"))
        #: the published packs, each index read once (``bucket_packs``)
        self.packs = BucketPacks(self.bucket, self.kernel)  # type: ignore[assignment]

    @classmethod
    def init(cls, path: str | os.PathLike[str], *, durable: bool = True,
             backend: ModuleType | None = None) -> BucketStore:
        """Create a store under the prefix ``path`` (empty) and open it."""
        bucket = Bucket(os.fspath(path))
        there = bucket.list()
        if any(bucket.rel(i) == MARKER for i in there):
            raise StoreInitError(f"{bucket.url} is a store already", path=bucket.url)
        if there:
            raise StoreInitError(f"{bucket.url} is not empty ({len(there)} objects) and not "
                                 f"a store; refusing to create a store in it", path=bucket.url)
        try:
            bucket.put(MARKER, MARKER_BYTES, if_none_match=True)
        except PreconditionFailedError as exc:
            if exc.detail != "retried":  # else our own first attempt made it
                raise StoreInitError(f"{bucket.url} became a store meanwhile",
                                     path=bucket.url) from None
        return cls(bucket.url, durable=durable, backend=backend)

    def close(self) -> None:
        """Forget the cached indexes (they are read again on next use)."""
        self._packs.forget()

    def __repr__(self) -> str:
        return f"Store({self.root!r})"

    @property
    def _packs(self) -> BucketPacks:
        return self.packs  # type: ignore[return-value]

    # -- objects ---------------------------------------------------------------------

    def put(self, data: bytes | bytearray | memoryview, *, form: str = "loose") -> str:
        """Store ``data``; an object already stored in any form stays as it is, its age
        refreshed when it is older than ``FRESHEN_AFTER`` (STORE.md §7)."""
        if form not in FORMS:
            raise ValueError(f"form must be one of {FORMS}, got {form!r}")
        view = memoryview(data)
        digest: bytes = blake3(view).digest()
        packed = next(self._packs.locate(digest), None)
        if packed is not None:
            if time.time() - packed[0].mtime < FRESHEN_AFTER:
                return address_of(digest)
            # an old packed object is freshened by a loose copy (young: kept by gc; packed
            # again by the next repack): a pack is never rewritten to refresh its age
        rel = loose_path(digest)
        content = loose.encode(view, form == "deflate")
        try:
            self.bucket.put(rel, content, if_none_match=True)
        except PreconditionFailedError:  # there already (or our retried first attempt)
            self._freshen_loose(rel, content)
        return address_of(digest)

    def _freshen_loose(self, rel: str, content: bytes) -> None:
        info = self.bucket.head(rel)
        if info is None:  # removed by a gc meanwhile: put it again
            try:
                self.bucket.put(rel, content, if_none_match=True)
            except PreconditionFailedError:
                pass
            return
        if time.time() - modified(info) >= FRESHEN_AFTER:
            # the same logical bytes again (a re-put is its copy onto itself): any form
            # of an object is the object, and readers check the bytes, never the form
            self.bucket.put(rel, content)

    def get(self, address: str, *, verify: bool = True, copy: bool = True
            ) -> bytes | memoryview:
        """The object's logical bytes (always ``bytes`` here: ``copy`` is accepted for
        the API's sake)."""
        digest: bytes = self.kernel.parse_address(address)
        want = digest if verify else None
        problem: CorruptObjectError | None = None
        for attempt in range(2):
            for bp, offset in self._packs.locate(digest):
                try:
                    return self._packs.read(bp, offset, want, address)
                except CorruptObjectError as exc:
                    problem = problem or exc
                except (ObjectNotFoundError, FileChangedError):
                    pass  # removed (or written again) by a repack since listed: look again
            try:
                data = self._read_loose(digest, address, want)
            except CorruptObjectError as exc:
                problem = problem or exc
            else:
                if data is not None:
                    return data
            if attempt or not self._packs.refresh():
                break
        raise not_found(address, problem, self._packs.broken)

    def _read_loose(self, digest: bytes, address: str, want: bytes | None) -> bytes | None:
        rel = loose_path(digest)
        found = self.bucket.read(rel)
        if found is None:
            return None
        try:
            out: bytes = self.kernel.read_loose(found[0], want, inflate)
        except CorruptObjectError as exc:
            raise located(exc, rel, address) from None
        return out

    def get_many(self, addresses: Sequence[str], *, verify: bool = True, copy: bool = True
                 ) -> list[Any]:
        """``[get(a) for a in addresses]``; packed objects of one pack in coalesced
        ranged GETs, the rest one by one."""
        digests: bytes = self.kernel.parse_addresses(addresses)
        out: list[Any] = [None] * len(addresses)
        by_pack: dict[str, list[tuple[int, int, bytes | None]]] = {}
        packs = {bp.hex: bp for bp in self._packs}
        for i in range(len(addresses)):
            digest = digests[32 * i:32 * i + 32]
            for bp in packs.values():
                offset = bp.index.lookup(digest)
                if offset >= 0:
                    by_pack.setdefault(bp.hex, []).append(
                        (offset, i, digest if verify else None))
                    break
        for hex_name, wanted in by_pack.items():
            try:
                self._packs.read_many(packs[hex_name], wanted, out)
            except (ObjectNotFoundError, FileChangedError):
                pass  # removed by a repack since listed: get() below looks again
        for i, value in enumerate(out):
            if value is None:
                out[i] = self.get(addresses[i], verify=verify, copy=copy)
        return out

    def _find(self, digest: bytes) -> BucketPack | ObjectInfo | None:
        """Where an object is stored, not verified: the first pack listing it, else its
        loose object (one HEAD), else None once the packs were listed again."""
        for attempt in range(2):
            packed = next(self._packs.locate(digest), None)
            if packed is not None:
                return packed[0]
            info = self.bucket.head(loose_path(digest))
            if info is not None:
                return info
            if attempt or not self._packs.refresh():
                break
        return None

    def has(self, address: str) -> bool:
        return self._find(digest_of_address(address)) is not None

    def form(self, address: str) -> str:
        digest = digest_of_address(address)
        found = self._find(digest)
        if found is None:
            raise MissingObjectError(f"{address} is not in the store", address=address)
        if isinstance(found, BucketPack):
            return "packed"
        rel = loose_path(digest)
        if found.size < 5:
            raise CorruptObjectError(f"{rel}: truncated: no form byte", offset=found.size,
                                     detail="truncated", path=rel, address=address)
        form = self.bucket.read_range(found, 4, 5)[0]
        return {0: "loose", 1: "deflate"}.get(form, "unknown")

    def loose_objects(self) -> list[tuple[bytes, ObjectInfo]]:
        """Every loose object as listed: ``(digest, info)``, in key order."""
        out = []
        for info in self.bucket.list(OBJECTS + "/"):
            parts = self.bucket.rel(info).split("/")
            if len(parts) == 3:
                digest = parse_loose_name(parts[1], parts[2])
                if digest is not None:
                    out.append((digest, info))
        return out

    def addresses(self) -> Iterator[str]:
        self._packs.refresh()
        seen: set[bytes] = set()
        for bp in self._packs:
            for digest in bp.index.entries()[0]:
                if digest not in seen:
                    seen.add(digest)
                    yield address_of(digest)
        for digest, _ in self.loose_objects():
            if digest not in seen:
                seen.add(digest)
                yield address_of(digest)

    # -- refs ------------------------------------------------------------------------

    def _read_ref(self, name: str) -> tuple[str | None, str | None]:
        """``(address, ETag)`` of ``refs/<name>``; ``(None, None)`` when absent."""
        check_ref_name(name)
        rel = f"{REFS}/{name}"
        try:
            found = self.bucket.read(rel, max_bytes=refs.REF_BYTES)
        except FileTooLargeError:
            raise CorruptRefError(f"{rel} does not hold exactly 'blake3:<64 hex>\\n'",
                                  path=rel, detail="ref_bad_content") from None
        if found is None:
            return None, None
        return refs.parse_ref(found[0], rel), found[1].etag

    def set_ref(self, name: str, address: str, *, expect: str | None = None) -> None:
        """Point ``refs/<name>`` at ``address`` (a PUT; with ``expect`` a compare-and-swap
        on the ETag of the value compared)."""
        check_ref_name(name)
        digest = digest_of_address(address)
        self._freshen(digest, address)
        rel = f"{REFS}/{name}"
        body = (address + "\n").encode("ascii")
        if expect is None:
            self.bucket.put(rel, body)
            return
        current, etag = self._read_ref(name)
        refs.compare(name, current, expect)
        try:
            if etag is None:
                self.bucket.put(rel, body, if_none_match=True)
            else:
                self.bucket.put(rel, body, if_match=etag)
        except PreconditionFailedError as exc:
            if exc.detail == "retried" and self._read_ref(name)[0] == address:
                return  # our first attempt was applied
            raise RefConflictError(f"ref {name!r} changed while it was updated",
                                   path=rel) from None

    def _freshen(self, digest: bytes, address: str) -> None:
        """The target of a ref must be stored; an old one is made young (gc keeps it)."""
        found = self._find(digest)
        if found is None:
            raise MissingObjectError(f"{address} is not in the store; a ref must point at a "
                                     f"stored object", address=address)
        age = time.time() - (found.mtime if isinstance(found, BucketPack) else modified(found))
        if age >= FRESHEN_AFTER:
            self.put(self.get(address))

    def ref(self, name: str) -> str | None:
        return self._read_ref(name)[0]

    def ref_scan(self) -> refs.RefScan:
        """Everything under ``refs/``, read once: the valid refs and every object that is
        not one (``refs.scan``'s answer for a local store; fsck and gc share it)."""
        found: list[tuple[str, str, str]] = []
        problems: list[refs.RefProblem] = []
        for info in self.bucket.list(REFS + "/"):
            rel = self.bucket.rel(info)
            name = rel[len(REFS) + 1:]
            try:
                check_ref_name(name)
                address, _ = self._read_ref(name)
            except InvalidRefNameError as exc:
                problems.append(refs.RefProblem(rel, "ref_bad_name", str(exc)))
            except CorruptRefError as exc:
                problems.append(refs.RefProblem(rel, "ref_bad_content", str(exc)))
            else:
                if address is not None:  # else deleted meanwhile
                    found.append((name, rel, address))
        found.sort()
        return refs.RefScan(found, problems)

    def refs(self) -> dict[str, str]:
        return {name: address for name, _, address in self.ref_scan().refs}

    def delete_ref(self, name: str, *, expect: str | None = None) -> bool:
        current, etag = self._read_ref(name)
        if expect is not None:
            refs.compare(name, current, expect)
        if current is None:
            return False
        rel = f"{REFS}/{name}"
        try:
            self.bucket.delete(rel, if_match=etag)
        except PreconditionFailedError:
            raise RefConflictError(f"ref {name!r} changed while it was deleted",
                                   path=rel) from None
        except FileNotFoundError:
            return False
        return True

    # -- maintenance -----------------------------------------------------------------

    def _site(self) -> BucketSite:
        """Where repack and gc do their steps (``bucket_site``): requests under the lease."""
        from .bucket_site import BucketSite

        return BucketSite(self)

    def fsck(self, *, jobs: int = 1, engine: str = "local", scheduler: str | None = None,
             progress: bool | None = False) -> FsckReport:
        """Check everything (STORE.md §4) as ``Store.fsck`` does, each worker reading its
        own packs and loose objects from object storage (``bucket_fsck``)."""
        from .bucket_fsck import fsck

        return fsck(self, jobs=jobs, engine=engine, scheduler=scheduler, progress=progress)

    def lock_info(self) -> LockInfo | None:
        found = read_lease(self.bucket)
        return None if found is None else found[0]

    def break_lock(self, *, force: bool = False) -> LockInfo | None:
        return break_lease(self.bucket, force=force)


