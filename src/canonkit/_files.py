"""Reading inputs and writing outputs, failing closed: the one place canonkit opens files.

- **Inputs are regular files.** :func:`open_regular` looks at ``stat`` before opening and
  opens with ``O_NONBLOCK`` before checking ``fstat`` again, so a FIFO, socket, device or
  directory named as an input is refused with :class:`NotRegularFileError` (an
  ``OSError`` carrying the path) instead of blocking forever or reading a device.
- **Outputs are written completely or not at all.** :class:`AtomicWriter` writes to a
  temporary file with a unique name beside the target (``.NAME.<random>.partial``; two
  concurrent runs never share one), fsyncs it, renames it over the target and fsyncs the
  directory. Any failure or exception removes the temporary and leaves an existing target
  untouched. :func:`validate_output_path` checks an output path *before* work starts: its
  directory exists and is writable, it is not a directory or other non-regular file, and
  it is none of the run's inputs.
- **JSON is strict.** :func:`loads_json` accepts UTF-8 JSON only: no ``NaN``/``Infinity``,
  no repeated object key, no integer longer than ``MAX_INTEGER_DIGITS`` digits (bounded
  before conversion); every refusal is a :class:`JSONInputError` with the offset.
  Numbers written as decimal strings are bounded the same way (:func:`decimal_uint64`).
- **JSON lines.** :class:`JSONLines` splits a stream into numbered lines. Line numbers
  count every physical line. A *blank* line — nothing but JSON whitespace (space, tab,
  CR) before its newline — holds no document: it is yielded as ``b""`` so callers can
  count it, and is never reported as an error. A line longer than the limit is yielded as
  ``None`` and skipped up to its newline without being buffered.
"""
from __future__ import annotations

import errno
import json
import os
import re
import secrets
import stat
import weakref
from collections.abc import Iterable, Iterator
from json.decoder import scanstring  # type: ignore[attr-defined]  # untyped, but public since 2.x
from json.scanner import NUMBER_RE
from typing import Any, BinaryIO

from .errors import (
    DuplicateJSONKeyError,
    FileTooLargeError,
    JSONInputError,
    NotRegularFileError,
    OutputPathError,
)

__all__ = ["MAX_INTEGER_DIGITS", "UINT64_LIMIT", "AtomicWriter", "JSONLines", "LongInteger",
           "check_regular", "decimal_uint64", "fsync_directory", "loads_json",
           "loads_json_noting_duplicates", "open_regular", "read_json", "read_regular",
           "validate_output_path", "write_atomic", "write_exclusive"]

PathLike = str | os.PathLike[str]

# CPython's default int-string limit: every integer Python reads by default still reads,
# and a longer one is refused before int() (whatever sys.set_int_max_str_digits says).
MAX_INTEGER_DIGITS = 4300
_BUFFER = 1 << 16


# --- inputs ------------------------------------------------------------------------

def _kind(mode: int) -> str:
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
    kind = _kind(mode)
    return NotRegularFileError(f"{name}: is {kind}, not a regular file" if kind[0] == "a"
                               else f"{name}: not a regular file", detail=name)


def check_regular(path: PathLike) -> os.stat_result:
    """``stat(path)`` if it is a regular file (symlinks followed); NotRegularFileError if
    it is anything else, the usual OSError if it cannot be stat'ed. Nothing is opened."""
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise _refuse(path, st.st_mode)
    return st


def open_regular(path: PathLike) -> BinaryIO:
    """Open a regular file for binary reading, never blocking: ``stat`` first (so a device
    is never even opened), then ``O_NONBLOCK`` open and ``fstat`` (the path may have been
    swapped meanwhile). NotRegularFileError for anything but a regular file."""
    check_regular(path)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise _refuse(path, mode)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: PathLike, *, max_bytes: int | None = None) -> bytes:
    """The whole regular file; FileTooLargeError (before reading) when it holds more
    than ``max_bytes``."""
    with open_regular(path) as handle:
        if max_bytes is None:
            return handle.read()
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        name = os.fspath(path)
        raise FileTooLargeError(f"{name}: larger than the {max_bytes}-byte limit",
                                detail=name)
    return data


# --- strict JSON -------------------------------------------------------------------

_WS = re.compile(r"[ \t\n\r]*")


UINT64_LIMIT = 1 << 64
_DECIMAL = re.compile(r"0|[1-9][0-9]*")


def decimal_uint64(text: str) -> int | None:
    """The value of ``text`` if it is a canonical decimal string (digits only, no leading
    zero) below 2**64, else None. The length is checked before ``int()``, so a
    5000-digit string costs nothing and raises nothing."""
    if len(text) > 20 or not _DECIMAL.fullmatch(text):
        return None
    value = int(text)
    return value if value < UINT64_LIMIT else None


class LongInteger:
    """A JSON integer of more than ``MAX_INTEGER_DIGITS`` digits, never converted: what
    :func:`loads_json_noting_duplicates` leaves in its place for a caller that reports
    such a value per field instead of refusing the whole document."""

    __slots__ = ("digits",)

    def __init__(self, digits: str) -> None:
        self.digits = digits

    def __len__(self) -> int:
        return len(self.digits) - self.digits.startswith("-")

    def __repr__(self) -> str:
        return f"<integer of {len(self)} digits>"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LongInteger) and other.digits == self.digits

    def __hash__(self) -> int:
        return hash(self.digits)


class _Found(Exception):
    """Raised inside json.loads hooks to stop at the first problem; located afterwards."""

    def __init__(self, what: str, token: str) -> None:
        super().__init__(what)
        self.what = what
        self.token = token


def _bounded_int(digits: str) -> int:
    if len(digits) - digits.startswith("-") > MAX_INTEGER_DIGITS:
        raise _Found("number", digits)
    return int(digits)


def _int_or_long(digits: str) -> int | LongInteger:
    if len(digits) - digits.startswith("-") > MAX_INTEGER_DIGITS:
        return LongInteger(digits)
    return int(digits)


def _refuse_constant(name: str) -> Any:
    raise _Found("constant", name)


def _key_at(text: str, i: int, seen: set[str], keep: list[tuple[str, int]] | None
            ) -> tuple[int, tuple[str, int] | None]:
    """Read the key at ``i`` and the colon after it; (position of the value, the repeated
    key and its offset or None). With ``keep`` repeats are recorded, not returned."""
    key, j = scanstring(text, i + 1)
    if key in seen:
        if keep is None:
            return j, (key, i)
        keep.append((key, i))
    seen.add(key)
    j = _WS.match(text, j).end()  # type: ignore[union-attr]
    if text[j] != ":":
        raise ValueError("expected ':'")
    return _WS.match(text, j + 1).end(), None  # type: ignore[union-attr]


def _scan(text: str, keep: list[tuple[str, int]] | None = None
          ) -> tuple[str, str, int] | None:
    """Walk JSON ``text`` (iteratively: any depth) for what the fast parse refused or
    noted: (what, token, offset) of the first repeated key, over-long integer or
    NaN/Infinity, or None. With ``keep``, repeated keys are appended there instead."""
    stack: list[set[str] | None] = []  # per open container: keys seen, or None (array)
    i = _WS.match(text, 0).end()  # type: ignore[union-attr]
    try:
        while True:
            ch = text[i]  # a value starts here
            if ch == "{" or ch == "[":
                i = _WS.match(text, i + 1).end()  # type: ignore[union-attr]
                if text[i] != ("}" if ch == "{" else "]"):
                    seen: set[str] | None = set() if ch == "{" else None
                    stack.append(seen)
                    if seen is not None:
                        i, dup = _key_at(text, i, seen, keep)
                        if dup is not None:
                            return ("duplicate", *dup)
                    continue
                i += 1
            elif ch == '"':
                i = scanstring(text, i + 1)[1]
            else:
                match = NUMBER_RE.match(text, i)
                if match is not None:
                    integer, frac, exp = match.groups()
                    if frac is None and exp is None and \
                            len(integer) - integer.startswith("-") > MAX_INTEGER_DIGITS:
                        return ("number", integer, i)
                    i = match.end()
                else:
                    for word in ("true", "false", "null"):
                        if text.startswith(word, i):
                            i += len(word)
                            break
                    else:
                        for word in ("NaN", "Infinity", "-Infinity"):
                            if text.startswith(word, i):
                                return ("constant", word, i)
                        return None
            while True:  # after a value: close containers, or go on to the next value
                i = _WS.match(text, i).end()  # type: ignore[union-attr]
                if not stack:
                    return None
                top = stack[-1]
                ch = text[i]
                if ch == ",":
                    i = _WS.match(text, i + 1).end()  # type: ignore[union-attr]
                    if top is not None:
                        i, dup = _key_at(text, i, top, keep)
                        if dup is not None:
                            return ("duplicate", *dup)
                    break
                if ch != ("]" if top is None else "}"):
                    return None
                stack.pop()
                i += 1
    except (IndexError, ValueError):
        return None


def _byte_offset(text: str, pos: int | None, was_bytes: bool) -> int | None:
    if pos is None or not was_bytes:
        return pos
    return len(text[:pos].encode("utf-8", "surrogatepass"))


def _loads(data: bytes | bytearray | memoryview | str, source: str,
           pairs: Any, parse_int: Any = _bounded_int) -> tuple[str, bool, Any]:
    was_bytes = not isinstance(data, str)
    if isinstance(data, str):
        text = data
    else:
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JSONInputError(f"{source}: not UTF-8 (byte {exc.start})",
                                   offset=exc.start, detail="utf-8") from None
    try:
        return text, was_bytes, json.loads(text, object_pairs_hook=pairs,
                                           parse_constant=_refuse_constant,
                                           parse_int=parse_int)
    except _Found as found:
        where = _scan(text)
        pos = where[2] if where is not None else None
        offset = _byte_offset(text, pos, was_bytes)
        at = f" at offset {offset}" if offset is not None else ""
        if found.what == "duplicate":
            raise DuplicateJSONKeyError(f"{source}: duplicate object key {found.token!r}{at}",
                                        offset=offset, detail=found.token) from None
        if found.what == "constant":
            raise JSONInputError(f"{source}: JSON has no {found.token}{at}",
                                   offset=offset, detail=found.token) from None
        raise JSONInputError(f"{source}: an integer of more than {MAX_INTEGER_DIGITS} "
                               f"digits{at}", offset=offset, detail="number") from None
    except json.JSONDecodeError as exc:
        offset = _byte_offset(text, exc.pos, was_bytes)
        raise JSONInputError(f"{source}: not JSON: {exc.msg} at offset {offset} "
                               f"(line {exc.lineno} column {exc.colno})",
                               offset=offset, detail=exc.msg) from None
    except RecursionError:
        raise JSONInputError(f"{source}: JSON nested too deeply",
                               detail="depth") from None
    except ValueError as exc:  # e.g. an integer over a lowered sys int-string limit
        raise JSONInputError(f"{source}: {exc}", detail=str(exc)) from None


def _no_repeats(items: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(items)
    if len(out) != len(items):
        seen: set[str] = set()
        for key, _ in items:
            if key in seen:
                raise _Found("duplicate", key)
            seen.add(key)
    return out


def loads_json(data: bytes | bytearray | memoryview | str, *, source: str = "<json>") -> Any:
    """Parse strict JSON (UTF-8 when given bytes). JSONInputError — its subclass
    DuplicateJSONKeyError for a repeated key — names ``source`` and carries the offset
    (in bytes for bytes input, in characters for text)."""
    return _loads(data, source, _no_repeats)[2]


def loads_json_noting_duplicates(data: bytes | bytearray | memoryview | str, *,
                                 source: str = "<json>"
                                 ) -> tuple[Any, list[tuple[str, int | None]]]:
    """Like :func:`loads_json`, for a caller that reports problems per value and goes on:
    a repeated key is not an error (the value keeps the last one, as JSON parsers do; the
    repeats come back as ``(key, offset)`` pairs in document order), and an integer of
    more than ``MAX_INTEGER_DIGITS`` digits is left unconverted as a
    :class:`LongInteger`."""
    repeated: list[str] = []

    def noting(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out = dict(items)
        if len(out) != len(items):
            repeated.append("")
        return out

    text, was_bytes, value = _loads(data, source, noting, _int_or_long)
    if not repeated:
        return value, []
    keep: list[tuple[str, int]] = []
    _scan(text, keep)
    return value, [(key, _byte_offset(text, pos, was_bytes)) for key, pos in keep]


def read_json(path: PathLike, *, max_bytes: int | None = None) -> Any:
    """:func:`loads_json` of the regular file at ``path`` (see :func:`read_regular`)."""
    return loads_json(read_regular(path, max_bytes=max_bytes), source=os.fspath(path))


# --- JSON lines --------------------------------------------------------------------

_JSON_WHITESPACE = b" \t\r\n"


class JSONLines:
    """Iterate ``(line number, line)`` over a binary stream of JSON lines.

    ``line`` keeps its newline; it is ``b""`` for a blank line and ``None`` for a line of
    more than ``max_line`` bytes, which is skipped to its newline in ``_SKIP`` blocks.
    ``stop_after`` ends the iteration once that many bytes are consumed (for a byte range
    whose end is a line boundary). ``lines`` is the number of physical lines consumed and
    ``consumed`` the bytes. Errors of the stream propagate to the caller.
    """

    _SKIP = 1 << 20

    def __init__(self, stream: BinaryIO, *, max_line: int, stop_after: int | None = None
                 ) -> None:
        self._stream = stream
        self._max_line = max_line
        self._stop_after = stop_after
        self.lines = 0
        self.consumed = 0

    def __iter__(self) -> Iterator[tuple[int, bytes | None]]:
        readline = self._stream.readline
        limit = self._max_line
        stop = self._stop_after
        while stop is None or self.consumed < stop:
            line = readline(limit + 1)
            if not line:
                return
            self.consumed += len(line)
            self.lines += 1
            if len(line) > limit and not line.endswith(b"\n"):
                while True:  # the rest of the over-long line, never buffered whole
                    rest = readline(self._SKIP)
                    self.consumed += len(rest)
                    if not rest or rest.endswith(b"\n"):
                        break
                yield self.lines, None
            elif not line.strip(_JSON_WHITESPACE):
                yield self.lines, b""
            else:
                yield self.lines, line


# --- outputs -----------------------------------------------------------------------

def _identity(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def validate_output_path(path: PathLike, *, inputs: Iterable[PathLike] = ()) -> str:
    """The path an output for ``path`` will be written to (a symlink is followed, as
    ``open`` would); OutputPathError when it cannot be written completely: its directory
    is missing or not writable, it is a directory, FIFO, socket or device, or it is one
    of ``inputs`` (same file, by path or by device and inode). Call it before the work."""
    name = os.fspath(path)
    if not name:
        raise OutputPathError("an empty output path", detail=name)
    target = os.path.realpath(name)
    try:
        st = os.stat(target)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise OutputPathError(f"{name}: cannot be examined: {exc.strerror or exc}",
                              detail=name) from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise OutputPathError(f"{name}: is {_kind(st.st_mode)}; an output must be a file",
                              detail=name)
    directory = os.path.dirname(target)
    if not os.path.isdir(directory):
        raise OutputPathError(f"{name}: the directory {directory} does not exist",
                              detail=name)
    if not os.access(directory, os.W_OK | os.X_OK):
        raise OutputPathError(f"{name}: the directory {directory} is not writable",
                              detail=name)
    mine = (st.st_dev, st.st_ino) if st is not None else None
    for given in inputs:
        other = os.fspath(given)
        if os.path.realpath(other) == target or (mine is not None
                                                 and _identity(other) == mine):
            raise OutputPathError(f"{name}: is one of the inputs ({other}); refusing to "
                                  "write over it", detail=name)
    return target


def fsync_directory(path: PathLike) -> None:
    """Make a rename or creation in the directory ``path`` durable."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    except OSError as exc:  # some file systems cannot fsync a directory at all
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP):
            raise
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes | bytearray | memoryview) -> None:
    # views released even when os.write raises, so a bytearray buffer can be resized
    with memoryview(data) as whole, whole.cast("B") as octets:
        done = 0
        while done < len(octets):
            with octets[done:] as rest:
                done += os.write(fd, rest)


def write_exclusive(path: PathLike, data: bytes | bytearray | memoryview,
                    mode: int = 0o666) -> None:
    """Create ``path`` (FileExistsError if it exists), write ``data`` and fsync it; the
    file is removed again if anything fails."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags, mode)
    try:
        _write_all(fd, data)
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        os.unlink(path)
        raise
    os.close(fd)


class _Temporary:
    """The temporary's descriptor (None once closed) and name; closed at most once."""

    __slots__ = ("fd", "name")

    def __init__(self, fd: int, name: str) -> None:
        self.fd: int | None = fd
        self.name = name

    def close(self) -> None:
        fd, self.fd = self.fd, None
        if fd is not None:
            os.close(fd)

    def remove(self) -> None:
        try:
            self.close()
        except OSError:
            pass
        try:
            os.unlink(self.name)
        except FileNotFoundError:
            pass


class AtomicWriter:
    """An output file that appears under its name, complete, on :meth:`commit` — or not
    at all. Writes are buffered (64 KiB) and go to a uniquely named temporary beside the
    target, created with the permissions a new file gets (an existing target's mode is
    kept). Any exception in ``write`` or ``commit`` removes the temporary before it
    propagates; so does :meth:`abort`, leaving the context manager by an exception, and
    garbage collection of an uncommitted writer.
    """

    def __init__(self, path: PathLike, *, inputs: Iterable[PathLike] = ()) -> None:
        self.path = validate_output_path(path, inputs=inputs)
        directory, base = os.path.split(self.path)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
        for _ in range(100):
            temporary = os.path.join(directory, f".{base[:200]}.{secrets.token_hex(6)}.partial")
            try:
                fd = os.open(temporary, flags, 0o666)
                break
            except FileExistsError:
                continue
        else:  # pragma: no cover - 100 collisions of 48 random bits
            raise FileExistsError(errno.EEXIST, "no unique temporary name", directory)
        self.temporary = temporary
        self._tmp = _Temporary(fd, temporary)
        self._buffer = bytearray()
        self._cleanup = weakref.finalize(self, self._tmp.remove)
        try:
            existing = os.stat(self.path)
            os.fchmod(fd, stat.S_IMODE(existing.st_mode))
        except FileNotFoundError:
            pass
        except BaseException:
            self.abort()
            raise

    def _open_fd(self, what: str) -> int:
        fd = self._tmp.fd
        if fd is None:
            raise ValueError(f"{what} of a committed or aborted AtomicWriter")
        return fd

    def write(self, data: bytes | bytearray | memoryview) -> None:
        fd = self._open_fd("write")
        size = memoryview(data).nbytes
        if len(self._buffer) + size < _BUFFER:  # small writes (report lines) are gathered
            self._buffer += data
            return
        self._flush(fd)
        if size < _BUFFER:
            self._buffer += data
        else:  # a large write goes straight out, never copied into the buffer
            self._write(fd, data)

    def _write(self, fd: int, data: bytes | bytearray | memoryview) -> None:
        try:
            _write_all(fd, data)
        except BaseException:
            self.abort()
            raise

    def _flush(self, fd: int) -> None:
        if self._buffer:
            self._write(fd, self._buffer)
            self._buffer.clear()

    def commit(self) -> None:
        """Flush, fsync, rename over the target, fsync the directory."""
        fd = self._open_fd("commit")
        self._flush(fd)
        try:
            os.fsync(fd)
            self._tmp.close()
            os.replace(self.temporary, self.path)
        except BaseException:
            self.abort()
            raise
        self._cleanup.detach()
        fsync_directory(os.path.dirname(self.path))

    def abort(self) -> None:
        """Remove the temporary (a no-op after commit or a previous abort)."""
        self._cleanup()  # runs once: closes the descriptor if open, unlinks the temporary
        self._buffer = bytearray()

    @property
    def closed(self) -> bool:
        return not self._cleanup.alive

    def __enter__(self) -> AtomicWriter:
        return self

    def __exit__(self, kind: object, value: object, traceback: object) -> None:
        if kind is None:
            self.commit()
        else:
            self.abort()


def write_atomic(path: PathLike, data: bytes | bytearray | memoryview, *,
                 inputs: Iterable[PathLike] = ()) -> None:
    """Write ``data`` to ``path`` through an :class:`AtomicWriter`."""
    with AtomicWriter(path, inputs=inputs) as out:
        out.write(data)
