# cython: boundscheck=False, wraparound=False
"""Compiled BLAKE3 addresses of small inputs (twin: ``canonkit._blake3_py``).

An input of at most one chunk (1024 bytes: every small object) is hashed here in C,
without the per-call cost of the blake3 package's hasher objects; larger inputs go to
the twin, i.e. the blake3 package, whose tree hashing and SIMD pay off there.
"""
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from libc.stdint cimport uint8_t

from canonkit import _blake3_py

__all__ = ["PREFIX", "address", "addresses", "digest"]

PREFIX = _blake3_py.PREFIX

cdef extern from "blake3_chunk.h":
    enum: CK_B3_CHUNK_LEN
    void ck_b3_hash_chunk(const uint8_t *, size_t, uint8_t *) noexcept nogil

cdef extern from "Python.h":
    object PyUnicode_New(Py_ssize_t, Py_UCS4)
    void *PyUnicode_DATA(object)

cdef const char *HEX = b"0123456789abcdef"
cdef object _twin_address = _blake3_py.address
cdef object _twin_digest = _blake3_py.digest


cdef object hex_address(const uint8_t *digest):
    """"blake3:" + 64 lowercase hex digits, built straight into a new ASCII str."""
    cdef object text = PyUnicode_New(7 + 64, 127)
    cdef char *out = <char *>PyUnicode_DATA(text)
    cdef int i
    out[0] = b'b'; out[1] = b'l'; out[2] = b'a'; out[3] = b'k'; out[4] = b'e'
    out[5] = b'3'; out[6] = b':'
    for i in range(32):
        out[7 + 2 * i] = HEX[digest[i] >> 4]
        out[8 + 2 * i] = HEX[digest[i] & 15]
    return text


cdef bint hash_small(object data, uint8_t *out) except -1:
    """BLAKE3 of ``data`` into ``out`` if it is at most one chunk; False (nothing done)
    for a larger input, which the twin hashes."""
    cdef Py_buffer view
    if type(data) is bytes:  # the common case: no buffer export
        if len(<bytes>data) > CK_B3_CHUNK_LEN:
            return False
        ck_b3_hash_chunk(<const uint8_t *><char *><bytes>data, <size_t>len(<bytes>data), out)
        return True
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        if view.len > CK_B3_CHUNK_LEN:
            return False
        ck_b3_hash_chunk(<const uint8_t *>view.buf, <size_t>view.len, out)
    finally:
        PyBuffer_Release(&view)
    return True


def address(data, /):
    """``"blake3:" + lowercase hex(BLAKE3-256(data))`` of a bytes-like ``data``."""
    cdef uint8_t out[32]
    if not hash_small(data, out):
        return _twin_address(data)
    return hex_address(out)


def digest(data, /):
    """The 32 raw BLAKE3-256 digest bytes of a bytes-like ``data``."""
    cdef uint8_t out[32]
    if not hash_small(data, out):
        return _twin_digest(data)
    return (<char *>out)[:32]


def addresses(items, /):
    """``[address(x) for x in items]`` in one call."""
    return [address(item) for item in items]
