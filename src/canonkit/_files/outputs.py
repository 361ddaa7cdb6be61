"""The output door: every file canonkit writes is written here, completely or not at all.

- **Atomic.** :class:`AtomicWriter` writes to a temporary file with a unique name beside
  the target (``.NAME.<random>.partial``; two concurrent runs never share one), fsyncs it,
  renames it over the target and fsyncs the directory. Any failure or exception removes
  the temporary and leaves an existing target untouched.
- **Checked before the work.** :func:`validate_output_path` refuses an output that could
  not be written completely or must not be: its directory is missing or not writable; it
  is a directory, FIFO, socket or device (``/dev/null`` included: it is never replaced by
  a file); it is one of the run's inputs (by path, or by device and inode — a hard link
  counts) or lies inside an input directory; it exists and the caller does not replace
  existing files (``replace=False``: an existing corpus, say).
- **Symlinks are written through, never replaced.** A target that is a symlink is
  resolved first: the file it points to is replaced (its temporary is made beside that
  file), the link stays a link. A dangling link creates the file it names.
- **An existing file keeps its permissions**; a new one gets those of a new file (0666
  less the umask).
"""
from __future__ import annotations

import errno
import os
import secrets
import stat
import weakref
from collections.abc import Iterable

from ..errors import OutputPathError
from .inputs import describe_kind as _kind
from .urls import elide, is_url

__all__ = ["AtomicWriter", "fsync_directory", "validate_output_path", "write_atomic",
           "write_exclusive"]

PathLike = str | os.PathLike[str]
_BUFFER = 1 << 16


def _identity(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _inside(target: str, directory: PathLike) -> bool:
    root = os.path.realpath(directory)
    return os.path.commonpath([root, target]) == root


def validate_output_path(path: PathLike, *, inputs: Iterable[PathLike] = (),
                         input_dirs: Iterable[PathLike] = (), replace: bool = True) -> str:
    """The path an output for ``path`` will be written to (a symlink is followed, as
    ``open`` would); OutputPathError when it cannot be written completely or must not be:
    it is a URL, its directory is missing or not writable, it is a directory, FIFO, socket
    or device, it is one of ``inputs`` (same file, by path or by device and inode) or
    inside one of ``input_dirs``, or it exists and ``replace`` is False. Call it before
    the work."""
    name = os.fspath(path)
    if not name:
        raise OutputPathError("an empty output path", detail=name)
    if "\x00" in name:
        raise OutputPathError(f"{name!r}: a path cannot hold a NUL byte", detail=name)
    if is_url(name):  # never a local path: "s3://b/r" must not become ./s3:/b/r
        raise OutputPathError(f"{elide(name)}: a URL; this output is written to a local file "
                              "(a URL is never taken for a local path)", detail=elide(name))
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
    for given in input_dirs:
        if _inside(target, given):
            raise OutputPathError(f"{name}: is inside {os.fspath(given)}, an input; "
                                  "refusing to write there", detail=name)
    if st is not None and not replace:
        raise OutputPathError(f"{name}: exists; refusing to replace it", detail=name)
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

    def __init__(self, fd: int | None, name: str) -> None:
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
    target (a symlink's target: links are written through), created with the permissions
    a new file gets (an existing target's mode is kept). Any exception in ``write`` or
    ``commit`` removes the temporary before it propagates; so does :meth:`abort`, leaving
    the context manager by an exception, and garbage collection of an uncommitted writer.
    ``inputs``, ``input_dirs`` and ``replace`` as for :func:`validate_output_path`; with
    ``replace=False`` the commit also refuses a target that appeared meanwhile.
    """

    def __init__(self, path: PathLike, *, inputs: Iterable[PathLike] = (),
                 input_dirs: Iterable[PathLike] = (), replace: bool = True) -> None:
        self.name = os.fspath(path)
        self.path = validate_output_path(path, inputs=inputs, input_dirs=input_dirs,
                                         replace=replace)
        self._replace = replace
        directory, base = os.path.split(self.path)
        self._buffer = bytearray()
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
        for _ in range(100):
            temporary = os.path.join(directory, f".{base[:200]}.{secrets.token_hex(6)}.partial")
            # The finalizer owns the name before the file can exist: a KeyboardInterrupt
            # raised as os.open returns (signals are handled between calls) still
            # removes it. A name someone else made (FileExistsError) is never ours.
            tmp = _Temporary(None, temporary)
            cleanup = weakref.finalize(self, tmp.remove)
            try:
                fd = os.open(temporary, flags, 0o666)
                tmp.fd = fd
                break
            except FileExistsError:
                cleanup.detach()
                continue
        else:  # pragma: no cover - 100 collisions of 48 random bits
            raise FileExistsError(errno.EEXIST, "no unique temporary name", directory)
        self.temporary = temporary
        self._tmp = tmp
        self._cleanup = cleanup
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
            self._publish()
        except BaseException:
            self.abort()
            raise
        self._cleanup.detach()
        fsync_directory(os.path.dirname(self.path))

    def _publish(self) -> None:
        """Rename the temporary over the target, if the target is still a file (or
        absent); without ``replace``, only if it is absent (a hard link never
        overwrites)."""
        try:
            mode = os.lstat(self.path).st_mode
        except FileNotFoundError:
            mode = None
        if mode is not None and (not stat.S_ISREG(mode) or not self._replace):
            what = "exists" if stat.S_ISREG(mode) else f"became {_kind(mode)}"
            raise OutputPathError(f"{self.name}: {what} while it was being written; "
                                  "refusing to replace it", detail=self.name)
        if self._replace:
            os.replace(self.temporary, self.path)
            return
        try:
            os.link(self.temporary, self.path)
        except FileExistsError:
            raise OutputPathError(f"{self.name}: exists; refusing to replace it",
                                  detail=self.name) from None
        except OSError as exc:  # a file system without hard links: check, then rename
            if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
                raise
            os.replace(self.temporary, self.path)
            return
        os.unlink(self.temporary)

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
                 inputs: Iterable[PathLike] = (), input_dirs: Iterable[PathLike] = (),
                 replace: bool = True) -> None:
    """Write ``data`` to ``path`` through an :class:`AtomicWriter`."""
    with AtomicWriter(path, inputs=inputs, input_dirs=input_dirs, replace=replace) as out:
        out.write(data)
