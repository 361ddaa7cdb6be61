"""Readers of the object store's byte formats (STORE.md §2, §6), pure Python.

The reference oracle of the compiled ``canonkit.store._format``: same classes, same results,
same errors (differential tests hold them together). Simple and obviously correct;
only the compiled side is optimised.

- ``read_loose(data, digest, inflate)``: the logical bytes of a loose file's content.
- ``Index(buffer)``: a ``.idx`` file; ``lookup``/``lookup_many`` find entry offsets.
- ``Pack(buffer)``: a ``.pack`` file; ``entry`` decodes one entry, ``read_many`` a batch,
  ``check_entries``/``check_entries_summary`` verify a batch (fsck), ``scan`` walks the
  entry framing.
- ``parse_addresses(addresses)``: ``"blake3:<hex>"`` strings to concatenated digests.

``digest`` arguments are the 32 expected BLAKE3 bytes, or None to skip verification.
``inflate(payload, logical_length, base, digest)`` is the strict zlib decoder of
``store.deflate``: it checks the stream and the BLAKE3 of its output against ``digest``
itself (so it may stream the output into the hash), and what it returns is the entry's
result. ``base`` is the payload's offset in its buffer, so its errors carry buffer
offsets. Every corruption raises ``CorruptObjectError`` with ``detail`` = the fsck finding
code and ``offset`` = the byte offset in the buffer given.

A reader is initialised once, and cannot be released while one of its calls is running
(from inside its own ``inflate``): both raise ``InUseError``, as in the compiled
readers, where the buffer they read would otherwise go away underneath them.
``GUARDS_MAPPINGS`` says whether a reader survives its file shrinking under a mapping
(the compiled readers do; for these, ``store.packs`` checks the file's size instead).
"""
from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from typing import Any

from blake3 import blake3

from ..errors import CorruptObjectError, InUseError, SchemaViolationError

__all__ = [
    "DIGEST", "ENTRY_HEADER", "FANOUT", "FORM_DEFLATE", "FORM_RAW", "INDEX_HEADER",
    "INDEX_MAGIC", "LOOSE_HEADER", "LOOSE_MAGIC", "PACK_HEADER", "PACK_MAGIC", "TRAILER",
    "GUARDS_MAPPINGS", "MAP_HEADS", "VERSION", "Index", "Pack", "parse_address",
    "parse_addresses", "read_loose",
]

LOOSE_MAGIC = b"CKL1"
PACK_MAGIC = b"CKPK"
INDEX_MAGIC = b"CKIX"
VERSION = 1
FORM_RAW = 0
FORM_DEFLATE = 1
LOOSE_HEADER = 13    # magic 4 | form 1 | logical length 8
PACK_HEADER = 16     # magic 4 | version 4 | count 8
ENTRY_HEADER = 17    # form 1 | stored length 8 | logical length 8
INDEX_HEADER = 16    # magic 4 | version 4 | count 8
FANOUT = 256 * 8
DIGEST = 32
TRAILER = 32
GUARDS_MAPPINGS = False

Inflate = Callable[[Any, int, int, "bytes | None"], Any]
#: ``Pack.check_entries_summary``: leaf digests, leaf bytes, DEFLATE count and bytes, the rest
EntriesSummary = tuple[bytes, int, int, int, list[tuple[int, Any]]]
#: first bytes of a CBOR map of definite length (major type 5): only such objects can
#: have references (``store.mark``)
MAP_HEADS = frozenset(range(0xA0, 0xBC))
_PREFIX = "blake3:"
_HEX = frozenset("0123456789abcdef")


def _corrupt(code: str, offset: int, what: str) -> CorruptObjectError:
    return CorruptObjectError(f"{what} at offset {offset}", offset=offset, detail=code)


def _u64(buf: Any, at: int) -> int:
    return int.from_bytes(buf[at:at + 8], "big")


def _header(view: memoryview, magic: bytes, what: str, minimum: int, short: str) -> int:
    """The count of a pack or index header after checking its size, magic and version."""
    if len(view) < minimum:
        raise _corrupt("truncated", len(view), short)
    if bytes(view[:4]) != magic:
        raise _corrupt("bad_magic", 0, f"not a {what} (magic is not {magic.decode()})")
    version = int.from_bytes(view[4:8], "big")
    if version != VERSION:
        raise _corrupt("bad_version", 4, f"{what} version {version}, expected {VERSION}")
    return _u64(view, 8)


def _decode(form: int, payload: Any, logical: int, at: int, digest: bytes | None,
            inflate: Inflate) -> Any:
    """The logical bytes of a payload that starts at ``at`` in its buffer, verified."""
    if form == FORM_RAW:
        out = bytes(payload)
        _verify(out, digest, at)
        return out
    return inflate(payload, logical, at, digest)


def _verify(data: Any, digest: bytes | None, at: int) -> None:
    if digest is not None and blake3(data).digest() != digest:
        raise _corrupt("digest_mismatch", at, "BLAKE3 of the logical bytes differs from "
                                              "the object's digest")


def read_loose(data: Any, digest: bytes | None, inflate: Inflate, copy: bool = True
               ) -> Any:
    """The logical bytes of a loose file (raw or DEFLATE form: what ``inflate``
    returns); ``copy=False``: a raw payload is a memoryview of ``data``."""
    view = memoryview(data).cast("B")
    if len(view) < LOOSE_HEADER:
        raise _corrupt("truncated", len(view), f"loose header needs {LOOSE_HEADER} bytes, "
                                               f"the file has {len(view)}")
    if bytes(view[:4]) != LOOSE_MAGIC:
        raise _corrupt("bad_magic", 0, "not a loose object file (magic is not "
                                       f"{LOOSE_MAGIC.decode()})")
    form = view[4]
    if form not in (FORM_RAW, FORM_DEFLATE):
        raise _corrupt("bad_form", 4, f"unknown form byte {form:#04x}")
    logical = _u64(view, 5)
    payload = view[LOOSE_HEADER:]
    if form == FORM_RAW and len(payload) != logical:
        code = "truncated" if len(payload) < logical else "trailing_bytes"
        raise _corrupt(code, LOOSE_HEADER + min(len(payload), logical),
                       f"raw payload has {len(payload)} bytes, the header says {logical}")
    if form == FORM_RAW and not copy:
        _verify(payload, digest, LOOSE_HEADER)
        return payload
    return _decode(form, payload, logical, LOOSE_HEADER, digest, inflate)


class _Reader:
    """What Index and Pack share: the buffer, held until ``release``, and the rules that
    keep it there while a call runs."""

    _view: memoryview
    _busy = 0

    def _hold(self, buffer: Any) -> memoryview:
        if hasattr(self, "_view"):
            raise InUseError(f"this {type(self).__name__} is initialised already")
        self._view = memoryview(buffer).cast("B")
        return self._view

    def release(self) -> None:
        """Let go of the buffer (an mmap can then be closed); the object is unusable."""
        if self._busy:
            raise InUseError(f"this {type(self).__name__} is reading; it cannot be "
                               f"released from inside its own call")
        self._view.release()

    def intact(self) -> bool:
        """False once the mapped file is known to have shrunk (never, here)."""
        return True


class Index(_Reader):
    """A ``.idx`` file held as a buffer. The constructor checks the header and the exact
    size; ``check`` does the rest of fsck's index checks."""

    def __init__(self, buffer: Any) -> None:
        view = self._hold(buffer)
        count = _header(view, INDEX_MAGIC, "index", INDEX_HEADER + FANOUT + 2 * TRAILER,
                        "index shorter than its fixed parts")
        expected = INDEX_HEADER + FANOUT + count * (DIGEST + 8) + 2 * TRAILER
        if len(view) != expected:
            raise _corrupt("truncated" if len(view) < expected else "trailing_bytes",
                           min(len(view), expected),
                           f"index of {count} entries must be {expected} bytes, is {len(view)}")
        self.count = count
        self._digests = INDEX_HEADER + FANOUT
        self._offsets = self._digests + count * DIGEST
        self.pack_trailer = bytes(view[self._offsets + count * 8:][:TRAILER])
        self.checksum = bytes(view[-TRAILER:])

    def fanout(self, b: int) -> int:
        return _u64(self._view, INDEX_HEADER + 8 * b)

    def digest(self, i: int) -> bytes:
        at = self._digests + i * DIGEST
        return bytes(self._view[at:at + DIGEST])

    def offset(self, i: int) -> int:
        return _u64(self._view, self._offsets + 8 * i)

    def entries(self) -> tuple[list[bytes], list[int]]:
        """``(digests, offsets)``: every digest and its offset, in index order."""
        return ([self.digest(i) for i in range(self.count)],
                [self.offset(i) for i in range(self.count)])

    def _bounds(self, first: int) -> tuple[int, int]:
        # a corrupt fan-out may narrow the search (a miss) but never leaves the table
        lo = self.fanout(first - 1) if first else 0
        hi = min(self.fanout(first), self.count)
        return min(lo, hi), hi

    def lookup(self, digest: bytes) -> int:
        """The entry offset of ``digest``, or -1."""
        if len(digest) != DIGEST:
            raise ValueError("a digest is 32 bytes")
        lo, hi = self._bounds(digest[0])
        keys = _DigestSeq(self)
        i = bisect.bisect_left(keys, digest, lo, hi)
        return self.offset(i) if i < hi and keys[i] == digest else -1

    def lookup_many(self, digests: bytes) -> list[int]:
        """``[lookup(d) for d in digests]`` for concatenated 32-byte digests."""
        if len(digests) % DIGEST:
            raise ValueError("digests must be concatenated 32-byte digests")
        return [self.lookup(digests[i:i + DIGEST]) for i in range(0, len(digests), DIGEST)]

    def check(self) -> list[tuple[str, int, str]]:
        """Structural findings ``(code, offset, detail)``: fan-out monotone and consistent
        with the digests, digests strictly ascending, the checksum."""
        found: list[tuple[str, int, str]] = []
        previous = 0
        for b in range(256):
            value = self.fanout(b)
            if value < previous:
                found.append(("index_fanout", INDEX_HEADER + 8 * b,
                              f"fan-out entry {b} ({value}) is below entry {b - 1} ({previous})"))
                break
            previous = value
        else:
            if previous != self.count:
                found.append(("index_fanout", INDEX_HEADER + 8 * 255,
                              f"last fan-out entry is {previous}, the count is {self.count}"))
            else:
                counts = [0] * 256
                for i in range(self.count):
                    counts[self.digest(i)[0]] += 1
                total = 0
                for b in range(256):
                    total += counts[b]
                    if total != self.fanout(b):
                        found.append(("index_fanout", INDEX_HEADER + 8 * b,
                                      f"fan-out entry {b} is {self.fanout(b)}, the digests "
                                      f"give {total}"))
                        break
        for i in range(1, self.count):
            if self.digest(i) <= self.digest(i - 1):
                found.append(("index_unsorted", self._digests + i * DIGEST,
                              f"digest {i} does not follow digest {i - 1} in strictly "
                              f"ascending order"))
                break
        body = self._view[:-TRAILER]
        if blake3(body).digest() != self.checksum:
            found.append(("index_checksum", len(self._view) - TRAILER,
                          "the index checksum is not BLAKE3 of the preceding bytes"))
        return found


class _DigestSeq(Sequence[bytes]):
    """The index's digests as a sequence, for ``bisect``."""

    def __init__(self, index: Index) -> None:
        self._index = index

    def __len__(self) -> int:
        return self._index.count

    def __getitem__(self, i: Any) -> Any:
        return self._index.digest(i)


class Pack(_Reader):
    """A ``.pack`` file held as a buffer. The constructor checks the header; ``entry``
    checks each entry's framing as it reads it; ``scan`` walks all of them."""

    def __init__(self, buffer: Any) -> None:
        view = self._hold(buffer)
        self.count = _header(view, PACK_MAGIC, "pack", PACK_HEADER + TRAILER,
                             "pack shorter than header and trailer")
        self.end = len(view) - TRAILER  # entries end here
        self.trailer = bytes(view[self.end:])

    def body_digest(self) -> bytes:
        """BLAKE3 of every byte before the trailer (what the trailer must be)."""
        return blake3(self._view[:self.end]).digest()

    def frame(self, offset: int) -> tuple[int, int, int]:
        """``(form, stored, logical)`` of the entry at ``offset``, framing checked."""
        if offset < PACK_HEADER or offset + ENTRY_HEADER > self.end:
            raise _corrupt("bad_offset" if offset < PACK_HEADER or offset >= self.end
                           else "truncated", offset,
                           "entry offset outside the pack's entries" if offset < PACK_HEADER
                           or offset >= self.end else "entry header runs into the trailer")
        view = self._view
        form = view[offset]
        stored = _u64(view, offset + 1)
        logical = _u64(view, offset + 9)
        if form not in (FORM_RAW, FORM_DEFLATE):
            raise _corrupt("bad_form", offset, f"unknown form byte {form:#04x}")
        if stored > self.end - offset - ENTRY_HEADER:
            raise _corrupt("truncated", offset + 1, f"stored length {stored} runs past the "
                                                    f"pack's entries")
        if form == FORM_RAW and stored != logical:
            raise _corrupt("length_mismatch", offset + 9, f"raw entry stores {stored} bytes "
                                                          f"but says {logical}")
        return form, stored, logical

    def entry(self, offset: int, digest: bytes | None, inflate: Inflate,
              copy: bool = True) -> Any:
        """The logical bytes of the entry at ``offset`` (of a DEFLATE entry: what
        ``inflate`` returns); with ``copy=False`` a raw entry is a memoryview into the
        pack (verified first unless ``digest`` is None)."""
        form, stored, logical = self.frame(offset)
        start = offset + ENTRY_HEADER
        payload = self._view[start:start + stored]
        if form == FORM_RAW and not copy:
            _verify(payload, digest, start)
            return payload
        self._busy += 1
        try:
            return _decode(form, payload, logical, start, digest, inflate)
        finally:
            self._busy -= 1

    def find(self, index: Index, digest: bytes, verify: bool, inflate: Inflate,
             copy: bool = True) -> Any:
        """``entry`` of ``digest``'s offset in ``index`` (verified unless ``verify`` is
        False), or None if the index does not list it: a ``get`` in one call."""
        offset = index.lookup(digest)
        if offset < 0:
            return None
        return self.entry(offset, digest if verify else None, inflate, copy)

    def read_many(self, index: Index, digests: bytes, out: list[Any], verify: bool,
                  inflate: Inflate, copy: bool = True) -> int:
        """Fill every ``None`` slot ``i`` of ``out`` whose digest (``digests[32i:32i+32]``)
        this pack holds, in order; return how many were filled. ``copy=False``: raw
        entries are memoryviews into the pack, as ``entry`` gives them."""
        filled = 0
        index._busy += 1
        try:
            for i, offset in enumerate(index.lookup_many(digests)):
                if out[i] is None and offset >= 0:
                    digest = digests[i * DIGEST:(i + 1) * DIGEST]
                    out[i] = self.entry(offset, digest if verify else None, inflate, copy)
                    filled += 1
        finally:
            index._busy -= 1
        return filled

    def check_entries(self, offsets: Sequence[int], digests: bytes, inflate: Inflate,
                      copy: bool = True) -> list[Any]:
        """fsck's loop: for each ``offsets[i]``, the entry's logical bytes verified against
        ``digests[32i:32i+32]``, or the ``CorruptObjectError`` it fails with (returned,
        not raised). ``copy=False``: raw entries are memoryviews into the pack."""
        if len(digests) != DIGEST * len(offsets):
            raise ValueError("one 32-byte digest per offset")
        out: list[Any] = []
        for i, offset in enumerate(offsets):
            try:
                out.append(self.entry(offset, digests[i * DIGEST:(i + 1) * DIGEST], inflate,
                                      copy))
            except CorruptObjectError as exc:
                # kept without traceback and context: their frames hold views of the buffer
                exc.__traceback__ = exc.__context__ = None
                out.append(exc)
        return out

    def check_entries_summary(self, offsets: Sequence[int], digests: bytes,
                              inflate: Inflate, copy: bool = True) -> EntriesSummary:
        """``check_entries`` with the leaves summed up instead of returned: ``(leaves,
        leaf_bytes, deflated, deflated_bytes, rest)``. ``leaves`` concatenates the digests
        of the intact leaves (bytes, as ``check_entries`` returns them, empty or not
        starting with a CBOR map head: no references), ``leaf_bytes`` their logical
        bytes; ``deflated``/``deflated_bytes`` count the intact entries whose form byte
        says DEFLATE (leaves or not); ``rest`` lists ``(i, value)`` for every other entry,
        in order: a structured one (its bytes), what ``inflate`` returned that is not
        bytes, or the ``CorruptObjectError`` it fails with."""
        leaves = bytearray()
        leaf_bytes = deflated = deflated_bytes = 0
        rest: list[tuple[int, Any]] = []
        for i, got in enumerate(self.check_entries(offsets, digests, inflate, copy)):
            if isinstance(got, CorruptObjectError):
                rest.append((i, got))
                continue
            form, _, logical = self.frame(offsets[i])
            if form == FORM_DEFLATE:
                deflated += 1
                deflated_bytes += logical
            if isinstance(got, (bytes, memoryview)) and (len(got) == 0
                                                         or got[0] not in MAP_HEADS):
                leaves += digests[i * DIGEST:(i + 1) * DIGEST]
                leaf_bytes += logical
            else:
                rest.append((i, got))
        return bytes(leaves), leaf_bytes, deflated, deflated_bytes, rest

    def scan(self) -> tuple[list[int], tuple[str, int, str] | None]:
        """Walk the framing from the header: the entry offsets found, and the first
        framing problem (``(code, offset, detail)``) or None. A clean walk ends exactly at
        the trailer after ``count`` entries."""
        offsets: list[int] = []
        at = PACK_HEADER
        while at < self.end:
            try:
                _, stored, _ = self.frame(at)
            except CorruptObjectError as exc:
                return offsets, (str(exc.detail), exc.offset or at, str(exc))
            offsets.append(at)
            at += ENTRY_HEADER + stored
        if len(offsets) != self.count:
            return offsets, ("pack_count", 8, f"the header says {self.count} entries, "
                                              f"the pack holds {len(offsets)}")
        return offsets, None


def parse_address(text: str) -> bytes:
    """The 32 digest bytes of one ``"blake3:<64 lowercase hex>"`` address."""
    if not _is_address(text):
        raise SchemaViolationError(f"not a blake3 address: {text!r}", detail="address")
    return bytes.fromhex(text[len(_PREFIX):])


def _is_address(text: Any) -> bool:
    return (type(text) is str and len(text) == len(_PREFIX) + 64
            and text.startswith(_PREFIX) and _HEX.issuperset(text[len(_PREFIX):]))


def parse_addresses(addresses: Sequence[str]) -> bytes:
    """The concatenated 32-byte digests of ``"blake3:<64 lowercase hex>"`` addresses;
    ``SchemaViolationError`` (detail ``"address"``, as ``objects.parse_address``) naming
    the first malformed one and its position."""
    out = bytearray()
    for i, text in enumerate(addresses):
        if not _is_address(text):
            raise SchemaViolationError(f"addresses[{i}] is not a blake3 address: {text!r}",
                                       detail="address")
        out += bytes.fromhex(text[len(_PREFIX):])
    return bytes(out)
