"""Content addresses: ``"blake3:" + lowercase hex(BLAKE3-256(addressed bytes))``.

Every BLAKE3 digest of the object layer is computed by the ``blake3`` package, through the
addresser kernel (``canonkit.objects._address``, twin ``_address_py``): hashers are reused
for small inputs, whose cost is per call rather than hashing, and inputs of
``PARALLEL_MIN`` bytes and more are hashed on all cores.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .. import _backend
from ..errors import SchemaViolationError

if TYPE_CHECKING:  # the twin is the typed surface
    from . import _address_py as _address
else:
    _address = _backend.select("objects", compiled="canonkit.objects._address",
                               twin="canonkit.objects._address_py")

__all__ = ["PARALLEL_MIN", "PREFIX", "Buffer", "address", "addresses", "digest_of",
           "parse_address"]

PREFIX = "blake3:"
PARALLEL_MIN = _address.PARALLEL_MIN  # from here on, hash with all cores (blake3's AUTO)

Buffer = bytes | bytearray | memoryview

digest_of = _address.digest_of
"""``digest_of(data, /) -> bytes``: the 32 raw BLAKE3-256 digest bytes of ``data``, what
another object stores to reference it."""
address = _address.address
"""``address(data, /) -> str``: ``"blake3:" + lowercase hex(BLAKE3-256(data))``."""
addresses = _address.addresses
"""``addresses(items, /) -> list[str]``: ``[address(x) for x in items]`` in one call."""

_HEX = frozenset("0123456789abcdef")


def parse_address(text: str, /) -> bytes:
    """The 32 digest bytes of an address string; ``SchemaViolationError`` (detail
    ``"address"``) unless it is exactly ``blake3:`` + 64 lowercase hex digits."""
    if (type(text) is not str or len(text) != len(PREFIX) + 64
            or not text.startswith(PREFIX) or not _HEX.issuperset(text[len(PREFIX):])):
        raise SchemaViolationError(f"not a blake3 address: {text!r}", detail="address")
    return bytes.fromhex(text[len(PREFIX):])
