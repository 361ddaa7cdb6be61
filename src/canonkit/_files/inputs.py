"""The input door: every byte canonkit reads from a file comes through here.

- **Regular files only.** :func:`open_regular` looks at ``stat`` before opening and opens
  with ``O_NONBLOCK`` before checking ``fstat`` again, so a FIFO, socket, device or
  directory is refused at once with :class:`NotRegularFileError` (an ``OSError`` carrying
  the path) instead of blocking or reading a device. A path holding a NUL byte names no
  file: it is an ``OSError`` (``EINVAL``) like any unusable path, never a ``ValueError``.
- **Identity.** A reader given the :class:`Identity` (device, inode, size, mtime) the run
  started on refuses any other file under that name with :class:`FileChangedError`, at
  open (:func:`open_regular`) and after reading (:func:`check_unchanged`): a file
  replaced or rewritten under a run is refused, never blended with the old one.
- **Objects too.** Every reader here also takes an object of object storage: the name is
  its URL and ``expect`` its :class:`~canonkit._files.remote.ObjectInfo` (the version a
  listing saw); :func:`open_input` then reads it by ranged GETs that each check that
  version (``remote.open_range``), so the same readers (JSON lines, compressed streams,
  strict JSON) serve files and objects alike.
- **Size bounds before allocation.** :func:`read_regular` reads no more than the file
  held when opened (and ``max_bytes``, checked on ``fstat`` before reading).
- **Confined paths.** :func:`resolve_within` resolves a path named *inside* an input
  (a Layer 3 export beside its Episode) and refuses one that leaves the directory it
  must stay in (:class:`PathOutsideError`).
- **Compressed streams end where they should.** :func:`open_stream` decodes ``.gz`` and
  ``.zst`` member by member (``streams.py``): a member or frame that does not end, bytes
  after the last one, and corruption are :class:`BrokenStreamError` at their offset in
  the file, raised only after everything decoded before them was read.
- **Strict JSON** at every depth (``strict_json.py``, re-exported here): no repeated
  key, no NaN/Infinity, bounded numbers, every refusal located.
- **JSON lines.** :class:`JSONLines` splits a stream into numbered lines. Line numbers
  count every physical line. A *blank* line — nothing but JSON whitespace (space, tab,
  CR) before its newline — holds no document: it is yielded as ``b""`` so callers can
  count it. A line longer than the limit is yielded as ``None`` and skipped to its
  newline without being buffered: in a seekable file its end is found first and only a
  line within the limit is read; in a decoded stream, at most the limit is held.
"""
from __future__ import annotations

import errno
import io
import os
import stat
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, BinaryIO, NamedTuple, Union

from ..errors import (
    FileChangedError,
    FileTooLargeError,
    NotRegularFileError,
    PathOutsideError,
)
from .strict_json import (
    MAX_INTEGER_DIGITS,
    UINT64_LIMIT,
    LongInteger,
    decimal_uint64,
    loads_json,
    loads_json_noting_duplicates,
)

if TYPE_CHECKING:
    from .remote import ObjectInfo

__all__ = ["MAX_INTEGER_DIGITS", "UINT64_LIMIT", "Expect", "Identity", "InputStream",
           "JSONLines", "LongInteger", "check_regular", "check_unchanged", "decimal_uint64",
           "describe_kind", "loads_json", "loads_json_noting_duplicates", "open_input",
           "open_regular", "open_stream", "read_json", "read_regular", "resolve_within"]

PathLike = str | os.PathLike[str]
_CHUNK = 1 << 20


# --- regular files ------------------------------------------------------------------

def describe_kind(mode: int) -> str:
    """What a non-regular file is, for messages: "a FIFO", "a directory", ..."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    return "not a regular file"


def _refuse(path: PathLike, mode: int) -> NotRegularFileError:
    name = os.fspath(path)
    kind = describe_kind(mode)
    return NotRegularFileError(f"{name}: is {kind}, not a regular file" if kind[0] == "a"
                               else f"{name}: not a regular file", detail=name)


def _usable(path: PathLike) -> None:
    """A path with a NUL byte names no file: EINVAL, as the system would say."""
    name = os.fspath(path)
    if "\x00" in name:
        raise OSError(errno.EINVAL, "a path cannot hold a NUL byte", name.replace("\x00", "\\0"))


class Identity(NamedTuple):
    """Which file a path named when a run started: a replaced file has another inode,
    a rewritten one another size or modification time."""

    device: int
    inode: int
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, st: os.stat_result) -> Identity:
        return cls(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)

    def change(self, now: Identity) -> str | None:
        """How ``now`` differs from this identity, in words; None if it does not."""
        if now == self:
            return None
        if (now.device, now.inode) != (self.device, self.inode):
            return (f"replaced by another file (device {self.device} inode {self.inode} -> "
                    f"device {now.device} inode {now.inode})")
        parts = []
        if now.size != self.size:
            parts.append(f"size {self.size} -> {now.size} bytes")
        if now.mtime_ns != self.mtime_ns:
            parts.append(f"modified (mtime {self.mtime_ns} -> {now.mtime_ns} ns)")
        return "rewritten: " + ", ".join(parts)


def _changed(path: PathLike, expect: Identity, now: Identity) -> FileChangedError | None:
    what = expect.change(now)
    if what is None:
        return None
    name = os.fspath(path)
    return FileChangedError(f"{name}: not the file the run started on: {what}", detail=name)


def check_regular(path: PathLike) -> os.stat_result:
    """``stat(path)`` if it is a regular file (symlinks followed); NotRegularFileError if
    it is anything else, the usual OSError if it cannot be stat'ed. Nothing is opened."""
    _usable(path)
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise _refuse(path, st.st_mode)
    return st


def open_regular(path: PathLike, *, expect: Identity | None = None) -> BinaryIO:
    """Open a regular file for binary reading, never blocking: ``stat`` first (so a device
    is never even opened), then ``O_NONBLOCK`` open and ``fstat`` (the path may have been
    swapped meanwhile). NotRegularFileError for anything but a regular file;
    FileChangedError when it is not the file ``expect`` describes."""
    check_regular(path)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _refuse(path, st.st_mode)
        if expect is not None:
            problem = _changed(path, expect, Identity.of(st))
            if problem is not None:
                raise problem
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


#: what a reader is told about its input: the file (``Identity``) or the object version
#: (``ObjectInfo``) the run started on, or None (whatever is there now)
Expect = Union[Identity, "ObjectInfo", None]


def open_input(name: PathLike, *, expect: Expect = None) -> BinaryIO:
    """A binary reader of the input ``name``: the regular file (:func:`open_regular`), or,
    when ``expect`` is an ``ObjectInfo``, that version of the object at the URL ``name``,
    read by ranged GETs each checked against it (seekable, object offsets)."""
    if expect is None or isinstance(expect, Identity):
        return open_regular(name, expect=expect)
    from .remote import open_range

    return open_range(expect)


def check_unchanged(handle: Any, path: PathLike, expect: Expect) -> None:
    """FileChangedError when the open file ``handle`` no longer matches ``expect`` (it was
    rewritten while being read); nothing when ``expect`` is None or an object version
    (every GET of one was checked against it: ``If-Match``, size and ETag)."""
    if not isinstance(expect, Identity):
        return
    problem = _changed(path, expect, Identity.of(os.fstat(handle.fileno())))
    if problem is not None:
        raise problem


def read_regular(path: PathLike, *, max_bytes: int | None = None,
                 expect: Identity | None = None) -> bytes:
    """The whole regular file, never more than it held when opened; FileTooLargeError
    (before reading) when that is more than ``max_bytes``; FileChangedError when it grew
    while being read or is not the file ``expect`` describes."""
    with open_regular(path, expect=expect) as handle:
        size = os.fstat(handle.fileno()).st_size
        name = os.fspath(path)
        if max_bytes is not None and size > max_bytes:
            raise FileTooLargeError(f"{name}: larger than the {max_bytes}-byte limit",
                                    detail=name)
        data = handle.read(size)
        # a file that grew meanwhile (or one whose size the system does not report)
        if handle.read(1):
            raise FileChangedError(f"{name}: grew while being read (it held {size} bytes "
                                   "when opened)", detail=name)
        check_unchanged(handle, path, expect)
    return data


def read_json(path: PathLike, *, max_bytes: int | None = None) -> Any:
    """:func:`loads_json` of the regular file at ``path`` (see :func:`read_regular`)."""
    return loads_json(read_regular(path, max_bytes=max_bytes), source=os.fspath(path))


def resolve_within(directory: PathLike, name: str) -> str:
    """The file ``name`` (relative, as written inside an input) under ``directory``,
    symlinks resolved; PathOutsideError when it is absolute or leads out of
    ``directory`` (``..``, or a symlink pointing elsewhere), or holds a NUL byte."""
    base = os.path.realpath(os.fspath(directory) or os.curdir)
    if "\x00" in name or os.path.isabs(name):
        raise PathOutsideError(f"{name!r}: an absolute path (only a file in {base} or "
                               "below it may be named)" if "\x00" not in name else
                               f"{name!r}: a path cannot hold a NUL byte", detail=name)
    target = os.path.realpath(os.path.join(base, name))
    if os.path.commonpath([base, target]) != base:
        raise PathOutsideError(f"{name!r}: leads to {target}, outside {base} (only a file "
                               "there or below it may be named)", detail=name)
    return target


# --- compressed streams --------------------------------------------------------------

class InputStream:
    """An open input decoded to its bytes: ``stream`` (buffered, binary), ``disk_bytes``
    (bytes read from the file so far, compressed bytes for .gz/.zst). A context manager;
    ``close`` closes the file."""

    def __init__(self, raw: BinaryIO, stream: BinaryIO, origin: int = 0) -> None:
        self._raw = raw
        self.stream = stream
        self._origin = origin  # where the raw reader started (an object's byte range)

    @property
    def disk_bytes(self) -> int:
        return self._raw.tell() - self._origin

    def fileno(self) -> int:
        return self._raw.fileno()

    def close(self) -> None:
        try:
            self.stream.close()
        finally:
            self._raw.close()

    def __enter__(self) -> InputStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_stream(path: PathLike, *, expect: Expect = None) -> InputStream:
    """The regular file ``path`` (or the object version ``expect`` names, see
    :func:`open_input`) as its decoded bytes: gunzipped for ``.gz``, zstd-decoded for
    ``.zst`` (the optional ``zstandard`` package), as it is otherwise. Reading raises
    BrokenStreamError where the compressed stream does not end cleanly."""
    from .streams import DecodedStream, gzip_chunks, zstd_chunks

    name = os.fspath(path)
    lower = name.lower()
    zstandard = None
    if lower.endswith(".zst"):  # before opening: a missing package must not leak the file
        from .._optional import require

        zstandard = require("zstandard", f"reading {name}")
    raw = open_input(path, expect=expect)
    try:
        if lower.endswith(".gz"):
            chunks = gzip_chunks(raw.read, name)
        elif zstandard is not None:
            chunks = zstd_chunks(raw.read, name, zstandard)
        elif isinstance(expect, Identity) or expect is None:
            # read in large blocks, as the decoders read the compressed bytes
            return InputStream(raw, io.BufferedReader(raw.raw, _CHUNK))  # type: ignore[attr-defined]
        else:  # an object's reader is already buffered in blocks
            return InputStream(raw, raw)
        return InputStream(raw, io.BufferedReader(DecodedStream(chunks), _CHUNK))
    except BaseException:
        raw.close()
        raise


# --- JSON lines ----------------------------------------------------------------------

_JSON_WHITESPACE = b" \t\r\n"


class JSONLines:
    """Iterate ``(line number, line)`` over a binary stream of JSON lines.

    ``line`` keeps its newline; it is ``b""`` for a blank line and ``None`` for a line of
    more than ``max_line`` bytes, which is skipped to its newline in ``_SKIP`` blocks and
    never held: a seekable stream is scanned for the line's end before the line is read,
    a stream that cannot seek holds at most ``max_line`` bytes of it. ``stop_after`` ends
    the iteration once that many bytes are consumed (for a byte range whose end is a line
    boundary). ``lines`` is the number of physical lines consumed and ``consumed`` the
    bytes. Errors of the stream propagate to the caller.
    """

    _SKIP = 1 << 20   # block size of a skip or a scan
    _PIECE = 1 << 20  # a line is first read up to this long; a longer one goes the long way

    def __init__(self, stream: BinaryIO, *, max_line: int, stop_after: int | None = None
                 ) -> None:
        self._stream = stream
        self._max_line = max_line
        self._stop_after = stop_after
        try:
            self._seekable = stream.seekable()
        except (AttributeError, ValueError, OSError):
            self._seekable = False
        self.lines = 0
        self.consumed = 0

    def __iter__(self) -> Iterator[tuple[int, bytes | None]]:
        readline = self._stream.readline
        limit = self._max_line
        piece = min(limit, self._PIECE)
        stop = self._stop_after
        while stop is None or self.consumed < stop:
            line: bytes | None = readline(piece + 1)
            if not line:
                return
            self.lines += 1
            if len(line) > piece and not line.endswith(b"\n"):
                line = self._long_line(line)
            else:
                self.consumed += len(line)
            if line is None:
                yield self.lines, None
            elif line[0] not in _JSON_WHITESPACE or line.strip(_JSON_WHITESPACE):
                # a document starts with no whitespace: strip (a copy of the whole line)
                # only to tell a blank line from an indented document
                yield self.lines, line
            else:
                yield self.lines, b""

    def _long_line(self, head: bytes) -> bytes | None:
        """The rest of a line longer than a piece; None (and skipped) if over the limit."""
        if self._seekable:
            return self._long_line_seeking(head)
        parts = [head]
        size = len(head)
        while True:
            rest = self._stream.readline(min(self._SKIP, self._max_line + 1 - size))
            size += len(rest)
            if size > self._max_line:  # over the limit: drop what is held, skip the rest
                parts.clear()
                self.consumed += size
                if not rest.endswith(b"\n"):
                    self._skip_rest()
                return None
            parts.append(rest)
            if not rest or rest.endswith(b"\n"):
                self.consumed += size
                return b"".join(parts)

    def _long_line_seeking(self, head: bytes) -> bytes | None:
        stream = self._stream
        start = stream.tell() - len(head)
        length = len(head)
        while True:  # find the line's end, holding one block at a time
            block = stream.read(self._SKIP)
            if not block:
                break
            newline = block.find(b"\n")
            if newline >= 0:
                length += newline + 1
                stream.seek(start + length)
                break
            length += len(block)
            if length > self._max_line:
                self.consumed += length
                self._skip_rest()
                return None
        if length > self._max_line:
            self.consumed += length
            return None
        stream.seek(start)
        line = stream.read(length)
        self.consumed += len(line)
        return line

    def _skip_rest(self) -> None:
        while True:  # the rest of the over-long line, in blocks
            rest = self._stream.readline(self._SKIP)
            self.consumed += len(rest)
            if not rest or rest.endswith(b"\n"):
                return
