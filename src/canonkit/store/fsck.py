"""fsck: read everything, trust nothing (STORE.md §4).

1. The parent plans: it checks the top level (unexpected files, the lock, tmp/ leftovers,
   unpublished packs), and for every published pack the cheap structure — headers, the
   index's fan-out, order and checksum, the framing walk, the index offsets against the
   framing — then cuts the work into units (``fsck_units``): each pack's trailer, its
   entries in byte ranges of at most ``RANGE_BYTES``, and each loose fan-out directory.
2. ``canonkit.engines`` runs the units (in this process, a local process pool or Dask),
   as it runs ``canonkit reverify``'s; the results come back in unit order, so the report
   never depends on the engine or on ``jobs``.
3. The parent reports the refs it read first of all, then computes reachability once,
   over the references the units returned: missing objects reachable from a ref (with the
   path from the root), unreachable objects, duplicates (``fsck_reach``, which also says
   how a concurrent writer or repack is kept from making fsck report what no consistent
   view holds: a pack removed by a published repack is not an error either).

A store in object storage is checked by the same parts (``bucket_fsck``): its own plan
and units, then ``execute``, ``collect`` and ``conclude`` here, and ``pack_plan`` for
each pack a worker downloaded.
"""
from __future__ import annotations

import bisect
import os
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from ..errors import CorruptObjectError, StoreError, UnsafePathError
from . import refs as refs_module
from .findings import Finding, FsckReport, finding, sorted_findings
from .fsck_reach import Graph, reachability
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
    digest_of_address,
    loose_path,
    pack_paths,
    parse_pack_name,
)
from .lock import read_lock
from .packs import map_file
from .._progress import bar

if TYPE_CHECKING:
    from ..engines import Engine
    from .store import Store

__all__ = ["LOOSE_UNITS", "RANGE_BYTES", "RANGE_ENTRIES", "TOP_LEVEL", "backend_name",
           "check_options", "collect", "conclude", "execute", "fsck", "pack_plan", "plan"]

RANGE_BYTES = 64 << 20   # a big pack's entries are checked in ranges of this many bytes
RANGE_ENTRIES = 16384    # ... or of this many entries, whichever comes first
TOP_LEVEL = {MARKER, OBJECTS, PACKS, REFS, TMP, LOCK}  # what may sit at the root

Unit = tuple[Any, ...]


def backend_name(store: Store) -> str:
    return "compiled" if store.kernel.__name__ == "canonkit.store._format" else "python"


def _scan_dir(root: str, rel: str) -> list[os.DirEntry[str]]:
    try:
        return sorted(os.scandir(f"{root}/{rel}"), key=lambda e: e.name)
    except FileNotFoundError:
        return []


def _top_level(root: str, out: list[Finding]) -> None:
    for entry in _scan_dir(root, "."):
        if entry.name not in TOP_LEVEL:
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


def pack_plan(root: str, hex_name: str, kernel: Any, backend: str,
               out: list[Finding], units: list[Unit]) -> int:
    """Check one published pack's structure and add its units; returns its entry count.
    ``FileNotFoundError`` (and nothing added) if the pack or its index is gone."""
    pack_rel, idx_rel = pack_paths(bytes.fromhex(hex_name))
    found: list[Finding] = []
    more: list[Unit] = []
    maps: list[Any] = []
    readers: list[tuple[str, Any]] = []
    try:
        count = _pack_structure(root, hex_name, kernel, backend, found, more, maps, readers)
    except CorruptObjectError as exc:  # a file shrank under its mapping meanwhile
        shrunk = [rel for rel, reader in readers if not reader.intact()] or [pack_rel]
        found.append(finding(shrunk[0], exc.offset, str(exc.detail), None, str(exc)))
        more, count = [], 0
    finally:
        for _, reader in readers:
            reader.release()
        for m in maps:
            if hasattr(m, "close"):
                m.close()
    out.extend(found)
    units.extend(more)
    return count


def _pack_structure(root: str, hex_name: str, kernel: Any, backend: str,
                    out: list[Finding], units: list[Unit], maps: list[Any],
                    readers: list[tuple[str, Any]]) -> int:
    pack_rel, idx_rel = pack_paths(bytes.fromhex(hex_name))
    index = _reader(root, idx_rel, kernel.Index, maps, out)
    if index is not None:
        readers.append((idx_rel, index))
    pack = _reader(root, pack_rel, kernel.Pack, maps, out)
    if pack is not None:
        readers.append((pack_rel, pack))
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
    digests, offsets = index.entries()
    if problem is None and offsets == framing:
        # the common case: the index lists every entry once, in the order of the pack
        # (packs are written in digest order), so the loop below would find nothing
        _cut(root, pack_rel, offsets, digests, backend, units)
        return len(offsets)
    starts = set(framing)
    if problem is None and len(offsets) == len(starts) and starts == set(offsets):
        # the same, listed in another order: decided by set operations
        todo = sorted(zip(offsets, digests))
        _cut(root, pack_rel, [o for o, _ in todo], [d for _, d in todo], backend, units)
        return len(todo)
    listed: dict[int, int] = {}
    todo = []
    offsets_at = 16 + 2048 + 32 * index.count
    for i, (digest, offset) in enumerate(zip(digests, offsets)):
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
    _cut(root, pack_rel, [o for o, _ in todo], [d for _, d in todo], backend, units)
    return len(todo)


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


def _cut(root: str, pack_rel: str, offsets: list[int], digests: list[bytes], backend: str,
         units: list[Unit]) -> None:
    """Entries (ascending offsets, distinct) into units of byte ranges. A pack whose
    entries make one unit gets one "pack" unit instead of that and its "trailer" unit:
    the trailer is then hashed while the entries are checked (``fsck_units``)."""
    start, added = 0, len(units)
    while start < len(offsets):
        stop = bisect.bisect_left(offsets, offsets[start] + RANGE_BYTES, start + 1,
                           min(len(offsets), start + RANGE_ENTRIES))
        units.append(("entries", root, pack_rel, offsets[start:stop],
                      b"".join(digests[start:stop]), backend))
        start = stop
    trailer = ("trailer", root, pack_rel, backend)
    if len(units) == added + 1 and trailer in units:
        units.remove(trailer)
        units[-1] = ("pack", *units[-1][1:])


def plan(store: Store, out: list[Finding]) -> tuple[list[Unit], int, int]:
    """``(units, packs, pack entries)``; structure findings go to ``out``."""
    root = store.root
    backend = backend_name(store)
    units: list[Unit] = []
    packs, idxs = packs_on_disk(root)
    for entry in _scan_dir(root, PACKS):
        rel = f"{PACKS}/{entry.name}"
        if entry.is_symlink():
            out.append(finding(rel, None, "symlink", None, "never followed"))
        elif parse_pack_name(entry.name) is None or not entry.is_file(follow_symlinks=False):
            out.append(finding(rel, None, "unexpected_file", None,
                               "not pack-<64 hex>.pack or .idx"))
    entries = planned = 0
    for hex_name in sorted(idxs):
        pack_rel, idx_rel = pack_paths(bytes.fromhex(hex_name))
        try:
            entries += pack_plan(root, hex_name, store.kernel, backend, out, units)
            planned += 1
        except FileNotFoundError:  # a listing is no snapshot: look again before judging
            if _pack_missing(root, hex_name):
                out.append(finding(idx_rel, None, "pack_missing", None,
                                   "the index is published but its .pack file is missing"))
    for entry in _scan_dir(root, OBJECTS):
        if entry.is_dir(follow_symlinks=False) and not entry.is_symlink() and len(
                entry.name) == 2 and all(c in "0123456789abcdef" for c in entry.name):
            units.append(("loose", root, entry.name, backend))
    return units, planned, entries


def _pack_missing(root: str, hex_name: str) -> bool:
    """Whether ``pack-<hex>``'s index is published without its pack. A repack removes an
    index before its pack and publishes a pack before its index, so an index that is gone
    now was removed by a published repack (its objects are elsewhere: not an error)."""
    pack_rel, idx_rel = pack_paths(bytes.fromhex(hex_name))
    return os.path.lexists(f"{root}/{idx_rel}") and not os.path.lexists(f"{root}/{pack_rel}")


def execute(units: list[Unit], run: Callable[[Unit], UnitResult], jobs: int, engine: str,
            scheduler: str | None, probe: Callable[[Engine], None]
            ) -> Iterator[tuple[Unit, UnitResult]]:
    """``run``'s results over the units, in unit order, on the shared engine layer
    (``canonkit.engines``, the one ``canonkit reverify`` runs on), once ``probe`` has seen
    that the workers can reach the store. A unit whose worker died twice becomes an
    ``unreadable`` finding for its file, never a silent gap."""
    from .. import engines

    with engines.open_engine(engine, jobs=jobs, scheduler=scheduler) as runner:
        probe(runner)
        for unit, result in runner.map(run, units):
            if isinstance(result, engines.Lost):
                lost = UnitResult()
                lost.findings.append(finding(_unit_path(unit), None, "unreadable", None,
                                             f"not checked: {result.reason}"))
                yield unit, lost
            else:
                yield unit, result


def _shared_directory(root: str) -> Callable[[Engine], None]:
    """The probe of a local store: workers that do not share this filesystem cannot
    check it."""

    def probe(runner: Engine) -> None:
        if not runner.shares_files:
            seen = runner.run_on_workers(os.path.isdir, root)
            if not seen or not all(seen.values()):
                raise StoreError(f"the Dask workers cannot read the store at {root}: fsck "
                                 f"needs a scheduler whose workers share this filesystem",
                                 path=root)

    return probe


def _vanished(root: str, pack_rel: str) -> list[Finding]:
    """A unit's pack was gone: an error only if its index is still published."""
    parsed = parse_pack_name(pack_rel[len(PACKS) + 1:])
    if parsed is None or not _pack_missing(root, parsed[0]):
        return []
    return [finding(pack_paths(bytes.fromhex(parsed[0]))[1], None, "pack_missing", None,
                    "the index is published but its .pack file is missing")]


LOOSE_UNITS = ("loose", "bucket_loose")  # units of one fan-out: (kind, root, fanout, ...)


def _unit_path(unit: Unit) -> str:
    """The file (a pack) or directory (a fan-out) a unit checks."""
    if unit[0] in LOOSE_UNITS:
        return f"{OBJECTS}/{unit[2]}"
    return str(unit[2])


def check_options(jobs: int, engine: str, scheduler: str | None) -> None:
    from ..engines import ENGINES

    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r} (expected one of {', '.join(ENGINES)})")
    if jobs < 1:
        raise ValueError("jobs must be at least 1")
    if scheduler is not None and engine != "dask":
        raise ValueError("a scheduler address needs the dask engine")


def fsck(store: Store, *, jobs: int = 1, engine: str = "local", scheduler: str | None = None,
         progress: bool | None = False) -> FsckReport:
    check_options(jobs, engine, scheduler)
    started = time.perf_counter()
    root = store.root
    findings: list[Finding] = []
    # the refs first: a writer puts objects before the ref naming them (fsck_reach)
    ref_scan = refs_module.scan(root)
    _top_level(root, findings)
    units, n_packs, n_entries = plan(store, findings)
    report = FsckReport(packs=n_packs, pack_entries=n_entries, engine=engine, jobs=jobs)
    planned = time.perf_counter()
    results = execute(units, run_unit, jobs, engine, scheduler, _shared_directory(root))
    graph = collect(report, findings, results, len(units),
                    lambda unit: _vanished(root, str(unit[2])), progress)
    conclude(store, ref_scan, graph, findings, report, (started, planned))
    return report


def collect(report: FsckReport, findings: list[Finding],
            results: Iterable[tuple[Unit, UnitResult]], total: int,
            vanished: Callable[[Unit], list[Finding]], progress: bool | None) -> Graph:
    """Take in every unit's result (``total`` units, under a progress bar): its findings,
    ``vanished(unit)``'s if its pack was gone, its objects and references (the graph
    returned) and its counts."""
    graph = Graph()
    progress_bar = bar(progress, total, "fsck", "unit")
    try:
        for unit, result in results:
            findings.extend(result.findings)
            if result.vanished:
                findings.extend(vanished(unit))
            graph.where.add(result.verified, result.rel)
            report.loose_files += result.files
            graph.corrupt.update(result.corrupt)
            graph.edges.update(result.edges)
            for digest, why in result.unfollowed:
                graph.unfollowed.setdefault(digest, (result.rel or loose_path(digest), why))
            report.logical_bytes += result.logical_bytes
            _count_forms(report, "loose" if unit[0] in LOOSE_UNITS else "packed", result)
            progress_bar.update(1)
    finally:
        progress_bar.close()
    return graph


def conclude(store: Store, ref_scan: refs_module.RefScan, graph: Graph,
             findings: list[Finding], report: FsckReport, times: tuple[float, float]) -> None:
    """The refs' findings, reachability (``fsck_reach``), the sorted findings and the
    phases' times (``times``: when fsck started, when its plan was done)."""
    started, planned = times
    checked = time.perf_counter()
    for problem in ref_scan.problems:
        findings.append(finding(problem.rel, None, problem.code, None, problem.detail))
    refs = [(name, rel, digest_of_address(address)) for name, rel, address in ref_scan.refs]
    report.refs = len(refs)
    reachability(store, refs, graph, findings, report)
    report.objects = len(graph.where)
    report.findings = sorted_findings(findings)
    report.seconds = time.perf_counter() - started
    report.phases = {"plan": planned - started, "check": checked - planned,
                     "reachability": started + report.seconds - checked}


def _count_forms(report: FsckReport, where: str, result: UnitResult) -> None:
    """Add a unit's intact objects to ``report.forms`` (``where``: loose or packed)."""
    intact = len(result.verified) // 32
    for key, n, size in ((where, intact - result.deflated,
                          result.logical_bytes - result.deflated_bytes),
                         (f"{where}_deflate", result.deflated, result.deflated_bytes)):
        report.forms[key]["objects"] += n
        report.forms[key]["bytes"] += size


