"""Compiled ASTP proofs kernel: inclusion proofs (4.x and version 2, ASTP.md §10) and the tie
search over tied spine inputs (§12), on the full level store of ext/astp_tree.h.

Twin: ``canonkit.astp._py.proofs`` (docs/astp-kernel-api.md); the differential tests keep
the two identical. The proof shape, index and group checks and the canonical enumeration of
orders are shared pure Python (``canonkit.astp._py.common``).
"""
from libc.stddef cimport ptrdiff_t
from libc.string cimport memcmp

from canonkit.astp._py.common import (
    canonical_orders, check_groups, check_index, check_sav, episode_first, expected_siblings,
    search_space,
)
from canonkit.errors import InUseError, InvalidFieldError

include "astp_kernel.pxi"
include "astp_digests.pxi"
include "astp_search.pxi"


def _set_tie_memo(Py_ssize_t limit) -> None:
    """Keep at most ``limit`` nodes in a tie search's memo (-1: the default). Not part of
    the kernel API; for tests (a full memo must only slow a search down)."""
    global ck_tie_memo_max
    ck_tie_memo_max = CK_TIE_MEMO_MAX if limit < 0 else <size_t>limit

__all__ = [
    "TieSearch", "inclusion_proof_v1", "inclusion_proof_v2", "search_orders",
    "verify_inclusion_proof_v1", "verify_inclusion_proof_v2",
]


# --- full level store (proofs, tie search) --------------------------------------------------

cdef str _node_hex(const ck_tree_hasher *h, const uint8_t *node):
    if h.size == 64:
        return (<const char *>node)[:64].decode("ascii")
    return _hex_of(node)


cdef tuple _path(_Tree t, size_t pos):
    """(siblings as hex, directions) from level 0 up; an unpaired node contributes nothing."""
    cdef list siblings = []
    cdef list directions = []
    cdef int d
    for d in range(t.depth - 1):
        if pos % 2 == 0:
            if pos + 1 < t.counts[d]:
                siblings.append(_node_hex(&t.h, t.node(d, pos + 1)))
                directions.append("right")
        else:
            siblings.append(_node_hex(&t.h, t.node(d, pos - 1)))
            directions.append("left")
        pos //= 2
    return siblings, directions


def inclusion_proof_v1(leaves, index):
    """4.x proof (ASTP.md §10.1) over the hex-text tree of ``leaves`` (no Episode leaf added):
    ``(leaf_hash, merkle_path, path_directions, spine_root)``, all hex; a direction names
    the side the sibling is on."""
    cdef _Digests d = _digests(leaves)
    cdef Py_ssize_t pos = check_index(index, d.n)
    cdef _Tree t = _build_tree(1, NULL, d.ptr, d.n)
    siblings, directions = _path(t, <size_t>pos)
    return _hex_of(d.ptr + 32 * pos), siblings, directions, _node_hex(&t.h, t.root())


def inclusion_proof_v2(leaves, index):
    """v2 proof (ASTP.md §10.2) for ``leaves`` (v2 leaf hashes) at ``index``:
    ``(leaf_hash, siblings leaf level first, spine_root)``, all hex."""
    cdef _Digests d = _digests(leaves)
    cdef Py_ssize_t pos = check_index(index, d.n)
    cdef _Tree t = _build_tree(0, NULL, d.ptr, d.n)
    siblings, _ = _path(t, <size_t>pos)
    return _hex_of(d.ptr + 32 * pos), siblings, _node_hex(&t.h, t.root())


def verify_inclusion_proof_v1(leaf_hash, merkle_path, path_directions, spine_root) -> bool:
    """Verify a 4.x proof with its stated directions. Malformed proofs (path and directions
    of different lengths, a direction other than "left"/"right", bad digests) are refused
    with ``InvalidFieldError``/``InvalidHashError``; a well-formed wrong proof gives False."""
    cdef ck_tree_hasher h
    cdef uint8_t raw[32]
    cdef uint8_t root[64]
    cdef uint8_t cur[64]
    cdef uint8_t *sibs
    cdef Py_ssize_t k, count
    if len(merkle_path) != len(path_directions):
        raise InvalidFieldError(f"merkle_path has {len(merkle_path)} entries but path_directions "
                                f"{len(path_directions)}")
    path = list(merkle_path)
    count = len(path)
    sibs = <uint8_t *>PyMem_Malloc(64 * count + 1)
    if sibs == NULL:
        raise MemoryError()
    try:
        for k in range(count):
            _parse_digest(path[k], raw)
            ck_hex32(raw, sibs + 64 * k)
        rights = []
        for direction in path_directions:
            if direction not in ("left", "right") or not isinstance(direction, str):
                raise InvalidFieldError(
                    f"path direction must be 'left' or 'right', got {direction!r}")
            rights.append(direction == "right")
        _parse_digest(spine_root, raw)
        ck_hex32(raw, root)
        _parse_digest(leaf_hash, raw)
        ck_tree_hasher_init(&h, 1)
        ck_tree_leaf(&h, raw, cur)
        for k in range(min(count, len(rights))):
            if rights[k]:
                ck_tree_node(&h, cur, sibs + 64 * k, cur)
            else:
                ck_tree_node(&h, sibs + 64 * k, cur, cur)
        return memcmp(cur, root, 64) == 0
    finally:
        PyMem_Free(sibs)


def verify_inclusion_proof_v2(leaf_hash, leaf_index, leaf_count, siblings, spine_root) -> bool:
    """Verify a v2 proof, deriving the shape from index and count. False (never an error) for
    an index outside [0, count), a non-integer index/count or a wrong sibling count; malformed
    digests raise ``InvalidHashError``."""
    cdef ck_tree_hasher h
    cdef uint8_t leaf[32]
    cdef uint8_t root[32]
    cdef uint8_t cur[32]
    cdef uint8_t *sibs
    cdef Py_ssize_t k = 0, count
    _parse_digest(leaf_hash, leaf)
    _parse_digest(spine_root, root)
    items = list(siblings)
    count = len(items)
    sibs = <uint8_t *>PyMem_Malloc(32 * count + 1)
    if sibs == NULL:
        raise MemoryError()
    try:
        for k in range(count):
            _parse_digest(items[k], sibs + 32 * k)
        try:
            needed = expected_siblings(leaf_index, leaf_count)
        except InvalidFieldError:
            return False
        if count != needed:
            return False
        ck_tree_hasher_init(&h, 0)
        ck_tree_leaf(&h, leaf, cur)
        # the shape walk in Python ints: leaf_count may exceed any C integer
        i, n, k = leaf_index, leaf_count, 0
        while n > 1:
            if not (i % 2 == 0 and i == n - 1):
                if i % 2 == 0:
                    ck_tree_node(&h, cur, sibs + 32 * k, cur)
                else:
                    ck_tree_node(&h, sibs + 32 * k, cur, cur)
                k += 1
            i, n = i // 2, (n + 1) // 2
        return memcmp(cur, root, 32) == 0
    finally:
        PyMem_Free(sibs)


# --- §12 tie search ------------------------------------------------------------------------

cdef class TieSearch:
    """Search the orders of tied spine inputs for one that reproduces a root, refolding only
    what a permutation touches.

    ``inputs`` are the spine inputs in stored order (without the sav 1 Episode input, which
    ``episode_id`` adds); ``groups`` are disjoint ``(start, length)`` ranges of ``inputs``
    whose members may be permuted. All levels of the stored order's tree are built once; each
    candidate order (lexicographic next-permutation per group, odometer across groups) rewrites
    only the level-0 nodes from the first changed position of each changed group and rehashes
    only their ancestors, without the GIL.
    """
    cdef _Tree tree
    cdef uint8_t *leaves0      # level-0 node values of the stored order, tree positions
    cdef Py_ssize_t offset     # 1 under sav 1 (the Episode input is tree position 0)
    cdef Py_ssize_t count      # inputs, excluding the Episode input
    cdef list _groups
    cdef bint modified         # level 0 differs from the stored order (after root_of)
    cdef bint busy             # a search or root_of is rewriting the tree

    def __cinit__(self, inputs, groups, *, spine_algorithm_version, episode_id=None):
        cdef int version = check_sav(spine_algorithm_version)
        cdef _Digests d = _digests(inputs)
        cdef bytes first = episode_first(version, episode_id)
        cdef size_t size
        self.offset = 1 if version == 1 else 0
        self.count = d.n
        self._groups = check_groups(groups, self.count)
        self.tree = _build_tree(version <= 1, _first_ptr(first), d.ptr, d.n)
        size = self.tree.h.size
        self.leaves0 = _alloc_nodes(self.count + self.offset, size)
        memcpy(self.leaves0, self.tree.store, size * <size_t>(self.count + self.offset))

    def __dealloc__(self):
        PyMem_Free(self.leaves0)

    @property
    def space(self) -> int:
        """Number of candidate orders (product of the groups' factorials)."""
        return search_space(self._groups)

    def root_of(self, order) -> bytes:
        """Raw root of the inputs rearranged so that position p holds input ``order[p]``."""
        cdef _Tree t = self.tree
        cdef size_t size = t.h.size
        cdef Py_ssize_t leaves = self.count + self.offset
        cdef Py_ssize_t p, src, pos, lo = -1, hi = -1
        self._check_idle()
        self.busy = True    # iterating ``order`` runs Python code: another thread may search
        try:
            for p, s in enumerate(order):
                src = s + self.offset          # Python indexing, as the twin's list lookups
                if src < 0:
                    src += leaves
                pos = p + self.offset
                if not 0 <= src < leaves or pos >= leaves:
                    raise IndexError("list index out of range")
                if memcmp(t.node(0, pos), self.leaves0 + size * src, size) != 0:
                    memcpy(t.node(0, pos), self.leaves0 + size * src, size)
                    self.modified = True
                    if lo < 0:
                        lo = pos
                    hi = pos
        finally:   # also when ``order`` fails midway: no level may be left stale
            if lo >= 0:
                ck_tree_refresh_range(&t.h, t.store, t.counts, t.offsets, t.depth, lo, hi)
            self.busy = False
        return _node_raw(&t.h, t.root())

    def orders(self):
        """Candidate orders in the canonical enumeration (docs/astp-kernel-api.md)."""
        return canonical_orders(self.count, self._groups)

    cdef int _check_idle(self) except -1:
        if self.busy:
            raise InUseError("this TieSearch is in use: a search or root_of of it is running "
                             "(in another thread, or the caller of this call)")
        return 0

    cdef void _restore(self):
        cdef _Tree t = self.tree
        memcpy(t.store, self.leaves0, t.h.size * <size_t>(self.count + self.offset))
        with nogil:
            ck_tree_build_levels(&t.h, t.store, t.counts, t.offsets, t.depth)
        self.modified = False

    def search(self, target_root, *, cap):
        """First order (canonical enumeration) whose root is ``target_root``:
        ``(order, tried, cap_hit)``. When the space exceeds ``cap`` nothing is tried and
        ``(None, 0, True)`` is returned."""
        cdef uint8_t raw[32]
        cdef uint8_t target[64]
        cdef _Tree t = self.tree
        cdef size_t size = t.h.size
        cdef ck_odometer odo
        cdef unsigned long long tried = 0
        cdef bint found
        cdef size_t *starts = NULL
        cdef Py_ssize_t g, ngroups = len(self._groups)
        _parse_digest(target_root, raw)
        if isinstance(cap, bool) or not isinstance(cap, int) or cap < 0:
            raise InvalidFieldError(f"cap must be a non-negative integer, got {cap!r}")
        if self.space > cap:
            return None, 0, True
        self._check_idle()
        self.busy = True                   # the tree is ours until the search returns
        odo.starts = NULL
        try:
            if size == 64:
                ck_hex32(raw, target)
            else:
                memcpy(target, raw, 32)
            if self.modified:
                self._restore()
            starts = <size_t *>PyMem_Malloc(sizeof(size_t) * (2 * ngroups + 1))
            if starts == NULL:
                raise MemoryError()
            for g in range(ngroups):
                starts[g], starts[ngroups + g] = self._groups[g]
            if ck_odometer_init(&odo, starts, starts + ngroups, <size_t>ngroups,
                                <size_t>self.offset) != 0:
                raise MemoryError()
            if (ck_keccak_lanes() > 1 and odo.npos > 0
                    and ck_tie_window(odo.pos, odo.npos, t.depth) <= CK_TIE_MAX_WINDOW):
                found = self._search_lanes(&odo, target, &tried)
            else:
                found = self._search_serial(&odo, target, &tried)
            if found:
                order = list(range(self.count))
                for g in range(<Py_ssize_t>odo.ngroups):
                    for i in range(<Py_ssize_t>odo.lengths[g]):
                        order[odo.starts[g] + i] = odo.perm[odo.base[g] + i]
                return order, tried, False
            return None, tried, False
        finally:
            self.busy = False
            PyMem_Free(starts)
            ck_odometer_free(&odo)

    cdef bint _search_serial(self, ck_odometer *odo, const uint8_t *target,
                             unsigned long long *tried) except -1:
        """One candidate at a time in the shared tree: only the level-0 nodes from the first
        changed position of each changed group are rewritten and their ancestors rehashed.
        Leaves the tree at the order found (at the stored order when none is)."""
        cdef _Tree t = self.tree
        cdef ck_tree_hasher *h = &t.h
        cdef size_t size = h.size, i, pos
        cdef ptrdiff_t g, k
        cdef bint found = False, wrapped, stopped = False
        self.modified = True               # until the search ends back at the stored order
        with nogil:
            while True:
                tried[0] += 1
                if (tried[0] & 0xFFFF) == 0 and _interrupted():  # a long search stays
                    stopped = True                                # interruptible (Ctrl-C)
                    break
                if memcmp(t.node(t.depth - 1, 0), target, size) == 0:
                    found = True
                    break
                # odometer: advance the last group; a group that wraps carries leftwards
                g = <ptrdiff_t>odo.ngroups - 1
                while g >= 0:
                    k = ck_next_permutation(odo.perm + odo.base[g], odo.lengths[g])
                    wrapped = k < 0
                    if wrapped:
                        k = 0
                    for i in range(<size_t>k, odo.lengths[g]):
                        pos = odo.starts[g] + i + odo.offset
                        memcpy(t.node(0, pos), self.leaves0 + size * (odo.perm[odo.base[g] + i]
                                                                       + odo.offset), size)
                    ck_tree_refresh_range(h, t.store, t.counts, t.offsets, t.depth,
                                          odo.starts[g] + <size_t>k + odo.offset,
                                          odo.starts[g] + odo.lengths[g] - 1 + odo.offset)
                    if wrapped:
                        g -= 1             # wrapped back to the stored order: carry
                    else:
                        break
                if g < 0:
                    break                  # every group wrapped: the space is exhausted
        if stopped:
            return _raise_pending()
        self.modified = found and tried[0] > 1
        return found

    cdef bint _search_lanes(self, ck_odometer *odo, const uint8_t *target,
                            unsigned long long *tried) except -1:
        """CK_TIE_LANES candidates at a time (ext/astp/astp_tie_lanes.h), each in its own
        copy of the groups' window of the tree; the shared tree stays at the stored order.
        On a match ``odo`` is left at the order found."""
        cdef _Tree t = self.tree
        cdef ck_tie_lanes lanes
        cdef int outcome
        if ck_tie_init(&lanes, &t.h, t.store, t.counts, t.offsets, t.depth, self.leaves0,
                       odo.pos, odo.npos) != 0:
            ck_tie_free(&lanes)
            raise MemoryError()
        try:
            with nogil:
                outcome = ck_tie_search(&lanes, odo, target, tried, _interrupted)
        finally:
            ck_tie_free(&lanes)
        if outcome == CK_TIE_NO_MEMORY:
            raise MemoryError()
        if outcome == CK_TIE_INTERRUPTED:
            return _raise_pending()
        return outcome == CK_TIE_FOUND


def search_orders(inputs, groups, target_root, *, spine_algorithm_version, episode_id=None,
                  cap=40320):
    """One-shot ``TieSearch(...).search(target_root, cap=cap)``."""
    return TieSearch(inputs, groups, spine_algorithm_version=spine_algorithm_version,
                     episode_id=episode_id).search(target_root, cap=cap)
