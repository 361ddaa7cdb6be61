"""fsck's units of work: each runs anywhere the store's files can be read (this process,
a process pool worker, a Dask worker) and returns plain data (STORE.md §4).

- ``("loose", root, fanout, backend)``: every file of one fan-out directory;
- ``("entries", root, pack_rel, offsets, digests, backend)``: a byte range of one pack's
  entries, each decoded and hashed against the digest its index gives it;
- ``("trailer", root, pack_rel, backend)``: the pack's trailer against BLAKE3 of every
  preceding byte;
- ``("pack", root, pack_rel, offsets, digests, backend)``: both, for a pack whose entries
  make one unit: the trailer is hashed on a second thread while the entries are checked
  (BLAKE3 releases the GIL on large inputs), so a pack's bytes are hashed twice in about
  the time of once when a second core is free.

A unit reports what it verified (digest, where), what it found corrupt, the references
of every intact structured object (for the reachability pass, which runs once, in the
parent, after every unit) and its findings.

Memory follows the files, never the lengths they declare: a DEFLATE object of more than
``deflate.SMALL`` bytes is checked by streaming its output into BLAKE3 a small buffer at a
time (``deflate.stream``), and only what may be a structured object (its first byte
starts a CBOR map) is kept, to follow its references; a smaller one is inflated whole, as
``get`` inflates it. A pack that is gone when its unit runs (a concurrent repack published its
objects elsewhere and removed it) is reported back as ``vanished``, for the parent to
judge.
"""
from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from ..errors import CorruptObjectError, UnsafePathError
from ._format_py import FORM_DEFLATE
from .deflate import SMALL, Inflated, inflate, inlinable, stream
from .findings import Finding, finding
from .inventory import loose_in
from .layout import OBJECTS, address_of, parse_loose_name
from .loose import read_into
from .mark import may_be_structured, references
from .packs import map_file

__all__ = ["UnitResult", "check_loose_content", "run_unit"]


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
    deflated: int = 0  # of the intact objects, those stored DEFLATE (and their logical bytes)
    deflated_bytes: int = 0
    vanished: bool = False  # the unit's pack was gone (see fsck)

    def intact(self, digest: bytes, data: Any) -> None:
        self.verified += digest
        if isinstance(data, Inflated):  # streamed: its bytes kept only if they may matter
            self.logical_bytes += data.size
            if data.data is None:
                return
            data = data.data
        else:
            self.logical_bytes += len(data)
        children, why = references(data)
        if children:
            self.edges[digest] = children
        if why is not None:
            self.unfollowed.append((digest, why))

    def stored_deflate(self, data: Any) -> None:
        """Count an intact object whose stored form byte says DEFLATE (by the form, not
        by what the inflater returned: small objects are inflated whole, in C or not)."""
        self.deflated += 1
        self.deflated_bytes += data.size if isinstance(data, Inflated) else len(data)


@inlinable
def _inflate(payload: Any, logical: int, base: int, digest: bytes | None
             ) -> Inflated | bytes:
    """fsck's inflater (the kernels' ``inflate``): an object of at most ``SMALL`` bytes is
    inflated whole, as ``get`` does (the compiled readers do that in C); a larger one is
    checked and hashed a small buffer at a time, its bytes kept only when they may be a
    structured object."""
    if logical <= SMALL:
        return inflate(payload, logical, base, digest)
    return stream(payload, logical, base, digest, keep=may_be_structured)


def _kernel(backend: str) -> ModuleType:
    return importlib.import_module("canonkit.store._format" if backend == "compiled"
                                   else "canonkit.store._format_py")


def _bad(result: UnitResult, exc: CorruptObjectError, rel: str, digest: bytes | None) -> None:
    result.findings.append(finding(rel, exc.offset, str(exc.detail),
                                   address_of(digest) if digest else None, str(exc)))


def check_loose(root: str, fanout: str, backend: str) -> UnitResult:
    kernel = _kernel(backend)
    result = UnitResult()
    base = f"{root}/{OBJECTS}/{fanout}"
    listed = {item.rel for item in loose_in(root, fanout, with_stat=False)}
    buffer = bytearray()
    try:
        entries = sorted(os.scandir(base), key=lambda e: e.name)
    except FileNotFoundError:
        return result
    for entry in entries:
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
        check_loose_content(result, kernel, rel, digest, content)
        content.release()  # the buffer is reused (and may grow) for the next file
    return result


def check_loose_content(result: UnitResult, kernel: ModuleType, rel: str, digest: bytes,
                        content: Any) -> None:
    """Check the bytes of the loose object ``rel`` (a loose unit's, or a bucket's) and
    count them in ``result``."""
    result.files += 1
    result.disk_bytes += len(content)
    try:  # a raw payload is hashed where it lies in the file's bytes, not copied
        data = kernel.read_loose(content, digest, _inflate, False)
    except CorruptObjectError as exc:
        exc.__traceback__ = exc.__context__ = None  # its frames hold views of buffer
        _bad(result, exc, rel, digest)
        result.corrupt.append(digest)
    else:
        result.intact(digest, data)
        if content[4] == FORM_DEFLATE:  # read_loose checked the header
            result.stored_deflate(data)
        del data


def check_entries(root: str, pack_rel: str, offsets: list[int], digests: bytes,
                  backend: str) -> UnitResult:
    kernel = _kernel(backend)
    result = UnitResult(rel=pack_rel)
    try:
        mapped, _ = map_file(f"{root}/{pack_rel}", pack_rel, whole=True)
    except FileNotFoundError:
        result.vanished = True
        return result
    try:
        pack = kernel.Pack(mapped)
    except CorruptObjectError as exc:  # shrank since the plan looked at it
        _close(mapped)
        result.findings.append(finding(pack_rel, exc.offset, str(exc.detail), None, str(exc)))
        return result
    try:
        # one kernel call verifies every entry and sums up the leaves (no references);
        # only structured, streamed and corrupt entries come back to be looked at here.
        # Raw entries are views of the mapping: hashed where they lie, not copied
        leaves, leaf_bytes, deflated, deflated_bytes, rest = pack.check_entries_summary(
            offsets, digests, _inflate, False)
        result.verified += leaves
        result.logical_bytes += leaf_bytes
        result.deflated += deflated  # by the entries' form bytes, leaves or not
        result.deflated_bytes += deflated_bytes
        got: Any = None
        for i, got in rest:
            digest = digests[32 * i:32 * i + 32]
            if isinstance(got, CorruptObjectError):
                _bad(result, got, pack_rel, digest)
                result.corrupt.append(digest)
            else:
                result.intact(digest, got)
        del rest, got  # the views, before the mapping closes
    finally:
        pack.release()
        _close(mapped)
    return result


def _close(mapped: Any) -> None:
    if hasattr(mapped, "close"):
        mapped.close()


def check_trailer(root: str, pack_rel: str, backend: str,
                  hashing: Callable[[], None] | None = None) -> UnitResult:
    """The pack's trailer against BLAKE3 of its bytes; ``hashing`` is called when the
    hash starts (``check_pack``)."""
    kernel = _kernel(backend)
    result = UnitResult()
    try:
        mapped, _ = map_file(f"{root}/{pack_rel}", pack_rel, whole=True)
    except FileNotFoundError:
        result.vanished = True
        return result
    size = len(mapped)
    try:
        try:
            pack = kernel.Pack(mapped)
        except CorruptObjectError:  # the plan reported the header; it shrank since, maybe
            return result
        try:
            if hashing is not None:
                hashing()
            got = pack.body_digest()
            trailer = pack.trailer
        except CorruptObjectError as exc:  # the file shrank while it was read
            result.findings.append(finding(pack_rel, exc.offset, str(exc.detail), None,
                                           str(exc)))
            return result
        finally:
            pack.release()
    finally:
        _close(mapped)
    result.disk_bytes = size
    if got != trailer:
        result.findings.append(finding(pack_rel, size - 32, "pack_trailer", None,
                                       f"trailer {trailer.hex()}, BLAKE3 of the pack's bytes "
                                       f"is {got.hex()}"))
    return result


def check_pack(root: str, pack_rel: str, offsets: list[int], digests: bytes,
               backend: str) -> UnitResult:
    """``check_entries`` and ``check_trailer`` of one pack at once: the trailer on a
    second thread. One result, as the two units would have given together."""
    outcome: list[Any] = []
    hashing = threading.Event()

    def trailer() -> None:
        try:
            outcome.append(check_trailer(root, pack_rel, backend, hashing.set))
        except BaseException as exc:  # raised below, as the unit's own error
            outcome.append(exc)
        finally:
            hashing.set()

    helper = threading.Thread(target=trailer, name="canonkit-fsck-trailer", daemon=True)
    helper.start()
    # the entries' loop holds the GIL for long stretches: it starts once the helper is
    # inside BLAKE3 (which runs without the GIL), not while the helper still needs it
    hashing.wait()
    try:
        result = check_entries(root, pack_rel, offsets, digests, backend)
    finally:
        helper.join()
    (other,) = outcome
    if isinstance(other, BaseException):
        raise other
    result.findings.extend(other.findings)
    result.disk_bytes += other.disk_bytes
    result.vanished = result.vanished or other.vanished
    return result


def run_unit(unit: tuple[Any, ...]) -> UnitResult:
    """Run one unit (the function engines map)."""
    kind = unit[0]
    if kind == "pack":
        return check_pack(*unit[1:])
    if kind == "loose":
        return check_loose(*unit[1:])
    if kind == "entries":
        return check_entries(*unit[1:])
    if kind == "trailer":
        return check_trailer(*unit[1:])
    raise ValueError(f"unknown fsck unit {kind!r}")
