"""The CAR formats' constants and the small parsers every part of ``canonkit.car`` shares
(docs/car.md, "The format"): varints, CIDs, the CARv2 header, the hash functions.

Pure Python, used as they are by both kernel backends: the compiled scanner parses the
same fields in C, and the differential tests hold it to these functions.
"""
from __future__ import annotations

import hashlib
import os
import struct
from collections.abc import Callable
from typing import Any, NamedTuple

__all__ = [
    "CARV2_PREFIX", "FULLY_INDEXED", "HASH_FUNCTIONS", "INDEX_FORMATS", "INDEX_SORTED",
    "MAX_HEADER_SIZE", "MAX_VARINT_BYTES", "MULTIHASH_INDEX_SORTED", "PRAGMA", "CidFields",
    "CidProblem", "HashFunction", "V2Header", "VarintProblem", "digest", "parse_cid",
    "parse_v2_header", "read_at", "read_varint",
]

#: the CARv2 pragma: a CARv1 header of length 10, the DAG-CBOR map {"version": 2}
PRAGMA = bytes.fromhex("0aa16776657273696f6e02")
#: the 40-byte CARv2 header after the pragma: characteristics (16), then data offset,
#: data size and index offset (each a little-endian uint64)
V2_HEADER_SIZE = 40
CARV2_PREFIX = len(PRAGMA) + V2_HEADER_SIZE  # 51: the first byte a payload may start at
#: the "fully indexed" characteristic: the leftmost bit of the 128-bit field, i.e. bit 7
#: of its first byte (go-car reads the field as two little-endian uint64, this is bit 7
#: of the first); every other bit is reserved and should be zero
FULLY_INDEXED = 0x80

INDEX_SORTED = 0x0400             # car-index-sorted
MULTIHASH_INDEX_SORTED = 0x0401   # car-multihash-index-sorted
INDEX_FORMATS = {INDEX_SORTED: "car-index-sorted",
                 MULTIHASH_INDEX_SORTED: "car-multihash-index-sorted"}

#: the largest CARv1 header read (go-car's default limit): it is decoded into Python
#: objects, so its size is capped below the file's
MAX_HEADER_SIZE = 32 << 20
#: multiformats varints: unsigned LEB128, minimal, at most 9 bytes (values below 2**63)
MAX_VARINT_BYTES = 9

DAG_CBOR = 0x71
IDENTITY = 0x00
SHA2_256 = 0x12
CIDV0_CODEC = 0x70  # dag-pb, implied by a CIDv0


# --- varints ---------------------------------------------------------------------------

class VarintProblem(Exception):
    """Why no varint could be read at a position: ``kind`` is ``"cut"`` (the bytes end
    inside it), ``"overlong"`` (more than 9 bytes) or ``"non_minimal"``."""

    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


def read_varint(buf: Any, pos: int, end: int) -> tuple[int, int]:
    """The varint at ``buf[pos]`` that must end before ``end``: ``(value, next)``; raises
    VarintProblem."""
    value = 0
    for i in range(MAX_VARINT_BYTES):
        if pos + i >= end:
            raise VarintProblem("cut")
        byte = buf[pos + i]
        value |= (byte & 0x7F) << (7 * i)
        if byte < 0x80:
            if byte == 0 and i > 0:
                raise VarintProblem("non_minimal")
            return value, pos + i + 1
    raise VarintProblem("overlong")


# --- CIDs --------------------------------------------------------------------------------

class CidFields(NamedTuple):
    """A parsed binary CID: where it ends, its fields, where its multihash and its digest
    start (the multihash, from ``mh_start`` to ``end``, is the hash code varint, the
    digest length varint and the digest)."""

    end: int
    version: int
    codec: int
    hash_code: int
    mh_start: int
    digest_start: int
    digest_length: int


class CidProblem(Exception):
    """Why no CID could be parsed: ``reason`` is one of ``"version"`` (``value`` is the
    version read), ``"varint"`` (``value`` the VarintProblem kind) or ``"digest"`` (the
    digest runs past the end; ``value`` is its declared length)."""

    def __init__(self, reason: str, value: int | str) -> None:
        super().__init__(reason, value)
        self.reason = reason
        self.value = value


def parse_cid(buf: Any, pos: int, end: int) -> CidFields:
    """The CID at ``buf[pos]`` that must end by ``end``; raises CidProblem. A CIDv0 is the
    34-byte sha2-256 multihash ``12 20 <32 bytes>``; a CIDv1 is varint version 1, varint
    codec, varint hash code, varint digest length and the digest."""
    if end - pos >= 2 and buf[pos] == SHA2_256 and buf[pos + 1] == 0x20:
        if end - pos < 34:
            raise CidProblem("digest", 32)
        return CidFields(pos + 34, 0, CIDV0_CODEC, SHA2_256, pos, pos + 2, 32)
    try:
        version, p = read_varint(buf, pos, end)
        if version != 1:
            raise CidProblem("version", version)
        codec, mh_start = read_varint(buf, p, end)
        hash_code, p = read_varint(buf, mh_start, end)
        length, p = read_varint(buf, p, end)
    except VarintProblem as exc:
        raise CidProblem("varint", exc.kind) from None
    if length > end - p:
        raise CidProblem("digest", length)
    return CidFields(p + length, 1, codec, hash_code, mh_start, p, length)


# --- hash functions ----------------------------------------------------------------------

class HashFunction(NamedTuple):
    """A multihash function canonkit computes: ``size`` is its full output; ``xof`` says
    longer digests are defined too (BLAKE3 is an extendable-output function)."""

    name: str
    size: int
    xof: bool
    compute: Callable[[Any, int], bytes]


def _hashlib(name: str, **options: Any) -> Callable[[Any, int], bytes]:
    constructor = getattr(hashlib, name)
    return lambda data, length: bytes(constructor(data, **options).digest()[:length])


def _blake3(data: Any, length: int) -> bytes:
    from blake3 import blake3

    return bytes(blake3(data).digest(length=length))


#: multihash code -> the function; identity (0x00) is handled apart (its digest is the
#: block). The same functions as ``Link.for_block`` computes (``canonkit.cbor._cid.HASHES``).
HASH_FUNCTIONS: dict[int, HashFunction] = {
    0x12: HashFunction("sha2-256", 32, False, _hashlib("sha256")),
    0x13: HashFunction("sha2-512", 64, False, _hashlib("sha512")),
    0x20: HashFunction("sha2-384", 48, False, _hashlib("sha384")),
    0x1013: HashFunction("sha2-224", 28, False, _hashlib("sha224")),
    0x14: HashFunction("sha3-512", 64, False, _hashlib("sha3_512")),
    0x15: HashFunction("sha3-384", 48, False, _hashlib("sha3_384")),
    0x16: HashFunction("sha3-256", 32, False, _hashlib("sha3_256")),
    0x17: HashFunction("sha3-224", 28, False, _hashlib("sha3_224")),
    0xB220: HashFunction("blake2b-256", 32, False, _hashlib("blake2b", digest_size=32)),
    0xB240: HashFunction("blake2b-512", 64, False, _hashlib("blake2b", digest_size=64)),
    0xB260: HashFunction("blake2s-256", 32, False, _hashlib("blake2s", digest_size=32)),
    0x1E: HashFunction("blake3", 32, True, _blake3),
}


def digest(hash_code: int, data: Any, length: int) -> bytes:
    """The first ``length`` bytes of the ``hash_code`` digest of ``data`` (the caller
    checked the code is in HASH_FUNCTIONS and ``length`` is defined for it)."""
    if length == 0:  # a zero-length digest holds nothing to compare
        return b""
    return HASH_FUNCTIONS[hash_code].compute(data, length)


# --- the CARv2 header --------------------------------------------------------------------

class V2Header(NamedTuple):
    """The 40 bytes after the pragma."""

    characteristics: bytes
    data_offset: int
    data_size: int
    index_offset: int

    @property
    def fully_indexed(self) -> bool:
        return bool(self.characteristics[0] & FULLY_INDEXED)

    @property
    def reserved_bits(self) -> bool:
        """Any characteristic bit other than "fully indexed" is set."""
        return bool(self.characteristics[0] & ~FULLY_INDEXED) or any(self.characteristics[1:])


def parse_v2_header(raw: bytes) -> V2Header:
    """The CARv2 header from its 40 bytes."""
    data_offset, data_size, index_offset = struct.unpack_from("<QQQ", raw, 16)
    return V2Header(bytes(raw[:16]), data_offset, data_size, index_offset)


# --- reading at an offset ----------------------------------------------------------------

def read_at(fd: int, size: int, offset: int) -> bytes:
    """Up to ``size`` bytes of the open file ``fd`` at ``offset`` (fewer at its end)."""
    pread = getattr(os, "pread", None)
    if pread is not None:
        return bytes(pread(fd, size, offset))
    os.lseek(fd, offset, os.SEEK_SET)  # pragma: no cover - Windows
    return os.read(fd, size)           # pragma: no cover
