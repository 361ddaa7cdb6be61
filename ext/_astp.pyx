# cython: boundscheck=False, wraparound=False, cdivision=True
"""Compiled ASTP kernels: SHA3-256 (ext/keccak.h) and the Merkle spine folds.

Mirrors the kernel API of the pure-Python twin ``canonkit._astp_py``
(docs/astp-kernel-api.md); differential tests keep the two identical.
"""
from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_SIMPLE
from libc.stdint cimport uint8_t, uint64_t


cdef extern from "keccak.h" nogil:
    ctypedef struct ck_sha3_256_ctx:
        pass
    void ck_sha3_256_init(ck_sha3_256_ctx *ctx)
    void ck_sha3_256_update(ck_sha3_256_ctx *ctx, const uint8_t *data, size_t len)
    void ck_sha3_256_final(ck_sha3_256_ctx *ctx, uint8_t *out)
    void ck_sha3_256(const uint8_t *data, size_t len, uint8_t *out)
    void ck_sha3_256_short(uint8_t *block, size_t len, uint8_t *out)


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
