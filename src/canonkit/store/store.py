"""``Store``: a content-addressed object store on a local filesystem (STORE.md).

Reads look in the published packs first (an mmap'd index lookup in the compiled kernel),
then at the loose file; on a miss the pack list is re-read once, since another process's
repack may have moved the object into a new pack and deleted its loose file meanwhile.
When one physical form of an object is corrupt, the others are tried; ``get`` raises
``CorruptObjectError`` only when no form gives the right bytes, and never returns bytes
whose BLAKE3 differs from the address (unless ``verify=False`` is asked for).
"""
from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from blake3 import blake3

from .. import _backend
from .. import objects as _objects
from .._files import loads_json
from .._files.urls import is_url
from ..errors import (
    CorruptObjectError,
    DecodeError,
    MissingKindError,
    MissingObjectError,
    NotAStoreError,
    SchemaViolationError,
    StoreInitError,
    UnsafePathError,
)
from . import loose, refs
from . import mutations as fs
from .deflate import inflate
from .layout import (
    MARKER,
    MARKER_BYTES,
    MARKER_DOC,
    OBJECTS,
    PACKS,
    REFS,
    TMP,
    address_of,
    check_ref_name,
    digest_of_address,
    loose_path,
)
from .lock import LockInfo, break_lock, read_lock
from .packs import PackFile, located
from .packset import PackSet

if TYPE_CHECKING:
    from . import _format_py as _format
    from .findings import FsckReport
    from .sites import Site
    from .stats import GCStats, RepackStats
else:  # the format readers of STORE.md §2; the twin is the typed surface
    _format = _backend.select("store", compiled="canonkit.store._format",
                              twin="canonkit.store._format_py")

__all__ = ["FORMS", "Store"]

FORMS = ("loose", "deflate")
_DIRS = (OBJECTS, PACKS, REFS, TMP)
MARKER_LIMIT = 4096  # bytes: the marker is one line of JSON


def _intact(pf: PackFile) -> bool:
    try:
        pf.check_intact()
    except CorruptObjectError:
        return False
    return True


def format_kernel() -> ModuleType:
    """The live format readers (compiled, or the twin when it is selected)."""
    return _format


def not_found(address: str, problem: CorruptObjectError | None,
              broken: dict[str, CorruptObjectError]) -> CorruptObjectError | MissingObjectError:
    """Why ``get`` found no good form of ``address``: the first corruption met, else the
    packs that cannot be read (any may hold it), else that it is not stored."""
    if problem is not None:
        return problem
    if broken:
        _, first = sorted(broken.items())[0]
        return CorruptObjectError(
            f"{address} is in no readable form, and {len(broken)} pack(s) cannot be read "
            f"(first: {first})", offset=first.offset, detail=first.detail, path=first.path,
            address=address)
    return MissingObjectError(f"{address} is not in the store", address=address)


def check_marker(data: bytes | None, where: str) -> None:
    """``NotAStoreError`` naming ``where`` unless ``data`` (None: absent) is the marker of
    a version-1 canonkit store (strict JSON, the integer version)."""
    if data is None:
        raise NotAStoreError(f"{where} is not a canonkit store (no {MARKER} file)", path=where)
    if len(data) > MARKER_LIMIT:
        raise NotAStoreError(f"{where}/{MARKER} is larger than {MARKER_LIMIT} bytes: "
                             f"not a canonkit store marker", path=where)
    try:
        doc = loads_json(data, source=f"{where}/{MARKER}")
    except ValueError:  # not strict UTF-8 JSON, or a repeated key
        doc = None
    if (not isinstance(doc, dict) or doc.get("format") != MARKER_DOC["format"]
            or doc.get("address") != MARKER_DOC["address"]):
        raise NotAStoreError(f"{where}/{MARKER} does not describe a canonkit store",
                             path=where)
    version = doc.get("version")
    if type(version) is not int or version != MARKER_DOC["version"]:  # not True, 1.0
        raise NotAStoreError(f"{where} is a canonkit store of version {version!r}; this "
                             f"canonkit reads version 1 (the integer)", path=where)


def _names_url(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a URL: a store in object storage (STORE.md §7), or a scheme
    refused there, but never a local directory (``s3://b/st`` is never ``./s3:/b/st``)."""
    name = os.fspath(path)
    return isinstance(name, str) and is_url(name)


class Store:
    """A version-1 canonkit store at ``path``: a local directory, or a prefix of object
    storage (``s3://bucket/prefix``, ``gs://``, ``az://``: a ``BucketStore``, STORE.md §7).

    ``durable=False`` skips every fsync (files and directories): for bulk imports and
    benchmarks, where a power loss may lose recent writes (a crash of the process alone
    still loses nothing). ``backend`` selects the format readers (a ``canonkit.store._format``
    or ``canonkit.store._format_py`` module; default: the live one).
    """

    ABSENT = refs.ABSENT  # as set_ref(expect=...): the ref must not exist yet

    def __new__(cls, path: str | os.PathLike[str], *args: Any, **kwargs: Any) -> Store:
        if cls is Store and _names_url(path):  # a URL: the object-storage profile
            from .bucket import BucketStore

            return super().__new__(BucketStore)
        return super().__new__(cls)

    def __init__(self, path: str | os.PathLike[str], *, durable: bool = True,
                 backend: ModuleType | None = None) -> None:
        self.path = Path(path)
        self.root = os.path.abspath(os.fspath(path))
        self.durable = durable
        self.kernel: ModuleType = _format if backend is None else backend
        self._check_layout()
        #: the published packs this store reads: the internal API of repack, gc and fsck
        self.packs = PackSet(self.root, self.kernel)
        self._dirs: set[str] = set()  # fan-out directories checked to be real directories

    # -- opening ---------------------------------------------------------------------

    @classmethod
    def init(cls, path: str | os.PathLike[str], *, durable: bool = True,
             backend: ModuleType | None = None) -> Store:
        """Create a store at ``path`` (a new or empty directory, or an empty prefix of
        object storage) and open it."""
        if _names_url(path):
            from .bucket import BucketStore

            return BucketStore.init(path, durable=durable, backend=backend)
        root = os.path.abspath(os.fspath(path))
        if os.path.lexists(root):
            if not os.path.isdir(root):
                raise StoreInitError(f"{root} exists and is not a directory", path=root)
            if os.path.lexists(os.path.join(root, MARKER)):
                raise StoreInitError(f"{root} is a store already", path=root)
            if os.listdir(root):
                raise StoreInitError(f"{root} is not empty and not a store; refusing to "
                                     f"create a store in it", path=root)
        else:
            os.makedirs(root, 0o755)
        for name in _DIRS:
            fs.mkdir(f"{root}/{name}")
        with fs.write_temporary(f"{root}/{TMP}", "marker", MARKER_BYTES,
                                durable=durable) as tmp:
            fs.rename(tmp.path, f"{root}/{MARKER}")  # last: a half-made store is not one
        if durable:
            fs.fsync_dir(root)
        return cls(root, durable=durable, backend=backend)

    def _check_layout(self) -> None:
        marker = f"{self.root}/{MARKER}"
        try:  # bounded: a marker is one short line, whatever the file's size says
            data = loose.read_file(marker, MARKER, limit=MARKER_LIMIT)
        except (UnsafePathError, OSError) as exc:
            raise NotAStoreError(f"{self.root}: cannot read {MARKER}: {exc}",
                                 path=self.root) from None
        check_marker(data, self.root)
        for name in _DIRS:
            try:
                info = os.lstat(f"{self.root}/{name}")
            except FileNotFoundError:
                raise NotAStoreError(f"{self.root} lacks {name}/", path=self.root) from None
            if not stat.S_ISDIR(info.st_mode):
                raise UnsafePathError(f"{name} is not a directory (a symlink?); the store "
                                      f"never follows one", path=name)

    def close(self) -> None:
        """Unmap every pack. Reads after ``close`` map them again."""
        self.packs.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Store({self.root!r})"

    # -- objects ---------------------------------------------------------------------

    def put(self, data: bytes | bytearray | memoryview, *, form: str = "loose") -> str:
        """Store ``data`` (the addressed bytes) and return its address. ``form`` is
        ``"loose"`` (raw) or ``"deflate"``; an object already stored in any form stays as
        it is (its mtime is refreshed, which protects it from gc for the grace period)."""
        if form not in FORMS:
            raise ValueError(f"form must be one of {FORMS}, got {form!r}")
        view = memoryview(data)
        digest: bytes = blake3(view).digest()
        for pf in self.packs.snapshot():
            if self.packs.offset(pf, digest) >= 0:
                try:
                    fs.utime(pf.path(self.root))
                except FileNotFoundError:  # removed by a repack meanwhile
                    break
                return address_of(digest)
        rel = loose_path(digest)
        content = loose.encode(view, form == "deflate")
        loose.write(self.root, rel, content, durable=self.durable, known_dirs=self._dirs)
        return address_of(digest)

    def put_object(self, kind: str, fields: Any, *, version: int = 1,
                   form: str = "loose") -> str:
        """``put(objects.encode_object(kind, fields, version=version), form=form)``."""
        return self.put(_objects.encode_object(kind, fields, version=version), form=form)

    def get(self, address: str, *, verify: bool = True, copy: bool = True
            ) -> bytes | memoryview:
        """The object's logical bytes. ``MissingObjectError`` if no form is stored;
        ``CorruptObjectError`` (naming the file and offset) if no stored form decodes to
        bytes with this address. ``copy=False`` returns a raw packed object as a read-only
        memoryview into the pack's mapping (other forms are always ``bytes``)."""
        digest: bytes = self.kernel.parse_address(address)
        for pf in self.packs.guarded():  # the common case in one kernel call per pack
            try:
                found = pf.pack.find(pf.index, digest, verify, inflate, copy)
            except (CorruptObjectError, ValueError):  # damaged, or closed meanwhile:
                break  # the full path below finds the other forms, or says what is wrong
            if found is not None:
                return found  # type: ignore[no-any-return]
        want = digest if verify else None
        found, problem = self._read_packed(digest, address, want, copy, None)
        if found is not None:
            return found
        return self._get_slow(digest, address, want, copy, problem)

    def _read_packed(self, digest: bytes, address: str, want: bytes | None, copy: bool,
                     problem: CorruptObjectError | None
                     ) -> tuple[bytes | memoryview | None, CorruptObjectError | None]:
        """The object from the first pack that holds an intact copy (or None), and the
        first corruption met on the way."""
        for pf in self.packs.snapshot():
            offset = self.packs.offset(pf, digest)
            if offset >= 0:
                try:
                    if not pf.guarded:
                        pf.check_intact(index=False)
                    return pf.pack.entry(offset, want, inflate, copy), problem
                except CorruptObjectError as exc:
                    problem = problem or located(exc, pf.pack_rel, address)
        return None, problem

    def _get_slow(self, digest: bytes, address: str, want: bytes | None, copy: bool,
                  problem: CorruptObjectError | None) -> bytes | memoryview:
        for attempt in range(2):
            try:
                data = self._read_loose(digest, address, want)
            except CorruptObjectError as exc:
                problem = problem or exc
            else:
                if data is not None:
                    return data
            if attempt or not self.packs.refresh():
                break
            found, problem = self._read_packed(digest, address, want, copy, problem)
            if found is not None:  # a repack moved it into a new pack
                return found
        raise not_found(address, problem, self.packs.broken)

    def _fanout_ok(self, fanout: str) -> bool:
        """True if the fan-out directory exists as a real directory (checked once)."""
        if fanout in self._dirs:
            return True
        try:
            info = os.lstat(f"{self.root}/{fanout}")
        except FileNotFoundError:
            return False
        if not stat.S_ISDIR(info.st_mode):
            raise UnsafePathError(f"{fanout} is not a directory (a symlink?); the store "
                                  f"never follows one", path=fanout)
        self._dirs.add(fanout)
        return True

    def _read_loose(self, digest: bytes, address: str, want: bytes | None) -> bytes | None:
        rel = loose_path(digest)
        if not self._fanout_ok(rel[:len(OBJECTS) + 3]):
            return None
        content = loose.read_file(f"{self.root}/{rel}", rel)
        if content is None:
            return None
        try:
            out: bytes = self.kernel.read_loose(content, want, inflate)
        except CorruptObjectError as exc:
            raise located(exc, rel, address) from None
        return out

    def get_many(self, addresses: Sequence[str], *, verify: bool = True, copy: bool = True
                 ) -> list[Any]:
        """``[get(a, verify=verify, copy=copy) for a in addresses]`` in one call: packed
        objects are resolved by the kernel in one batch per pack (with the compiled one:
        sorted lookups, the pack read front to back, no Python-level search per
        address); the rest are read one by one.
        ``MissingObjectError`` names the first address not stored."""
        digests: bytes = self.kernel.parse_addresses(addresses)
        out: list[Any] = [None] * len(addresses)
        left = len(out)
        for attempt in range(2):
            for pf in self.packs.snapshot():
                if not left:
                    break
                if not pf.guarded and not _intact(pf):
                    continue  # read one by one below: the error names what is wrong
                try:
                    left -= pf.pack.read_many(pf.index, digests, out, verify, inflate, copy)
                except CorruptObjectError:  # find which one, and try its other forms
                    left = self._fill_one_by_one(pf, digests, out, verify, copy)
            if not left or attempt or not self.packs.refresh():
                break
        for i, value in enumerate(out):
            if value is None:
                out[i] = self.get(addresses[i], verify=verify, copy=copy)
        return out

    def _fill_one_by_one(self, pf: PackFile, digests: bytes, out: list[Any],
                         verify: bool, copy: bool) -> int:
        """After a batch hit a corrupt entry: fill what this pack holds intact, leaving
        the corrupt ones to ``get`` (which tries the other forms, or raises)."""
        for i in range(len(out)):
            if out[i] is not None:
                continue
            digest = digests[32 * i:32 * i + 32]
            offset = self.packs.offset(pf, digest)
            if offset >= 0:
                try:
                    out[i] = pf.pack.entry(offset, digest if verify else None, inflate,
                                           copy)
                except CorruptObjectError:
                    continue
        return sum(1 for value in out if value is None)

    def get_object(self, address: str, *, kind: str | None = None) -> _objects.Object:
        """The object at ``address``, decoded (``objects.decode_object``). Bytes that are
        not a structured object (not a CBOR map with ``t`` and ``v``) are a ``blob``;
        pass ``kind="chunk"`` to name raw bytes a chunk."""
        data = self.get(address)
        assert isinstance(data, bytes)
        if kind is not None:
            return _objects.decode_object(data, kind=kind)
        try:
            return _objects.decode_object(data)
        except (DecodeError, MissingKindError):  # not a CBOR map with t and v: raw bytes
            return _objects.decode_object(data, kind="blob")

    def has(self, address: str) -> bool:
        """True if some physical form of ``address`` is stored (not verified: see fsck)."""
        digest = digest_of_address(address)
        for attempt in range(2):
            if any(self.packs.offset(pf, digest) >= 0 for pf in self.packs.snapshot()):
                return True
            rel = loose_path(digest)
            if self._fanout_ok(rel[:len(OBJECTS) + 3]) and os.path.lexists(
                    f"{self.root}/{rel}"):
                return True
            if attempt or not self.packs.refresh():
                return False
        return False

    def __contains__(self, address: object) -> bool:
        """``address in store``; False for anything that is not an address."""
        try:
            return isinstance(address, str) and self.has(address)
        except SchemaViolationError:
            return False

    def form(self, address: str) -> str:
        """``"packed"``, ``"loose"`` or ``"deflate"``: the form ``get`` reads first."""
        digest = digest_of_address(address)
        for attempt in range(2):
            if any(self.packs.offset(pf, digest) >= 0 for pf in self.packs.snapshot()):
                return "packed"
            rel = loose_path(digest)
            if self._fanout_ok(rel[:len(OBJECTS) + 3]):
                content = loose.read_file(f"{self.root}/{rel}", rel)
                if content is not None:
                    if len(content) < 5:
                        raise CorruptObjectError(f"{rel}: truncated: no form byte",
                                                 offset=len(content), detail="truncated",
                                                 path=rel, address=address)
                    return {0: "loose", 1: "deflate"}.get(content[4], "unknown")
            if attempt or not self.packs.refresh():
                break
        raise MissingObjectError(f"{address} is not in the store", address=address)

    def addresses(self) -> Iterator[str]:
        """Every stored address exactly once (packed ones first, then loose ones)."""
        from .inventory import loose_objects

        self.packs.refresh()
        seen: set[bytes] = set()
        for pf in self.packs.snapshot():
            if not pf.guarded and not self.packs.usable(pf, pack=False):
                continue
            for digest in pf.index.entries()[0]:
                if digest not in seen:
                    seen.add(digest)
                    yield address_of(digest)
        for item in loose_objects(self.root, with_stat=False):
            if item.digest not in seen:
                seen.add(item.digest)
                yield address_of(item.digest)

    def __iter__(self) -> Iterator[str]:
        return self.addresses()

    # -- refs ------------------------------------------------------------------------

    def set_ref(self, name: str, address: str, *, expect: str | None = None) -> None:
        """Point ``refs/<name>`` at ``address`` atomically. With ``expect`` the update
        happens only if the ref holds ``expect`` now (``Store.ABSENT``: does not exist),
        else ``RefConflictError``. The target must be stored (``MissingObjectError``);
        its mtime is refreshed so that a gc running now keeps it."""
        check_ref_name(name)
        digest = digest_of_address(address)
        self._freshen(digest, address)
        refs.write(self.root, name, address, expect=expect, durable=self.durable)

    def _freshen(self, digest: bytes, address: str) -> None:
        for attempt in range(2):
            for pf in self.packs.snapshot():
                if self.packs.offset(pf, digest) >= 0:
                    try:
                        fs.utime(pf.path(self.root))
                        return
                    except FileNotFoundError:
                        break
            rel = loose_path(digest)
            if self._fanout_ok(rel[:len(OBJECTS) + 3]):
                try:
                    fs.utime(f"{self.root}/{rel}")
                    return
                except FileNotFoundError:
                    pass
            if attempt:
                break
            self.packs.refresh()
        raise MissingObjectError(f"{address} is not in the store; a ref must point at a "
                                 f"stored object", address=address)

    def ref(self, name: str) -> str | None:
        """The address ``refs/<name>`` holds, or None."""
        return refs.read(self.root, name)

    def refs(self) -> dict[str, str]:
        """Every valid ref: ``{name: address}``, sorted by name. Anything else under
        ``refs/`` (a bad name, bad content, a symlink) is left out here; fsck reports it,
        and gc refuses to run until it is fixed."""
        return {name: address for name, _, address in refs.scan(self.root).refs}

    def delete_ref(self, name: str, *, expect: str | None = None) -> bool:
        """Remove ``refs/<name>``; False if it did not exist."""
        return refs.delete(self.root, name, expect=expect, durable=self.durable)

    # -- maintenance -----------------------------------------------------------------

    def _site(self) -> Site:
        """Where repack and gc do their steps (``sites``): this store's directory."""
        from .sites import LocalSite

        return LocalSite(self)

    def repack(self, *, deflate: str = "auto", merge: bool = True,
               grace_seconds: float = 3600.0, progress: bool | None = False) -> RepackStats:
        """Pack every loose object (and, with ``merge``, every packed one) into one new
        pack, publish it, then delete what it supersedes (STORE.md §3). ``deflate``:
        ``"auto"`` (DEFLATE where it saves at least an eighth), ``"always"``, ``"never"``.
        Leftovers older than ``grace_seconds`` are removed. ``progress``: a bar on stderr
        (None: when it is a terminal). Returns ``RepackStats``."""
        from .repack import repack

        return repack(self, deflate=deflate, merge=merge, grace_seconds=grace_seconds,
                      progress=progress)

    def gc(self, *, roots: Iterable[str] = (), grace_seconds: float = 3600.0,
           progress: bool | None = False) -> GCStats:
        """Delete every object unreachable from the refs and ``roots`` and older than
        ``grace_seconds`` (STORE.md §3). ``progress``: a bar on stderr while packs are
        rewritten (None: when stderr is a terminal). Returns ``GCStats``."""
        from .gc import gc

        return gc(self, roots=roots, grace_seconds=grace_seconds, progress=progress)

    def fsck(self, *, jobs: int = 1, engine: str = "local", scheduler: str | None = None,
             progress: bool | None = False) -> FsckReport:
        """Check everything (STORE.md §4) with ``jobs`` workers on the ``engine``
        (``"local"``: this process for one job, else a process pool; ``"dask"``: a
        LocalCluster, or the scheduler at ``scheduler``). Returns an ``FsckReport``."""
        from .fsck import fsck

        return fsck(self, jobs=jobs, engine=engine, scheduler=scheduler, progress=progress)

    def lock_info(self) -> LockInfo | None:
        """Who holds the store lock (None if nobody)."""
        return read_lock(self.root)

    def break_lock(self, *, force: bool = False) -> LockInfo | None:
        """Remove a stale lock (any lock with ``force=True``); returns what was removed.
        A live holder is ``LockHeldError`` unless forced."""
        return break_lock(self.root, force=force)

