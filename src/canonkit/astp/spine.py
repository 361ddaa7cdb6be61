"""ASTP.md §5 Merkle tree and spine roots (kernels), and the sav-dependent leaf inputs."""
from __future__ import annotations

from canonkit.astp._kernel import K

__all__ = ["episode_leaf_input", "merkle_root_v1", "merkle_root_v2", "spine_root"]

spine_root = K.spine_root
merkle_root_v1 = K.merkle_root_v1
merkle_root_v2 = K.merkle_root_v2
episode_leaf_input = K.episode_leaf_input
