"""ASTP proofs kernel, pure-Python twin (the reference oracle of ``canonkit.astp._proofs``):
inclusion proofs (4.x and version 2, ASTP.md §10) and the tie search (§12).
See docs/astp-kernel-api.md; the differential tests hold the two to it.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from canonkit.astp._py.common import (
    canonical_orders,
    check_groups,
    check_index,
    check_sav,
    expected_siblings,
    search_space,
)
from canonkit.astp._py.hash import (
    hash_bytes,
    hash_hex,
    inputs_raw,
    leaf_v1,
    leaf_v2,
    tree_levels,
    node_v1,
    node_v2,
    spine_leaves,
)
from canonkit.errors import InvalidFieldError

__all__ = [
    "TieSearch",
    "inclusion_proof_v1",
    "inclusion_proof_v2",
    "search_orders",
    "verify_inclusion_proof_v1",
    "verify_inclusion_proof_v2",
]


# --- §10 inclusion proofs ----------------------------------------------------------------

def inclusion_proof_v1(leaves: Any, index: int) -> tuple[str, list[str], list[str], str]:
    """4.x proof (ASTP.md §10.1) over the hex-text tree of ``leaves`` (no Episode leaf added):
    ``(leaf_hash, merkle_path, path_directions, spine_root)``, all hex; a direction names
    the side the sibling is on."""
    raw = inputs_raw(leaves)
    pos = check_index(index, len(raw))
    levels = tree_levels([leaf_v1(x) for x in raw], node_v1)
    path: list[str] = []
    directions: list[str] = []
    for level in levels[:-1]:
        if pos % 2 == 0:
            if pos + 1 < len(level):
                path.append(level[pos + 1].decode("ascii"))
                directions.append("right")
        else:
            path.append(level[pos - 1].decode("ascii"))
            directions.append("left")
        pos //= 2
    return raw[index].hex(), path, directions, levels[-1][0].decode("ascii")


def verify_inclusion_proof_v1(leaf_hash: Any, merkle_path: Sequence[Any],
                              path_directions: Sequence[Any], spine_root: Any) -> bool:
    """Verify a 4.x proof with its stated directions. Malformed proofs (path and directions
    of different lengths, a direction other than "left"/"right", bad digests) are refused
    with ``InvalidFieldError``/``InvalidHashError``; a well-formed wrong proof gives False."""
    if len(merkle_path) != len(path_directions):
        raise InvalidFieldError(f"merkle_path has {len(merkle_path)} entries but path_directions "
                                f"{len(path_directions)}")
    siblings = [hash_hex(s).encode("ascii") for s in merkle_path]
    for d in path_directions:
        if d not in ("left", "right") or not isinstance(d, str):
            raise InvalidFieldError(f"path direction must be 'left' or 'right', got {d!r}")
    root = hash_hex(spine_root).encode("ascii")
    cur = leaf_v1(hash_bytes(leaf_hash))
    for sib, d in zip(siblings, path_directions):
        cur = node_v1(cur, sib) if d == "right" else node_v1(sib, cur)
    return cur == root


def inclusion_proof_v2(leaves: Any, index: int) -> tuple[str, list[str], str]:
    """v2 proof (ASTP.md §10.2) for ``leaves`` (v2 leaf hashes) at ``index``:
    ``(leaf_hash, siblings leaf level first, spine_root)``, all hex."""
    raw = inputs_raw(leaves)
    pos = check_index(index, len(raw))
    levels = tree_levels([leaf_v2(x) for x in raw], node_v2)
    siblings: list[str] = []
    for level in levels[:-1]:
        if pos % 2 == 0:
            if pos + 1 < len(level):
                siblings.append(level[pos + 1].hex())
        else:
            siblings.append(level[pos - 1].hex())
        pos //= 2
    return raw[index].hex(), siblings, levels[-1][0].hex()


def verify_inclusion_proof_v2(leaf_hash: Any, leaf_index: Any, leaf_count: Any,
                              siblings: Sequence[Any], spine_root: Any) -> bool:
    """Verify a v2 proof, deriving the shape from index and count. False (never an error) for
    an index outside [0, count), a non-integer index/count or a wrong sibling count; malformed
    digests raise ``InvalidHashError``."""
    leaf = hash_bytes(leaf_hash)
    root = hash_bytes(spine_root)
    sibs = [hash_bytes(s) for s in siblings]
    try:
        needed = expected_siblings(leaf_index, leaf_count)
    except InvalidFieldError:
        return False
    if len(sibs) != needed:
        return False
    cur = leaf_v2(leaf)
    i, n, k = leaf_index, leaf_count, 0
    while n > 1:
        if not (i % 2 == 0 and i == n - 1):
            sib = sibs[k]
            k += 1
            cur = node_v2(cur, sib) if i % 2 == 0 else node_v2(sib, cur)
        i, n = i // 2, (n + 1) // 2
    return cur == root


# --- §12 tie search ------------------------------------------------------------------------

class TieSearch:
    """Search the orders of tied spine inputs for one that reproduces a root, refolding only
    what a permutation touches.

    ``inputs`` are the spine inputs in stored order (without the sav 1 Episode input, which
    ``episode_id`` adds); ``groups`` are disjoint ``(start, length)`` ranges of ``inputs``
    whose members may be permuted. The level arrays of the stored order are built once; each
    candidate order rewrites the changed level-0 nodes and rehashes only their ancestors (the
    fixed prefix and untouched subtrees are reused).
    """

    def __init__(self, inputs: Any, groups: Sequence[tuple[int, int]], *,
                 spine_algorithm_version: int, episode_id: Any = None) -> None:
        version = check_sav(spine_algorithm_version)
        raw = spine_leaves(inputs, version, episode_id)
        self._offset = 1 if version == 1 else 0
        self._count = len(raw) - self._offset
        self._groups = check_groups(groups, self._count)
        self._hex_nodes = version in (0, 1)  # sav 0/1 nodes are kept as hex text
        if self._hex_nodes:
            self._leaf, self._node = leaf_v1, node_v1
        else:
            self._leaf, self._node = leaf_v2, node_v2
        self._leaves0 = [self._leaf(x) for x in raw]  # level-0 of the stored order
        self._levels = tree_levels(list(self._leaves0), self._node)

    @property
    def space(self) -> int:
        """Number of candidate orders (product of the groups' factorials)."""
        return search_space(self._groups)

    def root_of(self, order: Sequence[int]) -> bytes:
        """Raw root of the inputs rearranged so that position p holds input ``order[p]``."""
        levels = self._levels
        offset = self._offset
        dirty = set()
        for p, src in enumerate(order):
            value = self._leaves0[src + offset]
            if levels[0][p + offset] != value:
                levels[0][p + offset] = value
                dirty.add((p + offset) // 2)
        for depth in range(1, len(levels)):
            below, here = levels[depth - 1], levels[depth]
            next_dirty = set()
            for j in dirty:
                left = 2 * j
                here[j] = self._node(below[left], below[left + 1]) if left + 1 < len(below) else below[left]
                next_dirty.add(j // 2)
            dirty = next_dirty
        top = levels[-1][0]
        return bytes.fromhex(top.decode("ascii")) if self._hex_nodes else top

    def orders(self) -> Iterator[list[int]]:
        """Candidate orders in the canonical enumeration (docs/astp-kernel-api.md)."""
        return canonical_orders(self._count, self._groups)

    def search(self, target_root: Any, *, cap: int) -> tuple[list[int] | None, int, bool]:
        """First order (canonical enumeration) whose root is ``target_root``:
        ``(order, tried, cap_hit)``. When the space exceeds ``cap`` nothing is tried and
        ``(None, 0, True)`` is returned."""
        target = hash_bytes(target_root)
        if isinstance(cap, bool) or not isinstance(cap, int) or cap < 0:
            raise InvalidFieldError(f"cap must be a non-negative integer, got {cap!r}")
        if self.space > cap:
            return None, 0, True
        tried = 0
        for order in self.orders():
            tried += 1
            if self.root_of(order) == target:
                return order, tried, False
        return None, tried, False


def search_orders(inputs: Any, groups: Sequence[tuple[int, int]], target_root: Any, *,
                  spine_algorithm_version: int, episode_id: Any = None,
                  cap: int = 40320) -> tuple[list[int] | None, int, bool]:
    """One-shot ``TieSearch(...).search(target_root, cap=cap)``."""
    return TieSearch(inputs, groups, spine_algorithm_version=spine_algorithm_version,
                     episode_id=episode_id).search(target_root, cap=cap)
