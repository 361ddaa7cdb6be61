"""``--journal FILE`` (REVERIFY.md §7): resume an interrupted run.

The journal is a local JSON-lines file (in object storage: ``object_journal``, the same
header and entries as objects). Its first line is a header naming the format and
what the results depend on (the verification version, the search cap, whether Layer 3 is
required, the inputs as named); a journal whose header differs is refused
(``JournalError``), never silently reused. Every later line is one finished unit of work:
the unit's identity (:func:`unit_key`: each input's path, size and modification time or
ETag, and the byte range or the item positions and a BLAKE3 of their bytes) and its
result (verdicts relative to the unit, line count, byte counts), sealed by a BLAKE3 of
the entry. Each entry is written, flushed and fsync'ed before the run goes on, so a
client killed at any moment leaves at most one torn last line: it is ignored (and cut
off before the run appends), as is any entry whose seal does not match; their units are
verified again.

A journal is read as a stream, through the input door (a regular file) and the strict JSON
reader (a repeated key or a malformed entry is a damaged entry); the seal is checked over
the entry's bytes as written. Only each entry's place in the file is kept in memory, 20
bytes an entry (the journal of a run over 10^8 Episodes is tens of GB); an entry is read
again, and its seal checked again, when its unit comes up.
"""
from __future__ import annotations

import base64
import os
from array import array
from bisect import bisect_right
from typing import Any, BinaryIO

import orjson
from blake3 import blake3

from .._files import Identity, loads_json, open_regular
from .._version import __version__
from ..errors import JournalError, JSONInputError
from . import blocks
from .lines import Verdict
from .worker import VERIFICATION_VERSION
from .units import CHANGED, Documents, JsonFiles, LineRange, Unit, UnitResult, WholeObject

FORMAT = "canonkit-reverify-journal/1"
# An entry line is exactly ``{"entry":ENTRY,"blake3":"HEX"}`` + newline (``record``).
_OPEN = b'{"entry":'
_SEAL = b',"blake3":"'
_CLOSE = b'"}'
_HEX = 64
# A unit's entry holds its report lines (under a kilobyte per Episode); a longer line is
# not one canonkit wrote, and is not buffered past this bound.
MAX_ENTRY = 256 * 1024 * 1024


def _identity(expect: Any) -> list[Any] | None:
    """What says an input is still the one a result came from: size and mtime of a file,
    size and ETag (or Last-Modified when there is none) of an object."""
    if expect is None:
        return None
    if isinstance(expect, Identity):
        return [expect.size, expect.mtime_ns]
    modified = None if expect.last_modified is None else expect.last_modified.isoformat()
    return [expect.size, expect.etag, modified if expect.etag is None else None]


def unit_key(unit: Unit) -> str | None:
    """The unit's identity as a string, or None when it has none a later run could match
    (an input whose identity is unknown)."""
    if isinstance(unit, LineRange):
        ident = _identity(unit.identity)
        if ident is None:
            return None
        value: Any = ["lines", unit.source, ident, unit.start, unit.end, unit.first,
                      unit.line0]
    elif isinstance(unit, JsonFiles):
        files = []
        for reported, _, identity in unit.files:
            ident = _identity(identity)
            if ident is None:
                return None
            files.append([reported, ident])
        value = ["json", files]
    elif isinstance(unit, WholeObject):
        ident = _identity(unit.input.identity)
        if ident is None:
            return None
        value = ["object", unit.input.path, ident]
    else:  # the parent read these: their bytes say exactly what was verified
        digest = blake3()
        positions = []
        for item in unit.items:
            digest.update(b"%d:%b%d:" % (len(item.kind), item.kind.encode(), len(item.payload)))
            digest.update(item.payload)
            positions.append([item.source.file, item.source.key, item.source.number])
        value = ["documents", positions, digest.hexdigest()]
    try:
        return orjson.dumps(value).decode()
    except orjson.JSONEncodeError:  # a file name that is not UTF-8: nothing to match on
        return None


def _encode(result: UnitResult) -> dict[str, Any] | None:
    counts = {"lines": result.lines, "doc_bytes": result.doc_bytes,
              "disk_bytes": result.disk_bytes}
    if result.block is not None:  # found whole in the cache: kept as it is
        return {"block": base64.b64encode(result.block.encode()).decode(), **counts}
    verdicts = []
    for v in result.verdicts:
        try:
            verdicts.append([v.head.decode(), v.number, v.tail.decode(), v.outcome,
                             v.episode_id, v.order, v.layer3])
        except UnicodeDecodeError:  # not expressible as JSON text: not journalled
            return None
    return {"verdicts": verdicts, **counts}


def _decode(value: Any) -> UnitResult:
    if "block" in value:
        block = blocks.decode(base64.b64decode(value["block"], validate=True))
        return UnitResult([], int(value["lines"]), int(value["doc_bytes"]),
                          int(value["disk_bytes"]), block=block)
    verdicts = [Verdict(head.encode(), number, tail.encode(), outcome, episode_id, order,
                        layer3)
                for head, number, tail, outcome, episode_id, order, layer3
                in value["verdicts"]]
    return UnitResult(verdicts, int(value["lines"]), int(value["doc_bytes"]),
                      int(value["disk_bytes"]))


def _seal(entry: bytes) -> str:
    return blake3(entry).hexdigest()


def header_line(*, search_cap: int, require_layer3: bool, paths: list[str]) -> bytes:
    """The header a journal of this run must hold, newline included."""
    return orjson.dumps({
        "format": FORMAT, "canonkit_version": __version__,
        "verification_version": VERIFICATION_VERSION,
        "options": {"search_cap": search_cap, "require_layer3": require_layer3},
        "inputs": list(paths)}) + b"\n"


def entry_line(key: str | None, result: UnitResult) -> bytes | None:
    """The sealed entry of one finished unit, newline included; None when it is not
    journalled: a refused range (its file changed, so no later run could match it), a
    unit holding an Episode that names its Layer 3 export by path (the journal keys on
    the inputs only), or a result that is not JSON text."""
    if key is None or result.lines == CHANGED or result.named_exports:
        return None
    encoded = _encode(result)
    if encoded is None:
        return None
    entry = orjson.dumps({"unit": key, "result": encoded})
    return b'{"entry":%b,"blake3":"%b"}\n' % (entry, _seal(entry).encode())


def entry_of(line: bytes) -> Any:
    """The entry of one journal line, its seal checked over its bytes as written and read
    by the strict JSON reader; None if the line is not a sound entry."""
    end = len(line) - 1 - len(_CLOSE)
    cut = end - _HEX - len(_SEAL)
    if (cut <= len(_OPEN) or not line.startswith(_OPEN) or line[cut:end - _HEX] != _SEAL
            or line[end:-1] != _CLOSE):
        return None
    entry = line[len(_OPEN):cut]
    if _seal(entry).encode() != line[end - _HEX:end]:
        return None
    try:
        value = loads_json(entry, source="journal entry")
    except JSONInputError:
        return None
    return value if isinstance(value, dict) else None


def unit_of(line: bytes) -> str | None:
    """The unit key of a sound entry line whose result decodes; None otherwise."""
    entry = entry_of(line)
    if entry is None or not isinstance(entry.get("unit"), str):
        return None
    try:
        _decode(entry["result"])
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
    return str(entry["unit"])


def result_of(line: bytes, key: str) -> UnitResult | None:
    """The result the entry line holds for the unit ``key`` (None: not a sound entry of
    that unit)."""
    entry = entry_of(line)
    if entry is None or entry.get("unit") != key:
        return None
    try:
        return _decode(entry["result"])
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def mismatch(line: bytes) -> str:
    """Why a header line other than this run's is refused, in words."""
    try:
        old = orjson.loads(line)
    except orjson.JSONDecodeError:
        old = None
    if not isinstance(old, dict) or old.get("format") != FORMAT:
        return "not a canonkit reverify journal"
    for what in ("canonkit_version", "verification_version"):
        if old.get(what) != (__version__ if what == "canonkit_version"
                             else VERIFICATION_VERSION):
            return f"a journal of another {what.replace('_', ' ')} ({old.get(what)!r})"
    return ("a journal of a run with other options or inputs "
            f"({orjson.dumps({k: old.get(k) for k in ('options', 'inputs')}).decode()})")


class _Places:
    """Where each unit's entry line is, as three parallel arrays sorted by the first 8
    bytes of the BLAKE3 of the unit key (20 bytes an entry, not a dict of key strings: a
    journal of a million units is resumed in 20 MB). Entries whose digests share those 8
    bytes are all tried, the last written first; each line is checked against the full
    key when read (``result_of``)."""

    def __init__(self) -> None:
        # while the journal is read: short << 128 | offset << 32 | length, one int each
        self._order: list[int] = []
        self._shorts = array("Q")
        self._offsets = array("Q")
        self._sizes = array("I")

    @staticmethod
    def _short(key: str) -> int:
        return int.from_bytes(blake3(key.encode()).digest()[:8], "big")

    def add(self, key: str, offset: int, length: int) -> None:
        self._order.append(self._short(key) << 128 | offset << 32 | length)

    def freeze(self) -> None:
        self._order.sort()
        for packed in self._order:
            self._shorts.append(packed >> 128)
            self._offsets.append(packed >> 32 & (1 << 96) - 1)
            self._sizes.append(packed & 0xFFFFFFFF)
        self._order = []

    def __len__(self) -> int:
        return len(self._shorts)

    def places(self, key: str) -> list[tuple[int, int]]:
        short = self._short(key)
        at = bisect_right(self._shorts, short)
        found = []
        while at > 0 and self._shorts[at - 1] == short:
            at -= 1
            found.append((self._offsets[at], self._sizes[at]))
        return found


class Journal:
    """An open journal: the results it holds (``get``), and ``record`` to append one.
    ``notes`` says what was ignored while reading it (a torn tail, damaged entries)."""

    def __init__(self, path: str | os.PathLike[str], *, search_cap: int,
                 require_layer3: bool, paths: list[str]) -> None:
        self.path = os.fspath(path)
        self.notes: list[str] = []
        self._entries = _Places()  # unit -> (offset, length) of its line
        self._reader: BinaryIO | None = None
        header = header_line(search_cap=search_cap, require_layer3=require_layer3,
                             paths=paths)
        self._header = header
        self._keep = self._read(header)  # JournalError now, before any work
        self._file: BinaryIO | None = None

    def open(self) -> None:
        """Open for appending: cut a torn tail (it would glue onto the next entry), or
        write the header of a new journal."""
        try:
            self._file = open(self.path, "r+b" if self._keep else "wb")  # noqa: SIM115
            if self._keep:
                self._file.truncate(self._keep)
                self._file.seek(self._keep)
            else:
                self._file.write(self._header)
            self._sync()
        except OSError as exc:
            raise JournalError(f"{self.path}: the journal cannot be written: "
                               f"{exc.strerror or exc}", detail=self.path) from None

    def _refuse(self, why: str) -> JournalError:
        return JournalError(f"{self.path}: {why}; name another --journal file, or remove "
                            "this one to start over", detail=self.path)

    def _read(self, header: bytes) -> int:
        """Index the entries of an existing journal; the length to keep (0: a new one)."""
        try:
            f = open_regular(self.path)
        except FileNotFoundError:
            return 0
        except OSError as exc:
            raise JournalError(f"{self.path}: the journal cannot be read: "
                               f"{getattr(exc, 'strerror', None) or exc}",
                               detail=self.path) from None
        try:
            first = f.readline(max(len(header), MAX_ENTRY) + 1)
            if not first.endswith(b"\n"):  # a header cut while written is ours to rewrite
                if header.startswith(first) and not f.read(1):
                    f.close()
                    return 0
                raise self._refuse("not a canonkit reverify journal")
            if first != header:
                raise self._refuse(mismatch(first[:-1]))
            keep = len(first)
            damaged = 0
            while True:
                line = f.readline(MAX_ENTRY + 1)
                if not line:
                    break
                if not line.endswith(b"\n"):
                    if len(line) > MAX_ENTRY:  # not ours: skip to its end, unbuffered
                        while line and not line.endswith(b"\n"):
                            line = f.readline(1 << 20)
                        if line:
                            damaged += 1
                            keep = f.tell()
                            continue
                    self.notes.append(f"ignored a torn last entry of {f.tell() - keep} "
                                      "bytes (its unit is verified again)")
                    break
                key = unit_of(line)
                if key is None:
                    damaged += 1
                else:
                    self._entries.add(key, keep, len(line))
                keep += len(line)
        except BaseException:
            f.close()
            raise
        self._entries.freeze()
        self._reader = f
        if damaged:
            self.notes.append(f"ignored {damaged} damaged entries (their units are "
                              "verified again)")
        return keep

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str | None) -> UnitResult | None:
        """The journalled result of the unit ``key``, read again from its line (None: not
        journalled, or its line no longer reads as the entry it was)."""
        if key is None:
            return None
        if self._reader is None:
            return None
        for offset, length in self._entries.places(key):  # the last written first
            try:
                line = os.pread(self._reader.fileno(), length, offset)
            except OSError as exc:
                raise JournalError(f"{self.path}: the journal cannot be read: "
                                   f"{exc.strerror or exc}", detail=self.path) from None
            result = result_of(line, key)
            if result is not None:
                return result
        return None

    def record(self, key: str | None, result: UnitResult) -> None:
        """Append one finished unit, durably (what is not journalled: ``entry_line``)."""
        line = entry_line(key, result)
        if line is None:
            return
        if self._file is None:
            raise RuntimeError("the journal is not open")
        try:
            self._file.write(line)
            self._sync()
        except OSError as exc:
            raise JournalError(f"{self.path}: the journal cannot be written: "
                               f"{exc.strerror or exc}", detail=self.path) from None

    def _sync(self) -> None:
        assert self._file is not None
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        for f in (self._file, self._reader):
            if f is not None:
                f.close()
        self._file = self._reader = None
