"""Inputs (REVERIFY.md §1): finding them, and the readers the parent runs itself.

**Every input named is read completely or reported.** :func:`expand_paths` walks the
directories it is given and returns every input file, in an order that does not depend on
the file system, plus an ``unreadable`` entry for each directory it cannot list and each
input-named entry it cannot use (a FIFO, socket or device, a dangling link); the run
reports those as ``invalid_record`` and fails. A named path that does not exist, is of an
unknown type, or is a directory holding no inputs at all is a usage error.

**Inputs by URL** (REVERIFY.md §6). A ``s3://``, ``gs://``, ``az://`` or ``http(s)://``
URL names one object, a URL ending in ``/`` a prefix listed recursively like a directory
(objects of a level by name, then its sub-prefixes; names that are no input are passed
over, as in a directory). Each object becomes an :class:`Input` whose ``path`` is its URL
(the name reports give) and whose ``identity`` is its ``ObjectInfo`` (size, ETag): every
reader below reads it through the same input door as a file (``canonkit._files``), and
refuses another version of it. A ``file://`` URL is its local path. A named object that
does not exist, a prefix with no inputs, or an object storage that cannot be listed is a
usage error naming the URL.

The readers yield :class:`Item` values one document at a time, so memory stays bounded by
the largest single document (``MAX_DOCUMENT_BYTES``), never by the corpus. A document that
cannot even be delimited (an over-long line, a broken compressed stream, a CBOR item whose
length cannot be read) becomes an ``error`` item with its location and the reason.
"""
from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._files import (
    Expect,
    Identity,
    JSONLines,
    check_unchanged,
    open_input,
    open_stream,
)
from .._files import describe_kind as _what  # "a FIFO", "a socket", ...: one wording
from .._files.urls import is_url
from ..errors import (
    CanonkitError,
    MissingDependencyError,
    ObjectNotFoundError,
    ObjectStorageError,
)
from ..errors import InputError as InputError  # re-exported: reverify.InputError
from .lines import Source

# One document larger than this is reported as invalid_record instead of being buffered.
MAX_DOCUMENT_BYTES = 256 * 1024 * 1024
_CHUNK = 1 << 20

JSON_SUFFIXES = (".json",)
JSONL_SUFFIXES = (".jsonl", ".jsonl.gz", ".jsonl.zst", ".ndjson", ".ndjson.gz", ".ndjson.zst")
CBOR_SUFFIXES = (".cbor", ".cborseq", ".cbors")
ALL_SUFFIXES = JSON_SUFFIXES + JSONL_SUFFIXES + CBOR_SUFFIXES
UNREADABLE = "unreadable"


@dataclass(frozen=True, slots=True)
class Input:
    """An input file (``kind`` "json", "jsonl" or "cbor"), or a path found but not
    readable (``kind`` "unreadable", ``reason`` says why). ``identity`` is the file the
    path named when the run was planned: every reader refuses any other."""

    path: str
    kind: str
    reason: str = ""
    identity: Expect = None

    @property
    def remote(self) -> bool:
        """An object of object storage (``path`` is its URL), not a local file."""
        return self.identity is not None and not isinstance(self.identity, Identity)


@dataclass(frozen=True, slots=True)
class Item:
    """One document (or one undelimitable stretch) with its location.

    ``kind`` is "json", "cbor" or "error"; for "error" ``payload`` is the reason (UTF-8).
    ``disk_bytes`` is how far the underlying file advanced for it (compressed bytes for
    .gz/.zst), which drives the progress ETA.
    """

    kind: str
    payload: bytes
    source: Source
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


def _cannot(what: str, exc: OSError) -> str:
    return f"cannot read the {what}: {type(exc).__name__}: {exc}"


def _walk(directory: str, out: list[Input], seen: set[tuple[int, int]]) -> None:
    """Depth first: the directory's input files in name order, then its sub-directories
    in name order (symbolic links to directories are followed; a directory reached a
    second time, through a link, is not read again)."""
    try:
        st = os.stat(directory)
        if (st.st_dev, st.st_ino) in seen:
            return
        seen.add((st.st_dev, st.st_ino))
        with os.scandir(directory) as listing:
            entries = sorted(listing, key=lambda e: e.name)
    except OSError as exc:
        out.append(Input(directory, UNREADABLE, _cannot("directory", exc)))
        return
    subdirectories = []
    for entry in entries:
        try:
            is_directory = entry.is_dir()
        except OSError:
            is_directory = False
        if is_directory:
            subdirectories.append(entry.path)
            continue
        kind = input_kind(entry.name)
        if kind is None:
            continue
        try:
            st = os.stat(entry.path)
        except OSError as exc:  # a dangling link, a file that vanished
            out.append(Input(entry.path, UNREADABLE, _cannot("file", exc)))
            continue
        if stat.S_ISREG(st.st_mode):
            out.append(Input(entry.path, kind, identity=Identity.of(st)))
        else:
            out.append(Input(entry.path, UNREADABLE, f"{_what(st.st_mode)}, not a regular file"))
    for sub in subdirectories:
        _walk(sub, out, seen)


def _expand_url(text: str) -> list[Input]:
    """The inputs a URL names: one object, every input object under a prefix, or, for a
    ``file://`` URL, what its local path names. InputError when there is none."""
    from .._files import remote
    from .._files.urls import parse_url

    url = parse_url(text)  # UnsupportedURLError (a ValueError: a usage error)
    if url.scheme == "file":
        return expand_paths([url.key])
    try:
        if not url.is_prefix:
            info = remote.head(url)
            kind = input_kind(info.url)
            if kind is None:
                raise InputError(f"{url}: unknown input type (expected one of "
                                 f"{', '.join(ALL_SUFFIXES)})", detail=str(url))
            return [Input(info.url, kind, identity=info)]
        found = [Input(info.url, kind, identity=info) for info in remote.list_prefix(url)
                 if (kind := input_kind(info.url)) is not None]
    except ObjectNotFoundError as exc:
        raise InputError(f"{url}: no such object (HTTP {exc.status})" if not url.is_prefix
                         else f"{url}: cannot be listed: {exc}", detail=str(url)) from None
    except ObjectStorageError as exc:  # after retries: denied, unreachable, ...
        raise InputError(str(exc), detail=str(url)) from None
    if not found:
        raise InputError(f"{url}: a prefix with no input objects (expected "
                         f"{', '.join(ALL_SUFFIXES)})", detail=str(url))
    return found


def expand_paths(paths: Sequence[str | os.PathLike[str]]) -> list[Input]:
    """The inputs, in command-line order; directories expanded recursively (files before
    sub-directories, each in name order), so a run's order — and its report — never
    depends on the file system. ``InputError`` for a path that cannot be used at all."""
    if not paths:
        raise InputError("no input paths given")
    inputs: list[Input] = []
    for raw in paths:
        path = os.fspath(raw)
        if is_url(path):
            inputs.extend(_expand_url(path))
            continue
        try:
            if "\x00" in path:
                raise OSError(f"a path cannot hold a NUL byte: {path!r}")
            st = os.stat(path)
        except FileNotFoundError:
            raise InputError(f"{path}: no such file or directory", detail=path) from None
        except OSError as exc:
            raise InputError(f"{path}: {_cannot('path', exc)}", detail=path) from None
        mode = st.st_mode
        if stat.S_ISDIR(mode):
            found: list[Input] = []
            _walk(path, found, set())
            if not found:
                raise InputError(f"{path}: a directory with no input files (expected "
                                 f"{', '.join(ALL_SUFFIXES)})", detail=path)
            inputs.extend(found)
        elif not stat.S_ISREG(mode):
            raise InputError(f"{path}: {_what(mode)}, not a regular file or directory",
                             detail=path)
        else:
            kind = input_kind(path)
            if kind is None:
                raise InputError(f"{path}: unknown input type (expected one of "
                                 f"{', '.join(ALL_SUFFIXES)})", detail=path)
            inputs.append(Input(path, kind, identity=Identity.of(st)))
    return inputs


def total_disk_bytes(inputs: Sequence[Input]) -> int:
    """For the progress ETA only; an unreadable file counts 0 (it is reported)."""
    total = 0
    for item in inputs:
        if item.identity is not None:
            total += item.identity.size
            continue
        try:
            total += os.path.getsize(item.path)
        except OSError:
            pass
    return total


def iter_items(inputs: Sequence[Input]) -> Iterator[Item]:
    """Every document of every input, in order; an unreadable input is one ``error``."""
    for item in inputs:
        path = item.path
        if item.kind == UNREADABLE:
            yield Item("error", item.reason.encode(), Source(path), 0)
            continue
        try:
            if item.kind == "json":
                yield from read_json_file(path, expect=item.identity)
            elif item.kind == "jsonl":
                yield from _read_jsonl(path, item.identity)
            else:
                yield from _read_cbor_sequence(path, item.identity)
        except OSError as exc:  # unreadable file (vanished, replaced, I/O error)
            yield Item("error", _cannot("file", exc).encode(), Source(path), 0)


def read_json_file(path: str, source_name: str | None = None, *,
                   expect: Expect = None) -> Iterator[Item]:
    """One ``.json`` document; ``source_name`` is the name reported (a worker may open
    the file under an absolute path); ``expect`` the file (or object version) the run
    started on."""
    source = Source(path if source_name is None else source_name)
    with open_input(path, expect=expect) as f:
        size = (os.fstat(f.fileno()).st_size if expect is None or isinstance(expect, Identity)
                else expect.size)
        if size > MAX_DOCUMENT_BYTES:
            reason = f"document of {size} bytes exceeds the {MAX_DOCUMENT_BYTES}-byte limit"
            yield Item("error", reason.encode(), source, size)
            return
        data = f.read(size)
        check_unchanged(f, path, expect)
    yield Item("json", data, source, size)


def _read_jsonl(path: str, expect: Expect = None) -> Iterator[Item]:
    """One document per line (``canonkit._files.JSONLines``: blank lines are counted and
    skipped). A line longer than the limit is reported and skipped up to its newline; a
    broken compressed stream (``canonkit._files.open_stream``: cut, corrupt, or followed
    by bytes that are no member or frame) or a file changed under the run ends the file
    with one ``error`` item at the line where it broke, after every line read before."""
    with open_stream(path, expect=expect) as opened:
        reader = JSONLines(opened.stream, max_line=MAX_DOCUMENT_BYTES)
        lines = iter(reader)
        last = 0
        while True:
            try:
                got = next(lines, None)
                if got is None:
                    check_unchanged(opened, path, expect)
            except MissingDependencyError:  # not the input's fault: the run cannot go on
                raise
            except (CanonkitError, OSError, EOFError) as exc:
                reason = f"input stream broken: {type(exc).__name__}: {exc}"
                yield Item("error", reason.encode(), Source(path, "line", reader.lines + 1),
                           opened.disk_bytes - last)
                return
            if got is None:
                return
            line_no, line = got
            source = Source(path, "line", line_no)
            now = opened.disk_bytes
            if line is None:
                reason = f"line exceeds the {MAX_DOCUMENT_BYTES}-byte document limit"
                yield Item("error", reason.encode(), source, now - last)
                last = now
                continue
            if not line:
                continue
            yield Item("json", line, source, now - last)
            last = now


def plain(value: Any) -> Any:
    """CBOR maps may decode as FrozenDict; the Episode readers take plain dicts/lists."""
    if isinstance(value, dict):
        return value
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    return value


def _read_cbor_sequence(path: str, expect: Expect = None) -> Iterator[Item]:
    """RFC 8742: concatenated CBOR data items, each one document, located by byte offset.

    The parent only delimits and validates: ``canonkit.cbor.check_prefix`` (core profile)
    builds no Python object and returns where the item ends; the worker decodes each
    item once. An item that is not well-formed
    (or not deterministic CBOR) ends the file: after it no item boundary can be trusted.
    """
    from .. import cbor, errors

    with open_input(path, expect=expect) as f:
        buf = b""
        pos = 0  # start of the next item in buf
        base = 0  # file offset of buf[pos]
        eof = False
        while True:
            if pos == len(buf):
                if eof:
                    check_unchanged(f, path, expect)
                    return
                buf, pos = f.read(_CHUNK), 0
                if not buf:
                    check_unchanged(f, path, expect)
                    return
            view = memoryview(buf)[pos:]  # offsets in messages count from the item
            try:
                end = cbor.check_prefix(view)
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
                yield Item("error", reason.encode(), Source(path, "offset", base), len(view))
                return
            except errors.DecodeError as exc:
                reason = f"CBOR item cannot be read ({exc.code}): {exc}"
                yield Item("error", reason.encode(), Source(path, "offset", base), len(view))
                return
            yield Item("cbor", bytes(view[:end]), Source(path, "offset", base), end)
            pos += end
            base += end
