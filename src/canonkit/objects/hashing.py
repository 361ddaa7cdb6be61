"""Content addresses: ``"blake3:" + lowercase hex(BLAKE3-256(addressed bytes))``.

Hashing goes through the ``blake3`` package. For inputs of a few hundred bytes the cost
is dominated by per-call overhead, not by hashing, so: a hasher is reused
(``reset``/``update``/``digest``) instead of constructed per input — one per thread for
``address``, one per call for ``addresses`` — and ``digest().hex()`` is used because it
is cheaper than ``hexdigest()``. Inputs of 1 MiB and more are hashed with blake3's
multithreading (``max_threads=AUTO``, which releases the GIL).
"""
from __future__ import annotations

import threading
from collections.abc import Iterable

from blake3 import blake3 as _blake3

from ..errors import SchemaViolationError

__all__ = ["PREFIX", "address", "addresses", "digest_of", "parse_address"]

PREFIX = "blake3:"
_HEX = frozenset("0123456789abcdef")

Buffer = bytes | bytearray | memoryview


_hasher_local = threading.local()  # one reusable hasher per thread (not shareable)
PARALLEL_MIN = 1 << 20  # from here on, hash with all cores (blake3's AUTO threads)


def address(data: Buffer, /) -> str:
    """The address of the addressed bytes ``data``."""
    if (len(data) if type(data) is bytes else memoryview(data).nbytes) >= PARALLEL_MIN:
        return PREFIX + _blake3(data, max_threads=_blake3.AUTO).digest().hex()
    try:
        hasher = _hasher_local.hasher
    except AttributeError:
        hasher = _hasher_local.hasher = _blake3()
    hasher.reset()  # first: a previous call may have failed half way
    hasher.update(data)
    digest: bytes = hasher.digest()
    return PREFIX + digest.hex()


def addresses(items: Iterable[Buffer], /) -> list[str]:
    """``[address(x) for x in items]`` in one call, with one reused hasher."""
    hasher = _blake3()
    reset = hasher.reset
    update = hasher.update
    digest = hasher.digest
    out: list[str] = []
    append = out.append
    for item in items:
        reset()
        update(item)
        append(PREFIX + digest().hex())
    return out


def digest_of(data: Buffer, /) -> bytes:
    """The 32 raw digest bytes: what another object stores to reference ``data``."""
    return _blake3(data).digest()


def parse_address(text: str, /) -> bytes:
    """The 32 digest bytes of an address string; ``SchemaViolationError`` (detail
    ``"address"``) unless it is exactly ``blake3:`` + 64 lowercase hex digits."""
    if (type(text) is not str or len(text) != len(PREFIX) + 64
            or not text.startswith(PREFIX) or not _HEX.issuperset(text[len(PREFIX):])):
        raise SchemaViolationError(f"not a blake3 address: {text!r}", detail="address")
    return bytes.fromhex(text[len(PREFIX):])
