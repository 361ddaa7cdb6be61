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
import struct
from collections.abc import Iterable
from typing import Any

from canonkit.astp._py.common import check_sav, episode_first, hash_bytes
from canonkit.astp._py.fields import encode_field, encode_fields
from canonkit.errors import EmptyTreeError, InvalidHashError

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

LEAF_V1 = b"LEAF:"
NODE_V1 = b"NODE:"
LEAF_V2 = b"TREE_LEAF:v2:"
NODE_V2 = b"TREE_NODE:v2:"


# --- hashing and digest shapes ---------------------------------------------------------

def sha3_256(data: Any) -> bytes:
    """SHA3-256 of a bytes-like object (FIPS 202), 32 raw bytes."""
    return hashlib.sha3_256(data).digest()


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


# --- §2.1 field encoding (the encoder is shared: canonkit.astp._py.fields) --------------

def hash_fields(prefix: bytes, fields: Iterable[tuple[str, Any]]) -> bytes:
    """``H(encode_fields(prefix, fields))``, 32 raw bytes."""
    return sha3_256(encode_fields(prefix, fields))
