# Shared by every compiled ASTP kernel (included, so each module carries its own copy of
# these few C-level helpers): the Keccak and tree headers, the Keccak width knobs for tests
# and benchmarks, and the digest parser every kernel uses.

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from libc.stdint cimport uint8_t
from libc.string cimport memcpy

from canonkit.errors import InvalidHashError


cdef extern from "Python.h":
    bint PyUnicode_IS_ASCII(object o)
    Py_ssize_t PyUnicode_GET_LENGTH(object o)
    void *PyUnicode_DATA(object o)


cdef enum:
    FAST_LEAF_ROOM = 1024  # a v2 leaf preimage of canonical inputs (ASTP.md §4.1) fits here


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


def _keccak_lanes() -> tuple:
    """(states hashed side by side now, widest the CPU supports): 1, 2 (SSE2), 4 (AVX2) or
    8 (AVX-512F). Not part of the kernel API; for tests and benchmarks."""
    return ck_keccak_lanes(), ck_keccak_lanes_available()


def _set_keccak_lanes(int lanes, *, bint portable=False) -> None:
    """Force this module's tree folds to 1, 2, 4 or 8 side-by-side states (0 = widest
    available); ``portable=True`` also makes single states use the portable C permutation
    instead of the BMI1 build. Not part of the kernel API; for tests and benchmarks."""
    if ck_keccak_set_lanes(lanes) != 0:
        raise ValueError(f"{lanes} lanes not available (widest: {ck_keccak_lanes_available()})")
    global ck_keccak_portable
    ck_keccak_portable = portable


def _keccak_bmi() -> bool:
    """Whether single states use the BMI1 build of the permutation. For tests and benchmarks."""
    return bool(ck_keccak_bmi_available() and not ck_keccak_portable)


cdef inline int _parse_digest(object value, uint8_t *out) except -1:
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


cdef inline uint8_t *_alloc_nodes(Py_ssize_t count, size_t size) except NULL:
    """Room for ``count`` node values of ``size`` bytes (a tree's levels, PyMem)."""
    cdef uint8_t *p
    if count < 1 or <size_t>count > (<size_t>-1) // (2 * size):
        raise MemoryError("tree too large")
    p = <uint8_t *>PyMem_Malloc(<size_t>count * size)
    if p == NULL:
        raise MemoryError()
    return p
