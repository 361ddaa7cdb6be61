"""ASTP helpers shared by both kernel backends (pure Python, never twinned).

What Cython does not speed up lives here once, and the compiled kernels
(``canonkit.astp._hash``, ``_proofs``, ``_segments``, ``_scan``, ``_formb``, ``_audit``)
import it exactly as their twins do: argument checks, the UUID and instant
conversions, the field-kind grammar, the v2 proof shape, the tie-search plan (group checks,
search space, the canonical enumeration of orders), the sav 1 Episode input (one hash per
spine) and the Layer 3 Form B value conversions for everything that is not already an exact
JSON type.
"""
from __future__ import annotations

import hashlib
import itertools
import math
import re
import reprlib
import uuid as _uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import fields as dc_fields
from dataclasses import is_dataclass
from datetime import datetime, timezone
from enum import Enum
from typing import Any

from canonkit._files import MAX_INTEGER_DIGITS
from canonkit._instant import INSTANT_FORM, instant_from_text
from canonkit.errors import InvalidFieldError, InvalidHashError, UnknownIdentifierError

__all__ = [
    "AUDIT_FIELDS",
    "CANONICAL_MAX_DEPTH",
    "FIELD_KINDS",
    "L3_DATETIME",
    "L3_ENUM",
    "L3_INT",
    "L3_MAX_DEPTH",
    "L3_OBJECT",
    "L3_TEXT",
    "L3_UUID",
    "SPINE_VERSIONS",
    "U32",
    "U64",
    "canonical_orders",
    "decimal_text",
    "short_repr",
    "check_groups",
    "check_index",
    "check_sav",
    "episode_first",
    "episode_leaf_input",
    "expected_siblings",
    "hash_bytes",
    "l3_datetime",
    "l3_field",
    "l3_value",
    "readable",
    "same_json",
    "search_space",
    "split_kind",
    "timestamp_ms",
    "uuid_bytes",
]

_HEX64 = re.compile(r"[0-9a-fA-F]{64}")


def hash_bytes(value: Any) -> bytes:
    """A digest as 32 raw bytes, from 64 hex characters (either case) or a 32-byte value
    (the twin's ``hash_bytes``; the compiled hasher parses in C with the same results)."""
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


#: The fields of an audit record v2 (§14), in hash order, with their §2.1 kinds
AUDIT_FIELDS: list[tuple[str, str]] = [
    ("audit_id", "UUID"), ("chain_key", "STRING"), ("delta_sequence", "UINT"), ("delta_type", "STRING"),
    ("agent_id", "STRING"), ("session_id", "STRING"), ("human_actor", "STRING|NULL"),
    ("wall_clock_time", "TIMESTAMP"), ("episode_time", "UINT"), ("forward_delta", "BYTES"),
    ("reverse_delta", "BYTES"), ("affected_nodes", "LIST(STRING)"), ("trigger_context", "STRING"),
    ("explicit_reason", "STRING|NULL"), ("caught_by", "STRING"), ("detection_window_open", "BOOL"),
    ("prior_audit_hash", "HASH|NULL"),
]
#: nested containers a §2.3 canonical JSON value may hold (deeper is refused, with its path,
#: by both backends alike: the strict JSON reader reads about a thousand levels at most)
CANONICAL_MAX_DEPTH = 512

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
            value = instant_from_text(value)
        except ValueError:
            raise InvalidFieldError(f"TIMESTAMP text is not an ISO 8601 instant ({INSTANT_FORM}): "
                                    f"{value[:80]!r}") from None
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
        raise UnknownIdentifierError(f"unknown spine_algorithm_version {_shown(version)}",
                                     detail=version)
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
                raise InvalidFieldError(f"group bounds must be integers, got {_shown(g)}")
        if length < 1 or start < 0 or start + length > count:
            raise InvalidFieldError(f"group {_shown(g)} outside the {count} inputs")
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


# --- Layer 3 Form B values (ASTP.md §19.2) ----------------------------------------------------
# A top-level Form B field is described by (name, kind, nullable, allowed): kind one of the
# L3_* codes below, ``allowed`` the admitted texts of an enumeration (or the node type
# literal) or None. Both Form B kernels call ``l3_field``/``l3_value`` for every value that
# is not already of an exact JSON type, so the conversions live only here.

L3_UUID, L3_DATETIME, L3_INT, L3_TEXT, L3_ENUM, L3_OBJECT = range(6)
#: nested containers (objects and arrays) a Form B value may hold
L3_MAX_DEPTH = 256

_L3_UUID_TEXT = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def short_repr(value: Any) -> str:
    """A short repr of any value for a message, always computable: huge integers (at any
    depth, past the int-to-text digit limit) and unprintable objects become placeholders."""
    if isinstance(value, int) and value.bit_length() > 256:
        return f"<integer of {value.bit_length()} bits>"
    try:
        return reprlib.repr(value)
    except Exception:  # a nested huge integer, a __repr__ that raises
        return f"<{type(value).__name__}>"


_shown = short_repr


def decimal_text(value: int) -> str:
    """The decimal digits of an integer (``-`` first when negative), whatever its magnitude
    (§2.3, §19.2): ``int.__repr__`` where Python's int-to-text digit limit allows, else the
    value split at a power of ten into halves that each convert."""
    try:
        return int.__repr__(value)
    except ValueError:  # beyond sys.get_int_max_str_digits()
        pass
    if value < 0:
        return "-" + decimal_text(-value)
    half = int(value.bit_length() * 0.3010299956639812) // 2   # < the number of digits
    high, low = divmod(value, 10 ** half)
    return decimal_text(high) + decimal_text(low).rjust(half, "0")


def l3_datetime(value: datetime) -> str:
    """``isoformat()`` in UTC; a naive datetime is taken as UTC (§19.2), microseconds kept."""
    try:
        instant = (value.replace(tzinfo=timezone.utc) if value.tzinfo is None
                   or value.utcoffset() is None else value.astimezone(timezone.utc))
    except (OverflowError, ValueError) as exc:
        raise InvalidFieldError(f"instant outside the UTC calendar: {exc}") from None
    return instant.isoformat()


def l3_value(value: Any, depth: int = 0) -> Any:
    """``value`` as the exact JSON types Form B serializes (§19.2 ``l3_value``): UUIDs and
    datetimes as text, enumerations as their value, floats as ``repr`` text, mappings with
    their keys in insertion order (keys must be text), records by their fields."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:   # exact types first:
        return value                                                   # a write's common case
    if kind is float:
        return float.__repr__(value)
    if kind is dict or kind is list:
        if depth >= L3_MAX_DEPTH:
            raise InvalidFieldError(f"Form B value nested deeper than {L3_MAX_DEPTH} containers")
        if kind is list:
            return [l3_value(item, depth + 1) for item in value]
        members: dict[str, Any] = {}
        for key, item in value.items():
            if type(key) is not str:
                if not isinstance(key, str):
                    raise InvalidFieldError(
                        f"Form B object keys must be text, got {type(key).__name__}")
                key = str.__str__(key)
            members[key] = l3_value(item, depth + 1)
        return members
    if isinstance(value, Enum):
        return l3_value(value.value, depth)
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float.__repr__(value)
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, _uuid.UUID):
        return str(value)
    if isinstance(value, datetime):
        return l3_datetime(value)
    if isinstance(value, (list, Mapping)) or is_dataclass(value) and not isinstance(value, type):
        if depth >= L3_MAX_DEPTH:
            raise InvalidFieldError(f"Form B value nested deeper than {L3_MAX_DEPTH} containers")
        if isinstance(value, list):
            return [l3_value(item, depth + 1) for item in value]
        items = (((f.name, getattr(value, f.name)) for f in dc_fields(value))
                 if not isinstance(value, Mapping) else value.items())
        out: dict[str, Any] = {}
        for key, item in items:
            if not isinstance(key, str):
                raise InvalidFieldError(f"Form B object keys must be text, got {type(key).__name__}")
            out[str.__str__(key)] = l3_value(item, depth + 1)
        return out
    raise InvalidFieldError(f"Form B cannot serialize {type(value).__name__}")


#: integers at or past this magnitude have more digits than the strict JSON reader reads
_UNREADABLE = 10 ** MAX_INTEGER_DIGITS


def readable(name: str, value: Any) -> None:
    """Refuse (``InvalidFieldError`` naming ``name``) a stored Layer 3 value holding, at any
    depth, an integer the strict JSON reader would refuse: an export or journal holding it
    could not be read back."""
    stack = [value]
    while stack:
        item = stack.pop()
        if type(item) is int:
            if not -_UNREADABLE < item < _UNREADABLE:
                raise InvalidFieldError(
                    f"{name}: an integer of more than {MAX_INTEGER_DIGITS} digits; an export "
                    "or journal holding it could not be read back", detail=name)
        elif type(item) is dict:
            stack.extend(item.values())
        elif type(item) is list:
            stack.extend(item)


def same_json(a: Any, b: Any) -> bool:
    """JSON values equal in type too (``1``, ``1.0`` and ``true`` differ), objects in any
    key order, a NaN equal to a NaN (Layer 3 compares a record with its restatement so)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same_json(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b))
    if isinstance(a, float):
        return bool(a.hex() == b.hex()) if a == a else bool(b != b)
    return bool(a == b)


def l3_field(name: str, kind: int, nullable: bool, allowed: Any, value: Any) -> Any:
    """A top-level Form B field as its exact JSON value, or ``InvalidFieldError`` (with the
    field name as ``detail``) when the value is not of the field's kind. Text in a UUID or
    datetime field must already be in its §19.2 form; it is hashed as given."""
    if value is None:
        if nullable:
            return None
        raise InvalidFieldError(f"{name}: null for a non-nullable field", detail=name)
    if isinstance(value, Enum):
        value = value.value
    if kind == L3_UUID:
        if isinstance(value, _uuid.UUID):
            return str(value)
        if isinstance(value, str) and _L3_UUID_TEXT.fullmatch(value):
            return str.__str__(value)
        raise InvalidFieldError(f"{name}: not a UUID in canonical lowercase text: {_shown(value)}",
                                detail=name)
    if kind == L3_DATETIME:
        if isinstance(value, datetime):
            return l3_datetime(value)
        if isinstance(value, str):
            try:
                parsed = instant_from_text(value)
            except ValueError:
                parsed = None
            if (parsed is not None and parsed.utcoffset() is not None and not parsed.utcoffset()
                    and l3_datetime(parsed) == value):
                return str.__str__(value)
        raise InvalidFieldError(f"{name}: not an instant in the form YYYY-MM-DDTHH:MM:SS[.ffffff]"
                                f"+00:00: {_shown(value)}", detail=name)
    if kind == L3_INT:
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return int(value)
        raise InvalidFieldError(f"{name}: not a non-negative integer: {_shown(value)}", detail=name)
    if kind in (L3_TEXT, L3_ENUM):
        if isinstance(value, str) and (allowed is None or value in allowed):
            return str.__str__(value)
        what = "text" if allowed is None else f"one of {', '.join(sorted(allowed))}"
        raise InvalidFieldError(f"{name}: not {what}: {_shown(value)}", detail=name)
    if kind == L3_OBJECT:
        if isinstance(value, Mapping) or is_dataclass(value) and not isinstance(value, type):
            try:
                return l3_value(value)
            except InvalidFieldError as exc:
                raise InvalidFieldError(f"{name}: {exc}", detail=name) from None
        raise InvalidFieldError(f"{name}: not a JSON object: {type(value).__name__}", detail=name)
    raise InvalidFieldError(f"{name}: unknown Form B field kind {kind!r}", detail=name)
