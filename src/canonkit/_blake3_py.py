"""BLAKE3 content addresses through the ``blake3`` package: the twin of
``canonkit._blake3`` (which hashes inputs of up to 1024 bytes in C and hands larger ones
here).

For inputs of a few hundred bytes the package's cost is per call, not hashing, so one
hasher per thread is reused (``reset``/``update``/``digest``; ``digest().hex()`` is
cheaper than ``hexdigest()``). Inputs of 1 MiB and more are hashed with blake3's
multithreading (``max_threads=AUTO``, which releases the GIL).
"""
from __future__ import annotations

import threading
from collections.abc import Iterable

from blake3 import blake3 as _blake3

__all__ = ["PARALLEL_MIN", "PREFIX", "address", "addresses", "digest"]

PREFIX = "blake3:"
PARALLEL_MIN = 1 << 20  # from here on, hash with all cores (blake3's AUTO threads)

Buffer = bytes | bytearray | memoryview

_local = threading.local()  # one reusable hasher per thread (not shareable)


def digest(data: Buffer, /) -> bytes:
    """The 32 raw BLAKE3-256 digest bytes of ``data``."""
    if (len(data) if type(data) is bytes else memoryview(data).nbytes) >= PARALLEL_MIN:
        return _blake3(data, max_threads=_blake3.AUTO).digest()
    try:
        hasher = _local.hasher
    except AttributeError:
        hasher = _local.hasher = _blake3()
    hasher.reset()  # first: a previous call may have failed half way
    hasher.update(data)
    return hasher.digest()  # type: ignore[no-any-return]


def address(data: Buffer, /) -> str:
    """``"blake3:" + lowercase hex(BLAKE3-256(data))``."""
    return PREFIX + digest(data).hex()


def addresses(items: Iterable[Buffer], /) -> list[str]:
    """``[address(x) for x in items]`` in one call."""
    return [address(item) for item in items]
