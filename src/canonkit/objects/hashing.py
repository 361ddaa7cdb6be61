"""Content addresses: ``"blake3:" + lowercase hex(BLAKE3-256(addressed bytes))``.

The hashing backend is ``canonkit._blake3`` when built (inputs of up to 1024 bytes, every
small object, are hashed in C in one call) else its twin ``canonkit._blake3_py`` (the
``blake3`` package, which the compiled module also uses for larger inputs).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .. import _backend
from ..errors import SchemaViolationError

__all__ = ["PREFIX", "Buffer", "address", "addresses", "digest_of", "parse_address"]

if TYPE_CHECKING:  # the twin is the typed surface
    from .._blake3_py import PREFIX, Buffer, address, addresses
    from .._blake3_py import digest as digest_of
else:
    from .._blake3_py import Buffer
    _impl = _backend.load("blake3")
    PREFIX = _impl.PREFIX
    address = _impl.address
    addresses = _impl.addresses
    digest_of = _impl.digest

_HEX = frozenset("0123456789abcdef")


def parse_address(text: str, /) -> bytes:
    """The 32 digest bytes of an address string; ``SchemaViolationError`` (detail
    ``"address"``) unless it is exactly ``blake3:`` + 64 lowercase hex digits."""
    if (type(text) is not str or len(text) != len(PREFIX) + 64
            or not text.startswith(PREFIX) or not _HEX.issuperset(text[len(PREFIX):])):
        raise SchemaViolationError(f"not a blake3 address: {text!r}", detail="address")
    return bytes.fromhex(text[len(PREFIX):])
