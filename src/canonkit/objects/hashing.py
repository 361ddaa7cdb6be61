"""Content addresses: ``"blake3:" + lowercase hex(BLAKE3-256(addressed bytes))``.

Hashing goes through the ``blake3`` package. For one input, ``blake3(data)`` plus
``digest().hex()`` is the cheapest spelling (``hexdigest()`` costs more per call). For many
small inputs, ``addresses`` reuses a single hasher (``reset``/``update``/``digest``), which
avoids constructing a hasher object per item — the dominant cost for inputs of a few
hundred bytes. The hasher is local to the call, so concurrent calls never share state.
"""
from __future__ import annotations

from collections.abc import Iterable

from blake3 import blake3 as _blake3

from ..errors import SchemaViolationError

__all__ = ["PREFIX", "address", "addresses", "digest_of", "parse_address"]

PREFIX = "blake3:"
_HEX = frozenset("0123456789abcdef")

Buffer = bytes | bytearray | memoryview


def address(data: Buffer, /) -> str:
    """The address of the addressed bytes ``data``."""
    return PREFIX + _blake3(data).digest().hex()


def addresses(items: Iterable[Buffer], /) -> list[str]:
    """``[address(x) for x in items]`` in one call, with one reused hasher."""
    hasher = _blake3()
    reset = hasher.reset
    update = hasher.update
    digest = hasher.digest
    out = []
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
