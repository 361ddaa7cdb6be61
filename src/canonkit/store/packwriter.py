"""Writing a pack and its index into ``tmp/`` (STORE.md §2, §3).

Entries are appended in the order given (callers pass digest order, so the same objects
in the same forms always give the same pack) through a 1 MiB buffer, with the header's
count left open: an object that turns out unreadable half way is skipped rather than
ending the whole pack. ``finish`` fills in the count, appends the trailer (BLAKE3 of every
preceding byte, read back from the file), builds the index, and fsyncs both when durable.
Publication (the renames into ``packs/``) is the caller's, so that the order of STORE.md
§3 is visible in one place (``repack.py``); both files stay held (``Temporary``) until
then, so no sweep of leftovers removes them meanwhile.
"""
from __future__ import annotations

import os
from typing import Any

from blake3 import blake3

from ._format_py import (
    DIGEST,
    ENTRY_HEADER,
    FORM_DEFLATE,
    FORM_RAW,
    INDEX_MAGIC,
    PACK_HEADER,
    PACK_MAGIC,
    VERSION,
)
from . import mutations as fs
from .layout import TMP

__all__ = ["PackWriter", "build_index", "encode_pack", "entry_header", "pack_header"]

_FLUSH = 1 << 20
_READ = 1 << 20


def pack_header(count: int) -> bytes:
    return PACK_MAGIC + VERSION.to_bytes(4, "big") + count.to_bytes(8, "big")


def entry_header(deflated: bool, stored: int, logical: int) -> bytes:
    return (bytes((FORM_DEFLATE if deflated else FORM_RAW,)) + stored.to_bytes(8, "big")
            + logical.to_bytes(8, "big"))


def encode_pack(entries: list[tuple[bytes, bool, bytes, int]]) -> tuple[bytes, bytes]:
    """``(pack, index)`` bytes, in memory, of ``(digest, deflated, payload, logical
    length)`` entries in the order given (small packs: fixtures, tests)."""
    out = bytearray(pack_header(len(entries)))
    offsets = []
    for digest, deflated, payload, logical in entries:
        offsets.append((digest, len(out)))
        out += entry_header(deflated, len(payload), logical) + payload
    trailer = blake3(out).digest()
    return bytes(out) + trailer, build_index(offsets, trailer)


def build_index(entries: list[tuple[bytes, int]], pack_trailer: bytes) -> bytes:
    """The ``.idx`` bytes for ``(digest, offset)`` pairs (any order, digests unique)."""
    entries = sorted(entries)
    counts = [0] * 256
    for digest, _ in entries:
        counts[digest[0]] += 1
    fanout = bytearray()
    total = 0
    for c in counts:
        total += c
        fanout += total.to_bytes(8, "big")
    out = bytearray(INDEX_MAGIC + VERSION.to_bytes(4, "big") + len(entries).to_bytes(8, "big"))
    out += fanout
    out += b"".join(d for d, _ in entries)
    out += b"".join(o.to_bytes(8, "big") for _, o in entries)
    out += pack_trailer
    out += blake3(out).digest()
    return bytes(out)


class PackWriter:
    """One pack being written to ``tmp/``; ``add`` entries, then ``finish`` or ``abort``."""

    def __init__(self, root: str, *, durable: bool) -> None:
        self.root = root
        self.durable = durable
        self._pack = fs.Temporary(f"{root}/{TMP}", "pack", ".pack")
        self._idx: fs.Temporary | None = None
        self.pack_tmp = self._pack.path
        self.idx_tmp = ""
        self.entries: list[tuple[bytes, int]] = []
        self.logical_bytes = 0
        self.deflated = 0
        self._fd: int | None = self._pack.fd
        self._buf = bytearray(pack_header(0))  # the count is filled in by finish
        self._offset = PACK_HEADER
        self.trailer = b""
        self.size = 0

    def add(self, digest: bytes, deflated: bool, payload: Any, logical: int) -> None:
        """Append one entry: ``payload`` is the zlib stream when ``deflated``, else the
        logical bytes themselves."""
        if len(digest) != DIGEST:
            raise ValueError("a digest is 32 bytes")
        stored = memoryview(payload).nbytes
        self.entries.append((digest, self._offset))
        self._buf += entry_header(deflated, stored, logical)
        self._buf += payload
        self._offset += ENTRY_HEADER + stored
        self.logical_bytes += logical
        self.deflated += deflated
        if len(self._buf) >= _FLUSH:
            self._flush()

    def _flush(self) -> None:
        assert self._fd is not None
        if self._buf:
            fs.write(self._fd, self._buf)
            self._buf = bytearray()

    def finish(self) -> tuple[bytes, int]:
        """Complete both files in ``tmp/``; returns ``(trailer, pack size)``."""
        fd = self._fd
        assert fd is not None
        self._flush()
        fs.pwrite(fd, len(self.entries).to_bytes(8, "big"), 8)
        hasher = blake3()  # read back with pread, not mapped: nothing to fault on
        at = 0
        while at < self._offset:
            block = os.pread(fd, min(_READ, self._offset - at), at)
            if not block:
                raise OSError(f"{self.pack_tmp} ends at {at} bytes, {self._offset} written")
            hasher.update(block)
            at += len(block)
        trailer: bytes = hasher.digest()
        fs.write(fd, trailer)
        if self.durable:
            fs.fsync(fd)
        self._fd = None
        self._idx = fs.write_temporary(f"{self.root}/{TMP}", "pack", build_index(
            self.entries, trailer), durable=self.durable)
        self.idx_tmp = self._idx.path
        self.trailer = trailer
        self.size = self._offset + len(trailer)
        return trailer, self.size

    def close(self) -> None:
        """Let go of both files (once they are published)."""
        self._fd = None
        self._pack.close()
        if self._idx is not None:
            self._idx.close()

    def abort(self) -> None:
        """Remove whatever was written (best effort; leftovers in tmp/ are harmless)."""
        self._fd = None
        self._pack.discard()
        if self._idx is not None:
            self._idx.discard()
