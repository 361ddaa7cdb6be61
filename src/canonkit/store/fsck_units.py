"""fsck's units of work: each runs anywhere the store's files can be read (this process,
a process pool worker, a Dask worker) and returns plain data (STORE.md §4).

- ``("loose", root, fanout, backend)``: every file of one fan-out directory;
- ``("entries", root, pack_rel, offsets, digests, backend)``: a byte range of one pack's
  entries, each decoded and hashed against the digest its index gives it;
- ``("trailer", root, pack_rel, backend)``: the pack's trailer against BLAKE3 of every
  preceding byte.

A unit reports what it verified (digest, where), what it found corrupt, the references
of every intact structured object (for the reachability pass, which runs once, in the
parent, after every unit) and its findings.
"""
from __future__ import annotations

import importlib
import os
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from blake3 import blake3

from ..errors import CorruptObjectError, UnsafePathError
from .deflate import inflate
from .findings import Finding, finding
from .inventory import loose_in
from .layout import OBJECTS, address_of, parse_loose_name
from .loose import read_into
from .mark import references
from .packs import map_file

__all__ = ["UnitResult", "run_unit"]


@dataclass
class UnitResult:
    """What a unit found. ``verified`` holds the concatenated digests of the intact
    objects, all stored at ``rel`` (a pack), or each at its own loose path (``rel`` None);
    ``edges`` the references of the intact structured objects."""

    rel: str | None = None
    findings: list[Finding] = field(default_factory=list)
    verified: bytearray = field(default_factory=bytearray)
    corrupt: list[bytes] = field(default_factory=list)
    edges: dict[bytes, list[bytes]] = field(default_factory=dict)
    unfollowed: list[tuple[bytes, str]] = field(default_factory=list)
    logical_bytes: int = 0
    disk_bytes: int = 0
    files: int = 0  # loose files examined

    def intact(self, digest: bytes, data: Any) -> None:
        self.verified += digest
        self.logical_bytes += len(data)
        children, why = references(data)
        if children:
            self.edges[digest] = children
        if why is not None:
            self.unfollowed.append((digest, why))


def _kernel(backend: str) -> ModuleType:
    return importlib.import_module("canonkit._store" if backend == "compiled"
                                   else "canonkit._store_py")


def _bad(result: UnitResult, exc: CorruptObjectError, rel: str, digest: bytes | None) -> None:
    result.findings.append(finding(rel, exc.offset, str(exc.detail),
                                   address_of(digest) if digest else None, str(exc)))


def check_loose(root: str, fanout: str, backend: str) -> UnitResult:
    kernel = _kernel(backend)
    result = UnitResult()
    base = f"{root}/{OBJECTS}/{fanout}"
    listed = {item.rel for item in loose_in(root, fanout, with_stat=False)}
    buffer = bytearray()
    for entry in sorted(os.scandir(base), key=lambda e: e.name):
        rel = f"{OBJECTS}/{fanout}/{entry.name}"
        if entry.is_symlink():
            result.findings.append(finding(rel, None, "symlink", None,
                                           "a symlink where a loose object belongs"))
            continue
        if rel not in listed:
            result.findings.append(finding(rel, None, "unexpected_file", None,
                                           "not a loose object name (62 lowercase hex)"
                                           if entry.is_file(follow_symlinks=False)
                                           else "not a regular file"))
            continue
        digest = parse_loose_name(fanout, entry.name)
        assert digest is not None
        try:  # into one reused buffer: no fresh allocation (and page faults) per file
            content = read_into(entry.path, rel, buffer)
        except (OSError, UnsafePathError) as exc:
            result.findings.append(finding(rel, None, "unreadable", address_of(digest),
                                           str(exc)))
            continue
        if content is None:  # removed meanwhile (a repack): its pack is checked instead
            continue
        result.files += 1
        result.disk_bytes += len(content)
        try:  # a raw payload is hashed where it lies in the file's bytes, not copied
            data = kernel.read_loose(content, digest, inflate, False)
        except CorruptObjectError as exc:
            exc.__traceback__ = exc.__context__ = None  # its frames hold views of buffer
            _bad(result, exc, rel, digest)
            result.corrupt.append(digest)
        else:
            result.intact(digest, data)
            del data
        content.release()  # the buffer is reused (and may grow) for the next file
    return result


def check_entries(root: str, pack_rel: str, offsets: list[int], digests: bytes,
                  backend: str) -> UnitResult:
    kernel = _kernel(backend)
    result = UnitResult(rel=pack_rel)
    mapped, _ = map_file(f"{root}/{pack_rel}", pack_rel, whole=True)
    pack = kernel.Pack(mapped)
    try:
        # raw entries come back as views of the mapping: hashed where they lie, not copied
        checked = pack.check_entries(offsets, digests, inflate, False)
        got: Any = None
        for i, got in enumerate(checked):
            digest = digests[32 * i:32 * i + 32]
            if isinstance(got, CorruptObjectError):
                _bad(result, got, pack_rel, digest)
                result.corrupt.append(digest)
            else:
                result.intact(digest, got)
        del checked, got  # the views, before the mapping closes
    finally:
        pack.release()
        if hasattr(mapped, "close"):
            mapped.close()
    return result


def check_trailer(root: str, pack_rel: str, backend: str) -> UnitResult:
    result = UnitResult()
    mapped, _ = map_file(f"{root}/{pack_rel}", pack_rel, whole=True)
    size = len(mapped)
    try:
        with memoryview(mapped) as view, view[:size - 32] as body:
            got = blake3(body).digest()
            trailer = bytes(view[size - 32:])
    finally:
        if hasattr(mapped, "close"):
            mapped.close()
    result.disk_bytes = size
    if got != trailer:
        result.findings.append(finding(pack_rel, size - 32, "pack_trailer", None,
                                       f"trailer {trailer.hex()}, BLAKE3 of the pack's bytes "
                                       f"is {got.hex()}"))
    return result


def run_unit(unit: tuple[Any, ...]) -> UnitResult:
    """Run one unit (the function engines map)."""
    kind = unit[0]
    if kind == "loose":
        return check_loose(*unit[1:])
    if kind == "entries":
        return check_entries(*unit[1:])
    if kind == "trailer":
        return check_trailer(*unit[1:])
    raise ValueError(f"unknown fsck unit {kind!r}")
