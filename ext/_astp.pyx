"""Compiled ASTP kernels: SHA3-256 (ext/keccak.h), the Merkle spine folds, inclusion proofs
and the tie search (ext/astp_tree.h), and the field/set encoders.

Mirrors the kernel API of the pure-Python twin ``canonkit._astp_py`` name for name
(docs/astp-kernel-api.md); the differential tests keep the two identical. ``Sha3_256``
(incremental hashing) is an extra of this module, outside ``__all__``.
"""
from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_SIMPLE
from cpython.exc cimport PyErr_CheckSignals
from cpython.datetime cimport datetime_new, import_datetime
from cpython.dict cimport PyDict_GetItem
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from cpython.ref cimport PyObject
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from libc.stdint cimport uint8_t
from libc.stdlib cimport qsort
from libc.string cimport memcmp, memcpy

import itertools
import math
import re
import struct
import unicodedata
import uuid as _uuid
from datetime import datetime, timedelta, timezone

from canonkit.errors import (
    EmptyTreeError, InvalidFieldError, InvalidHashError, UnknownIdentifierError,
)

__all__ = [
    "FIELD_KINDS", "SPINE_VERSIONS", "TieSearch",
    "encode_field", "encode_fields", "encode_set_v2", "episode_leaf_input", "expected_siblings",
    "hash_bytes",
    "hash_fields", "hash_hex", "hash_set_v1", "hash_set_v2", "inclusion_proof_v1",
    "inclusion_proof_v2", "leaf_hash_v1", "leaf_hash_v2", "merkle_root_v1", "merkle_root_v2",
    "read_segments", "search_orders", "sha3_256", "spine_root", "verify_inclusion_proof_v1",
    "timestamp_ms", "uuid_bytes", "verify_inclusion_proof_v2",
]

#: The ten field kinds of ASTP.md §2.1, by tag.
FIELD_KINDS = {
    "NULL": 0x00, "BYTES": 0x01, "STRING": 0x02, "UINT": 0x03, "UUID": 0x04,
    "TIMESTAMP": 0x05, "HASH": 0x06, "LIST": 0x07, "BOOL": 0x08, "FLOAT": 0x09,
}
SPINE_VERSIONS = (0, 1, 2, 3)


cdef extern from "Python.h":
    bint PyUnicode_IS_ASCII(object o)
    Py_ssize_t PyUnicode_GET_LENGTH(object o)
    void *PyUnicode_DATA(object o)


cdef extern from "astp_tree.h" nogil:
    ctypedef struct ck_tree_hasher:
        size_t size
    void ck_tree_hasher_init(ck_tree_hasher *h, int hex)
    void ck_tree_leaf(ck_tree_hasher *h, const uint8_t *input, uint8_t *out)
    void ck_tree_node(ck_tree_hasher *h, const uint8_t *left, const uint8_t *right, uint8_t *out)
    void ck_tree_leaves(ck_tree_hasher *h, const uint8_t *first, const uint8_t *inputs,
                        size_t n, uint8_t *work)
    void ck_tree_fold(ck_tree_hasher *h, uint8_t *work, size_t n)
    int ck_tree_shape(size_t n, size_t *counts, size_t *offsets, size_t *total)
    void ck_tree_build_levels(ck_tree_hasher *h, uint8_t *store, const size_t *counts,
                              const size_t *offsets, int depth)
    void ck_tree_refresh_range(ck_tree_hasher *h, uint8_t *store, const size_t *counts,
                               const size_t *offsets, int depth, size_t lo, size_t hi)
    void ck_hex32(const uint8_t *raw, uint8_t *out64)
    int ck_unhex32(const uint8_t *hex, uint8_t *raw)
    void ck_hex_tables_init()
    int ck_keccak_lanes()
    int ck_keccak_lanes_available()
    int ck_keccak_set_lanes(int lanes)


cdef extern from "keccak.h" nogil:
    ctypedef struct ck_sha3_256_ctx:
        pass
    void ck_sha3_256_init(ck_sha3_256_ctx *ctx)
    void ck_sha3_256_update(ck_sha3_256_ctx *ctx, const uint8_t *data, size_t len)
    void ck_sha3_256_final(ck_sha3_256_ctx *ctx, uint8_t *out)
    void ck_sha3_256(const uint8_t *data, size_t len, uint8_t *out)
    int ck_keccak_portable
    int ck_keccak_bmi_available()


ck_hex_tables_init()
import_datetime()


def _keccak_lanes() -> tuple:
    """(states hashed side by side now, widest the CPU supports): 1, 2 (SSE2), 4 (AVX2) or
    8 (AVX-512F).
    Not part of the kernel API; for tests and benchmarks."""
    return ck_keccak_lanes(), ck_keccak_lanes_available()


def _set_keccak_lanes(int lanes, *, bint portable=False) -> None:
    """Force the tree folds to 1, 2, 4 or 8 side-by-side states (0 = widest available);
    ``portable=True`` also makes single states use the portable C permutation instead of
    the BMI1 build. Not part of the kernel API; for tests and benchmarks."""
    if ck_keccak_set_lanes(lanes) != 0:
        raise ValueError(f"{lanes} lanes not available (widest: {ck_keccak_lanes_available()})")
    global ck_keccak_portable
    ck_keccak_portable = portable


def _keccak_bmi() -> bool:
    """Whether single states use the BMI1 build of the permutation. For tests and benchmarks."""
    return bool(ck_keccak_bmi_available() and not ck_keccak_portable)


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
    hashlib's objects."""

    cdef ck_sha3_256_ctx ctx

    def __cinit__(self, data=None):
        ck_sha3_256_init(&self.ctx)
        if data is not None:
            self.update(data)

    def update(self, data) -> None:
        cdef Py_buffer view
        PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
        try:
            if view.len >= NOGIL_THRESHOLD:
                with nogil:
                    ck_sha3_256_update(&self.ctx, <const uint8_t *>view.buf, <size_t>view.len)
            else:
                ck_sha3_256_update(&self.ctx, <const uint8_t *>view.buf, <size_t>view.len)
        finally:
            PyBuffer_Release(&view)

    def digest(self) -> bytes:
        cdef ck_sha3_256_ctx done = self.ctx
        cdef uint8_t out[32]
        ck_sha3_256_final(&done, out)
        return out[:32]

    def hexdigest(self) -> str:
        return self.digest().hex()

    def copy(self) -> Sha3_256:
        cdef Sha3_256 other = Sha3_256.__new__(Sha3_256)
        other.ctx = self.ctx
        return other


# --- digests ---------------------------------------------------------------------------

cdef int _parse_digest(object value, uint8_t *out) except -1:
    """A digest (64 hex characters, either case, or 32 bytes) into out[32]."""
    cdef bytes raw
    if isinstance(value, str):
        if (PyUnicode_IS_ASCII(value) and PyUnicode_GET_LENGTH(value) == 64
                and ck_unhex32(<const uint8_t *>PyUnicode_DATA(value), out) == 0):
            return 0
        raise InvalidHashError(f"not a digest: expected 64 hex characters, got {value[:80]!r}",
                               detail=value)
    if isinstance(value, bytes):
        raw = <bytes>value
    elif isinstance(value, (bytearray, memoryview)):
        raw = bytes(value)
    else:
        raise InvalidHashError(
            f"not a digest: expected hex text or 32 bytes, got {type(value).__name__}",
            detail=type(value).__name__)
    if PyBytes_GET_SIZE(raw) != 32:
        raise InvalidHashError(f"not a digest: expected 32 bytes, got {len(raw)}",
                               detail=len(raw))
    memcpy(out, PyBytes_AS_STRING(raw), 32)
    return 0


cdef inline str _hex_of(const uint8_t *raw):
    cdef char text[64]
    ck_hex32(raw, <uint8_t *>text)
    return text[:64].decode("ascii")


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


# --- spine inputs --------------------------------------------------------------------------

cdef class _Digests:
    """n digests of 32 raw bytes back to back: borrowed from a C-contiguous (n, 32) uint8
    array (zero-copy) or parsed once into an owned buffer."""
    cdef const uint8_t *ptr
    cdef uint8_t *owned
    cdef Py_ssize_t n
    cdef object keep

    def __dealloc__(self):
        PyMem_Free(self.owned)


cdef _Digests _digests(object inputs):
    """Spine inputs (hex strings, 32-byte values, or an (n, 32) uint8 array)."""
    cdef _Digests d = _Digests.__new__(_Digests)
    cdef const unsigned char[:, ::1] view
    cdef Py_ssize_t i, n
    cdef list items
    if hasattr(inputs, "__array_interface__") or type(inputs).__module__ == "numpy":
        import numpy as np
        arr = np.asarray(inputs)
        if arr.dtype != np.uint8 or arr.ndim != 2 or arr.shape[1] != 32:
            raise InvalidHashError(
                f"array inputs must be (n, 32) uint8, got {arr.shape} {arr.dtype}")
        if arr.shape[0] == 0:
            raise EmptyTreeError("the root of an empty leaf list is undefined")
        if not arr.flags.c_contiguous:
            arr = np.ascontiguousarray(arr)
        view = arr
        d.keep = view
        d.ptr = &view[0, 0]
        d.n = view.shape[0]
        return d
    if isinstance(inputs, (str, bytes, bytearray, memoryview)):
        raise InvalidHashError("spine inputs must be a sequence of digests, not one value")
    items = list(inputs)
    n = len(items)
    if n > (<Py_ssize_t>(<size_t>-1 >> 1)) // 64:
        raise MemoryError("too many spine inputs")
    d.owned = <uint8_t *>PyMem_Malloc(32 * n if n else 1)
    if d.owned == NULL:
        raise MemoryError()
    d.ptr = d.owned
    for i in range(n):
        _parse_digest(items[i], d.owned + 32 * i)
    if n == 0:
        raise EmptyTreeError("the root of an empty leaf list is undefined")
    d.n = n
    return d


cdef int _check_sav(object version) except -1:
    if isinstance(version, bool) or not isinstance(version, int) or version not in SPINE_VERSIONS:
        raise UnknownIdentifierError(f"unknown spine_algorithm_version {version!r}", detail=version)
    return <int>version


def episode_leaf_input(episode_id) -> bytes:
    """The sav 1 Episode-identifier input ``H(utf8(episode_id))`` (raw); text as stored, no NFC."""
    if isinstance(episode_id, _uuid.UUID):
        episode_id = str(episode_id)
    if not isinstance(episode_id, str):
        raise InvalidFieldError(f"episode_id needs text, got {type(episode_id).__name__}")
    try:
        data = (<str>episode_id).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidFieldError(f"episode_id is not encodable as UTF-8: {exc.reason}") from None
    return sha3_256(data)


cdef bytes _episode_first(int version, object episode_id):
    """The sav 1 extra first input, or None for the other versions."""
    if version != 1:
        return None
    if episode_id is None:
        raise InvalidFieldError("spine_algorithm_version 1 needs episode_id")
    return episode_leaf_input(episode_id)


cdef uint8_t *_alloc_nodes(Py_ssize_t count, size_t size) except NULL:
    cdef uint8_t *p
    if count < 1 or <size_t>count > (<size_t>-1) // (2 * size):
        raise MemoryError("tree too large")
    p = <uint8_t *>PyMem_Malloc(<size_t>count * size)
    if p == NULL:
        raise MemoryError()
    return p


cdef str _node_hex(const ck_tree_hasher *h, const uint8_t *node):
    if h.size == 64:
        return (<const char *>node)[:64].decode("ascii")
    return _hex_of(node)


cdef bytes _node_raw(const ck_tree_hasher *h, const uint8_t *node):
    cdef uint8_t raw[32]
    if h.size == 64:
        ck_unhex32(node, raw)
        return PyBytes_FromStringAndSize(<char *>raw, 32)
    return PyBytes_FromStringAndSize(<const char *>node, 32)


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
    cdef int version = _check_sav(spine_algorithm_version)
    cdef _Digests d = _digests(inputs)
    cdef bytes first = _episode_first(version, episode_id)
    cdef bytes root = _fold_root(version <= 1, <const uint8_t *>PyBytes_AS_STRING(first)
                                 if first is not None else NULL, d.ptr, d.n)
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


# --- full level store (proofs, tie search) --------------------------------------------------

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


cdef Py_ssize_t _check_index(object index, Py_ssize_t count) except -1:
    if isinstance(index, bool) or not isinstance(index, int):
        raise InvalidFieldError(f"leaf index must be an integer, got {type(index).__name__}")
    if not 0 <= index < count:
        raise InvalidFieldError(f"leaf index {index} outside [0, {count})")
    return <Py_ssize_t>index


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
    cdef Py_ssize_t pos = _check_index(index, d.n)
    cdef _Tree t = _build_tree(1, NULL, d.ptr, d.n)
    siblings, directions = _path(t, <size_t>pos)
    return _hex_of(d.ptr + 32 * pos), siblings, directions, _node_hex(&t.h, t.root())


def inclusion_proof_v2(leaves, index):
    """v2 proof (ASTP.md §10.2) for ``leaves`` (v2 leaf hashes) at ``index``:
    ``(leaf_hash, siblings leaf level first, spine_root)``, all hex."""
    cdef _Digests d = _digests(leaves)
    cdef Py_ssize_t pos = _check_index(index, d.n)
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


def expected_siblings(leaf_index, leaf_count) -> int:
    """Number of siblings a v2 proof for ``leaf_index`` of ``leaf_count`` carries (ASTP.md
    §10.2); ``InvalidFieldError`` when the index is outside [0, count)."""
    for name, v in (("leaf_index", leaf_index), ("leaf_count", leaf_count)):
        if isinstance(v, bool) or not isinstance(v, int):
            raise InvalidFieldError(f"{name} must be an integer, got {type(v).__name__}")
    if not 0 <= leaf_index < leaf_count:
        raise InvalidFieldError(f"leaf index {leaf_index} outside [0, {leaf_count})")
    i, n, s = leaf_index, leaf_count, 0
    while n > 1:
        if not (i % 2 == 0 and i == n - 1):
            s += 1
        i, n = i // 2, (n + 1) // 2
    return s


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

cdef extern from *:
    """
    /* Next lexicographic permutation of a[0..len); returns the first index that changed, or
     * -1 after the last permutation (a is then back to ascending order, all of it changed). */
    static inline Py_ssize_t ck_next_permutation(Py_ssize_t *a, Py_ssize_t len) {
        Py_ssize_t k = len - 2, l, t, i, j;
        while (k >= 0 && a[k] >= a[k + 1]) k--;
        if (k >= 0) {
            l = len - 1;
            while (a[l] <= a[k]) l--;
            t = a[k]; a[k] = a[l]; a[l] = t;
        }
        for (i = k + 1, j = len - 1; i < j; i++, j--) {
            t = a[i]; a[i] = a[j]; a[j] = t;
        }
        return k;
    }
    """
    Py_ssize_t ck_next_permutation(Py_ssize_t *a, Py_ssize_t len) nogil


def _search_space(groups) -> int:
    space = 1
    for _, length in groups:
        space *= math.factorial(length)
    return space


def _check_groups(groups, Py_ssize_t count) -> list:
    out = []
    taken = [False] * count
    for g in groups:
        start, length = g
        for v in (start, length):
            if isinstance(v, bool) or not isinstance(v, int):
                raise InvalidFieldError(f"group bounds must be integers, got {g!r}")
        if length < 1 or start < 0 or start + length > count:
            raise InvalidFieldError(f"group {g!r} outside the {count} inputs")
        for p in range(start, start + length):
            if taken[p]:
                raise InvalidFieldError(f"groups overlap at input {p}")
            taken[p] = True
        out.append((start, length))
    return out


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
    cdef bint busy             # a search is running without the GIL: the tree is in use

    def __cinit__(self, inputs, groups, *, spine_algorithm_version, episode_id=None):
        cdef int version = _check_sav(spine_algorithm_version)
        cdef _Digests d = _digests(inputs)
        cdef bytes first = _episode_first(version, episode_id)
        cdef size_t size
        self.offset = 1 if version == 1 else 0
        self.count = d.n
        self._groups = _check_groups(groups, self.count)
        self.tree = _build_tree(version <= 1, <const uint8_t *>PyBytes_AS_STRING(first)
                                if first is not None else NULL, d.ptr, d.n)
        size = self.tree.h.size
        self.leaves0 = _alloc_nodes(self.count + self.offset, size)
        memcpy(self.leaves0, self.tree.store, size * <size_t>(self.count + self.offset))

    def __dealloc__(self):
        PyMem_Free(self.leaves0)

    @property
    def space(self) -> int:
        """Number of candidate orders (product of the groups' factorials)."""
        return _search_space(self._groups)

    def root_of(self, order) -> bytes:
        """Raw root of the inputs rearranged so that position p holds input ``order[p]``."""
        cdef _Tree t = self.tree
        cdef size_t size = t.h.size
        cdef Py_ssize_t leaves = self.count + self.offset
        cdef Py_ssize_t p, src, pos, lo = -1, hi = -1
        self._check_idle()
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
        if lo >= 0:
            ck_tree_refresh_range(&t.h, t.store, t.counts, t.offsets, t.depth, lo, hi)
        return _node_raw(&t.h, t.root())

    def orders(self):
        """Candidate orders in the canonical enumeration: itertools.product over the groups
        (last group varying fastest) of itertools.permutations of each group's positions."""
        base = list(range(self.count))
        choices = [itertools.permutations(range(s, s + n)) for s, n in self._groups]
        for combo in itertools.product(*choices):
            order = list(base)
            for (s, n), perm in zip(self._groups, combo):
                order[s:s + n] = perm
            yield order

    cdef int _check_idle(self) except -1:
        if self.busy:
            raise RuntimeError("this TieSearch is searching in another thread")
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
        cdef ck_tree_hasher *h = &t.h
        cdef size_t size = h.size
        cdef Py_ssize_t ngroups = len(self._groups)
        cdef Py_ssize_t *starts
        cdef Py_ssize_t *lengths
        cdef Py_ssize_t *perm          # all groups' current permutations, back to back
        cdef Py_ssize_t *base          # index of each group's first entry in perm
        cdef Py_ssize_t g, i, k, m, total = 0, pos
        cdef unsigned long long tried = 0
        cdef bint found = False, wrapped
        _parse_digest(target_root, raw)
        if isinstance(cap, bool) or not isinstance(cap, int) or cap < 0:
            raise InvalidFieldError(f"cap must be a non-negative integer, got {cap!r}")
        if self.space > cap:
            return None, 0, True
        self._check_idle()
        self.busy = True                   # the tree is ours until the search returns
        starts = base = NULL
        try:
            if size == 64:
                ck_hex32(raw, target)
            else:
                memcpy(target, raw, 32)
            if self.modified:
                self._restore()
            for s, n in self._groups:
                total += n
            starts = <Py_ssize_t *>PyMem_Malloc(sizeof(Py_ssize_t) * (2 * ngroups + total + 1))
            base = <Py_ssize_t *>PyMem_Malloc(sizeof(Py_ssize_t) * (ngroups + 1))
            if starts == NULL or base == NULL:
                raise MemoryError()
            lengths = starts + ngroups
            perm = lengths + ngroups
            m = 0
            for g in range(ngroups):
                s, n = self._groups[g]
                starts[g] = s
                lengths[g] = n
                base[g] = m
                for i in range(n):
                    perm[m + i] = s + i
                m += n
            self.modified = True           # until the search ends back at the stored order
            with nogil:
                while True:
                    tried += 1
                    if (tried & 0xFFFF) == 0:  # a long search stays interruptible (Ctrl-C)
                        with gil:
                            PyErr_CheckSignals()
                    if memcmp(t.node(t.depth - 1, 0), target, size) == 0:
                        found = True
                        break
                    # odometer: advance the last group; a group that wraps carries leftwards
                    g = ngroups - 1
                    while g >= 0:
                        k = ck_next_permutation(perm + base[g], lengths[g])
                        wrapped = k < 0
                        if wrapped:
                            k = 0
                        for i in range(k, lengths[g]):
                            pos = starts[g] + i + self.offset
                            memcpy(t.node(0, pos), self.leaves0 + size * (perm[base[g] + i]
                                                                           + self.offset), size)
                        ck_tree_refresh_range(h, t.store, t.counts, t.offsets, t.depth,
                                              starts[g] + k + self.offset,
                                              starts[g] + lengths[g] - 1 + self.offset)
                        if wrapped:
                            g -= 1             # wrapped back to the stored order: carry
                        else:
                            break
                    if g < 0:
                        break                  # every group wrapped: the space is exhausted
            if found:
                order = list(range(self.count))
                for g in range(ngroups):
                    for i in range(lengths[g]):
                        order[starts[g] + i] = perm[base[g] + i]
                self.modified = tried > 1
                return order, tried, False
            self.modified = False         # every group is back at the stored order
            return None, tried, False
        finally:
            self.busy = False
            PyMem_Free(starts)
            PyMem_Free(base)


def search_orders(inputs, groups, target_root, *, spine_algorithm_version, episode_id=None,
                  cap=40320):
    """One-shot ``TieSearch(...).search(target_root, cap=cap)``."""
    return TieSearch(inputs, groups, spine_algorithm_version=spine_algorithm_version,
                     episode_id=episode_id).search(target_root, cap=cap)


# --- §2.1 field encoding -----------------------------------------------------------------

_UUID_TEXT = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_U64 = 1 << 64
_U32 = 1 << 32
_FLOAT_BE = struct.Struct(">d")


cdef inline bytes _u32be(unsigned long long v):
    cdef uint8_t b[4]
    b[0] = <uint8_t>(v >> 24); b[1] = <uint8_t>(v >> 16); b[2] = <uint8_t>(v >> 8)
    b[3] = <uint8_t>v
    return PyBytes_FromStringAndSize(<char *>b, 4)


cdef inline bytes _u64be(unsigned long long v):
    cdef uint8_t b[8]
    cdef int i
    for i in range(8):
        b[i] = <uint8_t>(v >> (56 - 8 * i))
    return PyBytes_FromStringAndSize(<char *>b, 8)


cdef bytes _enc_string(object value):
    if not isinstance(value, str):
        raise InvalidFieldError(f"STRING needs text, got {type(value).__name__}")
    try:
        data = unicodedata.normalize("NFC", value).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidFieldError(f"STRING is not encodable as UTF-8: {exc.reason}") from None
    if len(data) >= _U32:
        raise InvalidFieldError("STRING longer than 2^32-1 bytes")
    return b"\x02" + _u32be(len(data)) + data


cdef bytes _enc_bytes(object value):
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise InvalidFieldError(f"BYTES needs a bytes-like value, got {type(value).__name__}")
    data = bytes(value)
    if len(data) >= _U32:
        raise InvalidFieldError("BYTES longer than 2^32-1 bytes")
    return b"\x01" + _u32be(len(data)) + data


cdef bytes _enc_uint(object value):
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidFieldError(f"UINT needs an integer, got {type(value).__name__}")
    if not 0 <= value < _U64:
        raise InvalidFieldError(f"UINT out of range [0, 2^64): {value}")
    return b"\x03" + _u64be(<unsigned long long>value)


def uuid_bytes(value) -> bytes:
    """A UUID as its 16 bytes in RFC 4122 order, from ``uuid.UUID``, canonical text or 16 bytes."""
    if isinstance(value, _uuid.UUID):
        return value.bytes
    if isinstance(value, str):
        if len(value) != 36 or not _UUID_TEXT.fullmatch(value):
            raise InvalidFieldError(f"UUID needs 8-4-4-4-12 hex text, got {value[:80]!r}")
        return bytes.fromhex(value.replace("-", ""))
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        if len(raw) != 16:
            raise InvalidFieldError(f"UUID needs 16 bytes, got {len(raw)}")
        return raw
    raise InvalidFieldError(f"UUID needs a UUID, text or 16 bytes, got {type(value).__name__}")


def timestamp_ms(value) -> int:
    """Whole milliseconds since the epoch of a timezone-aware instant (datetime or ISO 8601
    text), sub-millisecond precision truncated; naive and pre-1970 instants refused."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            raise InvalidFieldError(f"TIMESTAMP text is not ISO 8601: {value[:80]!r}") from None
    if not isinstance(value, datetime):
        raise InvalidFieldError(
            f"TIMESTAMP needs a datetime or ISO 8601 text, got {type(value).__name__}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidFieldError(f"TIMESTAMP is naive (no UTC offset): {value.isoformat()}")
    delta = value - _EPOCH
    ms = (delta.days * 86400 + delta.seconds) * 1000 + delta.microseconds // 1000
    if not 0 <= ms < _U64:
        raise InvalidFieldError(f"TIMESTAMP outside [1970-01-01, 2^64 ms): {value.isoformat()}")
    return ms


cdef bytes _enc_float(object value):
    cdef double x
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidFieldError(f"FLOAT needs a number, got {type(value).__name__}")
    try:
        x = float(value)
    except OverflowError:
        raise InvalidFieldError("FLOAT: integer too large for binary64") from None
    if x != x or x == float("inf") or x == -float("inf"):
        raise InvalidFieldError(f"FLOAT refuses {x!r}")
    if x == 0.0:
        x = 0.0  # -0 normalizes to +0
    return b"\x09" + _FLOAT_BE.pack(x)


cdef bytes _enc_bool(object value):
    if not isinstance(value, bool):
        raise InvalidFieldError(f"BOOL needs a boolean, got {type(value).__name__}")
    return b"\x08\x01" if value else b"\x08\x00"


cdef tuple _split_kind(object kind):
    """``"HASH|NULL"`` -> ("HASH", True, None); ``"LIST(STRING)"`` -> ("LIST", False, "STRING")."""
    if not isinstance(kind, str):
        raise InvalidFieldError(f"field kind must be text, got {type(kind).__name__}")
    nullable = kind.endswith("|NULL")
    base = kind[:-5] if nullable else kind
    item = None
    if base.startswith("LIST(") and base.endswith(")"):
        item = base[5:-1]
        base = "LIST"
        if item not in FIELD_KINDS or item in ("NULL", "LIST"):
            raise InvalidFieldError(f"unknown LIST item kind {item!r}")
    if base not in FIELD_KINDS or (base == "LIST" and item is None):
        raise InvalidFieldError(f"unknown field kind {kind!r}")
    return base, nullable, item


cdef bytes _enc_one(str base, object value):
    cdef uint8_t raw[33]
    if base == "STRING":
        return _enc_string(value)
    if base == "HASH":
        try:
            _parse_digest(value, raw + 1)
        except InvalidHashError as exc:
            raise InvalidHashError(f"HASH field: {exc}", detail=exc.detail) from None
        raw[0] = 0x06
        return PyBytes_FromStringAndSize(<char *>raw, 33)
    if base == "UUID":
        return b"\x04" + uuid_bytes(value)
    if base == "UINT":
        return _enc_uint(value)
    if base == "TIMESTAMP":
        return b"\x05" + _u64be(<unsigned long long>timestamp_ms(value))
    if base == "BYTES":
        return _enc_bytes(value)
    if base == "BOOL":
        return _enc_bool(value)
    if base == "FLOAT":
        return _enc_float(value)
    raise InvalidFieldError(f"kind {base!r} cannot carry a value")


def encode_field(kind, value) -> bytes:
    """One field in the §2.1 encoding: tag byte then payload.

    ``kind`` is a type name of ASTP.md §2.1 (``"UINT"``), optionally nullable
    (``"HASH|NULL"``), or a list with its item kind (``"LIST(HASH)"``). ``"NULL"`` takes
    ``None``. ``None`` for a kind not marked nullable is refused.
    """
    base, nullable, item = _split_kind(kind)
    if base == "NULL":
        if value is not None:
            raise InvalidFieldError(f"NULL takes None, got {type(value).__name__}")
        return b"\x00"
    if value is None:
        if nullable:
            return b"\x00"
        raise InvalidFieldError(f"None for non-nullable field kind {kind!r}")
    if base == "LIST":
        if (isinstance(value, (str, bytes, bytearray, memoryview))
                or not isinstance(value, (list, tuple))):
            raise InvalidFieldError(f"LIST needs a list or tuple, got {type(value).__name__}")
        if len(value) >= _U32:
            raise InvalidFieldError("LIST longer than 2^32-1 items")
        parts = [b"\x07", _u32be(len(value))]
        for element in value:
            if element is None:
                raise InvalidFieldError("LIST items must be non-null")
            parts.append(_enc_one(item, element))
        return b"".join(parts)
    return _enc_one(base, value)


def encode_fields(prefix, fields) -> bytes:
    """``prefix ‖ enc(f1) ‖ … ‖ enc(fn)``; ``fields`` is a sequence of (kind, value)."""
    parts = [bytes(prefix)]
    for kind, value in fields:
        parts.append(encode_field(kind, value))
    return b"".join(parts)


def hash_fields(prefix, fields) -> bytes:
    """``H(encode_fields(prefix, fields))``, 32 raw bytes."""
    return sha3_256(encode_fields(prefix, fields))


# --- §2.2 / §6 sets ----------------------------------------------------------------------

cdef int _cmp32(const void *a, const void *b) noexcept nogil:
    return memcmp(a, b, 32)


cdef Py_ssize_t _sorted_distinct(object members, uint8_t **out) except -1:
    """Members (digests) parsed into a malloc'd buffer (*out, caller frees), sorted ascending
    bytewise with duplicates removed; returns the distinct count."""
    cdef list items = list(members)
    cdef Py_ssize_t n = len(items), i, m = 0
    cdef uint8_t *buf = <uint8_t *>PyMem_Malloc(32 * n + 1)
    if buf == NULL:
        raise MemoryError()
    try:
        for i in range(n):
            _parse_digest(items[i], buf + 32 * i)
    except BaseException:
        PyMem_Free(buf)
        raise
    qsort(buf, <size_t>n, 32, _cmp32)
    for i in range(n):
        if m == 0 or memcmp(buf + 32 * (m - 1), buf + 32 * i, 32) != 0:
            if m != i:
                memcpy(buf + 32 * m, buf + 32 * i, 32)
            m += 1
    out[0] = buf
    return m


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


def hash_set_v2(prefix, members) -> str:
    """Version 2 set hash (ASTP.md §2.2) as hex."""
    return sha3_256(encode_set_v2(prefix, members)).hex()


def hash_set_v1(prefix, members) -> str:
    """Version 1 set hash (ASTP.md §6): ``H(prefix ‖ "|".join(sorted distinct hex))``, or
    ``H(prefix ‖ "EMPTY")`` for no members; as hex. (Lowercase hex sorts as the raw bytes.)"""
    cdef uint8_t *buf = NULL
    cdef Py_ssize_t m, i
    cdef bytearray body
    cdef char *p
    head = bytes(prefix)
    m = _sorted_distinct(members, &buf)
    try:
        if m == 0:
            return sha3_256(head + b"EMPTY").hex()
        body = bytearray(65 * m - 1)
        p = body
        for i in range(m):
            ck_hex32(buf + 32 * i, <uint8_t *>p + 65 * i)
            if i + 1 < m:
                p[65 * i + 64] = b'|'
        return sha3_256(head + bytes(body)).hex()
    finally:
        PyMem_Free(buf)


# --- §4 leaf hashes ----------------------------------------------------------------------

cdef inline int _nibble(unsigned char c) noexcept:
    if c >= 48 and c <= 57:
        return c - 48
    if c >= 97 and c <= 102:
        return c - 87
    if c >= 65 and c <= 70:
        return c - 55
    return -1


cdef int _fast_uuid(object value, uint8_t *out) noexcept:
    """1 and out[16] filled when value is an exact ``str`` of 8-4-4-4-12 ASCII hex, else 0."""
    if type(value) is not str or not PyUnicode_IS_ASCII(value) or PyUnicode_GET_LENGTH(value) != 36:
        return 0
    cdef const unsigned char *p = <const unsigned char *>PyUnicode_DATA(value)
    cdef int k = 0, j = 0, hi, lo
    while k < 36:
        if k == 8 or k == 13 or k == 18 or k == 23:
            if p[k] != 45:
                return 0
            k += 1
            continue
        hi = _nibble(p[k])
        lo = _nibble(p[k + 1])
        if hi < 0 or lo < 0:
            return 0
        out[j] = <uint8_t>((hi << 4) | lo)
        j += 1
        k += 2
    return 1


cdef inline Py_ssize_t _fast_string(object value, uint8_t *out, Py_ssize_t room) noexcept:
    """STRING field of an exact ASCII ``str`` (NFC-invariant) into out; its size, or -1."""
    if type(value) is not str or not PyUnicode_IS_ASCII(value):
        return -1
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(value)
    if n + 5 > room:
        return -1
    out[0] = 0x02
    out[1] = <uint8_t>(n >> 24)
    out[2] = <uint8_t>(n >> 16)
    out[3] = <uint8_t>(n >> 8)
    out[4] = <uint8_t>n
    memcpy(out + 5, PyUnicode_DATA(value), n)
    return n + 5


cdef enum:
    FAST_LEAF_ROOM = 1024


cdef Py_ssize_t _fast_leaf_v2(object node_id, object node_type, object schema_version,
                              object sequence_index, object content_hash, object parent_node_id,
                              uint8_t *buf) except -1:
    """The v2 leaf preimage of canonical inputs (UUID text, ASCII text, exact int, 64-hex
    digest) into buf[FAST_LEAF_ROOM]; its length, or 0 when the general path must decide."""
    cdef Py_ssize_t n = 13, w
    cdef unsigned long long v
    cdef int k
    memcpy(buf, b"LEAF_HASH:v2:", 13)
    buf[n] = 0x04
    if not _fast_uuid(node_id, buf + n + 1):
        return 0
    n += 17
    w = _fast_string(node_type, buf + n, FAST_LEAF_ROOM - 100 - n)
    if w < 0:
        return 0
    n += w
    w = _fast_string(schema_version, buf + n, FAST_LEAF_ROOM - 100 - n)
    if w < 0:
        return 0
    n += w
    if type(sequence_index) is not int or sequence_index < 0 or sequence_index >= _U64:
        return 0
    v = <unsigned long long>sequence_index
    buf[n] = 0x03
    for k in range(8):
        buf[n + 1 + k] = <uint8_t>(v >> (56 - 8 * k))
    n += 9
    if (type(content_hash) is not str or not PyUnicode_IS_ASCII(content_hash)
            or PyUnicode_GET_LENGTH(content_hash) != 64
            or ck_unhex32(<const uint8_t *>PyUnicode_DATA(content_hash), buf + n + 1) != 0):
        return 0
    buf[n] = 0x06
    n += 33
    if parent_node_id is None:
        buf[n] = 0x00
        return n + 1
    buf[n] = 0x04
    if not _fast_uuid(parent_node_id, buf + n + 1):
        return 0
    return n + 17


def leaf_hash_v2(node_id, node_type, schema_version, sequence_index, content_hash,
                 parent_node_id) -> str:
    """``hash_version`` 2 leaf hash (ASTP.md §4.1) as hex; ``parent_node_id`` None -> NULL."""
    cdef uint8_t raw[33]
    cdef uint8_t buf[FAST_LEAF_ROOM]
    cdef Py_ssize_t size = _fast_leaf_v2(node_id, node_type, schema_version, sequence_index,
                                         content_hash, parent_node_id, buf)
    if size > 0:  # canonical inputs: one C preimage and one hash
        ck_sha3_256(buf, <size_t>size, raw)
        return _hex_of(raw)
    if content_hash is None:  # as encode_field("HASH", None): a refused None, not a bad digest
        raise InvalidFieldError("None for non-nullable field kind 'HASH'")
    parts = [b"LEAF_HASH:v2:\x04", uuid_bytes(node_id), _enc_string(node_type),
             _enc_string(schema_version), _enc_uint(sequence_index)]
    try:
        _parse_digest(content_hash, raw + 1)
    except InvalidHashError as exc:
        raise InvalidHashError(f"HASH field: {exc}", detail=exc.detail) from None
    raw[0] = 0x06
    parts.append(PyBytes_FromStringAndSize(<char *>raw, 33))
    parts.append(b"\x00" if parent_node_id is None else b"\x04" + uuid_bytes(parent_node_id))
    return sha3_256(b"".join(parts)).hex()


cdef bytes _raw_text(object value, str what):
    if not isinstance(value, str):
        raise InvalidFieldError(f"{what} needs text, got {type(value).__name__}")
    try:
        data = value.encode("utf-8")  # v1: no NFC
    except UnicodeEncodeError as exc:
        raise InvalidFieldError(f"{what} is not encodable as UTF-8: {exc.reason}") from None
    return _u32be(len(data)) + data


def leaf_hash_v1(node_id, node_type, schema_version, sequence_index, content_hash,
                 parent_node_id, sealed_at_ms=0) -> str:
    """``hash_version`` 1 leaf hash (ASTP.md §4.2) as hex: raw concatenation, no tags, no NFC;
    absent parent -> 16 zero bytes; ``sealed_at_ms`` 0 for the unsealed (verifier) value."""
    cdef uint8_t raw[32]
    for name, n in (("sequence_index", sequence_index), ("sealed_at_ms", sealed_at_ms)):
        if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n < _U64:
            raise InvalidFieldError(f"{name} must be an integer in [0, 2^64), got {n!r}")
    parent = b"\x00" * 16 if parent_node_id is None else uuid_bytes(parent_node_id)
    node = uuid_bytes(node_id)
    texts = _raw_text(node_type, "node_type") + _raw_text(schema_version, "schema_version")
    _parse_digest(content_hash, raw)
    preimage = (node + texts + _u64be(<unsigned long long>sequence_index)
                + PyBytes_FromStringAndSize(<char *>raw, 32)
                + _u64be(<unsigned long long>sealed_at_ms) + parent)
    return sha3_256(preimage).hex()



# --- Episode segments: the document reader's fast path ------------------------------------
# One call reads the run of canonical segment items of a document with C-level dict access
# and character checks; the first item outside the canonical shape is left to the reader
# (which raises its own InvalidRecordError or reads it). Same contract as the twin.

cdef object _fromisoformat = datetime.fromisoformat
cdef object _UTC = timezone.utc
cdef dict _OFFSETS = {}   # offset in minutes -> timezone, as fromisoformat builds them


cdef inline int _digits(const unsigned char *p, int n) noexcept:
    cdef int v = 0, k
    for k in range(n):
        if p[k] < 48 or p[k] > 57:
            return -1
        v = v * 10 + (p[k] - 48)
    return v


cdef object _fast_instant(str text):
    """``datetime.fromisoformat(text)`` for the common shape
    ``YYYY-MM-DDTHH:MM:SS[.fff|.ffffff](Z|+HH:MM|-HH:MM)``; None for any other text (the
    caller then asks ``fromisoformat`` itself)."""
    if not PyUnicode_IS_ASCII(text):
        return None
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(text), pos = 19
    if n < 20:
        return None
    cdef const unsigned char *p = <const unsigned char *>PyUnicode_DATA(text)
    if p[4] != 45 or p[7] != 45 or p[10] != 84 or p[13] != 58 or p[16] != 58:
        return None
    cdef int year = _digits(p, 4), month = _digits(p + 5, 2), day = _digits(p + 8, 2)
    cdef int hour = _digits(p + 11, 2), minute = _digits(p + 14, 2), second = _digits(p + 17, 2)
    cdef int us = 0, sign, hh, mm, offset
    if year < 0 or month < 0 or day < 0 or hour < 0 or minute < 0 or second < 0:
        return None
    if p[19] == 46:  # '.': exactly 3 or 6 digits
        if n >= 26 and _digits(p + 20, 6) >= 0:
            us = _digits(p + 20, 6)
            pos = 26
        elif n >= 23 and _digits(p + 20, 3) >= 0 and (n == 23 or _digits(p + 23, 1) < 0):
            us = _digits(p + 20, 3) * 1000
            pos = 23
        else:
            return None
    if n - pos == 1 and p[pos] == 90:  # 'Z'
        tz = _UTC
    elif n - pos == 6 and (p[pos] == 43 or p[pos] == 45) and p[pos + 3] == 58:
        hh = _digits(p + pos + 1, 2)
        mm = _digits(p + pos + 4, 2)
        if hh < 0 or mm < 0 or hh > 23 or mm > 59:
            return None
        offset = (hh * 60 + mm) * (-1 if p[pos] == 45 else 1)
        if offset == 0:
            tz = _UTC
        else:
            tz = _OFFSETS.get(offset)
            if tz is None:
                tz = _OFFSETS[offset] = timezone(timedelta(minutes=offset))
    else:
        return None
    try:
        return datetime_new(year, month, day, hour, minute, second, us, tz)
    except ValueError:  # out-of-range fields: fromisoformat decides
        return None


# the dict keys read_segments looks up, interned once
cdef str _K_CONTENT = "content_hash"
cdef str _K_TIER = "retention_tier"
cdef str _K_CREATED = "created_at"
cdef str _K_HV = "hash_version"
cdef str _K_LEAF = "leaf_hash"
cdef str _K_SEQ = "sequence_index"
cdef str _K_LEAF_INDEX = "leaf_index"
cdef str _K_NODE_ID = "node_id"
cdef str _K_NODE_TYPE = "node_type"
cdef str _K_SCHEMA = "schema_version"
cdef str _K_PARENT = "parent_node_id"
cdef str _EPHEMERAL = "EPHEMERAL"
cdef str _SEGMENT = "segment"


cdef inline int _hexchar(unsigned char c) noexcept:
    """0 for 0-9 a-f, 1 for A-F, -1 otherwise."""
    if (c >= 48 and c <= 57) or (c >= 97 and c <= 102):
        return 0
    if c >= 65 and c <= 70:
        return 1
    return -1


cdef object _seg_hex(object value):
    """Lowercase text of an exact 64-hex-character ``str``; None for anything else."""
    if type(value) is not str or not PyUnicode_IS_ASCII(value) or PyUnicode_GET_LENGTH(value) != 64:
        return None
    cdef const unsigned char *p = <const unsigned char *>PyUnicode_DATA(value)
    cdef int upper = 0, k, r
    for k in range(64):
        r = _hexchar(p[k])
        if r < 0:
            return None
        upper |= r
    return value.lower() if upper else value


cdef object _seg_uuid(object value):
    """Lowercase text of an exact 8-4-4-4-12 hex ``str``; None for anything else."""
    if type(value) is not str or not PyUnicode_IS_ASCII(value) or PyUnicode_GET_LENGTH(value) != 36:
        return None
    cdef const unsigned char *p = <const unsigned char *>PyUnicode_DATA(value)
    cdef int upper = 0, k, r
    for k in range(36):
        if k == 8 or k == 13 or k == 18 or k == 23:
            if p[k] != 45:
                return None
            continue
        r = _hexchar(p[k])
        if r < 0:
            return None
        upper |= r
    return value.lower() if upper else value


cdef inline bint _seg_uint(object value) except -1:
    return type(value) is int and value >= 0


cdef inline object _get(dict item, str key):
    """The value, or None when absent (as ``dict.get``)."""
    cdef PyObject *ref = PyDict_GetItem(item, key)
    return None if ref == NULL else <object>ref


def read_segments(items, Py_ssize_t start, segment_type, list segments, list excluded, *,
                  closed_at=None, bint proof_of_record=False):
    """Read ``items[start:]`` (the stored segments of an Episode document) while each item is
    in the canonical shape, appending ``segment_type(...)`` to ``segments`` (content hashes of
    EPHEMERAL segments to ``excluded``); return ``(stop, late)``. docs/astp-kernel-api.md."""
    cdef bint late = False
    cdef Py_ssize_t stop, n
    cdef dict item
    cdef PyObject *ref
    cdef object obj, index, content, tier, created, instant, hv, leaf, node_id, node_type, schema, parent
    if type(items) is not list:
        return start, late
    n = PyList_GET_SIZE(items)
    for stop in range(start, n):
        obj = <object>PyList_GET_ITEM(items, stop)
        if type(obj) is not dict:
            return stop, late
        item = <dict>obj
        tier = created = hv = leaf = None
        if proof_of_record:
            ref = PyDict_GetItem(item, _K_SEQ)
            if ref == NULL:
                ref = PyDict_GetItem(item, _K_LEAF_INDEX)
            if ref == NULL or not _seg_uint(<object>ref):
                return stop, late
            index = <object>ref
            content = _seg_hex(_get(item, _K_CONTENT))
            if content is None:
                return stop, late
        else:
            tier = _get(item, _K_TIER)
            if tier is not None and type(tier) is not str:
                return stop, late
            content = _seg_hex(_get(item, _K_CONTENT))
            if content is None:
                return stop, late
            created = _get(item, _K_CREATED)
            if created is not None:
                if type(created) is not str:
                    return stop, late
                instant = _fast_instant(<str>created)
                if instant is None:
                    try:
                        instant = _fromisoformat(created)
                    except ValueError:
                        return stop, late
                    if instant.tzinfo is None:
                        return stop, late
                created = instant
            if tier is not None and <str>tier == _EPHEMERAL:
                if closed_at is not None and created is not None and created > closed_at:
                    late = True
                excluded.append(content)
                continue
            hv = _get(item, _K_HV)
            if hv is not None and not _seg_uint(hv):
                return stop, late
            leaf = _get(item, _K_LEAF)
            if leaf is not None:
                leaf = _seg_hex(leaf)
                if leaf is None:
                    return stop, late
            ref = PyDict_GetItem(item, _K_SEQ)
            if ref == NULL or not _seg_uint(<object>ref):
                return stop, late
            index = <object>ref
        # the leaf-hash fields, with the reader's defaults for absent keys
        ref = PyDict_GetItem(item, _K_NODE_ID)
        node_id = None
        if ref != NULL:
            node_id = _seg_uuid(<object>ref)
            if node_id is None:
                return stop, late
        ref = PyDict_GetItem(item, _K_NODE_TYPE)
        node_type = _SEGMENT if ref == NULL else <object>ref
        if type(node_type) is not str:
            return stop, late
        ref = PyDict_GetItem(item, _K_SCHEMA)
        schema = None
        if ref != NULL:
            schema = <object>ref
            if type(schema) is not str:
                return stop, late
        parent = _get(item, _K_PARENT)
        if parent is not None:
            parent = _seg_uuid(parent)
            if parent is None:
                return stop, late
        if closed_at is not None and created is not None and created > closed_at:
            late = True
        segments.append(segment_type(index, content, node_id, node_type, schema, parent, tier,
                                     created, hv, leaf))
    return n, late
