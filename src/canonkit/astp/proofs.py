"""ASTP.md §10 inclusion proofs: the 4.x form (stated directions) and version 2 (derived
shape); and the §12 tie search over tied spine inputs (kernels)."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from canonkit.astp._py import common
from canonkit.astp._live import prover

__all__ = [
    "InclusionProofV1",
    "InclusionProofV2",
    "TieSearch",
    "expected_siblings",
    "inclusion_proof_v1",
    "inclusion_proof_v2",
    "search_orders",
    "verify_inclusion_proof_v1",
    "verify_inclusion_proof_v2",
]

expected_siblings = common.expected_siblings
TieSearch = prover.TieSearch
search_orders = prover.search_orders


@dataclass(frozen=True)
class InclusionProofV1:
    """4.x proof; ``sequence_index`` holds the leaf position, as in the reference."""
    sequence_index: int
    leaf_hash: str
    merkle_path: list[str]
    path_directions: list[str]
    spine_root: str

    def verify(self) -> bool:
        return prover.verify_inclusion_proof_v1(self.leaf_hash, self.merkle_path, self.path_directions,
                                           self.spine_root)


@dataclass(frozen=True)
class InclusionProofV2:
    """Version 2 proof: the verifier derives the path shape from ``leaf_index``/``leaf_count``."""
    leaf_index: int
    leaf_count: int
    leaf_hash: str
    siblings: list[str]
    spine_root: str

    def verify(self) -> bool:
        return prover.verify_inclusion_proof_v2(self.leaf_hash, self.leaf_index, self.leaf_count,
                                           self.siblings, self.spine_root)


def inclusion_proof_v1(leaves: Any, index: int) -> InclusionProofV1:
    """4.x proof for position ``index`` of the hex-text tree over ``leaves``."""
    leaf, path, directions, root = prover.inclusion_proof_v1(leaves, index)
    return InclusionProofV1(index, leaf, path, directions, root)


def verify_inclusion_proof_v1(leaf_hash: Any, merkle_path: Sequence[Any],
                              path_directions: Sequence[Any], spine_root: Any) -> bool:
    """Verify with the stated directions; malformed proofs raise (docs/astp-kernel-api.md)."""
    return prover.verify_inclusion_proof_v1(leaf_hash, merkle_path, path_directions, spine_root)


def inclusion_proof_v2(leaves: Any, index: int) -> InclusionProofV2:
    """Version 2 proof for ``leaves[index]`` (v2 leaf hashes, spine order)."""
    leaf, siblings, root = prover.inclusion_proof_v2(leaves, index)
    count = len(leaves)
    return InclusionProofV2(index, count, leaf, siblings, root)


def verify_inclusion_proof_v2(leaf_hash: Any, leaf_index: Any, leaf_count: Any,
                              siblings: Sequence[Any], spine_root: Any) -> bool:
    """True iff the proof folds to ``spine_root``; False (never raising) for a wrong sibling
    count or an index out of range."""
    return prover.verify_inclusion_proof_v2(leaf_hash, leaf_index, leaf_count, siblings, spine_root)
