"""ASTP hashing kernel, pure-Python twin (the reference oracle of ``canonkit.astp._hash``):
SHA3-256, digest parsing, the Merkle spine folds (ASTP.md §5), the hash sets (§2.2, §6) and
the §2.1 field encoding that feeds them (one field, a field list and its hash).

Every public function has an identically named, identically behaving counterpart in the
compiled module (docs/astp-kernel-api.md); the differential tests hold them to it. Written
to be obviously correct: ``hashlib.sha3_256`` and plain loops straight from ASTP.md. The
tree helpers (``leaf_v1``, ``node_v1``, ``tree_levels`` …) also serve the proofs twin.
"""
from __future__ import annotations

import hashlib
import math
import re
import struct
import unicodedata
from collections.abc import Iterable
from typing import Any

from canonkit.astp._py.common import (
    U32,
    U64,
    check_sav,
    episode_first,
    short_repr,
    split_kind,
    timestamp_ms,
    uuid_bytes,
)
from canonkit.errors import EmptyTreeError, InvalidFieldError, InvalidHashError

__all__ = [
    "encode_field",
    "encode_fields",
    "encode_set_v2",
    "hash_bytes",
    "hash_fields",
    "hash_hex",
    "hash_set_v1",
    "hash_set_v2",
    "merkle_root_v1",
    "merkle_root_v2",
    "sha3_256",
    "spine_root",
]

_HEX64 = re.compile(r"[0-9a-fA-F]{64}")

LEAF_V1 = b"LEAF:"
NODE_V1 = b"NODE:"
LEAF_V2 = b"TREE_LEAF:v2:"
NODE_V2 = b"TREE_NODE:v2:"


# --- hashing and digest shapes ---------------------------------------------------------

def sha3_256(data: Any) -> bytes:
    """SHA3-256 of a bytes-like object (FIPS 202), 32 raw bytes."""
    return hashlib.sha3_256(data).digest()


def hash_bytes(value: Any) -> bytes:
    """A digest as 32 raw bytes, from 64 hex characters (either case) or a 32-byte value."""
    if isinstance(value, str):
        if len(value) != 64 or not _HEX64.fullmatch(value):
            raise InvalidHashError(f"not a digest: expected 64 hex characters, got {value[:80]!r}",
                                   detail=value)
        return bytes.fromhex(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        if len(raw) != 32:
            raise InvalidHashError(f"not a digest: expected 32 bytes, got {len(raw)}", detail=len(raw))
        return raw
    raise InvalidHashError(f"not a digest: expected hex text or 32 bytes, got {type(value).__name__}",
                           detail=type(value).__name__)


def hash_hex(value: Any) -> str:
    """A digest as 64 lowercase hex characters (same inputs as ``hash_bytes``)."""
    return hash_bytes(value).hex()


# --- §2.2 / §6 sets ----------------------------------------------------------------------

def encode_set_v2(prefix: bytes, members: Iterable[Any]) -> bytes:
    """``prefix ‖ u32be(n) ‖ sorted distinct raw members`` (ASTP.md §2.2)."""
    distinct = sorted({hash_bytes(m) for m in members})
    return bytes(prefix) + struct.pack(">I", len(distinct)) + b"".join(distinct)


def hash_set_v2(prefix: bytes, members: Iterable[Any]) -> str:
    """Version 2 set hash (ASTP.md §2.2) as hex."""
    return sha3_256(encode_set_v2(prefix, members)).hex()


def hash_set_v1(prefix: bytes, members: Iterable[Any]) -> str:
    """Version 1 set hash (ASTP.md §6): ``H(prefix ‖ "|".join(sorted distinct hex))``, or
    ``H(prefix ‖ "EMPTY")`` for no members; as hex."""
    distinct = sorted({hash_hex(m) for m in members})
    body = "|".join(distinct).encode("ascii") if distinct else b"EMPTY"
    return sha3_256(bytes(prefix) + body).hex()


# --- §5 Merkle tree ----------------------------------------------------------------------

def leaf_v1(raw: bytes) -> bytes:
    """Level-0 node of a sav 0/1 tree, kept as its 64 hex characters (ASCII bytes)."""
    return sha3_256(LEAF_V1 + raw.hex().encode("ascii")).hex().encode("ascii")


def node_v1(left: bytes, right: bytes) -> bytes:
    return sha3_256(NODE_V1 + left + right).hex().encode("ascii")


def leaf_v2(raw: bytes) -> bytes:
    return sha3_256(LEAF_V2 + raw)


def node_v2(left: bytes, right: bytes) -> bytes:
    return sha3_256(NODE_V2 + left + right)


def fold(level: list[bytes], node: Any) -> bytes:
    """Pair from the left; an odd level's last node is carried up unchanged."""
    while len(level) > 1:
        level = [node(level[i], level[i + 1]) if i + 1 < len(level) else level[i]
                 for i in range(0, len(level), 2)]
    return level[0]


def _split_raw(raw: Any) -> list[bytes]:
    data = bytes(memoryview(raw).cast("B"))
    if len(data) % 32:
        raise InvalidHashError(f"leaf buffer length {len(data)} is not a multiple of 32")
    if not data:
        raise EmptyTreeError("the root of an empty leaf list is undefined")
    return [data[i:i + 32] for i in range(0, len(data), 32)]


def merkle_root_v2(raw: Any) -> bytes:
    """Root of the raw-byte tree (``TREE_LEAF:v2:``/``TREE_NODE:v2:``) over a buffer of n*32
    bytes (n >= 1), 32 raw bytes."""
    return fold([leaf_v2(x) for x in _split_raw(raw)], node_v2)


def merkle_root_v1(raw: Any) -> bytes:
    """Root of the hex-text tree (``LEAF:``/``NODE:``) over a buffer of n*32 bytes (each input
    taken as its lowercase hex text), 32 raw bytes."""
    return bytes.fromhex(fold([leaf_v1(x) for x in _split_raw(raw)], node_v1).decode("ascii"))


def inputs_raw(inputs: Any) -> list[bytes]:
    """Spine inputs (hex strings, 32-byte values, or an (n, 32) uint8 array) as raw digests."""
    if hasattr(inputs, "__array_interface__") or type(inputs).__module__ == "numpy":
        import numpy as np
        arr = np.asarray(inputs)
        if arr.dtype != np.uint8 or arr.ndim != 2 or arr.shape[1] != 32:
            raise InvalidHashError(f"array inputs must be (n, 32) uint8, got {arr.shape} {arr.dtype}")
        if arr.shape[0] == 0:
            raise EmptyTreeError("the root of an empty leaf list is undefined")
        data = np.ascontiguousarray(arr).tobytes()
        return [data[i:i + 32] for i in range(0, len(data), 32)]
    if isinstance(inputs, (str, bytes, bytearray, memoryview)):
        raise InvalidHashError("spine inputs must be a sequence of digests, not one value")
    out = [hash_bytes(x) for x in inputs]
    if not out:
        raise EmptyTreeError("the root of an empty leaf list is undefined")
    return out


def spine_leaves(inputs: Any, version: int, episode_id: Any) -> list[bytes]:
    """The tree inputs as raw digests: the sav 1 Episode input first, then ``inputs``."""
    raw = inputs_raw(inputs)
    first = episode_first(version, episode_id)
    return raw if first is None else [first, *raw]


def spine_root(inputs: Any, *, spine_algorithm_version: int, episode_id: Any = None) -> str:
    """Spine root (ASTP.md §5) as hex. sav 0/1: hex-text tree (sav 1 first adds the
    Episode-identifier input); sav 2/3: raw-byte tree. ``episode_id`` is used by sav 1 only."""
    version = check_sav(spine_algorithm_version)
    raw = spine_leaves(inputs, version, episode_id)
    if version in (0, 1):
        return fold([leaf_v1(x) for x in raw], node_v1).decode("ascii")
    return fold([leaf_v2(x) for x in raw], node_v2).hex()


def tree_levels(level: list[bytes], node: Any) -> list[list[bytes]]:
    """Every level of the tree over ``level`` (level 0 first), as ``fold`` pairs them."""
    levels = [level]
    while len(level) > 1:
        level = [node(level[i], level[i + 1]) if i + 1 < len(level) else level[i]
                 for i in range(0, len(level), 2)]
        levels.append(level)
    return levels


# --- §2.1 field encoding ---------------------------------------------------------------

def _enc_string(value: Any) -> bytes:
    if not isinstance(value, str):
        raise InvalidFieldError(f"STRING needs text, got {type(value).__name__}")
    try:
        data = unicodedata.normalize("NFC", value).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidFieldError(f"STRING is not encodable as UTF-8: {exc.reason}") from None
    if len(data) >= U32:
        raise InvalidFieldError("STRING longer than 2^32-1 bytes")
    return b"\x02" + struct.pack(">I", len(data)) + data


def _enc_bytes(value: Any) -> bytes:
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise InvalidFieldError(f"BYTES needs a bytes-like value, got {type(value).__name__}")
    data = bytes(value)
    if len(data) >= U32:
        raise InvalidFieldError("BYTES longer than 2^32-1 bytes")
    return b"\x01" + struct.pack(">I", len(data)) + data


def _enc_uint(value: Any) -> bytes:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidFieldError(f"UINT needs an integer, got {type(value).__name__}")
    if not 0 <= value < U64:
        raise InvalidFieldError(f"UINT out of range [0, 2^64): {short_repr(value)}")
    return b"\x03" + struct.pack(">Q", value)


def _enc_float(value: Any) -> bytes:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidFieldError(f"FLOAT needs a number, got {type(value).__name__}")
    try:
        x = float(value)
    except OverflowError:
        raise InvalidFieldError("FLOAT: integer too large for binary64") from None
    if math.isnan(x) or math.isinf(x):
        raise InvalidFieldError(f"FLOAT refuses {x!r}")
    if x == 0.0:
        x = 0.0  # -0 normalizes to +0
    return b"\x09" + struct.pack(">d", x)


def _enc_bool(value: Any) -> bytes:
    if not isinstance(value, bool):
        raise InvalidFieldError(f"BOOL needs a boolean, got {type(value).__name__}")
    return b"\x08\x01" if value else b"\x08\x00"


def _enc_one(base: str, value: Any) -> bytes:
    if base == "STRING":
        return _enc_string(value)
    if base == "HASH":
        try:
            return b"\x06" + hash_bytes(value)
        except InvalidHashError as exc:
            raise InvalidHashError(f"HASH field: {exc}", detail=exc.detail) from None
    if base == "UUID":
        return b"\x04" + uuid_bytes(value)
    if base == "UINT":
        return _enc_uint(value)
    if base == "TIMESTAMP":
        return b"\x05" + struct.pack(">Q", timestamp_ms(value))
    if base == "BYTES":
        return _enc_bytes(value)
    if base == "BOOL":
        return _enc_bool(value)
    if base == "FLOAT":
        return _enc_float(value)
    raise InvalidFieldError(f"kind {base!r} cannot carry a value")


def encode_field(kind: str, value: Any) -> bytes:
    """One field in the §2.1 encoding: tag byte then payload.

    ``kind`` is a type name of ASTP.md §2.1 (``"UINT"``), optionally nullable
    (``"HASH|NULL"``), or a list with its item kind (``"LIST(HASH)"``). ``"NULL"`` takes
    ``None``. ``None`` for a kind not marked nullable is refused.
    """
    base, nullable, item = split_kind(kind)
    if base == "NULL":
        if value is not None:
            raise InvalidFieldError(f"NULL takes None, got {type(value).__name__}")
        return b"\x00"
    if value is None:
        if nullable:
            return b"\x00"
        raise InvalidFieldError(f"None for non-nullable field kind {kind!r}")
    if base == "LIST":
        if isinstance(value, (str, bytes, bytearray, memoryview)) or not isinstance(value, (list, tuple)):
            raise InvalidFieldError(f"LIST needs a list or tuple, got {type(value).__name__}")
        if len(value) >= U32:
            raise InvalidFieldError("LIST longer than 2^32-1 items")
        parts = [b"\x07", struct.pack(">I", len(value))]
        for element in value:
            if element is None:
                raise InvalidFieldError("LIST items must be non-null")
            parts.append(_enc_one(item, element))  # type: ignore[arg-type]
        return b"".join(parts)
    return _enc_one(base, value)


def encode_fields(prefix: bytes, fields: Iterable[tuple[str, Any]]) -> bytes:
    """``prefix ‖ enc(f1) ‖ … ‖ enc(fn)``; ``fields`` is a sequence of (kind, value)."""
    parts = [bytes(prefix)]
    for kind, value in fields:
        parts.append(encode_field(kind, value))
    return b"".join(parts)


def hash_fields(prefix: bytes, fields: Iterable[tuple[str, Any]]) -> bytes:
    """``H(encode_fields(prefix, fields))``, 32 raw bytes."""
    return sha3_256(encode_fields(prefix, fields))
