"""ASTP helpers shared by both kernel backends (pure Python, never twinned).

What Cython does not speed up lives here once, and the compiled kernels
(``canonkit._astp_hash``, ``_astp_proofs``, ``_astp_fields``, ``_astp_segments``) import it
exactly as their twins do: argument checks, the UUID and instant conversions, the field-kind
grammar, the v2 proof shape, the tie-search plan (group checks, search space, the canonical
enumeration of orders) and the sav 1 Episode input (one hash per spine).
"""
from __future__ import annotations

import hashlib
import itertools
import math
import re
import uuid as _uuid
from collections.abc import Iterator, Sequence
from datetime import datetime, timezone
from typing import Any

from canonkit.errors import InvalidFieldError, UnknownIdentifierError

__all__ = [
    "FIELD_KINDS",
    "SPINE_VERSIONS",
    "U32",
    "U64",
    "canonical_orders",
    "check_groups",
    "check_index",
    "check_sav",
    "episode_first",
    "episode_leaf_input",
    "expected_siblings",
    "search_space",
    "split_kind",
    "timestamp_ms",
    "uuid_bytes",
]

#: The ten field kinds of ASTP.md §2.1, by tag.
FIELD_KINDS: dict[str, int] = {
    "NULL": 0x00, "BYTES": 0x01, "STRING": 0x02, "UINT": 0x03, "UUID": 0x04,
    "TIMESTAMP": 0x05, "HASH": 0x06, "LIST": 0x07, "BOOL": 0x08, "FLOAT": 0x09,
}
SPINE_VERSIONS = (0, 1, 2, 3)
U64 = 1 << 64
U32 = 1 << 32

_UUID_TEXT = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


# --- field values -------------------------------------------------------------------------

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
    if not 0 <= ms < U64:
        raise InvalidFieldError(f"TIMESTAMP outside [1970-01-01, 2^64 ms): {value.isoformat()}")
    return ms


def split_kind(kind: Any) -> tuple[str, bool, str | None]:
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


# --- spine identifiers and the sav 1 Episode input ------------------------------------------

def check_sav(version: Any) -> int:
    """A known ``spine_algorithm_version`` (int, not bool), else ``UnknownIdentifierError``."""
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
        return hashlib.sha3_256(episode_id.encode("utf-8")).digest()
    except UnicodeEncodeError as exc:
        raise InvalidFieldError(f"episode_id is not encodable as UTF-8: {exc.reason}") from None


def episode_first(version: int, episode_id: Any) -> bytes | None:
    """The extra first tree input of sav 1, or None for the other versions."""
    if version != 1:
        return None
    if episode_id is None:
        raise InvalidFieldError("spine_algorithm_version 1 needs episode_id")
    return episode_leaf_input(episode_id)


# --- proofs -----------------------------------------------------------------------------------

def check_index(index: Any, count: int) -> int:
    """A leaf position: an int (not bool) in [0, count), else ``InvalidFieldError``."""
    if isinstance(index, bool) or not isinstance(index, int):
        raise InvalidFieldError(f"leaf index must be an integer, got {type(index).__name__}")
    if not 0 <= index < count:
        raise InvalidFieldError(f"leaf index {index} outside [0, {count})")
    return index


def expected_siblings(leaf_index: Any, leaf_count: Any) -> int:
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


# --- the tie-search plan ----------------------------------------------------------------------

def check_groups(groups: Sequence[Any], count: int) -> list[tuple[int, int]]:
    """Disjoint ``(start, length)`` ranges of ``count`` inputs, each of length >= 1."""
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


def search_space(groups: Sequence[tuple[int, int]]) -> int:
    """Number of candidate orders: the product of the groups' factorials."""
    space = 1
    for _, length in groups:
        space *= math.factorial(length)
    return space


def canonical_orders(count: int, groups: Sequence[tuple[int, int]]) -> Iterator[list[int]]:
    """Candidate orders in the canonical enumeration: itertools.product over the groups
    (last group varying fastest) of itertools.permutations of each group's positions."""
    base = list(range(count))
    choices = [itertools.permutations(range(s, s + n)) for s, n in groups]
    for combo in itertools.product(*choices):
        order = list(base)
        for (s, n), perm in zip(groups, combo):
            order[s:s + n] = perm
        yield order
