"""Input discovery and streaming readers (REVERIFY.md §1).

Every reader yields :class:`Item` values one document at a time, so memory stays bounded
by the largest single document (capped at ``MAX_DOCUMENT_BYTES``), never by the corpus.
Documents travel as raw bytes: the workers parse them, so parsing runs in parallel.
A document that cannot even be delimited (an over-long line, a broken compressed stream,
a CBOR item whose length cannot be read) becomes an ``error`` item carrying its location
and the reason, and the run goes on.
"""
from __future__ import annotations

import gzip
import io
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import BinaryIO

from .._files import JSONLines, open_regular
from .._optional import require
from ..errors import InputError as InputError  # re-exported: reverify.InputError

# One document larger than this is reported as invalid_record instead of being buffered.
MAX_DOCUMENT_BYTES = 256 * 1024 * 1024
_CHUNK = 1 << 20

JSON_SUFFIXES = (".json",)
JSONL_SUFFIXES = (".jsonl", ".jsonl.gz", ".jsonl.zst", ".ndjson", ".ndjson.gz", ".ndjson.zst")
CBOR_SUFFIXES = (".cbor", ".cborseq", ".cbors")
ALL_SUFFIXES = JSON_SUFFIXES + JSONL_SUFFIXES + CBOR_SUFFIXES


@dataclass(frozen=True, slots=True)
class Item:
    """One document (or one undelimitable stretch) with its location.

    ``kind`` is "json", "cbor" or "error"; for "error" ``payload`` is the reason (UTF-8).
    ``disk_bytes`` is how far the underlying file advanced for it (compressed bytes for
    .gz/.zst), which drives the progress ETA.
    """

    kind: str
    payload: bytes
    source: dict[str, object]
    disk_bytes: int


def input_kind(path: str) -> str | None:
    """"json", "jsonl" or "cbor" from the file name, or None when it is not an input."""
    name = path.lower()
    if name.endswith(JSONL_SUFFIXES):
        return "jsonl"
    if name.endswith(JSON_SUFFIXES):
        return "json"
    if name.endswith(CBOR_SUFFIXES):
        return "cbor"
    return None


def expand_paths(paths: Sequence[str | os.PathLike[str]]) -> list[str]:
    """The input files, in command-line order; directories expanded recursively in sorted
    order (so a run's order, and therefore its report, never depends on the file system)."""
    files: list[str] = []
    for raw in paths:
        path = os.fspath(raw)
        if os.path.isdir(path):
            found: list[str] = []
            for root, dirs, names in os.walk(path):
                dirs.sort()
                found.extend(os.path.join(root, n) for n in sorted(names) if input_kind(n))
            files.extend(found)
        elif os.path.isfile(path):
            if input_kind(path) is None:
                raise InputError(
                    f"{path}: unknown input type (expected one of {', '.join(ALL_SUFFIXES)})"
                )
            files.append(path)
        else:
            raise InputError(f"{path}: no such file or directory")
    return files


def total_disk_bytes(files: Sequence[str]) -> int:
    """For the progress ETA only; an unreadable file counts 0 (it is reported later)."""
    total = 0
    for f in files:
        try:
            total += os.path.getsize(f)
        except OSError:
            pass
    return total


class _CountingReader(io.RawIOBase):
    """Counts the bytes read from the file, so compressed inputs report disk progress."""

    def __init__(self, raw: BinaryIO) -> None:
        self._raw = raw
        self.count = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        n = self._raw.readinto(buffer)  # type: ignore[attr-defined]
        self.count += n or 0
        return n or 0

    def close(self) -> None:
        self._raw.close()
        super().close()


def iter_items(files: Sequence[str]) -> Iterator[Item]:
    """Every document of every file, in order."""
    for path in files:
        kind = input_kind(path)
        reader = (_read_json_file if kind == "json" else _read_jsonl if kind == "jsonl"
                  else _read_cbor_sequence)
        try:
            yield from reader(path)
        except OSError as exc:  # unreadable file (vanished, broken link, I/O error)
            reason = f"cannot read the file: {type(exc).__name__}: {exc}"
            yield Item("error", reason.encode(), {"file": path}, 0)


def _read_json_file(path: str) -> Iterator[Item]:
    size = os.path.getsize(path)
    source: dict[str, object] = {"file": path}
    if size > MAX_DOCUMENT_BYTES:
        reason = f"document of {size} bytes exceeds the {MAX_DOCUMENT_BYTES}-byte limit"
        yield Item("error", reason.encode(), source, size)
        return
    with open_regular(path) as f:
        yield Item("json", f.read(), source, size)


def _open_lines(path: str) -> tuple[BinaryIO, _CountingReader]:
    name = path.lower()
    if name.endswith(".zst"):  # before opening: a missing package must not leak the file
        zstandard = require("zstandard", f"reading {path}")
    counter = _CountingReader(open_regular(path))  # closed by the caller
    stream: BinaryIO
    if name.endswith(".gz"):
        stream = gzip.GzipFile(fileobj=io.BufferedReader(counter, _CHUNK), mode="rb")  # type: ignore[assignment]
    elif name.endswith(".zst"):
        reader = zstandard.ZstdDecompressor().stream_reader(
            io.BufferedReader(counter, _CHUNK), read_across_frames=True
        )
        stream = io.BufferedReader(reader, _CHUNK)
    else:
        stream = io.BufferedReader(counter, _CHUNK)
    return stream, counter


def _stream_errors() -> tuple[type[BaseException], ...]:
    errors: list[type[BaseException]] = [EOFError, OSError, gzip.BadGzipFile]
    try:
        import zstandard

        errors.append(zstandard.ZstdError)
    except ImportError:  # optional (the zstd extra): no .zst input can be open then
        pass
    import zlib

    errors.append(zlib.error)
    return tuple(errors)


def _read_jsonl(path: str) -> Iterator[Item]:
    """One document per line (``canonkit._files.JSONLines``: blank lines are counted and
    skipped). A line longer than the limit is reported and skipped up to its newline; a
    broken compressed stream ends the file with one ``error`` item at the line where it
    broke."""
    stream, counter = _open_lines(path)
    broken = _stream_errors()
    reader = JSONLines(stream, max_line=MAX_DOCUMENT_BYTES)
    lines = iter(reader)
    last = 0
    try:
        while True:
            try:
                got = next(lines, None)
            except broken as exc:
                reason = f"input stream broken: {type(exc).__name__}: {exc}"
                yield Item("error", reason.encode(), {"file": path, "line": reader.lines + 1},
                           counter.count - last)
                return
            if got is None:
                return
            line_no, line = got
            source: dict[str, object] = {"file": path, "line": line_no}
            if line is None:
                reason = f"line exceeds the {MAX_DOCUMENT_BYTES}-byte document limit"
                yield Item("error", reason.encode(), source, counter.count - last)
                last = counter.count
                continue
            if not line:
                continue
            now = counter.count
            yield Item("json", line, source, now - last)
            last = now
    finally:
        stream.close()
        counter.close()


def _read_cbor_sequence(path: str) -> Iterator[Item]:
    """RFC 8742: concatenated CBOR data items, each one document, located by byte offset.

    Items are delimited with ``canonkit.cbor`` (core profile): decoding a buffer that holds
    more than one item stops with ``trailing_data`` at the end of the first, which gives
    its length (the worker decodes the item again; the parent only delimits). An item that
    is not well-formed (or not deterministic CBOR) ends the file: after it no item boundary
    can be trusted.
    """
    from .. import cbor, errors

    with open_regular(path) as f:
        buf = b""
        pos = 0  # start of the next item in buf
        base = 0  # file offset of buf[pos]
        eof = False
        while True:
            if pos == len(buf):
                if eof:
                    return
                buf, pos = f.read(_CHUNK), 0
                if not buf:
                    return
            view = memoryview(buf)[pos:]
            try:
                cbor.decode(view)
                end = len(view)
            except errors.TrailingDataError as exc:
                end = int(exc.offset)  # type: ignore[arg-type]
            except errors.TruncatedError as exc:
                if not eof and len(view) <= MAX_DOCUMENT_BYTES:
                    more = f.read(max(_CHUNK, len(view)))
                    if more:
                        buf, pos = bytes(view) + more, 0
                    else:
                        eof = True
                    continue
                reason = (
                    f"document exceeds the {MAX_DOCUMENT_BYTES}-byte limit"
                    if len(view) > MAX_DOCUMENT_BYTES
                    else f"truncated CBOR item: {exc}"
                )
                yield Item("error", reason.encode(), {"file": path, "offset": base}, len(view))
                return
            except errors.DecodeError as exc:
                reason = f"CBOR item cannot be read ({exc.code}): {exc}"
                yield Item("error", reason.encode(), {"file": path, "offset": base}, len(view))
                return
            yield Item("cbor", bytes(view[:end]), {"file": path, "offset": base}, end)
            pos += end
            base += end
