"""fsck of a store in object storage (STORE.md §4, §7): the same checks, findings and
report as a local fsck, on the same engines, each worker reading its own share of the
store from object storage — the objects' bytes never pass through the process that asked.

1. The parent lists the prefix once and checks the layout from the listing (unexpected
   objects, the lease, leftovers, an index whose pack is missing), reads the refs, and
   makes one unit per published pack and one per loose fan-out prefix.
2. ``("bucket_pack", url, pack_rel, pack, idx, backend)``: the worker downloads the pack
   and its index (the versions listed, streamed into a scratch directory) and checks them
   exactly as a local fsck checks a pack — its structure (``fsck.pack_plan``), then every
   unit that plan makes (trailer, entry ranges: ``fsck_units.run_unit``) — returning one
   result for the pack. A pack is checked by one worker, so a worker needs local disk
   for the largest pack it checks (``TMPDIR``).
   ``("bucket_loose", url, fanout, backend)``: the worker lists ``objects/<fanout>/`` and
   checks every object as a local loose unit checks a file
   (``fsck_units.check_loose_content``), fetching a few ahead.
3. The parent takes the results in unit order and computes reachability once
   (``fsck.collect``, ``fsck.conclude``), as for a local store.

An object or pack removed between the listing and its unit (a concurrent repack) is
judged as on a local store: a pack gone is an error only while its index is published.
"""
from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import FileChangedError, ObjectNotFoundError, ObjectStorageError, StoreError
from .bucket_io import Bucket, ObjectInfo, modified, read_ahead
from .bucket_lease import read_lease
from .bucket_site import leftovers
from .findings import Finding, FsckReport, finding
from .fsck import (
    TOP_LEVEL,
    Unit,
    backend_name,
    check_options,
    collect,
    conclude,
    execute,
    pack_plan,
)
from .fsck_units import UnitResult, _kernel, check_loose_content, run_unit
from .layout import LOCK, MARKER, OBJECTS, PACKS, pack_paths, parse_loose_name, parse_pack_name

if TYPE_CHECKING:
    from ..engines import Engine
    from .bucket import BucketStore

__all__ = ["PackResult", "fsck", "run_bucket_unit"]

_HEX = frozenset("0123456789abcdef")


@dataclass
class PackResult(UnitResult):
    """A pack unit's result: what its units found, and how many entries it planned
    (``FsckReport.pack_entries``)."""

    entries: int = 0


def _merge(into: UnitResult, part: UnitResult) -> None:
    """Add one unit's result to the pack's (every unit of one pack has its path)."""
    into.findings.extend(part.findings)
    into.verified += part.verified
    into.corrupt.extend(part.corrupt)
    into.edges.update(part.edges)
    into.unfollowed.extend(part.unfollowed)
    into.logical_bytes += part.logical_bytes
    into.disk_bytes += part.disk_bytes
    into.files += part.files
    into.deflated += part.deflated
    into.deflated_bytes += part.deflated_bytes


def check_pack(url: str, pack_rel: str, pack: ObjectInfo, idx: ObjectInfo,
               backend: str) -> PackResult:
    """Download one published pack and its index and check them as a local fsck does."""
    hex_name = pack_rel[len(PACKS) + 6:-5]
    result = PackResult(rel=pack_rel)
    bucket = Bucket(url)
    with tempfile.TemporaryDirectory(prefix="canonkit-fsck-") as scratch:
        os.mkdir(f"{scratch}/{PACKS}")
        try:
            for info, rel in ((idx, pack_paths(bytes.fromhex(hex_name))[1]), (pack, pack_rel)):
                bucket.download(info, f"{scratch}/{rel}")
        except (ObjectNotFoundError, FileChangedError):
            result.vanished = True  # removed (or rewritten) since listed: the parent judges
            return result
        units: list[Unit] = []
        result.entries = pack_plan(scratch, hex_name, _kernel(backend), backend,
                                   result.findings, units)
        for unit in units:
            _merge(result, run_unit(unit))
    return result


def check_loose(url: str, fanout: str, backend: str) -> UnitResult:
    """Every object under ``objects/<fanout>/``, as a local loose unit checks a fan-out
    directory."""
    kernel = _kernel(backend)
    bucket = Bucket(url)
    result = UnitResult()
    base = f"{OBJECTS}/{fanout}/"
    objects: list[tuple[str, bytes, ObjectInfo]] = []
    nested: set[str] = set()
    for info in bucket.list(base):
        name = bucket.rel(info)[len(base):]
        if "/" in name:  # a "directory" in a fan-out: what a local fsck says of one
            nested.add(name.split("/", 1)[0])
            continue
        digest = parse_loose_name(fanout, name)
        if digest is None:
            result.findings.append(finding(base + name, None, "unexpected_file", None,
                                           "not a loose object name (62 lowercase hex)"))
        else:
            objects.append((base + name, digest, info))
    for name in sorted(nested):
        result.findings.append(finding(base + name, None, "unexpected_file", None,
                                       "not a regular file"))
    objects.sort()
    for (rel, digest, info), future in read_ahead(
            objects, lambda item: bucket.read_listed(item[2]), lambda item: item[2].size):
        try:
            content = future.result()
        except ObjectStorageError as exc:
            result.findings.append(finding(rel, None, "unreadable", "blake3:" + digest.hex(),
                                           str(exc)))
            continue
        if content is None:  # removed meanwhile (a repack): its pack is checked instead
            continue
        check_loose_content(result, kernel, rel, digest, memoryview(content))
    return result


def run_bucket_unit(unit: tuple[Any, ...]) -> UnitResult:
    """Run one unit (the function engines map)."""
    kind = unit[0]
    if kind == "bucket_pack":
        return check_pack(*unit[1:])
    if kind == "bucket_loose":
        return check_loose(*unit[1:])
    raise ValueError(f"unknown bucket fsck unit {kind!r}")


def reaches(url: str) -> bool:
    """Whether this process (a worker) can read the store at ``url``."""
    try:
        return Bucket(url).head(MARKER) is not None
    except (ObjectStorageError, OSError):
        return False


def _probe(url: str) -> Callable[[Engine], None]:
    def probe(runner: Engine) -> None:
        seen = runner.run_on_workers(reaches, url)
        if seen is not None and not all(seen.values()):
            cannot = sorted(worker for worker, ok in seen.items() if not ok)
            raise StoreError(f"the workers {', '.join(cannot)} cannot read the store at "
                             f"{url}: fsck needs workers whose environment reaches the "
                             f"bucket (credentials, endpoint)", path=url)

    return probe


def _layout(store: BucketStore, listed: dict[str, ObjectInfo], out: list[Finding]
            ) -> tuple[list[tuple[str, ObjectInfo, ObjectInfo]], list[str]]:
    """The findings of the listing itself (``out``); returns the published packs
    ``(hex, pack, idx)`` and the fan-outs, sorted."""
    now = time.time()
    fanouts: set[str] = set()
    shown: set[str] = set()
    published = []
    for rel, info in listed.items():
        top, _, rest = rel.partition("/")
        if top not in TOP_LEVEL or (top in (MARKER, LOCK)) != (rest == "" and "/" not in rel):
            if top not in shown:
                shown.add(top)
                out.append(finding(top, None, "unexpected_file", None,
                                   "not part of the store layout"))
        elif top == OBJECTS:
            fanout = rest.split("/", 1)[0]
            if "/" in rest and len(fanout) == 2 and set(fanout) <= _HEX:
                fanouts.add(fanout)
            elif f"{OBJECTS}/{fanout}" not in shown:
                shown.add(f"{OBJECTS}/{fanout}")
                out.append(finding(f"{OBJECTS}/{fanout}", None, "unexpected_file", None,
                                   "not a fan-out directory (two lowercase hex digits)"))
        elif top == PACKS:
            parsed = parse_pack_name(rest)
            if parsed is None:
                name = f"{PACKS}/{rest.split('/', 1)[0]}"
                if name not in shown:
                    shown.add(name)
                    out.append(finding(name, None, "unexpected_file", None,
                                       "not pack-<64 hex>.pack or .idx"))
            elif parsed[1] == "idx":
                pack_rel = pack_paths(bytes.fromhex(parsed[0]))[0]
                if pack_rel in listed:
                    published.append((parsed[0], listed[pack_rel], info))
                elif _pack_missing(store.bucket, parsed[0]):
                    out.append(finding(rel, None, "pack_missing", None,
                                       "the index is published but its .pack file is missing"))
    found = read_lease(store.bucket)
    if found is not None:
        lease = found[0]
        out.append(finding(LOCK, None, "stale_lock" if lease.stale else "lock_held", None,
                           lease.describe()))
    for rel, info, what in leftovers(listed):
        out.append(finding(rel, None, "unpublished_pack" if what == "unpublished pack"
                           else "tmp_leftover", None, f"{now - modified(info):.0f} s old"))
    return sorted(published), sorted(fanouts)


def _pack_missing(bucket: Bucket, hex_name: str) -> bool:
    """Whether ``pack-<hex>``'s index is published without its pack, looked at again (a
    listing is no snapshot; a repack removes an index before its pack)."""
    pack_rel, idx_rel = pack_paths(bytes.fromhex(hex_name))
    return bucket.head(idx_rel) is not None and bucket.head(pack_rel) is None


def _vanished(bucket: Bucket, unit: Unit) -> list[Finding]:
    """A pack unit found its pack gone: an error only if its index is still published."""
    hex_name = str(unit[2])[len(PACKS) + 6:-5]
    if not _pack_missing(bucket, hex_name):
        return []
    return [finding(pack_paths(bytes.fromhex(hex_name))[1], None, "pack_missing", None,
                    "the index is published but its .pack file is missing")]


def fsck(store: BucketStore, *, jobs: int = 1, engine: str = "local",
         scheduler: str | None = None, progress: bool | None = False) -> FsckReport:
    check_options(jobs, engine, scheduler)
    started = time.perf_counter()
    url = store.root
    backend = backend_name(store)
    findings: list[Finding] = []
    # the refs first: a writer puts objects before the ref naming them (fsck_reach)
    ref_scan = store.ref_scan()
    listed = {store.bucket.rel(info): info for info in store.bucket.list("")}
    published, fanouts = _layout(store, listed, findings)
    units: list[Unit] = [("bucket_pack", url, pack_paths(bytes.fromhex(h))[0], pack, idx,
                          backend) for h, pack, idx in published]
    units += [("bucket_loose", url, fanout, backend) for fanout in fanouts]
    report = FsckReport(engine=engine, jobs=jobs)
    planned = time.perf_counter()

    def counted(results: Iterator[tuple[Unit, UnitResult]]
                ) -> Iterator[tuple[Unit, UnitResult]]:
        for unit, result in results:
            if isinstance(result, PackResult) and not result.vanished:
                report.packs += 1
                report.pack_entries += result.entries
            yield unit, result

    results = execute(units, run_bucket_unit, jobs, engine, scheduler, _probe(url))
    graph = collect(report, findings, counted(results), len(units),
                    lambda unit: _vanished(store.bucket, unit), progress)
    conclude(store, ref_scan, graph, findings, report, (started, planned))
    return report
