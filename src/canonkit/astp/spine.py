"""ASTP.md §5 Merkle tree and spine roots (kernels), and the sav 1 Episode input."""
from __future__ import annotations

import uuid
from typing import Any

from canonkit.astp._kernel import K
from canonkit.astp.encoding import is_uuid_text

__all__ = ["canonical_episode_id", "episode_leaf_input", "merkle_root_v1", "merkle_root_v2",
           "spine_root"]

merkle_root_v1 = K.merkle_root_v1
merkle_root_v2 = K.merkle_root_v2


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
    return K.episode_leaf_input(canonical_episode_id(episode_id))


def spine_root(inputs: Any, *, spine_algorithm_version: int, episode_id: Any = None) -> str:
    """Spine root as hex (kernel ``spine_root``; see docs/astp-kernel-api.md), with a UUID
    ``episode_id`` taken in canonical form for the sav 1 Episode input."""
    return K.spine_root(inputs, spine_algorithm_version=spine_algorithm_version,
                        episode_id=canonical_episode_id(episode_id))
