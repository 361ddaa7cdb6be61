"""ASTP.md §2.1 field encoding and §2.2 sets of hashes, and the digest/UUID/instant
conversions every construction shares (kernels; see docs/astp-kernel-api.md)."""
from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from canonkit.astp._kernel import K

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

FIELD_KINDS = K.FIELD_KINDS
sha3_256 = K.sha3_256
hash_hex = K.hash_hex
hash_bytes = K.hash_bytes
uuid_bytes = K.uuid_bytes
timestamp_ms = K.timestamp_ms
encode_field = K.encode_field
encode_fields = K.encode_fields
hash_fields = K.hash_fields
hash_set_v1 = K.hash_set_v1
hash_set_v2 = K.hash_set_v2


def encode_set(prefix: bytes, members: Iterable[Any]) -> bytes:
    """``prefix ‖ u32be(n) ‖ sorted distinct raw members`` (§2.2)."""
    return K.encode_set_v2(prefix, members)


_UUID_TEXT = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def is_uuid_text(value: str) -> bool:
    """True for 8-4-4-4-12 hex text (either case)."""
    return len(value) == 36 and _UUID_TEXT.fullmatch(value) is not None


def uuid_text(value: Any) -> str:
    """Canonical lowercase hyphenated text of a UUID given in any accepted form."""
    if isinstance(value, str) and len(value) == 36 and _UUID_TEXT.fullmatch(value):
        return value.lower()  # the common case, without a round trip through bytes
    raw = K.uuid_bytes(value).hex()
    return f"{raw[:8]}-{raw[8:12]}-{raw[12:16]}-{raw[16:20]}-{raw[20:]}"
