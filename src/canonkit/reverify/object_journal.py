"""``--journal URL`` (REVERIFY.md §7): the journal of a run under a prefix of object storage
(``s3://``, ``gs://``, ``az://``).

Object storage cannot append, so the journal is a prefix holding the same lines as a local
journal (``journal``), one object each: ``header``, this run's header line, created with
``If-None-Match: *``; and ``entries/<BLAKE3 of the unit key>``, one sealed entry line per
finished unit, written by one PUT when the unit finishes (a PUT is atomic and durable once
answered, so a client killed at any moment loses at most the units in flight, and no entry
is ever torn). A journal URL names the prefix, with or without its final ``/``.

A run with an existing journal reads its header (a header of other options or inputs is
refused, as a local one is) and lists its entries once, keeping only the first 8 bytes of
each name (in a sorted array: 8 bytes an entry, about 10 MB for a million units); an entry
is read when its unit comes up, its seal checked over its bytes as written and read by the
strict JSON reader, and its unit compared with the key it is filed under. An entry that
does not check (or cannot be read) is verified again, its entry rewritten, and counted
in ``notes`` when the run ends.
"""
from __future__ import annotations

from array import array
from bisect import bisect_left

from blake3 import blake3

from ..errors import JournalError, ObjectNotFoundError, ObjectStorageError, OutputPathError
from .journal import MAX_ENTRY, entry_line, header_line, mismatch, result_of
from .units import UnitResult

HEADER = "header"
ENTRIES = "entries/"


def journal_prefix(name: str) -> str:
    """The journal's prefix URL (a ``/`` added); ``JournalError`` for a URL that cannot
    hold one (http(s) is read-only; ``file://`` names a local journal)."""
    from .._files.remote import storage_prefix

    return storage_prefix(name, what="journal", local="path", error=JournalError)


class ObjectJournal:
    """An open journal under a prefix of object storage, with the interface of
    ``journal.Journal``: ``get``, ``record``, ``notes``, ``open``, ``close``."""

    def __init__(self, url: str, *, search_cap: int, require_layer3: bool,
                 paths: list[str]) -> None:
        from .._files import remote

        self.prefix = journal_prefix(url)
        self.path = remote.redact(self.prefix)
        holder = _input_prefix_holding(self.prefix, paths)
        if holder is not None:  # its objects would be inputs of the run that resumes
            raise OutputPathError(f"{self.path}: the journal lies under the input prefix "
                                  f"{holder}; give it a prefix of its own", detail=self.path)
        self.notes: list[str] = []
        self._header = header_line(search_cap=search_cap, require_layer3=require_layer3,
                                   paths=paths)
        self._damaged = 0
        try:
            held = self._read(HEADER, max_bytes=len(self._header) + MAX_ENTRY)
            self._new = held is None
            if held is not None and held != self._header:
                why = ("not a canonkit reverify journal" if not held.endswith(b"\n")
                       else mismatch(held[:-1]))
                raise JournalError(f"{self.path}: {why}; name another --journal, or remove "
                                   "this prefix to start over", detail=self.path)
            # names only, as the first 8 bytes of each (8 bytes an entry, not a string):
            # an entry is read when its unit comes up
            self._names = array("Q", sorted(
                _short(name) for name in (
                    info.url.rsplit("/", 1)[-1]
                    for info in ([] if self._new else remote.list_prefix(self.prefix + ENTRIES)))
                if _is_name(name)))
            self._recorded = 0
        except OSError as exc:  # ObjectStorageError, or a header past any header's size
            raise self._unreachable(exc) from None

    def _unreachable(self, exc: Exception) -> JournalError:
        return JournalError(f"{self.path}: the journal cannot be used: {exc}",
                            detail=self.path)

    def _read(self, name: str, *, max_bytes: int) -> bytes | None:
        from .._files import remote

        try:
            return remote.read_object(remote.head(self.prefix + name), max_bytes=max_bytes)
        except ObjectNotFoundError:
            return None

    @staticmethod
    def _name(key: str) -> str:
        return blake3(key.encode()).hexdigest()

    def open(self) -> None:
        """Create the header of a new journal (``If-None-Match: *``: a journal another
        client created meanwhile is refused, never shared)."""
        from .._files import remote
        from ..errors import PreconditionFailedError

        if not self._new:
            return
        try:
            remote.put(self.prefix + HEADER, self._header, if_none_match=True)
        except PreconditionFailedError:
            raise JournalError(f"{self.path}: another run created this journal meanwhile",
                               detail=self.path) from None
        except ObjectStorageError as exc:
            raise self._unreachable(exc) from None
        self._new = False

    def __len__(self) -> int:
        return len(self._names) + self._recorded

    def _listed(self, name: str) -> bool:
        """Whether an entry of that name was listed (or one sharing its first 8 bytes:
        then its GET finds none, and its unit is verified again)."""
        short = _short(name)
        at = bisect_left(self._names, short)
        return at < len(self._names) and self._names[at] == short

    def get(self, key: str | None) -> UnitResult | None:
        """The journalled result of the unit ``key`` (None: not journalled, or its entry
        cannot be read or does not check: then it is counted, and the unit verified
        again)."""
        if key is None:
            return None
        name = self._name(key)
        if not self._listed(name):
            return None
        try:
            line = self._read(ENTRIES + name, max_bytes=MAX_ENTRY)
        except OSError:  # unreadable or too large: verifying the unit again is never wrong
            line = None
        # (gone since the listing; or, one time in 10^7 for a million units, another
        # name sharing its first 8 bytes was listed: counted alike)
        result = None if line is None else result_of(line, key)
        if result is None:
            self._damaged += 1
        return result

    def record(self, key: str | None, result: UnitResult) -> None:
        """Store one finished unit's entry, durably (one PUT; what is not journalled:
        ``journal.entry_line``)."""
        from .._files import remote

        line = entry_line(key, result)
        if line is None or key is None:  # (entry_line gives None for no key)
            return
        name = self._name(key)
        try:
            remote.put(self.prefix + ENTRIES + name, line)
        except ObjectStorageError as exc:
            raise self._unreachable(exc) from None
        self._recorded += 1  # (a unit comes up once a run: it is not looked up again)

    def close(self) -> None:
        """Say in ``notes`` how many entries were ignored (entries are read as their units
        come up, so this is known at the end); nothing is held open between requests."""
        if self._damaged:
            self.notes.append(f"ignored {self._damaged} damaged entries (their units were "
                              "verified again)")
            self._damaged = 0


def _input_prefix_holding(prefix: str, inputs: list[str]) -> str | None:
    """The input prefix (canonical URL) among ``inputs`` (as named) under which the
    journal ``prefix`` lies, if any."""
    from .._files.urls import is_url, parse_url

    for name in inputs:
        try:
            url = parse_url(name) if is_url(name) else None
        except ValueError:  # the run refused such an input already
            continue
        if url is not None and url.is_prefix and prefix.startswith(str(url)):
            return str(url)
    return None


def _is_name(name: str) -> bool:
    return len(name) == 64 and all(c in "0123456789abcdef" for c in name)


def _short(name: str) -> int:
    return int(name[:16], 16)
