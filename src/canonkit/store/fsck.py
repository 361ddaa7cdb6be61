"""fsck: read everything, trust nothing (STORE.md §4).

1. The parent plans: it checks the top level (unexpected files, the lock, tmp/ leftovers,
   unpublished packs), and for every published pack the cheap structure — headers, the
   index's fan-out, order and checksum, the framing walk, the index offsets against the
   framing — then cuts the work into units (``fsck_units``): each pack's trailer, its
   entries in byte ranges of at most ``RANGE_BYTES``, and each loose fan-out directory.
2. ``canonkit.engines`` runs the units (in this process, a local process pool or Dask),
   as it runs ``canonkit reverify``'s; the results come back in unit order, so the report
   never depends on the engine or on ``jobs``.
3. The parent checks the refs, then computes reachability once, over the references the
   units returned: missing objects reachable from a ref (with the path from the root),
   unreachable objects, duplicates.
"""
from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..errors import CorruptObjectError, InvalidRefNameError, StoreError, UnsafePathError
from .findings import Finding, FsckReport, finding
from .fsck_units import UnitResult, run_unit
from .inventory import leftovers, packs_on_disk
from .layout import (
    LOCK,
    MARKER,
    OBJECTS,
    PACKS,
    REFS,
    TMP,
    address_of,
    check_ref_name,
    loose_path,
    pack_paths,
    parse_pack_name,
)
from .lock import read_lock
from .mark import root_path
from .loose import read_file
from .packs import map_file
from .progress import bar
from .refs import parse_ref

if TYPE_CHECKING:
    from .store import Store

__all__ = ["RANGE_BYTES", "RANGE_ENTRIES", "fsck", "plan"]

RANGE_BYTES = 64 << 20   # a big pack's entries are checked in ranges of this many bytes
RANGE_ENTRIES = 16384    # ... or of this many entries, whichever comes first
_TOP = {MARKER, OBJECTS, PACKS, REFS, TMP, LOCK}

Unit = tuple[Any, ...]


def _backend_name(store: Store) -> str:
    return "compiled" if store.kernel.__name__ == "canonkit._store" else "python"


def _scan_dir(root: str, rel: str) -> list[os.DirEntry[str]]:
    try:
        return sorted(os.scandir(f"{root}/{rel}"), key=lambda e: e.name)
    except FileNotFoundError:
        return []


def _top_level(root: str, out: list[Finding]) -> None:
    for entry in _scan_dir(root, "."):
        if entry.name not in _TOP:
            out.append(finding(entry.name, None, "unexpected_file", None,
                               "not part of the store layout"))
    try:
        info = read_lock(root)
    except UnsafePathError as exc:
        out.append(finding(LOCK, None, "symlink", None, str(exc)))
        info = None
    if info is not None:
        out.append(finding(LOCK, None, "stale_lock" if info.stale else "lock_held", None,
                           info.describe()))
    now = time.time()
    for item in leftovers(root):
        out.append(finding(item.rel, None,
                           "unpublished_pack" if item.what == "unpublished pack"
                           else "tmp_leftover", None,
                           f"{now - item.mtime:.0f} s old"))
    for entry in _scan_dir(root, OBJECTS):
        rel = f"{OBJECTS}/{entry.name}"
        if entry.is_symlink():
            out.append(finding(rel, None, "symlink", None, "never followed"))
        elif not (entry.is_dir(follow_symlinks=False) and len(entry.name) == 2
                  and all(c in "0123456789abcdef" for c in entry.name)):
            out.append(finding(rel, None, "unexpected_file", None,
                               "not a fan-out directory (two lowercase hex digits)"))


def _pack_plan(root: str, hex_name: str, kernel: Any, backend: str,
               out: list[Finding], units: list[Unit]) -> int:
    """Check one published pack's structure and add its units; returns its entry count."""
    pack_rel, idx_rel = pack_paths(bytes.fromhex(hex_name))
    maps: list[Any] = []
    index = pack = None
    try:
        index = _reader(root, idx_rel, kernel.Index, maps, out)
        pack = _reader(root, pack_rel, kernel.Pack, maps, out)
        if pack is not None:
            units.append(("trailer", root, pack_rel, backend))
            if pack.trailer.hex() != hex_name:
                out.append(finding(pack_rel, None, "pack_name", None,
                                   f"named {hex_name}, its trailer is {pack.trailer.hex()}"))
        if index is not None:
            for code, offset, detail in index.check():
                out.append(finding(idx_rel, offset, code, None, detail))
        if pack is None or index is None:
            return 0
        framing, problem = pack.scan()
        if problem is not None:
            out.append(finding(pack_rel, problem[1], problem[0], None, problem[2]))
        walked = framing[-1] if problem is not None and framing else pack.end
        if index.count != pack.count:
            out.append(finding(idx_rel, 8, "index_count", None,
                               f"the index lists {index.count} entries, the pack header "
                               f"says {pack.count}"))
        if index.pack_trailer != pack.trailer:
            out.append(finding(idx_rel, len(maps[0]) - 64, "index_pack_mismatch", None,
                               f"the index names pack trailer {index.pack_trailer.hex()}, "
                               f"the pack's is {pack.trailer.hex()}"))
        starts = set(framing)
        listed: dict[int, int] = {}
        todo: list[tuple[int, bytes]] = []
        offsets_at = 16 + 2048 + 32 * index.count
        for i, (digest, offset) in enumerate(zip(*index.entries())):
            where = offsets_at + 8 * i
            if offset in listed:
                out.append(finding(idx_rel, where, "index_duplicate_offset",
                                   address_of(digest),
                                   f"offset {offset} is also listed for entry {listed[offset]}"))
                continue
            listed[offset] = i
            if offset in starts or (problem is not None and walked <= offset < pack.end):
                todo.append((offset, digest))  # past a framing break: checked on its own
            else:
                out.append(finding(idx_rel, where, "bad_offset", address_of(digest),
                                   f"offset {offset} is not the start of an entry of "
                                   f"{pack_rel}"))
        for offset in framing:
            if offset not in listed:
                out.append(finding(pack_rel, offset, "index_unlisted_entry", None,
                                   "no index digest points at this entry"))
        todo.sort()
        _cut(root, pack_rel, todo, backend, units)
        return len(todo)
    finally:
        for reader in (index, pack):
            if reader is not None:
                reader.release()
        for m in maps:
            if hasattr(m, "close"):
                m.close()


def _reader(root: str, rel: str, reader: Any, maps: list[Any], out: list[Finding]) -> Any:
    """The kernel's reader (Index or Pack) over the mapped file, or None once its header
    problem is a finding."""
    mapped, _ = map_file(f"{root}/{rel}", rel)
    maps.append(mapped)
    try:
        return reader(mapped)
    except CorruptObjectError as exc:
        out.append(finding(rel, exc.offset, str(exc.detail), None, str(exc)))
        return None


def _cut(root: str, pack_rel: str, todo: list[tuple[int, bytes]], backend: str,
         units: list[Unit]) -> None:
    """Entries (sorted by offset) into units of byte ranges."""
    start = 0
    while start < len(todo):
        stop = start + 1
        first = todo[start][0]
        while (stop < len(todo) and stop - start < RANGE_ENTRIES
               and todo[stop][0] - first < RANGE_BYTES):
            stop += 1
        chunk = todo[start:stop]
        units.append(("entries", root, pack_rel, [o for o, _ in chunk],
                      b"".join(d for _, d in chunk), backend))
        start = stop


def plan(store: Store, out: list[Finding]) -> tuple[list[Unit], int, int]:
    """``(units, packs, pack entries)``; structure findings go to ``out``."""
    root = store.root
    backend = _backend_name(store)
    units: list[Unit] = []
    packs, idxs = packs_on_disk(root)
    for entry in _scan_dir(root, PACKS):
        rel = f"{PACKS}/{entry.name}"
        if entry.is_symlink():
            out.append(finding(rel, None, "symlink", None, "never followed"))
        elif parse_pack_name(entry.name) is None or not entry.is_file(follow_symlinks=False):
            out.append(finding(rel, None, "unexpected_file", None,
                               "not pack-<64 hex>.pack or .idx"))
    entries = 0
    published = sorted(idxs)
    for hex_name in published:
        if hex_name not in packs:
            _, idx_rel = pack_paths(bytes.fromhex(hex_name))
            out.append(finding(idx_rel, None, "pack_missing", None,
                               "the index is published but its .pack file is missing"))
            continue
        entries += _pack_plan(root, hex_name, store.kernel, backend, out, units)
    for entry in _scan_dir(root, OBJECTS):
        if entry.is_dir(follow_symlinks=False) and not entry.is_symlink() and len(
                entry.name) == 2 and all(c in "0123456789abcdef" for c in entry.name):
            units.append(("loose", root, entry.name, backend))
    return units, sum(1 for h in published if h in packs), entries


def _refs(root: str, out: list[Finding]) -> list[tuple[str, str, bytes]]:
    """``(name, rel, digest)`` of every readable ref; problems go to ``out``."""
    found: list[tuple[str, str, bytes]] = []

    def walk(rel: str, prefix: str) -> None:
        for entry in _scan_dir(root, rel):
            child = f"{rel}/{entry.name}"
            name = prefix + entry.name
            if entry.is_symlink():
                out.append(finding(child, None, "symlink", None, "never followed"))
            elif entry.is_dir(follow_symlinks=False):
                walk(child, name + "/")
            elif not entry.is_file(follow_symlinks=False):
                out.append(finding(child, None, "unexpected_file", None, "not a regular file"))
            else:
                try:
                    check_ref_name(name)
                except InvalidRefNameError as exc:
                    out.append(finding(child, None, "ref_bad_name", None, str(exc)))
                    continue
                try:
                    data = read_file(entry.path, child)
                    if data is None:
                        continue
                    address = parse_ref(data, child)
                except (OSError, UnsafePathError) as exc:
                    out.append(finding(child, None, "unreadable", None, str(exc)))
                    continue
                except ValueError as exc:
                    out.append(finding(child, None, "ref_bad_content", None, str(exc)))
                    continue
                found.append((name, child, bytes.fromhex(address[7:])))

    walk(REFS, "")
    return found


def _execute(units: list[Unit], root: str, jobs: int, engine: str, scheduler: str | None
             ) -> Iterator[tuple[Unit, UnitResult]]:
    """The units' results, in unit order, on the shared engine layer (``canonkit.engines``,
    the one ``canonkit reverify`` runs on). A unit whose worker died twice becomes an
    ``unreadable`` finding for its file, never a silent gap."""
    from .. import engines

    with engines.open_engine(engine, jobs=jobs, scheduler=scheduler) as runner:
        if isinstance(runner, engines.DaskEngine) and not runner.shares_files:
            seen = runner.run_on_workers(os.path.isdir, root)
            if not seen or not all(seen.values()):
                raise StoreError(f"the Dask workers cannot read the store at {root}: fsck "
                                 f"needs a scheduler whose workers share this filesystem",
                                 path=root)
        for unit, result in runner.map(run_unit, units):
            if isinstance(result, engines.Lost):
                lost = UnitResult()
                lost.findings.append(finding(_unit_path(unit), None, "unreadable", None,
                                             f"not checked: {result.reason}"))
                yield unit, lost
            else:
                yield unit, result


def _unit_path(unit: Unit) -> str:
    if unit[0] == "loose":
        return f"{OBJECTS}/{unit[2]}"
    return str(unit[2])


def fsck(store: Store, *, jobs: int = 1, engine: str = "local", scheduler: str | None = None,
         progress: bool | None = False) -> FsckReport:
    from ..engines import ENGINES

    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r} (expected one of {', '.join(ENGINES)})")
    if jobs < 1:
        raise ValueError("jobs must be at least 1")
    if scheduler is not None and engine != "dask":
        raise ValueError("a scheduler address needs the dask engine")
    started = time.perf_counter()
    root = store.root
    findings: list[Finding] = []
    _top_level(root, findings)
    units, n_packs, n_entries = plan(store, findings)
    report = FsckReport(packs=n_packs, pack_entries=n_entries, engine=engine, jobs=jobs)
    where = _Places()
    corrupt: set[bytes] = set()
    edges: dict[bytes, list[bytes]] = {}
    unfollowed: dict[bytes, tuple[str, str]] = {}
    progress_bar = bar(progress, len(units), "fsck", "unit")
    try:
        for _, result in _execute(units, root, jobs, engine, scheduler):
            findings.extend(result.findings)
            where.add(result.verified, result.rel)
            report.loose_files += result.files
            corrupt.update(result.corrupt)
            edges.update(result.edges)
            for digest, why in result.unfollowed:
                unfollowed.setdefault(digest, (result.rel or loose_path(digest), why))
            report.logical_bytes += result.logical_bytes
            progress_bar.update(1)
    finally:
        progress_bar.close()
    refs = _refs(root, findings)
    report.refs = len(refs)
    _reachability(refs, where, corrupt, edges, unfollowed, findings, report)
    report.objects = len(where)
    report.findings = sorted(set(findings), key=Finding.sort_key)
    report.seconds = time.perf_counter() - started
    return report


class _Places:
    """Where each intact object was found: its first place (None: its own loose path) and
    any further ones (duplicates)."""

    def __init__(self) -> None:
        self.first: dict[bytes, str | None] = {}
        self.more: dict[bytes, list[str]] = {}

    def add(self, digests: bytes | bytearray, rel: str | None) -> None:
        first = self.first
        for i in range(0, len(digests), 32):
            digest = bytes(digests[i:i + 32])
            if digest in first:
                self.more.setdefault(digest, []).append(rel or loose_path(digest))
            else:
                first[digest] = rel

    def __contains__(self, digest: object) -> bool:
        return digest in self.first

    def __len__(self) -> int:
        return len(self.first)

    def all(self, digest: bytes) -> list[str]:
        """Every place, sorted (so the first is the same however the work was split)."""
        here = [self.first[digest] or loose_path(digest)]
        return sorted(here + self.more[digest]) if digest in self.more else here


def _reachability(refs: list[tuple[str, str, bytes]], where: _Places,
                  corrupt: set[bytes], edges: dict[bytes, list[bytes]],
                  unfollowed: dict[bytes, tuple[str, str]], out: list[Finding],
                  report: FsckReport) -> None:
    parent: dict[bytes, bytes | str] = {}
    queue: deque[bytes] = deque()
    for name, rel, digest in refs:
        if digest not in where and digest not in corrupt:
            out.append(finding(rel, None, "ref_target_missing", address_of(digest),
                               f"ref {name} points at an object that is not stored"))
        if digest not in parent:
            parent[digest] = f"ref {name}"
            queue.append(digest)
    missing: set[bytes] = set()
    while queue:
        digest = queue.popleft()
        for child in edges.get(digest, ()):
            if child in parent:
                continue
            parent[child] = digest
            if child in where:
                queue.append(child)
            elif child not in corrupt:
                missing.add(child)
                path = root_path(parent, child)
                out.append(finding(where.all(digest)[0], None, "missing_object",
                                   address_of(child),
                                   f"referenced by a reachable object; path from the root: "
                                   f"{' -> '.join(path)}"))
    reachable = {d for d in parent if d in where}
    report.reachable = len(reachable)
    for digest in where.first:
        if digest in reachable and digest not in where.more:
            continue
        rels = where.all(digest)
        if len(rels) > 1:
            out.append(finding(rels[0], None, "duplicate_object", address_of(digest),
                               f"also stored at {', '.join(rels[1:])}"))
        if digest not in reachable:
            out.append(finding(rels[0], None, "unreachable", address_of(digest),
                               "no ref reaches it"))
            for child in edges.get(digest, ()):
                if child not in where and child not in corrupt:
                    out.append(finding(rels[0], None, "dangling_reference", address_of(child),
                                       f"the unreachable object {address_of(digest)} "
                                       f"references it"))
    for digest, (rel, why) in unfollowed.items():
        out.append(finding(rel, None, "unfollowed", address_of(digest), why))
