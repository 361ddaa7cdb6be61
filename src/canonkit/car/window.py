"""The one buffer a CAR file's sections stream through (``verify``'s walk and the readers'
section iterator): it holds the file's bytes from ``pos``, is refilled from the file as
whole sections are consumed from its front, and grows only to hold a section longer than
itself — never beyond the data's end, which the caller checked against the file."""
from __future__ import annotations

from typing import Any, Protocol

from ..errors import FileChangedError

__all__ = ["CHUNK", "Source", "Window"]

#: the bytes read at a time
CHUNK = 1 << 22


class Source(Protocol):
    """A binary file read into a buffer (an open regular file, io.BytesIO)."""

    def seek(self, offset: int, whence: int = ..., /) -> int: ...

    def readinto(self, buffer: Any, /) -> int | None: ...


class Window:
    """The bytes of ``handle`` from ``start`` up to ``end`` (``chunk`` at a time)."""

    def __init__(self, handle: Source, start: int, end: int, chunk: int | None = None
                 ) -> None:
        self._handle = handle
        size = CHUNK if chunk is None else chunk
        self._buf = bytearray(max(1, min(size, end - start)))
        self._held = 0
        self.pos = start
        self.end = end
        handle.seek(start)

    def fill(self) -> memoryview:
        """Read until the buffer is full or holds the data's end; the bytes held, from
        ``pos`` (release the view before :meth:`advance`). FileChangedError if the file
        ends sooner than it did when opened."""
        want = min(len(self._buf) - self._held, self.end - (self.pos + self._held))
        if want > 0:
            with memoryview(self._buf) as whole, whole[self._held:self._held + want] as room:
                got = self._handle.readinto(room)
            if got != want:
                raise FileChangedError(f"the file ended at offset "
                                       f"{self.pos + self._held + (got or 0)} while being "
                                       "read (it held more when opened)")
            self._held += got
        return memoryview(self._buf)[:self._held]

    def advance(self, used: int, wanted: int) -> None:
        """Drop the first ``used`` bytes; make room for ``wanted`` bytes from there."""
        if used == 0 and wanted <= self._held:  # pragma: no cover - a walker's bug
            raise RuntimeError(f"the CAR walk made no progress at offset {self.pos}")
        self._buf[:self._held - used] = self._buf[used:self._held]
        self._held -= used
        self.pos += used
        if wanted > len(self._buf):
            self._buf.extend(bytes(wanted - len(self._buf)))
