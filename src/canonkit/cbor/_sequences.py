"""CBOR sequences (RFC 8742) and files, shared by both backends.

Both are thin loops over a backend's ``decode_prefix``, so they live once, here. A file
is read in chunks: an item that runs past the end of the bytes read so far is retried
once more bytes are in (the buffer at least doubles per retry, so a large item costs a
bounded number of attempts); every other item is decoded exactly once. An error has the
offset, and the message, it would have had for the whole stream in one buffer.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from ..errors import (
    CONTEXT_RADIUS,
    CanonkitError,
    DecodeError,
    InputTypeError,
    TruncatedError,
    decode_error,
)

__all__ = ["CHUNK", "iter_sequence", "read_for_load"]

CHUNK = 1 << 20  # bytes read from a file at a time

DecodePrefix = Callable[[Any, int], tuple[Any, int]]


def iter_sequence(decode_prefix: DecodePrefix, source: Any) -> Iterator[Any]:
    """The items of ``source`` (a bytes-like object, or a binary file: anything with
    ``read``), each decoded by ``decode_prefix(data, offset) -> (value, end)``. The
    argument is checked now; decoding happens as the iterator is consumed."""
    if hasattr(source, "read"):
        return _from_file(decode_prefix, _Window(source))
    return _from_buffer(decode_prefix, source, _byte_length(source))


def _byte_length(source: Any) -> int:
    if isinstance(source, (bytes, bytearray)):
        return len(source)
    try:
        with memoryview(source) as view:
            return view.nbytes
    except TypeError:
        raise InputTypeError(
            "iter_sequence() needs a bytes-like object or a binary file, "
            f"not {type(source).__name__}") from None


def _from_buffer(decode_prefix: DecodePrefix, data: Any, length: int) -> Iterator[Any]:
    pos = 0
    while pos < length:
        value, pos = decode_prefix(data, pos)
        yield value


def _from_file(decode_prefix: DecodePrefix, window: _Window) -> Iterator[Any]:
    while window.pos < len(window.buf) or window.fill(CHUNK):
        try:
            value, end = decode_prefix(window.buf, window.pos)
        except TruncatedError as exc:
            if window.fill(max(CHUNK, len(window.buf) - window.pos)):
                continue  # the item may be complete now
            raise window.locate(exc) from None
        except DecodeError as exc:
            raise window.locate(exc) from None
        window.pos = end
        yield value


class _Window:
    """The bytes of a file from a little before the next item (``pos``) to what has been
    read; ``base`` is the file offset of ``buf[0]``."""

    def __init__(self, fp: Any) -> None:
        self.fp = fp
        self.buf = b""
        self.pos = 0
        self.base = 0
        self.eof = False

    def fill(self, size: int) -> bool:
        """Append up to ``size`` more bytes (dropping all but CONTEXT_RADIUS bytes before
        ``pos``); False at the end of the file."""
        if self.eof:
            return False
        more = self.fp.read(size)
        if not more:
            self.eof = True
            return False
        drop = max(0, self.pos - CONTEXT_RADIUS)
        self.buf = self.buf[drop:] + more
        self.pos -= drop
        self.base += drop
        return True

    def locate(self, exc: DecodeError) -> CanonkitError:
        """``exc`` (raised for ``buf``) with its offset in the file and the message a
        single buffer would have given (the same bytes around the offset)."""
        if exc.offset is None or not isinstance(exc.detail, str):
            return exc
        where = self.base + exc.offset
        while where + CONTEXT_RADIUS > self.base + len(self.buf) and self.fill(CONTEXT_RADIUS):
            pass
        return decode_error(exc.code, self.buf, where - self.base, exc.detail, base=self.base)


def read_for_load(fp: Any, max_size: int | None) -> Any:
    """The rest of ``fp``; with ``max_size``, at most one byte more than that (enough
    for the decoder to report the item as too large or followed by trailing data)."""
    if max_size is None:
        return fp.read()
    parts = []
    want = max_size + 1
    while want > 0:
        part = fp.read(want)
        if not part:
            break
        parts.append(part)
        want -= len(part)
    return b"".join(parts)
