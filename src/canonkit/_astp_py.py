"""ASTP kernels, pure-Python twin (the reference oracle of ``canonkit._astp``).

Every function here has an identically named, identically behaving counterpart in the
compiled module; ``docs/astp-kernel-api.md`` is the contract both follow and the
differential tests (``tests/test_astp_kernels.py``) hold them to it. The twin is written to
be obviously correct: ``hashlib.sha3_256`` and plain loops straight from ASTP.md. Everything
above the kernels (sets, manifests, Episode roots, documents, reproduction) lives in the
pure-Python package ``canonkit.astp``.
"""
from __future__ import annotations

import hashlib
import itertools
import math
import re
import struct
import unicodedata
import uuid as _uuid
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from typing import Any

from canonkit.errors import (
    EmptyTreeError,
    InvalidFieldError,
    InvalidHashError,
    UnknownIdentifierError,
)

__all__ = [
    "FIELD_KINDS",
    "SPINE_VERSIONS",
    "TieSearch",
    "encode_field",
    "encode_fields",
    "encode_set_v2",
    "episode_leaf_input",
    "expected_siblings",
    "hash_bytes",
    "hash_fields",
    "hash_hex",
    "hash_set_v1",
    "hash_set_v2",
    "inclusion_proof_v1",
    "inclusion_proof_v2",
    "leaf_hash_v1",
    "leaf_hash_v2",
    "merkle_root_v1",
    "merkle_root_v2",
    "read_segments",
    "search_orders",
    "sha3_256",
    "spine_root",
    "timestamp_ms",
    "uuid_bytes",
    "verify_inclusion_proof_v1",
    "verify_inclusion_proof_v2",
]

#: The ten field kinds of ASTP.md §2.1, by tag.
FIELD_KINDS: dict[str, int] = {
    "NULL": 0x00, "BYTES": 0x01, "STRING": 0x02, "UINT": 0x03, "UUID": 0x04,
    "TIMESTAMP": 0x05, "HASH": 0x06, "LIST": 0x07, "BOOL": 0x08, "FLOAT": 0x09,
}
SPINE_VERSIONS = (0, 1, 2, 3)

_HEX64 = re.compile(r"[0-9a-fA-F]{64}")
_UUID_TEXT = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_U64 = 1 << 64
_U32 = 1 << 32

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


# --- §2.1 field encoding ---------------------------------------------------------------

def _enc_string(value: Any) -> bytes:
    if not isinstance(value, str):
        raise InvalidFieldError(f"STRING needs text, got {type(value).__name__}")
    try:
        data = unicodedata.normalize("NFC", value).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidFieldError(f"STRING is not encodable as UTF-8: {exc.reason}") from None
    if len(data) >= _U32:
        raise InvalidFieldError("STRING longer than 2^32-1 bytes")
    return b"\x02" + struct.pack(">I", len(data)) + data


def _enc_bytes(value: Any) -> bytes:
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise InvalidFieldError(f"BYTES needs a bytes-like value, got {type(value).__name__}")
    data = bytes(value)
    if len(data) >= _U32:
        raise InvalidFieldError("BYTES longer than 2^32-1 bytes")
    return b"\x01" + struct.pack(">I", len(data)) + data


def _enc_uint(value: Any) -> bytes:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidFieldError(f"UINT needs an integer, got {type(value).__name__}")
    if not 0 <= value < _U64:
        raise InvalidFieldError(f"UINT out of range [0, 2^64): {value}")
    return b"\x03" + struct.pack(">Q", value)


def uuid_bytes(value: Any) -> bytes:
    """A UUID as its 16 bytes in RFC 4122 order, from ``uuid.UUID``, canonical text or 16 bytes."""
    if isinstance(value, _uuid.UUID):
        return value.bytes
    if isinstance(value, str):
        if len(value) != 36 or not _UUID_TEXT.fullmatch(value):
            raise InvalidFieldError(f"UUID needs 8-4-4-4-12 hex text, got {value[:80]!r}")
        return bytes.fromhex(value.replace("-", ""))
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        if len(raw) != 16:
            raise InvalidFieldError(f"UUID needs 16 bytes, got {len(raw)}")
        return raw
    raise InvalidFieldError(f"UUID needs a UUID, text or 16 bytes, got {type(value).__name__}")


def timestamp_ms(value: Any) -> int:
    """Whole milliseconds since the epoch of a timezone-aware instant (datetime or ISO 8601
    text), sub-millisecond precision truncated; naive and pre-1970 instants refused."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            raise InvalidFieldError(f"TIMESTAMP text is not ISO 8601: {value[:80]!r}") from None
    if not isinstance(value, datetime):
        raise InvalidFieldError(f"TIMESTAMP needs a datetime or ISO 8601 text, got {type(value).__name__}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidFieldError(f"TIMESTAMP is naive (no UTC offset): {value.isoformat()}")
    delta = value - _EPOCH
    ms = (delta.days * 86400 + delta.seconds) * 1000 + delta.microseconds // 1000
    if not 0 <= ms < _U64:
        raise InvalidFieldError(f"TIMESTAMP outside [1970-01-01, 2^64 ms): {value.isoformat()}")
    return ms


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


def _split_kind(kind: str) -> tuple[str, bool, str | None]:
    """``"HASH|NULL"`` -> ("HASH", True, None); ``"LIST(STRING)"`` -> ("LIST", False, "STRING")."""
    if not isinstance(kind, str):
        raise InvalidFieldError(f"field kind must be text, got {type(kind).__name__}")
    nullable = kind.endswith("|NULL")
    base = kind[:-5] if nullable else kind
    item = None
    if base.startswith("LIST(") and base.endswith(")"):
        item = base[5:-1]
        base = "LIST"
        if item not in FIELD_KINDS or item in ("NULL", "LIST"):
            raise InvalidFieldError(f"unknown LIST item kind {item!r}")
    if base not in FIELD_KINDS or (base == "LIST" and item is None):
        raise InvalidFieldError(f"unknown field kind {kind!r}")
    return base, nullable, item


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
    base, nullable, item = _split_kind(kind)
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
        if len(value) >= _U32:
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


# --- §4 leaf hashes ----------------------------------------------------------------------

def leaf_hash_v2(node_id: Any, node_type: Any, schema_version: Any, sequence_index: Any,
                 content_hash: Any, parent_node_id: Any) -> str:
    """``hash_version`` 2 leaf hash (ASTP.md §4.1) as hex; ``parent_node_id`` None -> NULL."""
    return hash_fields(b"LEAF_HASH:v2:", (
        ("UUID", node_id), ("STRING", node_type), ("STRING", schema_version),
        ("UINT", sequence_index), ("HASH", content_hash), ("UUID|NULL", parent_node_id),
    )).hex()


def _raw_text(value: Any, what: str) -> bytes:
    if not isinstance(value, str):
        raise InvalidFieldError(f"{what} needs text, got {type(value).__name__}")
    try:
        data = value.encode("utf-8")  # v1: no NFC
    except UnicodeEncodeError as exc:
        raise InvalidFieldError(f"{what} is not encodable as UTF-8: {exc.reason}") from None
    return struct.pack(">I", len(data)) + data


def leaf_hash_v1(node_id: Any, node_type: Any, schema_version: Any, sequence_index: Any,
                 content_hash: Any, parent_node_id: Any, sealed_at_ms: int = 0) -> str:
    """``hash_version`` 1 leaf hash (ASTP.md §4.2) as hex: raw concatenation, no tags, no NFC;
    absent parent -> 16 zero bytes; ``sealed_at_ms`` 0 for the unsealed (verifier) value."""
    for name, n in (("sequence_index", sequence_index), ("sealed_at_ms", sealed_at_ms)):
        if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n < _U64:
            raise InvalidFieldError(f"{name} must be an integer in [0, 2^64), got {n!r}")
    parent = b"\x00" * 16 if parent_node_id is None else uuid_bytes(parent_node_id)
    preimage = (uuid_bytes(node_id) + _raw_text(node_type, "node_type")
                + _raw_text(schema_version, "schema_version") + struct.pack(">Q", sequence_index)
                + hash_bytes(content_hash) + struct.pack(">Q", sealed_at_ms) + parent)
    return sha3_256(preimage).hex()


# --- §5 Merkle tree ----------------------------------------------------------------------

def _leaf_v1(raw: bytes) -> bytes:
    """Level-0 node of a sav 0/1 tree, kept as its 64 hex characters (ASCII bytes)."""
    return sha3_256(LEAF_V1 + raw.hex().encode("ascii")).hex().encode("ascii")


def _node_v1(left: bytes, right: bytes) -> bytes:
    return sha3_256(NODE_V1 + left + right).hex().encode("ascii")


def _leaf_v2(raw: bytes) -> bytes:
    return sha3_256(LEAF_V2 + raw)


def _node_v2(left: bytes, right: bytes) -> bytes:
    return sha3_256(NODE_V2 + left + right)


def _fold(level: list[bytes], node: Any) -> bytes:
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
    return _fold([_leaf_v2(x) for x in _split_raw(raw)], _node_v2)


def merkle_root_v1(raw: Any) -> bytes:
    """Root of the hex-text tree (``LEAF:``/``NODE:``) over a buffer of n*32 bytes (each input
    taken as its lowercase hex text), 32 raw bytes."""
    return bytes.fromhex(_fold([_leaf_v1(x) for x in _split_raw(raw)], _node_v1).decode("ascii"))


def _inputs_raw(inputs: Any) -> list[bytes]:
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


def _check_sav(version: Any) -> int:
    if isinstance(version, bool) or not isinstance(version, int) or version not in SPINE_VERSIONS:
        raise UnknownIdentifierError(f"unknown spine_algorithm_version {version!r}", detail=version)
    return version


def episode_leaf_input(episode_id: Any) -> bytes:
    """The sav 1 Episode-identifier input ``H(utf8(episode_id))`` (raw); text as stored, no NFC."""
    if isinstance(episode_id, _uuid.UUID):
        episode_id = str(episode_id)
    if not isinstance(episode_id, str):
        raise InvalidFieldError(f"episode_id needs text, got {type(episode_id).__name__}")
    try:
        return sha3_256(episode_id.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise InvalidFieldError(f"episode_id is not encodable as UTF-8: {exc.reason}") from None


def _spine_leaves(inputs: Any, version: int, episode_id: Any) -> list[bytes]:
    raw = _inputs_raw(inputs)
    if version == 1:
        if episode_id is None:
            raise InvalidFieldError("spine_algorithm_version 1 needs episode_id")
        raw = [episode_leaf_input(episode_id)] + raw
    return raw


def spine_root(inputs: Any, *, spine_algorithm_version: int, episode_id: Any = None) -> str:
    """Spine root (ASTP.md §5) as hex. sav 0/1: hex-text tree (sav 1 first adds the
    Episode-identifier input); sav 2/3: raw-byte tree. ``episode_id`` is used by sav 1 only."""
    version = _check_sav(spine_algorithm_version)
    raw = _spine_leaves(inputs, version, episode_id)
    if version in (0, 1):
        return _fold([_leaf_v1(x) for x in raw], _node_v1).decode("ascii")
    return _fold([_leaf_v2(x) for x in raw], _node_v2).hex()


# --- §10 inclusion proofs ----------------------------------------------------------------

def _levels(level: list[bytes], node: Any) -> list[list[bytes]]:
    levels = [level]
    while len(level) > 1:
        level = [node(level[i], level[i + 1]) if i + 1 < len(level) else level[i]
                 for i in range(0, len(level), 2)]
        levels.append(level)
    return levels


def _check_index(index: Any, count: int) -> int:
    if isinstance(index, bool) or not isinstance(index, int):
        raise InvalidFieldError(f"leaf index must be an integer, got {type(index).__name__}")
    if not 0 <= index < count:
        raise InvalidFieldError(f"leaf index {index} outside [0, {count})")
    return index


def inclusion_proof_v1(leaves: Any, index: int) -> tuple[str, list[str], list[str], str]:
    """4.x proof (ASTP.md §10.1) over the hex-text tree of ``leaves`` (no Episode leaf added):
    ``(leaf_hash, merkle_path, path_directions, spine_root)``, all hex; a direction names
    the side the sibling is on."""
    raw = _inputs_raw(leaves)
    pos = _check_index(index, len(raw))
    levels = _levels([_leaf_v1(x) for x in raw], _node_v1)
    path: list[str] = []
    directions: list[str] = []
    for level in levels[:-1]:
        if pos % 2 == 0:
            if pos + 1 < len(level):
                path.append(level[pos + 1].decode("ascii"))
                directions.append("right")
        else:
            path.append(level[pos - 1].decode("ascii"))
            directions.append("left")
        pos //= 2
    return raw[index].hex(), path, directions, levels[-1][0].decode("ascii")


def verify_inclusion_proof_v1(leaf_hash: Any, merkle_path: Sequence[Any],
                              path_directions: Sequence[Any], spine_root: Any) -> bool:
    """Verify a 4.x proof with its stated directions. Malformed proofs (path and directions
    of different lengths, a direction other than "left"/"right", bad digests) are refused
    with ``InvalidFieldError``/``InvalidHashError``; a well-formed wrong proof gives False."""
    if len(merkle_path) != len(path_directions):
        raise InvalidFieldError(f"merkle_path has {len(merkle_path)} entries but path_directions "
                                f"{len(path_directions)}")
    siblings = [hash_hex(s).encode("ascii") for s in merkle_path]
    for d in path_directions:
        if d not in ("left", "right") or not isinstance(d, str):
            raise InvalidFieldError(f"path direction must be 'left' or 'right', got {d!r}")
    root = hash_hex(spine_root).encode("ascii")
    cur = _leaf_v1(hash_bytes(leaf_hash))
    for sib, d in zip(siblings, path_directions):
        cur = _node_v1(cur, sib) if d == "right" else _node_v1(sib, cur)
    return cur == root


def expected_siblings(leaf_index: int, leaf_count: int) -> int:
    """Number of siblings a v2 proof for ``leaf_index`` of ``leaf_count`` carries (ASTP.md
    §10.2); ``InvalidFieldError`` when the index is outside [0, count)."""
    for name, v in (("leaf_index", leaf_index), ("leaf_count", leaf_count)):
        if isinstance(v, bool) or not isinstance(v, int):
            raise InvalidFieldError(f"{name} must be an integer, got {type(v).__name__}")
    if not 0 <= leaf_index < leaf_count:
        raise InvalidFieldError(f"leaf index {leaf_index} outside [0, {leaf_count})")
    i, n, s = leaf_index, leaf_count, 0
    while n > 1:
        if not (i % 2 == 0 and i == n - 1):
            s += 1
        i, n = i // 2, (n + 1) // 2
    return s


def inclusion_proof_v2(leaves: Any, index: int) -> tuple[str, list[str], str]:
    """v2 proof (ASTP.md §10.2) for ``leaves`` (v2 leaf hashes) at ``index``:
    ``(leaf_hash, siblings leaf level first, spine_root)``, all hex."""
    raw = _inputs_raw(leaves)
    pos = _check_index(index, len(raw))
    levels = _levels([_leaf_v2(x) for x in raw], _node_v2)
    siblings: list[str] = []
    for level in levels[:-1]:
        if pos % 2 == 0:
            if pos + 1 < len(level):
                siblings.append(level[pos + 1].hex())
        else:
            siblings.append(level[pos - 1].hex())
        pos //= 2
    return raw[index].hex(), siblings, levels[-1][0].hex()


def verify_inclusion_proof_v2(leaf_hash: Any, leaf_index: Any, leaf_count: Any,
                              siblings: Sequence[Any], spine_root: Any) -> bool:
    """Verify a v2 proof, deriving the shape from index and count. False (never an error) for
    an index outside [0, count), a non-integer index/count or a wrong sibling count; malformed
    digests raise ``InvalidHashError``."""
    leaf = hash_bytes(leaf_hash)
    root = hash_bytes(spine_root)
    sibs = [hash_bytes(s) for s in siblings]
    try:
        needed = expected_siblings(leaf_index, leaf_count)
    except InvalidFieldError:
        return False
    if len(sibs) != needed:
        return False
    cur = _leaf_v2(leaf)
    i, n, k = leaf_index, leaf_count, 0
    while n > 1:
        if not (i % 2 == 0 and i == n - 1):
            sib = sibs[k]
            k += 1
            cur = _node_v2(cur, sib) if i % 2 == 0 else _node_v2(sib, cur)
        i, n = i // 2, (n + 1) // 2
    return cur == root


# --- §12 tie search ------------------------------------------------------------------------

def _search_space(groups: Sequence[tuple[int, int]]) -> int:
    space = 1
    for _, length in groups:
        space *= math.factorial(length)
    return space


class TieSearch:
    """Search the orders of tied spine inputs for one that reproduces a root, refolding only
    what a permutation touches.

    ``inputs`` are the spine inputs in stored order (without the sav 1 Episode input, which
    ``episode_id`` adds); ``groups`` are disjoint ``(start, length)`` ranges of ``inputs``
    whose members may be permuted. The level arrays of the stored order are built once; each
    candidate order rewrites the changed level-0 nodes and rehashes only their ancestors (the
    fixed prefix and untouched subtrees are reused).
    """

    def __init__(self, inputs: Any, groups: Sequence[tuple[int, int]], *,
                 spine_algorithm_version: int, episode_id: Any = None) -> None:
        version = _check_sav(spine_algorithm_version)
        raw = _spine_leaves(inputs, version, episode_id)
        self._offset = 1 if version == 1 else 0
        self._count = len(raw) - self._offset
        self._groups = _check_groups(groups, self._count)
        self._hex_nodes = version in (0, 1)  # sav 0/1 nodes are kept as hex text
        if self._hex_nodes:
            self._leaf, self._node = _leaf_v1, _node_v1
        else:
            self._leaf, self._node = _leaf_v2, _node_v2
        self._leaves0 = [self._leaf(x) for x in raw]  # level-0 of the stored order
        self._levels = _levels(list(self._leaves0), self._node)

    @property
    def space(self) -> int:
        """Number of candidate orders (product of the groups' factorials)."""
        return _search_space(self._groups)

    def root_of(self, order: Sequence[int]) -> bytes:
        """Raw root of the inputs rearranged so that position p holds input ``order[p]``."""
        levels = self._levels
        offset = self._offset
        dirty = set()
        for p, src in enumerate(order):
            value = self._leaves0[src + offset]
            if levels[0][p + offset] != value:
                levels[0][p + offset] = value
                dirty.add((p + offset) // 2)
        for depth in range(1, len(levels)):
            below, here = levels[depth - 1], levels[depth]
            next_dirty = set()
            for j in dirty:
                left = 2 * j
                here[j] = self._node(below[left], below[left + 1]) if left + 1 < len(below) else below[left]
                next_dirty.add(j // 2)
            dirty = next_dirty
        top = levels[-1][0]
        return bytes.fromhex(top.decode("ascii")) if self._hex_nodes else top

    def orders(self) -> Iterable[list[int]]:
        """Candidate orders in the canonical enumeration: itertools.product over the groups
        (last group varying fastest) of itertools.permutations of each group's positions."""
        base = list(range(self._count))
        choices = [itertools.permutations(range(s, s + n)) for s, n in self._groups]
        for combo in itertools.product(*choices):
            order = list(base)
            for (s, n), perm in zip(self._groups, combo):
                order[s:s + n] = perm
            yield order

    def search(self, target_root: Any, *, cap: int) -> tuple[list[int] | None, int, bool]:
        """First order (canonical enumeration) whose root is ``target_root``:
        ``(order, tried, cap_hit)``. When the space exceeds ``cap`` nothing is tried and
        ``(None, 0, True)`` is returned."""
        target = hash_bytes(target_root)
        if isinstance(cap, bool) or not isinstance(cap, int) or cap < 0:
            raise InvalidFieldError(f"cap must be a non-negative integer, got {cap!r}")
        if self.space > cap:
            return None, 0, True
        tried = 0
        for order in self.orders():
            tried += 1
            if self.root_of(order) == target:
                return order, tried, False
        return None, tried, False


def _check_groups(groups: Sequence[tuple[int, int]], count: int) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    taken = [False] * count
    for g in groups:
        start, length = g
        for v in (start, length):
            if isinstance(v, bool) or not isinstance(v, int):
                raise InvalidFieldError(f"group bounds must be integers, got {g!r}")
        if length < 1 or start < 0 or start + length > count:
            raise InvalidFieldError(f"group {g!r} outside the {count} inputs")
        for p in range(start, start + length):
            if taken[p]:
                raise InvalidFieldError(f"groups overlap at input {p}")
            taken[p] = True
        out.append((start, length))
    return out


def search_orders(inputs: Any, groups: Sequence[tuple[int, int]], target_root: Any, *,
                  spine_algorithm_version: int, episode_id: Any = None,
                  cap: int = 40320) -> tuple[list[int] | None, int, bool]:
    """One-shot ``TieSearch(...).search(target_root, cap=cap)``."""
    return TieSearch(inputs, groups, spine_algorithm_version=spine_algorithm_version,
                     episode_id=episode_id).search(target_root, cap=cap)


# --- Episode segments: the document reader's fast path ---------------------------------

_UUID36 = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_NO: Any = object()  # "not in the canonical shape": the caller's reader decides


def _seg_hex(value: Any) -> Any:
    if type(value) is str and len(value) == 64 and _HEX64.fullmatch(value):
        return value.lower()
    return _NO


def _seg_uuid(value: Any) -> Any:
    if type(value) is str and len(value) == 36 and _UUID36.fullmatch(value):
        return value.lower()
    return _NO


def _seg_uint(value: Any) -> Any:
    return value if type(value) is int and value >= 0 else _NO


def _seg_instant(value: Any) -> Any:
    if value is None:
        return None
    if type(value) is not str:
        return _NO
    try:
        instant = datetime.fromisoformat(value)
    except ValueError:
        return _NO
    return _NO if instant.tzinfo is None else instant


def _seg_leaf_fields(item: dict[str, Any]) -> Any:
    """(node_id, node_type, schema_version, parent_node_id) with the reader's defaults."""
    node_id = _seg_uuid(item["node_id"]) if "node_id" in item else None
    node_type = item.get("node_type", "segment")
    schema = item.get("schema_version")
    if "schema_version" in item and type(schema) is not str:
        return _NO
    parent = item.get("parent_node_id")
    if parent is not None:
        parent = _seg_uuid(parent)
    if node_id is _NO or type(node_type) is not str or parent is _NO:
        return _NO
    return node_id, node_type, schema, parent


def read_segments(items: Any, start: int, segment_type: Any, segments: list[Any], excluded: list[str],
                  *, closed_at: datetime | None = None, proof_of_record: bool = False) -> tuple[int, bool]:
    """Read ``items[start:]`` (the stored segments of an Episode document) while each item is
    in the canonical shape, appending ``segment_type(...)`` to ``segments`` (content hashes
    of EPHEMERAL segments to ``excluded``); return ``(stop, late)``: the index of the first
    item not read (``len(items)`` when all were) and whether a read item was created after
    ``closed_at``. See docs/astp-kernel-api.md for the canonical shape."""
    late = False
    if type(items) is not list:
        return start, late
    for stop in range(start, len(items)):
        item = items[stop]
        if type(item) is not dict:
            return stop, late
        if proof_of_record:
            index = _seg_uint(item.get("sequence_index" if "sequence_index" in item else "leaf_index", _NO))
            content = _seg_hex(item.get("content_hash", _NO))
            tier = created = hv = leaf = None
        else:
            tier = item.get("retention_tier")
            content = _seg_hex(item.get("content_hash", _NO))
            created = _seg_instant(item.get("created_at"))
            if (tier is not None and type(tier) is not str) or content is _NO or created is _NO:
                return stop, late
            if tier == "EPHEMERAL":
                if closed_at is not None and created is not None and created > closed_at:
                    late = True
                excluded.append(content)
                continue
            hv = item.get("hash_version")
            if hv is not None:
                hv = _seg_uint(hv)
            leaf = item.get("leaf_hash")
            if leaf is not None:
                leaf = _seg_hex(leaf)
            index = _seg_uint(item.get("sequence_index", _NO))
        fields = _seg_leaf_fields(item)
        if index is _NO or content is _NO or hv is _NO or leaf is _NO or fields is _NO:
            return stop, late
        if closed_at is not None and created is not None and created > closed_at:
            late = True
        node_id, node_type, schema, parent = fields
        segments.append(segment_type(index, content, node_id, node_type, schema, parent, tier, created,
                                     hv, leaf))
    return len(items), late
