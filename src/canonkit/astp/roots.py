"""The roots of a seal: leaf hashes (ASTP.md §4, kernels), spine roots and the sav 1 Episode
input (§5), Episode roots v1 (sav 0/1), v2 (sav 2) and v3 (sav 3) (§8) and the chain root
(§11)."""
from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from canonkit.astp._py import common
from canonkit.astp._live import hasher, reader
from canonkit.astp.encoding import is_uuid_text
from canonkit.errors import EmptyTreeError

__all__ = [
    "canonical_episode_id",
    "chain_root",
    "episode_leaf_input",
    "episode_root_v1",
    "episode_root_v2",
    "episode_root_v3",
    "leaf_hash_v1",
    "leaf_hash_v2",
    "merkle_root_v1",
    "merkle_root_v2",
    "spine_root",
]

leaf_hash_v1 = reader.leaf_hash_v1
leaf_hash_v2 = reader.leaf_hash_v2
merkle_root_v1 = hasher.merkle_root_v1
merkle_root_v2 = hasher.merkle_root_v2


def canonical_episode_id(episode_id: Any) -> Any:
    """The text the sav 1 Episode input hashes (ASTP.md §5.2): a UUID in canonical form
    (lowercase, hyphenated); any other identifier unchanged (stored text, no NFC)."""
    if isinstance(episode_id, uuid.UUID):
        return str(episode_id)
    if isinstance(episode_id, str) and is_uuid_text(episode_id):
        return episode_id.lower()
    return episode_id


def episode_leaf_input(episode_id: Any) -> bytes:
    """``H(utf8(canonical episode id))``, raw."""
    return common.episode_leaf_input(canonical_episode_id(episode_id))


def spine_root(inputs: Any, *, spine_algorithm_version: int, episode_id: Any = None) -> str:
    """Spine root as hex (kernel ``spine_root``; see docs/astp-kernel-api.md), with a UUID
    ``episode_id`` taken in canonical form for the sav 1 Episode input."""
    return hasher.spine_root(inputs, spine_algorithm_version=spine_algorithm_version,
                             episode_id=canonical_episode_id(episode_id))


def episode_root_v1(spine_root: Any, signal_manifest_hash: Any, exclusion_hash: Any) -> str:
    """``H("NODE:" ‖ spine_hex ‖ manifest_hex ‖ exclusion_hex)``, all as hex text."""
    text = "".join(hasher.hash_hex(h) for h in (spine_root, signal_manifest_hash, exclusion_hash))
    return hasher.sha3_256(b"NODE:" + text.encode("ascii")).hex()


def episode_root_v2(episode_id: Any, spine_root: Any, signal_manifest_hash: Any,
                    structural_manifest_hash: Any, exclusion_hash: Any) -> str:
    """``EPISODE_ROOT:v2:`` over UUID and four HASH fields; a non-UUID id is refused (G-40)."""
    return hasher.hash_fields(b"EPISODE_ROOT:v2:", (
        ("UUID", episode_id), ("HASH", spine_root), ("HASH", signal_manifest_hash),
        ("HASH", structural_manifest_hash), ("HASH", exclusion_hash))).hex()


def episode_root_v3(episode_id: Any, spine_root: Any, signal_manifest_hash: Any,
                    structural_manifest_hash: Any, exclusion_hash: Any,
                    context_manifest_hash: Any) -> str:
    """``EPISODE_ROOT:v3:``: the v2 fields then HASH context_manifest_hash."""
    return hasher.hash_fields(b"EPISODE_ROOT:v3:", (
        ("UUID", episode_id), ("HASH", spine_root), ("HASH", signal_manifest_hash),
        ("HASH", structural_manifest_hash), ("HASH", exclusion_hash),
        ("HASH", context_manifest_hash))).hex()


def chain_root(spine_roots: Iterable[Any]) -> str:
    """``hex(H(raw(r0) ‖ … ‖ raw(rk)))``: no prefix, no count; an empty chain is refused."""
    raws = [hasher.hash_bytes(r) for r in spine_roots]
    if not raws:
        raise EmptyTreeError("a proof chain needs at least one link")
    return hasher.sha3_256(b"".join(raws)).hex()
