"""Content addresses: ``"blake3:" + lowercase hex(BLAKE3-256(addressed bytes))``.

Every BLAKE3 digest of the object layer is computed here, by the ``blake3`` package. For
inputs of a few hundred bytes its cost is per call, not hashing, so hashers are reused
(``reset``/``update``/``digest``: no hasher object built per input): a call pops an idle
one from a list and appends it when done, both atomic under the GIL, so no two calls
share one and the list never holds more than the most calls that ran at once.
``digest().hex()`` is cheaper than ``hexdigest()``. Inputs of 1 MiB and more are hashed
with blake3's multithreading (``max_threads=AUTO``, which releases the GIL).
"""
from __future__ import annotations

from collections.abc import Iterable

from blake3 import blake3 as _blake3

from ..errors import SchemaViolationError

__all__ = ["PARALLEL_MIN", "PREFIX", "Buffer", "address", "addresses", "digest_of",
           "parse_address"]

PREFIX = "blake3:"
PARALLEL_MIN = 1 << 20  # from here on, hash with all cores (blake3's AUTO threads)

Buffer = bytes | bytearray | memoryview

_idle: list[_blake3] = []  # hashers no call is using; at most one per concurrent caller
_HEX = frozenset("0123456789abcdef")


def digest_of(data: Buffer, /) -> bytes:
    """The 32 raw BLAKE3-256 digest bytes of ``data``: what another object stores to
    reference it."""
    if (len(data) if type(data) is bytes else memoryview(data).nbytes) >= PARALLEL_MIN:
        return _blake3(data, max_threads=_blake3.AUTO).digest()
    try:
        hasher = _idle.pop()
    except IndexError:
        hasher = _blake3()
    hasher.reset()
    hasher.update(data)  # a failure here drops the hasher: only finished ones go back
    digest = hasher.digest()
    _idle.append(hasher)
    return digest


def address(data: Buffer, /) -> str:
    """``"blake3:" + lowercase hex(BLAKE3-256(data))``."""
    return PREFIX + digest_of(data).hex()


def addresses(items: Iterable[Buffer], /) -> list[str]:
    """``[address(x) for x in items]`` in one call."""
    return [PREFIX + digest_of(item).hex() for item in items]


def parse_address(text: str, /) -> bytes:
    """The 32 digest bytes of an address string; ``SchemaViolationError`` (detail
    ``"address"``) unless it is exactly ``blake3:`` + 64 lowercase hex digits."""
    if (type(text) is not str or len(text) != len(PREFIX) + 64
            or not text.startswith(PREFIX) or not _HEX.issuperset(text[len(PREFIX):])):
        raise SchemaViolationError(f"not a blake3 address: {text!r}", detail="address")
    return bytes.fromhex(text[len(PREFIX):])
