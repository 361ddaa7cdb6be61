"""The CAR kernel's pure-Python twin: the reference oracle of ``canonkit.car._sections``.

Two hot loops, fed by the reader (``canonkit.car.verify``) with the file's bytes as it
streams them:

- :class:`Scanner` walks the sections of a data payload, parses each CID and recomputes
  its digest, and records what the index check needs: each section's offset, a flag byte
  (an identity CID?) and the multihash of its CID (``keys``, ended at ``key_ends``) — at
  most 17 bytes besides the multihash, itself part of the section, per section;
- :class:`EntryChecker` checks the entries of one index bucket against those records; it
  reads the file only for the CID of a section it reports a finding about.

Both report problems as tuples ``(code, offset, cid, info)``: the finding code, the byte
offset in the file, the CID's bytes (or None) and a tuple of values the findings layer
(``canonkit.car.findings``) turns into words. The compiled kernel produces exactly the
same tuples; ``tests/test_car_kernel.py`` holds them to it.
"""
from __future__ import annotations

import hashlib
from array import array
from bisect import bisect_left
from collections.abc import Callable, Collection
from typing import Any

from ..errors import CanonkitError
from .format import (
    DAG_CBOR,
    IDENTITY,
    MAX_VARINT_BYTES,
    CidProblem,
    VarintProblem,
    parse_cid,
    read_at,
    read_varint,
)
from .frames import Frame, Need, Stop, Zero, block_problems, next_frame

__all__ = ["COVERED", "IDENTITY_CID", "EntryChecker", "Problem", "Scanner", "sha256"]

Problem = tuple[str, int, "bytes | None", tuple[Any, ...]]

#: section flags (one byte per section recorded): its CID is an identity CID; an index
#: entry points at it
IDENTITY_CID = 0x01
COVERED = 0x02

#: bytes read at an index entry's offset besides the digest: the section's length varint
#: and a CIDv1's version, codec, hash code and length varints (at most 9 bytes each)
_CID_HEAD = 5 * MAX_VARINT_BYTES


def sha256(data: Any) -> bytes:
    """SHA-256 of ``data`` (the compiled kernel computes it in C)."""
    return hashlib.sha256(data).digest()


class _Problems:
    """The problems found, at most ``limit`` per code; the rest are only counted."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.problems: list[Problem] = []
        self.counts: dict[str, int] = {}

    def add(self, code: str, offset: int, cid: bytes | None, info: tuple[Any, ...]) -> None:
        seen = self.counts.get(code, 0)
        self.counts[code] = seen + 1
        if seen < self.limit:
            self.problems.append((code, offset, cid, info))


class Scanner:
    """Walks the sections between ``data_start`` (the first section) and ``data_end``
    (absolute file offsets). ``payload_start`` is where the data payload begins (index
    offsets count from there). ``roots``: CIDs to look for; ``strict``: called with each
    dag-cbor block, raising a CanonkitError if it is not strict DAG-CBOR; ``record``: keep
    ``offsets`` and ``flags`` for the index check; ``limit``: problems kept per code.

    :meth:`feed` takes the file's bytes from an absolute offset and returns how many it
    consumed (whole sections); ``wanted`` then says how many bytes from there the next
    call needs at least. ``done`` is set once the walk reached ``data_end`` or a framing
    error stopped it (``stopped_at``). Call :meth:`finish` after the last feed.
    """

    def __init__(self, payload_start: int, data_start: int, data_end: int, *,
                 roots: Collection[bytes] = (), strict: Callable[[Any], object] | None = None,
                 record: bool = False, limit: int = 1000) -> None:
        self.payload_start = payload_start
        self.data_end = data_end
        self.position = data_start
        self.roots = frozenset(roots)
        self.strict = strict
        self.record = record
        self._problems = _Problems(limit)
        self.problems = self._problems.problems
        self.counts = self._problems.counts
        self.blocks = 0
        self.block_bytes = 0
        self.verified = 0
        self.codecs: dict[int, int] = {}
        self.hashes: dict[int, int] = {}
        self.roots_found: set[bytes] = set()
        self.offsets = array("Q")
        self.flags = bytearray()
        self.keys = bytearray()
        self.key_ends = array("Q")
        self.wanted = 0
        self.done = False
        self.stopped_at: int | None = None
        self._zero_start = -1
        self._zero_count = 0

    def feed(self, view: Any, pos: int) -> int:
        """Walk the whole sections in ``view`` (the file's bytes from offset ``pos``, which
        is where the walk stands); returns the bytes consumed."""
        if pos != self.position:
            raise ValueError(f"fed at offset {pos}, but the walk stands at {self.position}")
        p = 0
        self.wanted = 0
        while not self.done:
            frame = next_frame(view, p, pos, self.data_end)
            if isinstance(frame, Frame):
                self._flush_zeros()
                self._section(view, frame, pos)
                p = frame.end
            elif isinstance(frame, Zero):
                if self._zero_count == 0:
                    self._zero_start = pos + p
                self._zero_count += 1
                p += 1
            elif isinstance(frame, Need):
                self.wanted = frame.wanted
                break
            elif isinstance(frame, Stop):
                self._flush_zeros()
                self._problems.add(frame.code, pos + p, None, frame.info)
                self.done = True
                self.stopped_at = pos + p
            else:
                self._flush_zeros()
                self.done = True
        self.position = pos + p
        return p

    def finish(self) -> None:
        self._flush_zeros()

    def _flush_zeros(self) -> None:
        if self._zero_count:
            self._problems.add("car_zero_length_section", self._zero_start, None,
                               (self._zero_count,))
            self._zero_count = 0

    def _section(self, view: Any, frame: Frame, pos: int) -> None:
        offset = pos + frame.start
        try:
            cid = parse_cid(view, frame.cid_start, frame.end)
        except CidProblem as exc:
            self._problems.add("car_cid_invalid", offset, None, (exc.reason, exc.value))
            return
        cid_bytes = bytes(view[frame.cid_start:cid.end])
        block = view[cid.end:frame.end]
        self.blocks += 1
        self.block_bytes += frame.end - cid.end
        self.codecs[cid.codec] = self.codecs.get(cid.codec, 0) + 1
        self.hashes[cid.hash_code] = self.hashes.get(cid.hash_code, 0) + 1
        if self.record:
            self.offsets.append(offset - self.payload_start)
            self.flags.append(IDENTITY_CID if cid.hash_code == IDENTITY else 0)
            self.keys += view[cid.mh_start:cid.end]
            self.key_ends.append(len(self.keys))
        if cid_bytes in self.roots:
            self.roots_found.add(cid_bytes)
        expected = bytes(view[cid.digest_start:cid.digest_start + cid.digest_length])
        found = block_problems(cid, expected, block)
        if all(code == "car_short_digest" for code, _ in found):
            self.verified += 1
        for code, info in found:
            self._problems.add(code, offset, cid_bytes, info)
        if self.strict is not None and cid.codec == DAG_CBOR:
            try:
                self.strict(block)
            except CanonkitError as exc:
                self._problems.add("car_strict_decode", offset, cid_bytes,
                                   (exc.code, exc.offset, str(exc)))


class EntryChecker:
    """Checks index entries against the sections a :class:`Scanner` recorded: ``offsets``
    (from ``payload_start``, ascending), ``flags`` (updated in place: COVERED marks a
    section an entry pointed at), ``keys`` and ``key_ends`` (each section's multihash).
    The CID of a section a kept finding is about is read back from the open file ``fd``,
    within the data, which ends at ``data_end``. Call :meth:`bucket` before the entries of
    each bucket, :meth:`feed` with whole entries, :meth:`missing` at the end.
    """

    def __init__(self, fd: int, payload_start: int, data_end: int, offsets: Any,
                 flags: bytearray, keys: Any, key_ends: Any, *, fully_indexed: bool,
                 limit: int = 1000) -> None:
        if not len(offsets) == len(flags) == len(key_ends):
            raise ValueError("offsets, flags and key_ends differ in length")
        self.fd = fd
        self.payload_start = payload_start
        self.data_end = data_end
        self.offsets = offsets
        self.flags = flags
        self.keys = keys
        self.key_ends = key_ends
        self.fully_indexed = fully_indexed
        self._problems = _Problems(limit)
        self.problems = self._problems.problems
        self.counts = self._problems.counts
        self.entries = 0
        self._width = 8
        self._code: int | None = None
        self._previous: bytes | None = None

    def bucket(self, width: int, code: int | None) -> None:
        """Entries of ``width`` bytes (digest and 8-byte offset) follow, all of multihash
        ``code`` (None: car-index-sorted, whose buckets do not say)."""
        self._width = width
        self._code = code
        self._previous = None

    def feed(self, view: Any, pos: int) -> None:
        """The whole entries in ``view``, which starts at file offset ``pos``."""
        width = self._width
        size = width - 8
        for i in range(0, len(view) - width + 1, width):
            self.entries += 1
            here = pos + i
            key = bytes(view[i:i + size])
            offset = int.from_bytes(view[i + size:i + width], "little")
            if self._previous is not None and key < self._previous:
                self._problems.add("car_index_unsorted", here, None, ("entry",))
            self._previous = key
            k = bisect_left(self.offsets, offset)
            if k == len(self.offsets) or self.offsets[k] != offset:
                self._problems.add("car_index_bad_offset", here, None, (offset,))
                continue
            if self.flags[k] & COVERED:
                self._problems.add("car_index_duplicate", here, None, (offset,))
                continue
            self.flags[k] |= COVERED
            self._compare(here, k, key)
            if self.flags[k] & IDENTITY_CID and not self.fully_indexed:
                self._problems.add("car_index_identity", here, None, (offset,))

    def _compare(self, here: int, k: int, key: bytes) -> None:
        multihash = bytes(self.keys[self.key_ends[k - 1] if k else 0:self.key_ends[k]])
        code, p = read_varint(multihash, 0, len(multihash))
        _, p = read_varint(multihash, p, len(multihash))
        held = multihash[p:]
        if self._code is not None and code != self._code:
            info: tuple[Any, ...] = ("code", self._code, code)
        elif len(held) != len(key):
            info = ("length", len(key), len(held))
        elif held != key:
            info = ("digest", key, held)
        else:
            return
        self._problems.add("car_index_mismatch", here, self._kept_cid("car_index_mismatch", k),
                           info)

    def _kept_cid(self, code: str, k: int) -> bytes | None:
        """The CID of section ``k`` for a finding of ``code`` that will be kept (None for
        one only counted, or if the file no longer holds it)."""
        if self.counts.get(code, 0) >= self._problems.limit:
            return None
        start = self.payload_start + self.offsets[k]
        limit = self.data_end - start
        multihash = self.key_ends[k] - (self.key_ends[k - 1] if k else 0)
        raw = read_at(self.fd, min(_CID_HEAD + multihash, limit), start)
        try:
            length, q = read_varint(raw, 0, len(raw))
            cid = parse_cid(raw, q, min(len(raw), q + length))
        except (VarintProblem, CidProblem):
            return None
        return bytes(raw[q:cid.end])

    def missing(self) -> None:
        """Report every recorded section no entry pointed at that the index must list:
        every section when fully indexed, else every one but identity CIDs."""
        for k, flag in enumerate(self.flags):
            if flag & COVERED or (flag & IDENTITY_CID and not self.fully_indexed):
                continue
            self._problems.add("car_index_missing", self.payload_start + self.offsets[k],
                               self._kept_cid("car_index_missing", k), ())
