"""Compressed inputs decoded with every end checked (``canonkit._files.inputs.open_stream``).

A gzip file is one or more members, a zstd file one or more frames (RFC 1952, RFC 8878).
The decoders here read them one member or frame at a time and refuse, with
:class:`BrokenStreamError` at a byte offset of the compressed file, exactly what the
format does not allow:

- a member or frame that does not end (the file was cut): everything decoded before the
  cut is delivered first, then the error names where the unfinished member began;
- bytes after the last member or frame that do not start another one (trailing
  garbage, including zero padding): the members before them are delivered whole first;
- a corrupt member or frame (bad header, bad block, checksum mismatch), and a file with
  no member or frame at all (empty).

Memory is bounded by the output block, never by a size the file declares: gzip output
comes ``_OUT`` bytes per call (zlib's ``max_length``); a zstd frame is walked block by
block (a block regenerates at most 128 KiB, RFC 8878 §3.1.1.2.3) and the decompressor
is fed at most ``_ZSTD_BLOCKS`` blocks per call.
"""
from __future__ import annotations

import io
import zlib
from collections.abc import Callable, Iterator
from typing import Any

from ..errors import BrokenStreamError

__all__ = ["DecodedStream", "gzip_chunks", "zstd_chunks"]

_CHUNK = 1 << 20    # compressed bytes read per call
_OUT = 1 << 20      # gzip: decoded bytes per zlib call
_GZIP_MAGIC = b"\x1f\x8b"
_ZSTD_MAGIC = 0xFD2FB528
_SKIPPABLE_MASK, _SKIPPABLE = 0xFFFFFFF0, 0x184D2A50
_BLOCK_MAX = 128 * 1024
_ZSTD_BLOCKS = 8    # blocks per decompressor call: at most 1 MiB of output

Read = Callable[[int], bytes]


class _Input:
    """The compressed bytes not yet parsed (``data[pos:]``), read on demand; ``offset``
    is the file offset of ``data[pos]``."""

    def __init__(self, read: Read, name: str) -> None:
        self._read = read
        self.name = name
        self.data = bytearray()
        self.pos = 0
        self.base = 0  # file offset of data[0]
        self.ended = False

    @property
    def offset(self) -> int:
        return self.base + self.pos

    @property
    def read_so_far(self) -> int:
        return self.base + len(self.data)

    def have(self, n: int) -> bool:
        """Whether ``n`` unparsed bytes are available (reading more as needed)."""
        while len(self.data) - self.pos < n and not self.ended:
            if self.pos > _CHUNK:  # drop what was parsed before growing
                del self.data[:self.pos]
                self.base += self.pos
                self.pos = 0
            chunk = self._read(_CHUNK)
            if chunk:
                self.data += chunk
            else:
                self.ended = True
        return len(self.data) - self.pos >= n

    def take(self, n: int) -> bytes:
        """The next ``n`` bytes (``have(n)`` must be true)."""
        out = bytes(self.data[self.pos:self.pos + n])
        self.pos += n
        return out

    def skip(self, n: int) -> bool:
        """Skip ``n`` bytes without holding them; False if the file ends first."""
        while n:
            if not self.have(1):
                return False
            step = min(n, len(self.data) - self.pos)
            self.pos += step
            n -= step
        return True


def gzip_chunks(read: Read, name: str) -> Iterator[bytes]:
    """The decoded bytes of the gzip file ``read`` reads from, member after member."""
    src = _Input(read, name)
    members = 0
    while True:
        start = src.offset
        if not src.have(1):
            if members:
                return
            raise BrokenStreamError(f"{name}: empty, not a gzip stream", offset=0)
        if not src.have(2) or src.data[src.pos:src.pos + 2] != _GZIP_MAGIC:
            raise BrokenStreamError(
                f"{name}: {'bytes after the last gzip member' if members else 'not a gzip stream'}"
                f" at offset {start}", offset=start)
        member = zlib.decompressobj(16 + zlib.MAX_WBITS)
        while not member.eof:
            if not src.have(1):
                raise BrokenStreamError(f"{name}: the gzip member at offset {start} does not "
                                        f"end (the file ends at {src.read_so_far})", offset=start)
            tail = src.take(len(src.data) - src.pos)
            try:
                while tail and not member.eof:
                    out = member.decompress(tail, _OUT)
                    tail = member.unconsumed_tail
                    if out:
                        yield out
            except zlib.error as exc:
                raise BrokenStreamError(f"{name}: the gzip member at offset {start} is "
                                        f"corrupt ({exc})", offset=start) from None
            if member.eof:  # give back what belongs to the next member
                rest = member.unused_data
                src.pos -= len(rest) + len(tail)
        members += 1


def zstd_chunks(read: Read, name: str, zstandard: Any) -> Iterator[bytes]:
    """The decoded bytes of the zstd file ``read`` reads from, frame after frame
    (skippable frames skipped)."""
    src = _Input(read, name)
    frames = 0

    def broken(what: str, at: int) -> BrokenStreamError:
        return BrokenStreamError(f"{name}: {what} at offset {at}", offset=at)

    while True:
        start = src.offset
        if not src.have(1):
            if frames:
                return
            raise BrokenStreamError(f"{name}: empty, not a zstd stream", offset=0)
        if not src.have(4):
            raise broken("a zstd frame cut short" if frames == 0 else
                         "bytes after the last zstd frame", start)
        magic = int.from_bytes(src.data[src.pos:src.pos + 4], "little")
        if magic & _SKIPPABLE_MASK == _SKIPPABLE:
            if not src.have(8):
                raise broken("a skippable zstd frame cut short", start)
            size = int.from_bytes(src.take(8)[4:], "little")
            if not src.skip(size):
                raise broken("a skippable zstd frame cut short", start)
            frames += 1
            continue
        if magic != _ZSTD_MAGIC:
            raise broken("bytes after the last zstd frame" if frames else
                         "not a zstd stream", start)
        yield from _zstd_frame(src, start, zstandard, broken)
        frames += 1


def _zstd_frame(src: _Input, start: int, zstandard: Any,
                broken: Callable[[str, int], BrokenStreamError]) -> Iterator[bytes]:
    """One zstd frame at ``src`` (its magic number seen), decoded block by block."""
    if not src.have(5):
        raise broken("a zstd frame header cut short", start)
    descriptor = src.data[src.pos + 4]
    single_segment = descriptor >> 5 & 1
    if descriptor & 0x08:
        raise broken("a zstd frame header with its reserved bit set", start)
    checksum = descriptor >> 2 & 1
    header = (5 + (0 if single_segment else 1) + (0, 1, 2, 4)[descriptor & 3]
              + (single_segment, 2, 4, 8)[descriptor >> 6])
    if not src.have(header):
        raise broken("a zstd frame header cut short", start)
    decoder = zstandard.ZstdDecompressor().decompressobj()
    pending = bytearray(src.take(header))
    blocks = 0

    def feed() -> bytes:
        nonlocal blocks
        try:
            out: bytes = decoder.decompress(bytes(pending))
        except zstandard.ZstdError as exc:
            raise broken(f"a corrupt zstd frame ({exc})", start) from None
        pending.clear()
        blocks = 0
        return out

    while True:
        at = src.offset
        if not src.have(3):
            break
        head = int.from_bytes(src.data[src.pos:src.pos + 3], "little")
        kind, size = head >> 1 & 3, head >> 3
        if kind == 3 or size > _BLOCK_MAX:
            yield feed()
            raise broken("a corrupt zstd block", at)
        length = 3 + (1 if kind == 1 else size)
        if not src.have(length):
            break
        pending += src.take(length)
        blocks += 1
        if head & 1:  # the last block: then the content checksum, if the frame has one
            if checksum:
                if not src.have(4):
                    break
                pending += src.take(4)
            out = feed()
            if not decoder.eof:
                raise broken("a zstd frame that its decoder did not finish", start)
            if out:
                yield out
            return
        if blocks >= _ZSTD_BLOCKS or len(pending) >= _CHUNK:
            out = feed()
            if out:
                yield out
    if pending:  # deliver what the cut frame still holds, then say where it broke
        try:
            out = decoder.decompress(bytes(pending))
        except zstandard.ZstdError:
            out = b""
        if out:
            yield out
    raise BrokenStreamError(f"{src.name}: the zstd frame at offset {start} does not end "
                            f"(the file ends at {src.read_so_far})", offset=start)


class DecodedStream(io.RawIOBase):
    """A raw, read-only stream over decoded chunks; an error of the decoder is raised
    only once every byte decoded before it has been read."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks
        self._chunk = b""
        self._at = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while self._at == len(self._chunk):
            chunk = next(self._chunks, None)
            if chunk is None:
                return 0
            self._chunk, self._at = chunk, 0
        n = min(len(buffer), len(self._chunk) - self._at)
        buffer[:n] = self._chunk[self._at:self._at + n]
        self._at += n
        return n
