"""ASTP.md §8 Episode roots v1 (sav 0/1), v2 (sav 2) and v3 (sav 3), and §11 the chain root."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from canonkit.astp._kernel import K
from canonkit.errors import EmptyTreeError

__all__ = ["chain_root", "episode_root_v1", "episode_root_v2", "episode_root_v3"]


def episode_root_v1(spine_root: Any, signal_manifest_hash: Any, exclusion_hash: Any) -> str:
    """``H("NODE:" ‖ spine_hex ‖ manifest_hex ‖ exclusion_hex)``, all as hex text."""
    text = "".join(K.hash_hex(h) for h in (spine_root, signal_manifest_hash, exclusion_hash))
    return K.sha3_256(b"NODE:" + text.encode("ascii")).hex()


def episode_root_v2(episode_id: Any, spine_root: Any, signal_manifest_hash: Any,
                    structural_manifest_hash: Any, exclusion_hash: Any) -> str:
    """``EPISODE_ROOT:v2:`` over UUID and four HASH fields; a non-UUID id is refused (G-40)."""
    return K.hash_fields(b"EPISODE_ROOT:v2:", (
        ("UUID", episode_id), ("HASH", spine_root), ("HASH", signal_manifest_hash),
        ("HASH", structural_manifest_hash), ("HASH", exclusion_hash))).hex()


def episode_root_v3(episode_id: Any, spine_root: Any, signal_manifest_hash: Any,
                    structural_manifest_hash: Any, exclusion_hash: Any,
                    context_manifest_hash: Any) -> str:
    """``EPISODE_ROOT:v3:``: the v2 fields then HASH context_manifest_hash."""
    return K.hash_fields(b"EPISODE_ROOT:v3:", (
        ("UUID", episode_id), ("HASH", spine_root), ("HASH", signal_manifest_hash),
        ("HASH", structural_manifest_hash), ("HASH", exclusion_hash),
        ("HASH", context_manifest_hash))).hex()


def chain_root(spine_roots: Iterable[Any]) -> str:
    """``hex(H(raw(r0) ‖ … ‖ raw(rk)))``: no prefix, no count; an empty chain is refused."""
    raws = [K.hash_bytes(r) for r in spine_roots]
    if not raws:
        raise EmptyTreeError("a proof chain needs at least one link")
    return K.sha3_256(b"".join(raws)).hex()
