"""Content addresses and the common case of ``address_object``: the twin of
``canonkit.objects._address``.

An address is ``"blake3:" + lowercase hex(BLAKE3-256(bytes))``, computed by the ``blake3``
package. For inputs of a few hundred bytes its cost is per call, not hashing, so hashers
are reused (``reset``/``update``/``digest``: no hasher object built per input): a call
pops an idle one from a list and appends it when done, both atomic under the GIL, so no
two calls share one and the list never holds more than the most calls that ran at once.
Inputs of ``PARALLEL_MIN`` bytes and more are hashed with blake3's multithreading
(``max_threads=AUTO``, which releases the GIL).

``Addresser(kinds, encode_merged, slow).address_object(kind, fields, *, version=1)`` is
``address_object`` over one CBOR backend: a version-1 kind of ``kinds`` (the live registry
dict) without a cross-field check whose fields pass its fast check is encoded and hashed
here; every other call is ``slow``'s (which validates, raises the precise error, or
accepts what the fast check left to it).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from blake3 import blake3 as _blake3

__all__ = ["PARALLEL_MIN", "Addresser", "address", "addresses", "digest_of"]

Buffer = bytes | bytearray | memoryview

PARALLEL_MIN = 1 << 20  # from here on, hash with all cores (blake3's AUTO threads)

_idle: list[_blake3] = []  # hashers no call is using; at most one per concurrent caller


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
    digest: bytes = hasher.digest()
    _idle.append(hasher)
    return digest


def address(data: Buffer, /) -> str:
    """``"blake3:" + lowercase hex(BLAKE3-256(data))``."""
    return "blake3:" + digest_of(data).hex()


def addresses(items: Iterable[Buffer], /) -> list[str]:
    """``[address(x) for x in items]`` in one call."""
    return ["blake3:" + digest_of(item).hex() for item in items]


class Addresser:
    """``address_object`` over one ``encode_merged(envelope, fields)``; see the module
    docstring."""

    __slots__ = ("encode_merged", "kinds", "slow")

    def __init__(self, kinds: Mapping[str, Any], encode_merged: Callable[[Any, Any], bytes],
                 slow: Callable[..., str]) -> None:
        self.kinds = kinds
        self.encode_merged = encode_merged
        self.slow = slow

    def address_object(self, kind: str, fields: Any, *, version: int = 1) -> str:
        """``address(encode_object(kind, fields, version=version))``."""
        common = type(version) is int and version == 1 and type(kind) is str
        spec = self.kinds.get(kind) if common else None
        if spec is not None and spec.check is None and spec._fast(fields):
            return address(self.encode_merged(spec._envelope, fields))
        return self.slow(kind, fields, version=version)
