# FPS/1 primitives, compiled. Same API and errors as src/canonkit/_fps_py.py (the oracle);
# the copy kernels live in fps_kernels.h and run without the GIL on large inputs.
#
# Buffers are taken with PyObject_GetBuffer(PyBUF_SIMPLE): any C-contiguous buffer, zero
# copy, whatever its item format. Arguments are validated on Python objects first (in the
# FPS.md order arguments -> level -> range -> alignment), so the kernels only ever see
# ranges that fit.
from cpython.buffer cimport (
    PyBUF_SIMPLE,
    PyBUF_WRITABLE,
    PyBuffer_Release,
    PyObject_CheckBuffer,
    PyObject_GetBuffer,
)
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from libc.stdint cimport uint8_t, uint64_t
from libc.string cimport memcpy, memset

import hashlib
import operator

from canonkit.errors import (
    FPSArgumentError,
    FPSArityError,
    FPSLevelError,
    FPSMisalignedError,
    FPSRangeError,
)

cdef extern from "fps_kernels.h" nogil:
    void fps_slice_bits(uint8_t *dst, const uint8_t *src, uint64_t bit_offset, size_t n)
    void fps_reverse_units(uint8_t *dst, const uint8_t *src, size_t n, unsigned unit_bytes,
                           int reverse_bits)
    void fps_reverse_units_inplace(uint8_t *buf, size_t n, unsigned unit_bytes,
                                   int reverse_bits)
    void fps_splice_bits(uint8_t *dst, const uint8_t *src, size_t n, uint64_t off,
                         uint64_t cut, const uint8_t *ins, size_t m)

__all__ = ["CID_PREFIX", "LEVELS", "cid_sha256", "cid_sha256_digest", "cid_sha256_hex",
           "concat", "reverse", "slice", "splice"]

LEVELS = {"bit": 1, "byte": 8, "word": 16, "long": 32}
CID_PREFIX = b"CAS:OBJ\x00"
_LIMIT = 1 << 64
_sha256 = hashlib.sha256

# Below this many bytes the cost of releasing and retaking the GIL outweighs the copy.
cdef enum:
    NOGIL_BYTES = 65536

ctypedef enum Kind:
    K_SLICE
    K_REVERSE
    K_SPLICE
    K_REVERSE_IN_PLACE


cdef int _acquire(object obj, Py_buffer *view, str name, bint writable) except -1:
    """Fill ``view`` with ``obj``'s bytes or raise ERR_ARG_INVALID naming the argument."""
    if isinstance(obj, str) or not PyObject_CheckBuffer(obj):
        raise FPSArgumentError(
            f"{name} must be a bytes-like object, not {type(obj).__name__}", detail=name)
    try:
        PyObject_GetBuffer(obj, view, PyBUF_SIMPLE | (PyBUF_WRITABLE if writable else 0))
    except Exception:
        if writable:
            try:
                PyObject_GetBuffer(obj, view, PyBUF_SIMPLE)
            except Exception:
                pass
            else:
                PyBuffer_Release(view)
                raise FPSArgumentError("out must be a writable buffer", detail=name) from None
        raise FPSArgumentError(f"{name} must be a C-contiguous buffer", detail=name) from None
    return 0


cdef bint _acquire_out(object out, Py_buffer *target) except -1:
    """Hold ``out`` (if given) in ``target`` as a writable buffer; True if it is held."""
    if out is None:
        return False
    _acquire(out, target, "out", True)
    return True


cdef object _count(object value, str name):
    """An offset or length: an integer 0 <= v < 2**64 (bool is not an integer here)."""
    if type(value) is int and 0 <= value < _LIMIT:  # the common case, no conversion
        return value
    if isinstance(value, bool):
        raise FPSArgumentError(f"{name} must be an integer, not bool", detail=name)
    try:
        number = operator.index(value)
    except TypeError:
        raise FPSArgumentError(
            f"{name} must be an integer, not {type(value).__name__}", detail=name) from None
    if not 0 <= number < _LIMIT:
        raise FPSArgumentError(f"{name} must be in 0..2**64-1, got {number}", detail=name)
    return number


cdef int _unit_bits(object level) except -1:
    if not isinstance(level, str) or level not in LEVELS:
        raise FPSLevelError(f"unknown level {level!r} (expected bit, byte, word or long)",
                            detail=level if isinstance(level, str) else None)
    return LEVELS[level]


cdef int _check_slice(object offset, object length, int bits, Py_ssize_t nbytes) except -1:
    units = (nbytes * 8) // bits
    if offset + length > units:
        raise FPSRangeError(
            f"units {offset}..{offset + length} exceed the input's {units} units",
            offset=offset, detail="range")
    if (length * bits) % 8:
        raise FPSMisalignedError(
            f"length {length} x {bits} bits is not a whole number of bytes", detail="length")
    return 0


cdef inline bint _overlaps(const uint8_t *a, Py_ssize_t alen, const uint8_t *b,
                           Py_ssize_t blen) noexcept nogil:
    return alen > 0 and blen > 0 and a < b + blen and b < a + alen


cdef object _destination(Py_ssize_t size, object out, Py_buffer *target, uint8_t **dst):
    """The call's result and, in ``dst[0]``, where the kernel writes it: a new bytes object
    of ``size`` bytes, or (``out`` given, held in ``target``) ``size`` itself once ``out``
    is checked to have exactly ``size`` bytes."""
    if out is None:
        result = PyBytes_FromStringAndSize(NULL, size)
        dst[0] = <uint8_t *>PyBytes_AS_STRING(result)
        return result
    if target.len != size:
        raise FPSArgumentError(
            f"out has {target.len} bytes, the result has {size}", detail="out")
    dst[0] = <uint8_t *>target.buf
    return size


cdef uint8_t *_scratch(Py_ssize_t size) except NULL:
    """A ``size``-byte buffer for a result whose ``out`` overlaps an input (PyMem_Free it)."""
    cdef uint8_t *p = <uint8_t *>PyMem_Malloc(size)
    if p == NULL:
        raise MemoryError()
    return p


cdef int _run(Kind kind, uint8_t *dst, const uint8_t *src, Py_ssize_t n, uint64_t a,
              uint64_t b, const uint8_t *ins, Py_ssize_t m, Py_ssize_t size) except -1 nogil:
    """One kernel call: slice (a = bit offset), reverse (a = unit bytes, b = reverse bits;
    in place: dst is src) or splice (a = bit offset, b = cut bits)."""
    if kind == K_SLICE:
        fps_slice_bits(dst, src, a, <size_t>size)
    elif kind == K_REVERSE:
        fps_reverse_units(dst, src, <size_t>n, <unsigned>a, <int>b)
    elif kind == K_REVERSE_IN_PLACE:
        fps_reverse_units_inplace(dst, <size_t>n, <unsigned>a, <int>b)
    else:
        fps_splice_bits(dst, src, <size_t>n, a, b, ins, <size_t>m)
    return 0


cdef object _produce(Kind kind, Py_buffer *data, uint64_t a, uint64_t b, Py_buffer *ins,
                     Py_ssize_t size, object out, Py_buffer *target):
    """Run the kernel into a new bytes object, or into ``target`` (``out``) when given.
    A reversal whose ``out`` is exactly its input runs in place (swapping from both
    ends); any other ``out`` overlapping an input gets the result through a scratch
    buffer."""
    cdef const uint8_t *src = <const uint8_t *>data.buf
    cdef const uint8_t *ins_p = <const uint8_t *>ins.buf if ins != NULL else NULL
    cdef Py_ssize_t m = ins.len if ins != NULL else 0
    cdef Py_ssize_t n = data.len
    cdef uint8_t *dst
    cdef uint8_t *scratch = NULL
    cdef bint release = size >= NOGIL_BYTES
    result = _destination(size, out, target, &dst)
    if kind == K_REVERSE and out is not None and <const uint8_t *>dst == src and size == n:
        kind = K_REVERSE_IN_PLACE
    elif out is not None and (_overlaps(dst, size, src, n) or _overlaps(dst, size, ins_p, m)):
        scratch = _scratch(size)
    try:
        if release:
            with nogil:
                _run(kind, scratch if scratch != NULL else dst, src, n, a, b, ins_p, m, size)
                if scratch != NULL:
                    memcpy(dst, scratch, size)
        else:
            _run(kind, scratch if scratch != NULL else dst, src, n, a, b, ins_p, m, size)
            if scratch != NULL:
                memcpy(dst, scratch, size)
    finally:
        PyMem_Free(scratch)
    return result


def slice(data, offset, length, level="byte", *, out=None):
    """Units ``[offset, offset + length)`` of ``data``; bytes, or the byte count with ``out``."""
    cdef Py_buffer view
    cdef Py_buffer target
    cdef int bits
    _acquire(data, &view, "data", False)
    cdef bint have_target = False
    try:
        offset = _count(offset, "offset")
        length = _count(length, "length")
        have_target = _acquire_out(out, &target)
        bits = _unit_bits(level)
        _check_slice(offset, length, bits, view.len)
        return _produce(K_SLICE, &view, <uint64_t>(offset * bits), 0, NULL,
                        <Py_ssize_t>((length * bits) // 8), out, &target)
    finally:
        PyBuffer_Release(&view)
        if have_target:
            PyBuffer_Release(&target)


def reverse(data, level=None, *, out=None):
    """``data`` with the order of its units reversed (``level`` is required)."""
    cdef Py_buffer view
    cdef Py_buffer target
    cdef int bits
    _acquire(data, &view, "data", False)
    cdef bint have_target = False
    try:
        have_target = _acquire_out(out, &target)
        bits = _unit_bits(level)
        if (view.len * 8) % bits:
            raise FPSMisalignedError(
                f"input of {view.len} bytes is not a whole number of {level} units",
                detail="data")
        return _produce(K_REVERSE, &view, <uint64_t>(max(bits // 8, 1)),
                        1 if bits == 1 else 0, NULL, view.len, out, &target)
    finally:
        PyBuffer_Release(&view)
        if have_target:
            PyBuffer_Release(&target)


def splice(data, offset, length, insert, level="byte", *, out=None):
    """``data[0:offset] ++ insert ++ data[offset+length:]`` in units of ``level``."""
    cdef Py_buffer view
    cdef Py_buffer ins
    cdef Py_buffer target
    cdef int bits
    _acquire(data, &view, "data", False)
    cdef bint have_ins = False
    cdef bint have_target = False
    try:
        offset = _count(offset, "offset")
        length = _count(length, "length")
        _acquire(insert, &ins, "insert", False)
        have_ins = True
        have_target = _acquire_out(out, &target)
        bits = _unit_bits(level)
        _check_slice(offset, length, bits, view.len)
        cut_bits = length * bits
        return _produce(K_SPLICE, &view, <uint64_t>(offset * bits), <uint64_t>cut_bits, &ins,
                        view.len - <Py_ssize_t>(cut_bits // 8) + ins.len, out, &target)
    finally:
        PyBuffer_Release(&view)
        if have_ins:
            PyBuffer_Release(&ins)
        if have_target:
            PyBuffer_Release(&target)


cdef void _gather(uint8_t *dst, Py_buffer *views, Py_ssize_t count) noexcept nogil:
    cdef Py_ssize_t i
    cdef Py_ssize_t pos = 0
    for i in range(count):
        if views[i].len:
            memcpy(dst + pos, views[i].buf, views[i].len)
        pos += views[i].len


def concat(inputs, *, out=None):
    """The byte concatenation of ``inputs`` (a list or tuple of buffers) in order."""
    if not isinstance(inputs, (list, tuple)):
        raise FPSArgumentError(
            f"inputs must be a list or tuple, not {type(inputs).__name__}", detail="inputs")
    items = tuple(inputs)  # a list could change under us while we hold its buffers
    cdef Py_ssize_t count = len(items)
    cdef Py_ssize_t held = 0
    cdef Py_ssize_t i
    cdef Py_ssize_t size = 0
    cdef Py_buffer target
    cdef Py_buffer *views = <Py_buffer *>PyMem_Malloc(max(count, 1) * sizeof(Py_buffer))
    cdef uint8_t *dst
    cdef uint8_t *scratch = NULL
    cdef bint overlap = False
    if views == NULL:
        raise MemoryError()
    cdef bint have_target = False
    try:
        for i in range(count):
            _acquire(items[i], &views[i], f"inputs[{i}]", False)
            held += 1
            size += views[i].len
        have_target = _acquire_out(out, &target)
        if count == 0:
            raise FPSArityError("concat needs at least one input", detail="inputs")
        result = _destination(size, out, &target, &dst)
        if out is not None:
            for i in range(count):
                overlap = overlap or _overlaps(dst, size, <const uint8_t *>views[i].buf,
                                               views[i].len)
            if overlap:
                scratch = _scratch(size)
        if size >= NOGIL_BYTES:
            with nogil:
                _gather(scratch if scratch != NULL else dst, views, count)
                if scratch != NULL:
                    memcpy(dst, scratch, size)
        else:
            _gather(scratch if scratch != NULL else dst, views, count)
            if scratch != NULL:
                memcpy(dst, scratch, size)
        return result
    finally:
        PyMem_Free(scratch)
        for i in range(held):
            PyBuffer_Release(&views[i])
        PyMem_Free(views)
        if have_target:
            PyBuffer_Release(&target)


cdef object _cid_hash(object data):
    """SHA-256 of ``b"CAS:OBJ\\x00" || data``, hashed incrementally (hashlib releases the
    GIL on large updates; the payload is never copied)."""
    cdef Py_buffer view
    if type(data) is not bytes:  # bytes need no check; others must be a flat buffer
        _acquire(data, &view, "data", False)
        PyBuffer_Release(&view)
    digest = _sha256(CID_PREFIX)
    digest.update(data)
    return digest


def cid_sha256_hex(data):
    """The content ID as FPS.md and the manifests write it: lowercase hex of
    SHA-256(``b"CAS:OBJ\\x00" || data``)."""
    return _cid_hash(data).hexdigest()


def cid_sha256_digest(data):
    """The content ID's 32 raw bytes: SHA-256(``b"CAS:OBJ\\x00" || data``)."""
    return _cid_hash(data).digest()


cid_sha256 = cid_sha256_hex  # the FPS.md name; returns hex
