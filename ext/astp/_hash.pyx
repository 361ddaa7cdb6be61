"""Compiled ASTP hashing kernel: SHA3-256 (ext/astp/keccak.h), digest parsing, the Merkle
spine folds (ext/astp/astp_tree.h), the hash sets of ASTP.md §2.2/§6 and the §2.1 field
encoding that feeds them (one field, a field list and its hash).

Twin: ``canonkit.astp._py.hash`` (docs/astp-kernel-api.md); the differential tests keep the
two identical. ``Sha3_256`` (incremental hashing) is an extra of this module, outside
``__all__``.
"""
from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_SIMPLE
from cpython.pythread cimport (
    NOWAIT_LOCK, WAIT_LOCK, PyThread_acquire_lock, PyThread_allocate_lock, PyThread_free_lock,
    PyThread_release_lock, PyThread_type_lock,
)

from canonkit.astp._py.common import check_sav, episode_first
from canonkit.astp._py.fields import encode_field, encode_fields
from canonkit.errors import InUseError

include "astp_kernel.pxi"
include "astp_digests.pxi"

__all__ = [
    "encode_field", "encode_fields", "encode_set_v2", "hash_bytes", "hash_fields", "hash_hex",
    "hash_set_v1", "hash_set_v2", "merkle_root_v1", "merkle_root_v2", "sha3_256", "spine_root",
]

# Below this many bytes releasing the GIL costs more than it saves.
cdef enum:
    NOGIL_THRESHOLD = 4096


def sha3_256(data) -> bytes:
    """SHA3-256 digest (32 bytes) of any C-contiguous bytes-like object."""
    cdef Py_buffer view
    cdef uint8_t out[32]
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        if view.len >= NOGIL_THRESHOLD:
            with nogil:
                ck_sha3_256(<const uint8_t *>view.buf, <size_t>view.len, out)
        else:
            ck_sha3_256(<const uint8_t *>view.buf, <size_t>view.len, out)
    finally:
        PyBuffer_Release(&view)
    return out[:32]


cdef class Sha3_256:
    """Incremental SHA3-256: ``update(data)`` any number of times, then ``digest()``.

    ``digest()`` and ``hexdigest()`` do not consume the state (they finish a copy), like
    hashlib's objects. A large ``update`` absorbs without the GIL; like hashlib's objects,
    the hasher then holds its own lock, so threads sharing one hasher see each ``update``
    whole (never two absorbing into the state at once) and ``digest``/``copy`` a state
    between updates. A hasher is initialised once: calling ``__init__`` again raises
    ``InUseError`` (it would not reset the state; make a new hasher)."""

    cdef ck_sha3_256_ctx ctx
    # created by the first update that releases the GIL; from then on every method takes it
    cdef PyThread_type_lock lock
    cdef bint initialised

    def __cinit__(self, *args, **kwargs):
        ck_sha3_256_init(&self.ctx)

    def __init__(self, data=None):
        if self.initialised:
            raise InUseError("Sha3_256.__init__ again: a hasher is initialised once; "
                             "make a new one (or copy() this one)")
        self.initialised = True
        if data is not None:
            self.update(data)

    def __dealloc__(self):
        if self.lock != NULL:
            PyThread_free_lock(self.lock)

    cdef bint _enter(self):
        """Take the lock if there is one (waiting without the GIL); whether it was taken."""
        if self.lock == NULL:
            return False
        if not PyThread_acquire_lock(self.lock, NOWAIT_LOCK):
            with nogil:
                PyThread_acquire_lock(self.lock, WAIT_LOCK)
        return True

    def update(self, data) -> None:
        cdef Py_buffer view
        cdef bint locked
        PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
        try:
            if view.len >= NOGIL_THRESHOLD and self.lock == NULL:
                self.lock = PyThread_allocate_lock()
                if self.lock == NULL:
                    raise MemoryError()
            locked = self._enter()
            try:
                if view.len >= NOGIL_THRESHOLD:
                    with nogil:
                        ck_sha3_256_update(&self.ctx, <const uint8_t *>view.buf, <size_t>view.len)
                else:
                    ck_sha3_256_update(&self.ctx, <const uint8_t *>view.buf, <size_t>view.len)
            finally:
                if locked:
                    PyThread_release_lock(self.lock)
        finally:
            PyBuffer_Release(&view)

    cdef ck_sha3_256_ctx _snapshot(self):
        cdef bint locked = self._enter()
        cdef ck_sha3_256_ctx state = self.ctx
        if locked:
            PyThread_release_lock(self.lock)
        return state

    def digest(self) -> bytes:
        cdef ck_sha3_256_ctx done = self._snapshot()
        cdef uint8_t out[32]
        ck_sha3_256_final(&done, out)
        return out[:32]

    def hexdigest(self) -> str:
        return self.digest().hex()

    def copy(self) -> Sha3_256:
        cdef Sha3_256 other = Sha3_256.__new__(Sha3_256)
        other.ctx = self._snapshot()
        other.initialised = True
        return other


# --- digests ---------------------------------------------------------------------------

def hash_bytes(value) -> bytes:
    """A digest as 32 raw bytes, from 64 hex characters (either case) or a 32-byte value."""
    cdef uint8_t raw[32]
    _parse_digest(value, raw)
    return PyBytes_FromStringAndSize(<char *>raw, 32)


def hash_hex(value) -> str:
    """A digest as 64 lowercase hex characters (same inputs as ``hash_bytes``)."""
    cdef uint8_t raw[32]
    _parse_digest(value, raw)
    return _hex_of(raw)


# --- §5 Merkle tree ------------------------------------------------------------------------

cdef bytes _fold_root(int hex, const uint8_t *first, const uint8_t *inputs, Py_ssize_t n):
    """Root (raw 32 bytes) of the tree over [first] + inputs, folded without the GIL."""
    cdef ck_tree_hasher h
    cdef Py_ssize_t total = n + (1 if first != NULL else 0)
    cdef uint8_t *work
    ck_tree_hasher_init(&h, hex)
    work = _alloc_nodes(total, h.size)
    try:
        with nogil:
            ck_tree_leaves(&h, first, inputs, <size_t>n, work)
            ck_tree_fold(&h, work, <size_t>total)
        return _node_raw(&h, work)
    finally:
        PyMem_Free(work)


def spine_root(inputs, *, spine_algorithm_version, episode_id=None) -> str:
    """Spine root (ASTP.md §5) as hex. sav 0/1: hex-text tree (sav 1 first adds the
    Episode-identifier input); sav 2/3: raw-byte tree. ``episode_id`` is used by sav 1 only."""
    cdef int version = check_sav(spine_algorithm_version)
    cdef _Digests d = _digests(inputs)
    cdef bytes first = episode_first(version, episode_id)
    cdef bytes root = _fold_root(version <= 1, _first_ptr(first), d.ptr, d.n)
    return _hex_of(<const uint8_t *>PyBytes_AS_STRING(root))


cdef bytes _merkle_root_buffer(object raw, int hex):
    cdef const unsigned char[::1] view = memoryview(raw).cast("B")
    cdef Py_ssize_t length = view.shape[0]
    if length % 32:
        raise InvalidHashError(f"leaf buffer length {length} is not a multiple of 32")
    if length == 0:
        raise EmptyTreeError("the root of an empty leaf list is undefined")
    return _fold_root(hex, NULL, &view[0], length // 32)


def merkle_root_v2(raw) -> bytes:
    """Root of the raw-byte tree (``TREE_LEAF:v2:``/``TREE_NODE:v2:``) over a buffer of n*32
    bytes (n >= 1), 32 raw bytes."""
    return _merkle_root_buffer(raw, 0)


def merkle_root_v1(raw) -> bytes:
    """Root of the hex-text tree (``LEAF:``/``NODE:``) over a buffer of n*32 bytes (each input
    taken as its lowercase hex text), 32 raw bytes."""
    return _merkle_root_buffer(raw, 1)


# --- §2.2 / §6 sets ----------------------------------------------------------------------

cdef extern from "astp_sets.h" nogil:
    size_t ck_sorted_distinct(uint8_t *buf, size_t n)
    void ck_set_v1(const uint8_t *prefix, size_t prefix_len, const uint8_t *members, size_t m,
                   uint8_t *out)
    void ck_set_v2(const uint8_t *prefix, size_t prefix_len, const uint8_t *members, size_t m,
                   uint8_t *out)


cdef Py_ssize_t _sorted_distinct(object members, uint8_t **out) except -1:
    """Members (digests) parsed into a malloc'd buffer (*out, caller frees), sorted ascending
    bytewise with duplicates removed; returns the distinct count."""
    cdef list items = list(members)
    cdef Py_ssize_t n = len(items), i
    cdef uint8_t *buf = <uint8_t *>PyMem_Malloc(32 * n + 1)
    if buf == NULL:
        raise MemoryError()
    try:
        for i in range(n):
            _parse_digest(items[i], buf + 32 * i)
    except BaseException:
        PyMem_Free(buf)
        raise
    out[0] = buf
    return <Py_ssize_t>ck_sorted_distinct(buf, <size_t>n)


def encode_set_v2(prefix, members) -> bytes:
    """``prefix ‖ u32be(n) ‖ sorted distinct raw members`` (ASTP.md §2.2)."""
    cdef uint8_t *buf = NULL
    head = bytes(prefix)
    cdef Py_ssize_t m = _sorted_distinct(members, &buf)
    try:
        return head + _u32be(<unsigned long long>m) + PyBytes_FromStringAndSize(
            <char *>buf, 32 * m)
    finally:
        PyMem_Free(buf)


cdef str _set_hash(object prefix, object members, int version):
    cdef uint8_t *buf = NULL
    cdef uint8_t out[32]
    cdef bytes head = bytes(prefix)
    cdef const uint8_t *p = <const uint8_t *>PyBytes_AS_STRING(head)
    cdef size_t length = <size_t>PyBytes_GET_SIZE(head)
    cdef Py_ssize_t m = _sorted_distinct(members, &buf)
    try:
        if 32 * m < NOGIL_THRESHOLD:
            if version == 1:
                ck_set_v1(p, length, buf, <size_t>m, out)
            else:
                ck_set_v2(p, length, buf, <size_t>m, out)
        else:
            with nogil:
                if version == 1:
                    ck_set_v1(p, length, buf, <size_t>m, out)
                else:
                    ck_set_v2(p, length, buf, <size_t>m, out)
    finally:
        PyMem_Free(buf)
    return _hex_of(out)


def hash_set_v2(prefix, members) -> str:
    """Version 2 set hash (ASTP.md §2.2) as hex."""
    return _set_hash(prefix, members, 2)


def hash_set_v1(prefix, members) -> str:
    """Version 1 set hash (ASTP.md §6): ``H(prefix ‖ "|".join(sorted distinct hex))``, or
    ``H(prefix ‖ "EMPTY")`` for no members; as hex. (Lowercase hex sorts as the raw bytes.)"""
    return _set_hash(prefix, members, 1)


# --- §2.1 field encoding (the encoder is shared: canonkit.astp._py.fields) --------------

def hash_fields(prefix, fields) -> bytes:
    """``H(encode_fields(prefix, fields))``, 32 raw bytes."""
    cdef bytes data = encode_fields(prefix, fields)
    cdef const uint8_t *p = <const uint8_t *>PyBytes_AS_STRING(data)
    cdef size_t n = <size_t>PyBytes_GET_SIZE(data)
    cdef uint8_t out[32]
    if n >= 4096:  # below this releasing the GIL costs more than it saves
        with nogil:
            ck_sha3_256(p, n, out)
    else:
        ck_sha3_256(p, n, out)
    return PyBytes_FromStringAndSize(<char *>out, 32)
