# The tie search's C side (ext/astp/astp_tie_lanes.h: the lanes, the memo, the canonical
# odometer), the full level store of a tree it runs on, and the Ctrl-C check of a long
# search. Included by the proofs kernel (_proofs.pyx: TieSearch) and the document scanner
# (_scan.pyx: the verdict of an Episode rebuilt by searching its tied signals), after
# astp_kernel.pxi (and a cimport of libc.stddef's ptrdiff_t).

cdef extern from "astp_tie_lanes.h" nogil:
    enum:
        CK_TIE_LANES
        CK_TIE_MAX_WINDOW
        CK_TIE_MEMO_MAX
    ctypedef struct ck_tie_lanes:
        pass
    size_t ck_tie_window(const size_t *pos, size_t npos, int depth)
    int ck_tie_init(ck_tie_lanes *t, ck_tree_hasher *h, const uint8_t *store,
                    const size_t *counts, const size_t *offsets, int depth,
                    const uint8_t *leaves0, const size_t *pos, size_t npos)
    void ck_tie_free(ck_tie_lanes *t)
    void ck_tie_load(ck_tie_lanes *t, int lane, const size_t *src)
    int ck_tie_eval(ck_tie_lanes *t, int lanes, const uint8_t *target)
    size_t ck_tie_memo_max
    ctypedef struct ck_odometer:
        size_t ngroups, npos, offset
        size_t *starts
        size_t *lengths
        size_t *base
        size_t *perm
        size_t *slot
        size_t *pos
        size_t *src
    ptrdiff_t ck_next_permutation(size_t *a, size_t len)
    int ck_odometer_init(ck_odometer *o, const size_t *starts, const size_t *lengths,
                         size_t ngroups, size_t offset)
    void ck_odometer_free(ck_odometer *o)
    void ck_odometer_order(const ck_odometer *o, size_t count, size_t *out)
    enum:
        CK_TIE_FOUND
        CK_TIE_EXHAUSTED
        CK_TIE_NO_MEMORY
        CK_TIE_INTERRUPTED
    int ck_tie_search(ck_tie_lanes *t, ck_odometer *o, const uint8_t *target,
                      unsigned long long *tried, int (*interrupted)() noexcept nogil)


cdef extern from "Python.h":
    # no exception spec: the error it sets is left pending for _raise_pending
    int _check_signals "PyErr_CheckSignals"()


cdef int _interrupted() noexcept nogil:
    """Whether a signal handler raised (Ctrl-C during a long search); the error stays set."""
    with gil:
        return _check_signals() != 0


cdef int _raise_pending() except -1:
    """Propagate the error ``_interrupted`` left set."""
    return -1


cdef class _Tree:
    """Every level of a tree, level 0 first, node values back to back in one buffer."""
    cdef ck_tree_hasher h
    cdef uint8_t *store
    cdef size_t counts[65]
    cdef size_t offsets[65]
    cdef int depth

    def __dealloc__(self):
        PyMem_Free(self.store)

    cdef inline uint8_t *node(self, int d, size_t j) noexcept nogil:
        return self.store + self.h.size * (self.offsets[d] + j)

    cdef inline uint8_t *root(self) noexcept nogil:
        return self.node(self.depth - 1, 0)


cdef _Tree _build_tree(int hex, const uint8_t *first, const uint8_t *inputs, Py_ssize_t n):
    cdef _Tree t = _Tree.__new__(_Tree)
    cdef size_t total
    cdef Py_ssize_t leaves = n + (1 if first != NULL else 0)
    ck_tree_hasher_init(&t.h, hex)
    t.depth = ck_tree_shape(<size_t>leaves, t.counts, t.offsets, &total)
    t.store = _alloc_nodes(<Py_ssize_t>total, t.h.size)
    with nogil:
        ck_tree_leaves(&t.h, first, inputs, <size_t>n, t.store)
        ck_tree_build_levels(&t.h, t.store, t.counts, t.offsets, t.depth)
    return t
