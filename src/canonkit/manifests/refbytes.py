"""ASL/1 ReferenceBytes (FPS.md §3): ``u16be(hash_id) || digest``.

hash_id 0 is reserved and invalid; hash_id 1 (HASH-ASL1-256) carries a 32-byte digest;
any other hash_id carries an opaque digest of at least 2 bytes (canonkit reads "at least
2 bytes" as applying to the digest). References are compared as bytes only.
"""
from __future__ import annotations

from dataclasses import dataclass

HASH_ASL1_256 = 1
DIGEST_SIZES = {HASH_ASL1_256: 32}
MIN_OPAQUE_DIGEST = 2


@dataclass(frozen=True)
class Reference:
    hash_id: int
    digest: bytes

    def to_bytes(self) -> bytes:
        return self.hash_id.to_bytes(2, "big") + self.digest


def parse_reference(raw: bytes) -> Reference:
    """Split ReferenceBytes; ValueError says what is wrong."""
    if len(raw) < 2:
        raise ValueError(f"{len(raw)} bytes is too short for a hash_id")
    hash_id = int.from_bytes(raw[:2], "big")
    digest = raw[2:]
    if hash_id == 0:
        raise ValueError("hash_id 0 is reserved")
    expected = DIGEST_SIZES.get(hash_id)
    if expected is not None and len(digest) != expected:
        raise ValueError(f"hash_id {hash_id} needs a {expected}-byte digest, got {len(digest)}")
    if expected is None and len(digest) < MIN_OPAQUE_DIGEST:
        raise ValueError(f"opaque digest of {len(digest)} bytes is shorter than "
                         f"{MIN_OPAQUE_DIGEST}")
    return Reference(hash_id, digest)
