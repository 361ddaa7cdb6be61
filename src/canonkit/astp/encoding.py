"""ASTP.md §2.1 field encoding and §2.2 sets of hashes, and the digest/UUID/instant
conversions every construction shares (kernels; see docs/astp-kernel-api.md)."""
from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from canonkit.astp._py import common
from canonkit.astp._live import hasher

__all__ = [
    "FIELD_KINDS",
    "encode_field",
    "encode_fields",
    "encode_set",
    "hash_bytes",
    "hash_fields",
    "hash_hex",
    "hash_set_v1",
    "hash_set_v2",
    "is_uuid_text",
    "sha3_256",
    "timestamp_ms",
    "uuid_bytes",
    "uuid_text",
]

FIELD_KINDS = common.FIELD_KINDS
uuid_bytes = common.uuid_bytes
timestamp_ms = common.timestamp_ms
sha3_256 = hasher.sha3_256
hash_hex = hasher.hash_hex
hash_bytes = hasher.hash_bytes
hash_set_v1 = hasher.hash_set_v1
hash_set_v2 = hasher.hash_set_v2
encode_field = hasher.encode_field
encode_fields = hasher.encode_fields
hash_fields = hasher.hash_fields


def encode_set(prefix: bytes, members: Iterable[Any]) -> bytes:
    """``prefix ‖ u32be(n) ‖ sorted distinct raw members`` (§2.2)."""
    return hasher.encode_set_v2(prefix, members)


_UUID_TEXT = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def is_uuid_text(value: str) -> bool:
    """True for 8-4-4-4-12 hex text (either case)."""
    return len(value) == 36 and _UUID_TEXT.fullmatch(value) is not None


def uuid_text(value: Any) -> str:
    """Canonical lowercase hyphenated text of a UUID given in any accepted form."""
    if isinstance(value, str) and len(value) == 36 and _UUID_TEXT.fullmatch(value):
        return value.lower()  # the common case, without a round trip through bytes
    raw = uuid_bytes(value).hex()
    return f"{raw[:8]}-{raw[8:12]}-{raw[12:16]}-{raw[16:20]}-{raw[20:]}"
