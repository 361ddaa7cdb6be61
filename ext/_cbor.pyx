# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Compiled strict deterministic CBOR codec (profiles core, dcbor, dag-cbor).

Same API, same bytes and same errors (class, code, offset) as the pure-Python twin
``canonkit._cbor_py``, which is the oracle; differential tests keep them identical.
Spec: CBOR.md. Layout:

* encoder: one recursive walk (depth bounded by DEFAULT_MAX_DEPTH, so at most 512 small
  C frames) writing into a reusable scratch buffer copied once into the result (a write of
  1 MiB or more moves the output into a result bytes object sized for it instead); exact-
  type dispatch first; dicts walked once with PyDict_Next into a C array of entries,
  sorted only when not already in order.
* decoder: an iterative loop over a bounds-checked reader with an explicit frame stack
  (no C recursion, so 10**6 nested arrays only cost a depth check); every length is
  compared with the remaining input before anything is allocated.

Indexing is unchecked (directives above) because every read is preceded by an explicit
length check against ``Dec.n``; those checks are the audit trail.
"""
from cpython.buffer cimport PyBUF_C_CONTIGUOUS, PyBUF_SIMPLE, PyBUF_WRITABLE, PyBuffer_Release, PyObject_CheckBuffer, PyObject_GetBuffer
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF, Py_XDECREF, Py_XINCREF
from libc.math cimport isfinite, isinf, isnan, signbit
from libc.stdint cimport int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcmp, memcpy

import unicodedata
from collections.abc import Mapping

from canonkit import _cbor_path, _cbor_stream, _cbor_types, errors
from canonkit._cbor_options import (MAX_KEY_DEPTH, check_default, check_encode_max_depth,
                                    check_encode_offset, check_limit, check_max_depth,
                                    check_offset, check_profile)
from canonkit._cbor_types import (DEFAULT_MAX_DEPTH, FrozenDict, Link, Simple, Tag, UNDEFINED,
                                  is_simple_value, is_tag_number)
from canonkit.errors import (BufferTooSmallError, ChangedDuringEncodingError,
                             EncodeDepthExceededError, EncodeDuplicateMapKeyError, EncodeError,
                             EncodeFloatOutsideProfileError, EncodeIntegerOutOfRangeError,
                             EncodeNonNFCTextError, EncodeUnsupportedItemError, InputTypeError,
                             UnsupportedTypeError)

__all__ = ["Decoder", "Encoder", "check", "check_sequence", "decode", "decode_prefix", "encode",
           "encode_into", "encode_merged", "iter_sequence", "load"]


cdef extern from "Python.h":
    PyObject *PyBytes_FromStringAndSize_raw "PyBytes_FromStringAndSize"(const char *, Py_ssize_t)
    char *PyBytes_AS_STRING_raw "PyBytes_AS_STRING"(PyObject *)
    Py_ssize_t PyBytes_GET_SIZE_raw "PyBytes_GET_SIZE"(PyObject *)
    int _PyBytes_Resize(PyObject **, Py_ssize_t)
    PyObject *PyUnicode_DecodeUTF8_raw "PyUnicode_DecodeUTF8"(const char *, Py_ssize_t, const char *)
    bint PyUnicode_IS_ASCII(object)
    bint PyUnicode_IS_COMPACT_ASCII_raw "PyUnicode_IS_COMPACT_ASCII"(PyObject *)
    void *PyUnicode_DATA_raw "PyUnicode_DATA"(PyObject *)
    Py_ssize_t PyUnicode_GET_LENGTH_raw "PyUnicode_GET_LENGTH"(PyObject *)
    bint PyUnicode_CheckExact_raw "PyUnicode_CheckExact"(PyObject *)
    PyObject *PyList_New_raw "PyList_New"(Py_ssize_t)
    void PyList_SET_ITEM_raw "PyList_SET_ITEM"(PyObject *, Py_ssize_t, PyObject *)
    Py_ssize_t PyList_GET_SIZE(object)
    PyObject *PyList_GET_ITEM_raw "PyList_GET_ITEM"(object, Py_ssize_t)
    Py_ssize_t PyTuple_GET_SIZE(object)
    PyObject *PyTuple_GET_ITEM_raw "PyTuple_GET_ITEM"(object, Py_ssize_t)
    object PyList_AsTuple(PyObject *)
    int PyDict_Next(object, Py_ssize_t *, PyObject **, PyObject **)
    int PyDict_Contains(object, object) except -1
    int PyDict_SetItem_raw "PyDict_SetItem"(PyObject *, PyObject *, PyObject *)
    Py_ssize_t PyDict_GET_SIZE_raw "PyDict_GET_SIZE"(PyObject *)
    Py_ssize_t PyDict_Size(object)
    int PyByteArray_Resize(object, Py_ssize_t) except -1
    char *PyByteArray_AS_STRING(object)
    Py_ssize_t PyByteArray_GET_SIZE(object)
    object PyLong_FromUnsignedLongLong(unsigned long long)
    object PyLong_FromLongLong(long long)
    long long PyLong_AsLongLongAndOverflow(object, int *) except? -1
    unsigned long long PyLong_AsUnsignedLongLong(object) except? -1
    object PyFloat_FromDouble(double)
    double PyFloat_AS_DOUBLE(object)
    int PyErr_ExceptionMatches(object)
    ctypedef struct PyTypeObject_ "PyTypeObject":
        pass
    PyTypeObject_ PyFloat_Type
    PyTypeObject_ PyLong_Type
    PyTypeObject_ PyUnicode_Type
    PyTypeObject_ PyList_Type
    PyTypeObject_ *Py_TYPE_raw "Py_TYPE"(PyObject *)
    double PyFloat_AS_DOUBLE_raw "PyFloat_AS_DOUBLE"(PyObject *)
    long long PyLong_AsLongLongAndOverflow_raw "PyLong_AsLongLongAndOverflow"(PyObject *, int *)
    int PyGC_Disable()
    int PyGC_Enable()
    void PyErr_Clear()

cdef extern from "cbor_float.h":
    double cbor_bits_to_double(uint64_t) noexcept nogil
    uint64_t cbor_double_to_bits(double) noexcept nogil
    double cbor_half_to_double(uint16_t) noexcept nogil
    double cbor_single_to_double(uint32_t) noexcept nogil
    int cbor_float_shortest(double, uint64_t *) noexcept nogil
    int cbor_float_is_reducible(double) noexcept nogil

cdef extern from "cbor_sort.h":
    ctypedef struct ck_entry:
        const char *p
        Py_ssize_t n
        PyObject *key
        PyObject *value
    int ck_sort_entries(ck_entry *, Py_ssize_t, int) noexcept
    void ck_sort_text_cached(ck_entry *, Py_ssize_t, ck_entry *) noexcept
    void ck_release_entries(ck_entry *, Py_ssize_t) noexcept
    int ck_cmp_bytes(const ck_entry *, const ck_entry *) noexcept
    void ck_put_be16(uint8_t *, uint16_t) noexcept
    void ck_put_be32(uint8_t *, uint32_t) noexcept
    void ck_put_be64(uint8_t *, uint64_t) noexcept
    uint16_t ck_get_be16(const uint8_t *) noexcept
    uint32_t ck_get_be32(const uint8_t *) noexcept
    uint64_t ck_get_be64(const uint8_t *) noexcept
    size_t ck_hash_bytes(const uint8_t *, Py_ssize_t) noexcept
    PyObject *ck_dict_presized(Py_ssize_t)
    Py_ssize_t ck_write_head(uint8_t *, uint8_t, uint64_t) noexcept
    const char *ck_utf8(PyObject *, Py_ssize_t *)
    void ck_bytes_truncate(PyObject *, Py_ssize_t) noexcept
    void ck_prefetch(const void *) noexcept
    void ck_prefetch_list_ahead(PyObject *, Py_ssize_t) noexcept


cdef enum:
    P_CORE = 0
    P_DCBOR = 1
    P_DAG = 2

cdef object _is_normalized = unicodedata.is_normalized
cdef object _Mapping = Mapping
cdef object _UNDEFINED = UNDEFINED
cdef object _Tag = Tag
cdef object _Simple = Simple
cdef object _Link = Link
cdef object _FrozenDict = FrozenDict
cdef object _decode_error = errors.decode_error


cdef int profile_id(object profile) except -1:
    if profile == "core":
        return P_CORE
    if profile == "dcbor":
        return P_DCBOR
    if profile == "dag-cbor":
        return P_DAG
    check_profile(profile)  # raises UnknownProfileError
    return -1


cdef inline bint is_nfc(object text) except -1:
    """ASCII is always NFC; only other text pays for unicodedata."""
    if PyUnicode_IS_ASCII(text):
        return True
    return _is_normalized("NFC", text)


# ====================================================================================
# Encoder
# ====================================================================================

cdef struct Scratch:
    uint8_t *mem       # a C buffer kept between calls: already paged in, no growth
    Py_ssize_t cap
    bint busy          # in use by an encode call (re-entrant calls get their own)
    ck_entry *pool     # POOL_DEPTH x POOL_WIDTH map entries, one row per nesting level

cdef enum:
    # Maps of up to POOL_WIDTH keys in the first POOL_DEPTH levels take their entries
    # from the scratch's pool (one row per level: only one map per level is open at a
    # time); others malloc. Nothing that large sits in a C frame, so a deep encode needs
    # little stack per level.
    POOL_DEPTH = 32
    POOL_WIDTH = 16

# scratch of the sorted-permutation cache (CK_PERM_MAX entries): used only inside
# ck_sort_text_cached, which runs no Python code, so one buffer serves every call
cdef ck_entry perm_tmp[16]

cdef enum:
    SCRATCH_INITIAL = 4096
    SCRATCH_KEEP = 16 << 20   # larger scratch buffers are freed after the call
    BIG_WRITE = 1 << 20       # a write this large moves output into the result bytes
    BIG_SLACK = 1 << 16       # room left after it; results within this are not shrunk

cdef Scratch module_scratch
module_scratch.mem = NULL
module_scratch.cap = 0
module_scratch.busy = False
module_scratch.pool = NULL


# Output goes to one of two places. Normally a reusable scratch buffer (obj == NULL),
# copied once into the result bytes at the end: that beats growing a fresh bytes object,
# whose new pages fault in on every call. When one write is BIG_WRITE or more (a large
# byte string) the output moves into a bytes object sized for it, so the big payload is
# copied exactly once and the result is only shrunk at the end.
cdef struct Out:
    PyObject *obj      # the result bytes being filled (owned), or NULL in scratch mode
    Scratch *scratch   # scratch mode: the buffer's owner
    uint8_t *buf
    Py_ssize_t pos
    Py_ssize_t cap
    int profile
    int max_depth
    PyObject *default  # the caller's default hook (borrowed; NULL: none)
    PyObject *hooked   # what default returned, while it is encoded (never hooked again)
    ck_entry *pool     # the scratch's entry pool while this encode owns it, else NULL
    Scratch *owner     # the scratch this encode holds busy (until out_release)
    bint twin_order    # error path: walk maps in iteration order (see raise_first_error...)


cdef int out_init(Out *o, Py_ssize_t cap, const Out *like) except -1:
    """Bytes mode from the start (side buffers of the rare map paths); the settings
    (profile, depth limit, hook, walk order) are those of ``like``."""
    o.scratch = NULL
    o.owner = NULL
    o.pool = like.pool  # side buffers nest inside their parent's walk: same rows
    o.obj = PyBytes_FromStringAndSize_raw(NULL, cap)
    if o.obj == NULL:
        return -1
    o.buf = <uint8_t *>PyBytes_AS_STRING_raw(o.obj)
    o.pos = 0
    o.cap = cap
    o.profile = like.profile
    o.max_depth = like.max_depth
    o.default = like.default
    o.hooked = like.hooked
    o.twin_order = like.twin_order
    return 0


cdef int out_init_scratch(Out *o, Scratch *s, const Out *like) except -1:
    if s.busy:  # a nested or concurrent encode: fall back to a private bytes buffer
        out_init(o, 256, like)
        o.pool = NULL
        return 0
    if s.mem == NULL:
        s.mem = <uint8_t *>malloc(SCRATCH_INITIAL)
        if s.mem == NULL:
            raise MemoryError()
        s.cap = SCRATCH_INITIAL
    if s.pool == NULL:
        s.pool = <ck_entry *>malloc(POOL_DEPTH * POOL_WIDTH * sizeof(ck_entry))
        if s.pool == NULL:
            raise MemoryError()
    s.busy = True
    o.owner = s
    o.pool = s.pool
    o.obj = NULL
    o.scratch = s
    o.buf = s.mem
    o.pos = 0
    o.cap = s.cap
    o.profile = like.profile
    o.max_depth = like.max_depth
    o.default = like.default
    o.hooked = like.hooked
    o.twin_order = like.twin_order
    return 0


cdef void out_release(Out *o) noexcept:
    cdef Scratch *s = o.scratch
    Py_XDECREF(o.obj)
    o.obj = NULL
    o.scratch = NULL
    if o.owner != NULL:
        o.owner.busy = False
        o.owner = NULL
    if s != NULL and s.cap > SCRATCH_KEEP:
        free(s.mem)
        s.mem = NULL
        s.cap = 0


cdef int out_grow(Out *o, Py_ssize_t need) except -1:
    """Make room for ``need`` more bytes: double, or jump straight to the size a large
    write needs (so an 8 MiB byte string is copied once, not grown into)."""
    cdef Py_ssize_t want = o.pos + need
    cdef Py_ssize_t cap = o.cap * 2
    cdef uint8_t *mem
    cdef Scratch *s = o.scratch
    if want > cap:
        cap = want + (want >> 4) + 64
    if s != NULL:
        if need < BIG_WRITE:
            mem = <uint8_t *>realloc(s.mem, <size_t>cap)
            if mem == NULL:
                raise MemoryError()
            s.mem = mem
            s.cap = cap
            o.buf = mem
            o.cap = cap
            return 0
        # Sized for what is written plus this write and a little more: most often the
        # big string is the last thing written, and the result is not shrunk later.
        cap = want + BIG_SLACK
        o.obj = PyBytes_FromStringAndSize_raw(NULL, cap)
        if o.obj == NULL:
            return -1
        memcpy(PyBytes_AS_STRING_raw(o.obj), o.buf, <size_t>o.pos)
        o.scratch = NULL  # the scratch stays busy (owner): its pool is still in use
        o.buf = <uint8_t *>PyBytes_AS_STRING_raw(o.obj)
        o.cap = cap
        return 0
    if _PyBytes_Resize(&o.obj, cap) < 0:
        o.obj = NULL
        return -1
    o.buf = <uint8_t *>PyBytes_AS_STRING_raw(o.obj)
    o.cap = cap
    return 0


cdef inline int out_reserve(Out *o, Py_ssize_t need) except -1:
    if o.cap - o.pos < need:
        return out_grow(o, need)
    return 0


cdef object out_finish(Out *o):
    """The result: a copy of the scratch buffer, or the bytes object shrunk to size."""
    if o.obj == NULL:
        return (<char *>o.buf)[:o.pos]
    if o.cap - o.pos <= BIG_SLACK:
        ck_bytes_truncate(o.obj, o.pos)
    elif _PyBytes_Resize(&o.obj, o.pos) < 0:
        o.obj = NULL
        raise MemoryError()
    result = <object>o.obj
    Py_XDECREF(o.obj)
    o.obj = NULL
    return result


cdef inline int put_head(Out *o, uint8_t major, uint64_t arg) except -1:
    if o.cap - o.pos < 9:
        out_grow(o, 9)
    o.pos += ck_write_head(o.buf + o.pos, major, arg)
    return 0


cdef inline int put_string(Out *o, uint8_t major, const char *p, Py_ssize_t n) except -1:
    """Head and payload of a byte or text string, with one room check."""
    if o.cap - o.pos < n + 9:
        out_grow(o, n + 9)
    o.pos += ck_write_head(o.buf + o.pos, major, <uint64_t>n)
    memcpy(o.buf + o.pos, p, <size_t>n)
    o.pos += n
    return 0


cdef inline int put_bytes(Out *o, const void *p, Py_ssize_t n) except -1:
    if o.cap - o.pos < n:
        out_grow(o, n)
    memcpy(o.buf + o.pos, p, <size_t>n)
    o.pos += n
    return 0


cdef inline int put_byte(Out *o, uint8_t b) except -1:
    if o.cap - o.pos < 1:
        out_grow(o, 1)
    o.buf[o.pos] = b
    o.pos += 1
    return 0


cdef int enc_error(type cls, str message) except -1:
    raise cls(message)


cdef int enc_text(Out *o, object text) except -1:
    cdef Py_ssize_t n
    cdef const char *p = ck_utf8(<PyObject *>text, &n)
    if p == NULL:
        return text_not_encodable(text)
    if o.profile == P_DCBOR and not is_nfc(text):
        enc_error(EncodeNonNFCTextError, f"text is not in Unicode NFC: {text!r}")
    return put_string(o, 3, p, n)


cdef int text_not_encodable(object text) except -1:
    """A str with lone surrogates has no UTF-8 form."""
    if PyErr_ExceptionMatches(UnicodeEncodeError):
        PyErr_Clear()
        raise EncodeUnsupportedItemError(f"text with lone surrogates has no UTF-8 encoding: {text!r}")
    return -1


cdef int enc_int(Out *o, object value) except -1:
    return enc_int_raw(o, <PyObject *>value)


cdef inline int enc_int_raw(Out *o, PyObject *value) except -1:
    """An exact int (or an int() result): 64-bit fast path, else enc_big_int."""
    cdef int overflow = 0
    cdef long long v = PyLong_AsLongLongAndOverflow_raw(value, &overflow)
    if overflow == 0:
        # put_head spelled out: ints are the most frequent scalar of most documents
        if o.cap - o.pos < 9:
            out_grow(o, 9)
        if v >= 0:
            o.pos += ck_write_head(o.buf + o.pos, 0, <uint64_t>v)
        else:
            o.pos += ck_write_head(o.buf + o.pos, 1, <uint64_t>(-1 - v))
        return 0
    return enc_big_int(o, <object>value)


cdef int enc_big_int(Out *o, object value) except -1:
    """Integers outside int64: major 0/1 up to 2**64, bignum tags 2/3 beyond (core)."""
    cdef object magnitude
    cdef uint8_t major
    if value > 0:
        major = 0
        magnitude = value
    else:
        major = 1
        magnitude = -1 - value
    if magnitude < 0x10000000000000000:
        if o.profile == P_DCBOR and major == 1:
            enc_error(EncodeIntegerOutOfRangeError,
                      f"integer {value} is below -2**63, outside the dcbor range")
        return put_head(o, major, PyLong_AsUnsignedLongLong(magnitude))
    if o.profile != P_CORE:
        enc_error(EncodeIntegerOutOfRangeError,
                  f"integer {value} is outside the {profile_name(o.profile)} range")
    data = magnitude.to_bytes((magnitude.bit_length() + 7) // 8, "big")
    put_head(o, 6, 2 + major)
    put_head(o, 2, <uint64_t>len(data))
    return put_bytes(o, <const char *>data, len(data))


cdef str profile_name(int profile):
    return ("core", "dcbor", "dag-cbor")[profile]


cdef inline int put_float_bits(Out *o, int width, uint64_t bits) except -1:
    cdef uint8_t *b
    out_reserve(o, 9)
    b = o.buf + o.pos
    if width == 2:
        b[0] = 0xf9
        ck_put_be16(b + 1, <uint16_t>bits)
        o.pos += 3
    elif width == 4:
        b[0] = 0xfa
        ck_put_be32(b + 1, <uint32_t>bits)
        o.pos += 5
    else:
        b[0] = 0xfb
        ck_put_be64(b + 1, bits)
        o.pos += 9
    return 0


cdef inline int enc_float(Out *o, double x) except -1:
    cdef uint64_t bits
    cdef int width
    cdef int64_t iv
    if o.profile == P_DAG:
        if isnan(x) or isinf(x):
            enc_error(EncodeFloatOutsideProfileError,
                      f"dag-cbor has no NaN or infinity (got {x!r})")
        if x == 0.0:
            x = 0.0  # -0.0 is written as 0.0
        return put_float_bits(o, 8, cbor_double_to_bits(x))
    if o.profile == P_DCBOR:
        if isnan(x):
            return put_float_bits(o, 2, 0x7e00)
        if cbor_float_is_reducible(x):  # numeric reduction; covers -0.0 -> 0
            if x >= 0.0:
                return put_head(o, 0, <uint64_t>x)
            iv = <int64_t>x
            return put_head(o, 1, <uint64_t>(-1 - iv))
    width = cbor_float_shortest(x, &bits)
    return put_float_bits(o, width, bits)


cdef int enc_buffer(Out *o, object obj) except -1:
    cdef Py_buffer view
    try:
        PyObject_GetBuffer(obj, &view, PyBUF_SIMPLE)
    except BufferError:  # not contiguous: copy it out in logical order
        raw = memoryview(obj).tobytes()
        put_head(o, 2, <uint64_t>len(raw))
        return put_bytes(o, <const char *><bytes>raw, len(raw))
    try:
        put_head(o, 2, <uint64_t>view.len)
        put_bytes(o, view.buf, view.len)
    finally:
        PyBuffer_Release(&view)
    return 0


cdef inline int check_depth(Out *o, int depth) except -1:
    if depth >= o.max_depth:
        raise EncodeDepthExceededError(
            f"nesting deeper than {o.max_depth} levels (or a self-referencing container)")
    return 0


cdef int list_changed() except -1:
    raise ChangedDuringEncodingError("list changed size during encoding")


cdef inline bint put_float_row(Out *o, PyObject *row, int depth) except -1:
    """A list of 1 to 4 exact floats that need no check (coordinates, vectors) in core or
    dag-cbor, written with one room check and no per-item dispatch. Returns False, having
    written nothing, for anything else: enc_list then takes it (and raises what applies)."""
    cdef Py_ssize_t k = PyList_GET_SIZE(<object>row), i
    cdef PyObject *it
    cdef double x
    cdef uint64_t bits
    cdef int width
    cdef uint8_t *b
    if k == 0 or k > 4 or depth >= o.max_depth or o.profile == P_DCBOR:
        return False
    for i in range(k):
        it = PyList_GET_ITEM_raw(<object>row, i)
        if Py_TYPE_raw(it) != &PyFloat_Type:
            return False
        if o.profile == P_DAG and not isfinite(PyFloat_AS_DOUBLE_raw(it)):
            return False
    if o.cap - o.pos < 1 + 9 * k:
        out_grow(o, 1 + 9 * k)
    b = o.buf + o.pos
    b[0] = <uint8_t>(0x80 | k)
    b += 1
    for i in range(k):
        x = PyFloat_AS_DOUBLE_raw(PyList_GET_ITEM_raw(<object>row, i))
        if o.profile == P_DAG:
            if x == 0.0:
                x = 0.0  # -0.0 is written as 0.0
            b[0] = 0xfb
            ck_put_be64(b + 1, cbor_double_to_bits(x))
            b += 9
            continue
        width = cbor_float_shortest(x, &bits)
        if width == 8:
            b[0] = 0xfb
            ck_put_be64(b + 1, bits)
        elif width == 4:
            b[0] = 0xfa
            ck_put_be32(b + 1, <uint32_t>bits)
        else:
            b[0] = 0xf9
            ck_put_be16(b + 1, <uint16_t>bits)
        b += 1 + width
    o.pos = b - o.buf
    return True


cdef int enc_list(Out *o, object seq, Py_ssize_t n, bint is_list, int depth) except -1:
    """Items of exact float, int and str type are written straight from the borrowed
    pointer (no Python code can run while one is written, so the list cannot drop it);
    anything else is held by a reference while enc_any encodes it."""
    cdef Py_ssize_t i, ln
    cdef PyObject *it
    cdef PyTypeObject_ *t
    cdef const char *p
    cdef object item
    check_depth(o, depth)
    if o.twin_order:
        return enc_list_located(o, seq, n, is_list, depth)
    put_head(o, 4, <uint64_t>n)
    for i in range(n):
        if is_list:
            if PyList_GET_SIZE(seq) != n:  # changed by code run during encoding
                return list_changed()
            it = PyList_GET_ITEM_raw(seq, i)
            # the items' headers are the cache misses of big lists: start loading ahead
            if n > 4:
                ck_prefetch_list_ahead(<PyObject *>seq, i)
        else:
            it = PyTuple_GET_ITEM_raw(seq, i)
        t = Py_TYPE_raw(it)
        if t == &PyFloat_Type:
            enc_float(o, PyFloat_AS_DOUBLE_raw(it))
        elif t == &PyLong_Type:
            enc_int_raw(o, it)
        elif t == &PyUnicode_Type and o.profile != P_DCBOR:
            p = ck_utf8(it, &ln)
            if p == NULL:
                text_not_encodable(<object>it)
            put_string(o, 3, p, ln)
        elif t == &PyList_Type:  # rows of a matrix, coordinate pairs: skip the dispatch
            if not put_float_row(o, it, depth + 1):
                item = <object>it
                enc_list(o, item, PyList_GET_SIZE(item), True, depth + 1)
        else:
            item = <object>it
            enc_any(o, item, depth + 1)
    if is_list and PyList_GET_SIZE(seq) != n:
        return list_changed()
    return 0


cdef int enc_list_located(Out *o, object seq, Py_ssize_t n, bint is_list, int depth) except -1:
    """enc_list of the error walk: the same checks, and a failure located at its item."""
    cdef Py_ssize_t i
    put_head(o, 4, <uint64_t>n)
    for i in range(n):
        if is_list and PyList_GET_SIZE(seq) != n:
            return list_changed()
        item = <object>(PyList_GET_ITEM_raw(seq, i) if is_list else PyTuple_GET_ITEM_raw(seq, i))
        try:
            enc_any(o, item, depth + 1)
        except EncodeError as exc:
            _cbor_path.located(exc, _cbor_path.item(i))
            raise
    if is_list and PyList_GET_SIZE(seq) != n:
        return list_changed()
    return 0




cdef int enc_dict(Out *o, object d, int depth) except -1:
    """Fast path for a dict: one PyDict_Next walk; text keys sort on their cached UTF-8.
    Any other key type falls back to the generic path (keys encoded, then sorted)."""
    cdef Py_ssize_t n = PyDict_Size(d)
    cdef Py_ssize_t ppos = 0, i = 0, j
    cdef PyObject *k
    cdef PyObject *v
    cdef ck_entry *e
    cdef ck_entry *pooled = NULL
    cdef bint all_text = True
    check_depth(o, depth)
    if n == 0:
        return put_byte(o, 0xa0)
    if o.twin_order:
        return enc_map_twin_order(o, d, depth)
    if n <= POOL_WIDTH and depth < POOL_DEPTH and o.pool != NULL:
        pooled = e = o.pool + depth * POOL_WIDTH
    else:
        e = <ck_entry *>malloc(<size_t>n * sizeof(ck_entry))
        if e == NULL:
            raise MemoryError()
    try:
        while i < n and PyDict_Next(d, &ppos, &k, &v):
            if not PyUnicode_CheckExact_raw(k):
                all_text = False
                break
            e[i].p = ck_utf8(k, &e[i].n)
            if e[i].p == NULL:
                text_not_encodable(<object>k)
            if o.profile == P_DCBOR and not is_nfc(<object>k):
                enc_error(EncodeNonNFCTextError, f"map key is not in Unicode NFC: {<object>k!r}")
            Py_XINCREF(k)
            Py_XINCREF(v)
            e[i].key = k
            e[i].value = v
            i += 1
        if not all_text:
            ck_release_entries(e, i)
            i = 0
            return enc_map_generic(o, d, depth)
        if i != n:
            raise ChangedDuringEncodingError("dict changed size during encoding")
        ck_sort_text_cached(e, n, perm_tmp)
        put_head(o, 5, <uint64_t>n)
        for j in range(n):
            put_string(o, 3, e[j].p, e[j].n)
            enc_any(o, <object>e[j].value, depth + 1)
    finally:
        ck_release_entries(e, i)
        if e != pooled:
            free(e)
    return 0


cdef int raise_first_error_in_twin_order(const Out *like, object obj) except -1:
    """Error path only. The fast paths encode map values in key order, but the reported
    error must be the twin's: the first failing key or value in each mapping's iteration
    order, then duplicate keys. Re-walk the whole value once that way into a throw-away
    buffer and raise what fails first; if nothing does, return and the caller re-raises
    its own error. Called once, at the top (encode_with): a re-walk per enclosing map
    made a failure under n nested maps cost O(n^2) walks."""
    cdef Out scratch
    scratch.obj = NULL
    scratch.scratch = NULL
    scratch.owner = NULL
    out_init(&scratch, 256, like)
    scratch.twin_order = True
    scratch.hooked = NULL
    try:
        enc_any(&scratch, obj, 0)
    finally:
        out_release(&scratch)
    return 0


cdef int enc_map_twin_order(Out *o, object mapping, int depth) except -1:
    """The twin's walk: key then value in iteration order, then the duplicate check.
    Writes keys to a side buffer and values to ``o``; the bytes are not a valid encoding."""
    cdef Out keys
    cdef list offsets = []
    cdef list encoded
    keys.obj = NULL
    keys.scratch = NULL
    keys.owner = NULL
    out_init(&keys, 256, o)
    try:
        for key, value in list(mapping.items()):  # a snapshot, as the fast paths
            try:
                if o.profile == P_DAG and not isinstance(key, str):
                    enc_error(EncodeUnsupportedItemError,
                              f"dag-cbor map keys must be text, got {type(key).__name__}")
                start = keys.pos
                enc_any(&keys, key, depth + 1)
                offsets.append((start, keys.pos))
                enc_any(o, value, depth + 1)
            except EncodeError as exc:
                _cbor_path.located(exc, _cbor_path.entry(key))
                raise
        blob = (<char *>keys.buf)[:keys.pos]
        encoded = sorted([blob[a:b] for a, b in offsets])
        for i in range(1, len(encoded)):
            if encoded[i - 1] == encoded[i]:
                raise EncodeDuplicateMapKeyError(
                    "two map keys have the same encoding: " + encoded[i].hex())
    finally:
        out_release(&keys)
    return 0


cdef int enc_map_generic(Out *o, object mapping, int depth) except -1:
    """Any key types: encode every key into a scratch buffer, sort by the encoded bytes,
    reject two keys with identical encodings, then write key bytes and values."""
    cdef list items = list(mapping.items())
    cdef Py_ssize_t n = len(items)
    cdef Py_ssize_t i, j
    cdef Out keys
    cdef ck_entry *e = NULL
    cdef Py_ssize_t *offsets = NULL
    cdef object key, value
    check_depth(o, depth)
    if o.twin_order:
        return enc_map_twin_order(o, mapping, depth)
    keys.obj = NULL
    keys.scratch = NULL
    keys.owner = NULL
    try:
        out_init(&keys, 64 * n + 64, o)
        offsets = <Py_ssize_t *>malloc(<size_t>(n + 1) * sizeof(Py_ssize_t))
        e = <ck_entry *>malloc(<size_t>(n + 1) * sizeof(ck_entry))
        if offsets == NULL or e == NULL:
            raise MemoryError()
        for i in range(n):
            key, value = items[i]
            if o.profile == P_DAG and type(key) is not str:
                if not isinstance(key, str):
                    enc_error(EncodeUnsupportedItemError,
                              f"dag-cbor map keys must be text, got {type(key).__name__}")
            offsets[i] = keys.pos
            enc_any(&keys, key, depth + 1)
        offsets[n] = keys.pos
        for i in range(n):  # the scratch buffer no longer moves
            e[i].p = <const char *>(keys.buf + offsets[i])
            e[i].n = offsets[i + 1] - offsets[i]
            e[i].key = NULL
            e[i].value = <PyObject *>items[i][1]
        ck_sort_entries(e, n, 1)
        for i in range(1, n):
            if ck_cmp_bytes(&e[i - 1], &e[i]) == 0:
                raise EncodeDuplicateMapKeyError(
                    "two map keys have the same encoding: " + (<bytes>(<char *>e[i].p)[:e[i].n]).hex())
        put_head(o, 5, <uint64_t>n)
        for i in range(n):
            put_bytes(o, e[i].p, e[i].n)
            enc_any(o, <object>e[i].value, depth + 1)
    finally:
        out_release(&keys)
        free(offsets)
        free(e)
    return 0


cdef int enc_tag(Out *o, object tag, int depth) except -1:
    cdef object number = tag.number
    if not is_tag_number(number):  # a Tag altered behind its back (or a subclass)
        enc_error(EncodeUnsupportedItemError, f"tag number {number!r} is not in 0..2**64-1")
    if o.profile == P_DAG:
        enc_error(EncodeUnsupportedItemError,
                  f"dag-cbor allows only tag 42 (use Link), got Tag({number})")
    if o.profile == P_DCBOR and (number == 2 or number == 3):
        enc_error(EncodeUnsupportedItemError, f"dcbor has no bignum tags, got Tag({number})")
    if number == 2 or number == 3:
        enc_error(EncodeUnsupportedItemError,
                  f"Tag({number}) is reserved for bignums; pass a Python int instead")
    check_depth(o, depth)
    put_head(o, 6, PyLong_AsUnsignedLongLong(int(number)))
    if not o.twin_order:
        return enc_any(o, tag.value, depth + 1)
    try:
        return enc_any(o, tag.value, depth + 1)
    except EncodeError as exc:
        _cbor_path.located(exc, _cbor_path.TAG_CONTENT)
        raise


cdef int enc_simple(Out *o, object simple) except -1:
    cdef int v
    if o.profile != P_CORE:
        enc_error(EncodeUnsupportedItemError,
                  f"{profile_name(o.profile)} allows only false, true and null among simple values")
    value = simple.value
    if not is_simple_value(value):  # a Simple altered behind its back (or a subclass)
        enc_error(EncodeUnsupportedItemError, f"simple value {value!r} is not in 0..19 or 32..255")
    v = value
    if v < 24:
        return put_byte(o, 0xe0 | v)
    put_byte(o, 0xf8)
    return put_byte(o, <uint8_t>v)


cdef int enc_frozen(Out *o, object frozen, int depth) except -1:
    cdef object d = frozen._d
    if type(d) is not dict:  # a FrozenDict altered behind its back (or a subclass)
        enc_error(EncodeUnsupportedItemError, "FrozenDict does not hold a dict")
    return enc_dict(o, d, depth)


cdef int enc_link(Out *o, object link, int depth) except -1:
    cdef bytes cid = link.cid_bytes
    if o.profile != P_DAG:
        enc_error(EncodeUnsupportedItemError,
                  f"Link (tag 42) is a dag-cbor item, not allowed in {profile_name(o.profile)}")
    check_depth(o, depth)
    put_head(o, 6, 42)
    put_head(o, 2, <uint64_t>(len(cid) + 1))
    put_byte(o, 0)
    return put_bytes(o, <const char *>cid, len(cid))


cdef int enc_any(Out *o, object obj, int depth) except -1:
    cdef type t = type(obj)
    # exact types first, most frequent first
    if t is str:
        return enc_text(o, obj)
    if t is int:
        return enc_int(o, obj)
    if t is dict:
        return enc_dict(o, obj, depth)
    if t is list:
        return enc_list(o, obj, PyList_GET_SIZE(obj), True, depth)
    if t is bool:
        return put_byte(o, 0xf5 if obj is True else 0xf4)
    if obj is None:
        return put_byte(o, 0xf6)
    if t is float:
        return enc_float(o, PyFloat_AS_DOUBLE(obj))
    if t is bytes:
        return put_string(o, 2, PyBytes_AS_STRING_raw(<PyObject *>obj),
                          PyBytes_GET_SIZE_raw(<PyObject *>obj))
    if t is tuple:
        return enc_list(o, obj, PyTuple_GET_SIZE(obj), False, depth)
    if t is _FrozenDict:
        return enc_frozen(o, obj, depth)
    if t is _Link:
        return enc_link(o, obj, depth)
    if t is _Tag:
        return enc_tag(o, obj, depth)
    if t is _Simple:
        return enc_simple(o, obj)
    if obj is _UNDEFINED:
        if o.profile != P_CORE:
            enc_error(EncodeUnsupportedItemError,
                      f"{profile_name(o.profile)} has no undefined value")
        return put_byte(o, 0xf7)
    return enc_other(o, obj, depth)


cdef int enc_other(Out *o, object obj, int depth) except -1:
    """Subclasses and protocol types, in the contract's order."""
    if isinstance(obj, bool):
        return put_byte(o, 0xf5 if obj else 0xf4)
    if isinstance(obj, int):
        return enc_int(o, int(obj))
    if isinstance(obj, float):
        return enc_float(o, float(obj))
    if isinstance(obj, str):
        return enc_text(o, obj)  # the string's own content, whatever __str__ says
    if PyObject_CheckBuffer(obj):
        return enc_buffer(o, obj)
    if isinstance(obj, (list, tuple)):
        items = tuple(obj)  # a snapshot: its length is the one written
        return enc_list(o, items, len(items), False, depth)
    if isinstance(obj, _Mapping):  # dict subclasses too: their items(), as the twin
        if isinstance(obj, _FrozenDict) and type(obj._d) is not dict:
            enc_error(EncodeUnsupportedItemError, "FrozenDict does not hold a dict")
        check_depth(o, depth)
        return enc_map_generic(o, obj, depth)
    if isinstance(obj, _Tag):
        return enc_tag(o, obj, depth)
    if isinstance(obj, _Simple):
        return enc_simple(o, obj)
    if isinstance(obj, _Link):
        return enc_link(o, obj, depth)
    if o.default == NULL or <PyObject *>obj == o.hooked:
        raise UnsupportedTypeError(f"cannot encode {type(obj).__name__} as CBOR")
    return enc_hooked(o, obj, depth)


cdef int enc_hooked(Out *o, object obj, int depth) except -1:
    """What ``default(obj)`` returns, in obj's place; that value itself is not handed to
    the hook again (its items may be), so a hook cannot loop."""
    cdef PyObject *outer = o.hooked
    replacement = (<object>o.default)(obj)
    o.hooked = <PyObject *>replacement
    enc_any(o, replacement, depth)
    o.hooked = outer
    return 0


cdef object encode_with(object obj, Out *settings, Scratch *scratch, Out *result):
    """Encode into ``result`` (left open: the caller finishes and releases it)."""
    out_init_scratch(result, scratch, settings)
    try:
        enc_any(result, obj, 0)
    except EncodeError as exc:
        try:
            raise_first_error_in_twin_order(settings, obj)
        except EncodeError as first:
            _cbor_path.finish(first)
            raise
        exc.detail = None  # the second walk did not fail: the value changed meanwhile
        raise


cdef object encode_bytes(object obj, Out *settings, Scratch *scratch):
    cdef Out o
    o.obj = NULL
    o.scratch = NULL
    o.owner = NULL
    try:
        encode_with(obj, settings, scratch, &o)
        return out_finish(&o)
    finally:
        out_release(&o)


cdef Py_ssize_t encode_into_buffer(object obj, object buffer, object offset, Out *settings,
                                   Scratch *scratch) except -1:
    """Encode, then copy into ``buffer`` at ``offset`` (the twin's rules, same order)."""
    cdef Out o
    cdef Py_buffer view
    cdef Py_ssize_t start, end, n
    o.obj = NULL
    o.scratch = NULL
    o.owner = NULL
    try:
        encode_with(obj, settings, scratch, &o)
        n = o.pos
        check_encode_offset(offset, PyByteArray_GET_SIZE(buffer) if type(buffer) is bytearray
                            else None)
        if type(buffer) is bytearray:
            start = offset
            end = start + n
            if end > PyByteArray_GET_SIZE(buffer):
                PyByteArray_Resize(buffer, end)
            memcpy(PyByteArray_AS_STRING(buffer) + start, o.buf, <size_t>n)
            return n
        if not PyObject_CheckBuffer(buffer):
            raise TypeError(f"encode_into() needs a writable buffer, not {type(buffer).__name__}")
        try:
            PyObject_GetBuffer(buffer, &view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS)
        except BufferError:
            raise TypeError("encode_into() needs a writable buffer") from None
        try:
            if offset + n > view.len:
                raise BufferTooSmallError(
                    f"{n} bytes do not fit at offset {offset} of a {view.len}-byte buffer",
                    detail="$")
            start = offset
            memcpy(<char *>view.buf + start, o.buf, <size_t>n)
        finally:
            PyBuffer_Release(&view)
        return n
    finally:
        out_release(&o)


cdef int check_encode_options(Out *settings, object profile, object default,
                              object max_depth) except -1:
    settings.profile = profile_id(profile)
    check_default(default)
    settings.max_depth = check_encode_max_depth(max_depth)
    settings.default = NULL if default is None else <PyObject *>default
    settings.hooked = NULL
    settings.pool = NULL
    settings.twin_order = False
    return 0


def encode(obj, /, *, profile="core", default=None, max_depth=DEFAULT_MAX_DEPTH):
    """Encode ``obj`` as deterministic CBOR under ``profile`` ("core", "dcbor", "dag-cbor").

    ``default(value)`` is called for a value with no CBOR mapping and returns one that has
    (its items may again go through ``default``); ``max_depth`` bounds the nesting."""
    cdef Out settings
    if default is None and max_depth is DEFAULT_MAX_DEPTH:  # the common call: no checks
        settings.profile = profile_id(profile)
        settings.max_depth = DEFAULT_MAX_DEPTH
        settings.default = NULL
        settings.hooked = NULL
        settings.pool = NULL
        settings.twin_order = False
    else:
        check_encode_options(&settings, profile, default, max_depth)
    return encode_bytes(obj, &settings, &module_scratch)


cdef int refuse_shared_keys(object first, object second) except -1:
    cdef Py_ssize_t ppos = 0
    cdef PyObject *k
    cdef PyObject *v
    if type(first) is dict and type(second) is dict:  # no Python code: no iterator
        while PyDict_Next(first, &ppos, &k, &v):
            if PyDict_Contains(second, <object>k):
                raise EncodeDuplicateMapKeyError(f"map key {<object>k!r} is in both mappings",
                                                 detail="$")
        return 0
    for key in first:
        if key in second:
            raise EncodeDuplicateMapKeyError(f"map key {key!r} is in both mappings", detail="$")
    return 0


cdef int enc_merged_text(Out *o, dict first, dict second) except -1:
    """Both dicts' entries as one map, when every key is an exact str (no key is in both:
    checked before): one entry array, one sort. Returns 1, or 0 having written nothing
    when a key is not an exact str."""
    cdef Py_ssize_t n = PyDict_Size(first) + PyDict_Size(second)
    cdef Py_ssize_t ppos, i = 0, j
    cdef PyObject *k
    cdef PyObject *v
    cdef ck_entry *e
    cdef ck_entry *pooled = NULL
    cdef object d
    if n <= POOL_WIDTH and o.pool != NULL:
        pooled = e = o.pool
    else:
        e = <ck_entry *>malloc(<size_t>(n + 1) * sizeof(ck_entry))
        if e == NULL:
            raise MemoryError()
    try:
        for d in (first, second):
            ppos = 0
            while PyDict_Next(d, &ppos, &k, &v):
                if not PyUnicode_CheckExact_raw(k) or i == n:
                    return 0
                e[i].p = ck_utf8(k, &e[i].n)
                if e[i].p == NULL or (o.profile == P_DCBOR and not is_nfc(<object>k)):
                    PyErr_Clear()
                    return 0  # the general path raises what applies, in the twin's order
                Py_XINCREF(k)
                Py_XINCREF(v)
                e[i].key = k
                e[i].value = v
                i += 1
        if i != n:
            return 0
        ck_sort_text_cached(e, n, perm_tmp)  # the keys are distinct objects
        put_head(o, 5, <uint64_t>n)
        for j in range(n):
            put_string(o, 3, e[j].p, e[j].n)
            enc_any(o, <object>e[j].value, 1)
    finally:
        ck_release_entries(e, i)
        if e != pooled:
            free(e)
    return 1


cdef object encode_merged_with(object first, object second, Out *settings, Scratch *scratch):
    cdef Out o
    refuse_shared_keys(first, second)
    if type(first) is dict and type(second) is dict and settings.max_depth > 0:
        o.obj = NULL
        o.scratch = NULL
        o.owner = NULL
        try:
            out_init_scratch(&o, scratch, settings)
            try:
                if enc_merged_text(&o, first, second):
                    return out_finish(&o)
            except EncodeError:
                pass  # the general path below raises it with its path, in the twin's order
        finally:
            out_release(&o)
    merged = dict(first.items())
    merged.update(second.items())
    return encode_bytes(merged, settings, scratch)


def encode_merged(first, second, /, *, profile="core", default=None,
                  max_depth=DEFAULT_MAX_DEPTH):
    """Encode the one map holding the entries of both mappings (a key in both raises
    ``EncodeDuplicateMapKeyError``), without building the merged dict: an envelope's
    keys next to a caller's fields."""
    cdef Out settings
    check_encode_options(&settings, profile, default, max_depth)
    return encode_merged_with(first, second, &settings, &module_scratch)


def encode_into(obj, buffer, offset=0, /, *, profile="core", default=None,
                max_depth=DEFAULT_MAX_DEPTH):
    """Write the encoding of ``obj`` into ``buffer`` at ``offset``; return its length.

    A ``bytearray`` grows to fit; any other writable buffer must have room
    (``BufferTooSmallError`` otherwise). Nothing is written when encoding fails."""
    cdef Out settings
    check_encode_options(&settings, profile, default, max_depth)
    return encode_into_buffer(obj, buffer, offset, &settings, &module_scratch)


cdef class Encoder:
    """A reusable encoder for one profile, ``default`` hook and depth limit, with its own
    scratch buffer."""

    cdef Out _settings
    cdef Scratch _scratch
    cdef readonly str profile
    cdef readonly object default
    cdef readonly int max_depth

    def __cinit__(self):
        self._scratch.mem = NULL
        self._scratch.cap = 0
        self._scratch.busy = False
        self._scratch.pool = NULL

    def __init__(self, *, profile="core", default=None, max_depth=DEFAULT_MAX_DEPTH):
        check_encode_options(&self._settings, profile, default, max_depth)
        self.profile = profile_name(self._settings.profile)
        self.default = default  # holds the reference _settings.default borrows
        self.max_depth = max_depth

    def __dealloc__(self):
        free(self._scratch.mem)
        free(self._scratch.pool)

    def encode(self, obj):
        """Encode ``obj`` under this encoder's settings."""
        return encode_bytes(obj, &self._settings, &self._scratch)

    def encode_into(self, obj, buffer, offset=0, /):
        """``encode_into`` under this encoder's settings."""
        return encode_into_buffer(obj, buffer, offset, &self._settings, &self._scratch)

    def encode_merged(self, first, second, /):
        """``encode_merged`` under this encoder's settings."""
        return encode_merged_with(first, second, &self._settings, &self._scratch)


# ====================================================================================
# Decoder
# ====================================================================================

cdef enum:
    F_ARRAY = 0
    F_MAP = 1
    F_TAG = 2

cdef struct Frame:
    PyObject *obj          # list or dict under construction (owned); NULL for a tag
    PyObject *key          # map: the decoded key awaiting its value (owned)
    Py_ssize_t n           # items (array) or pairs (map)
    Py_ssize_t i           # items / pairs completed
    Py_ssize_t head        # offset of the container's (or tag's) head
    Py_ssize_t key_start   # map: offset of the current key's head
    Py_ssize_t prev_start  # map: previous key's encoded bytes ...
    Py_ssize_t prev_len    # ... (-1: none yet)
    uint64_t tag
    int kind
    int klevel             # 0 outside map keys, else this container's level inside its
                           # outermost key (arrays become tuples, maps FrozenDicts)

cdef enum:
    INLINE_FRAMES = 24
    KEY_CACHE_SIZE = 1024  # power of two
    KEY_CACHE_MAX_LEN = 32

cdef int _MAX_KEY_DEPTH = MAX_KEY_DEPTH

cdef struct Opts:
    int profile
    Py_ssize_t max_depth
    Py_ssize_t max_size    # -1: no limit
    Py_ssize_t max_items   # -1: no limit

cdef struct Dec:
    const uint8_t *p
    Py_ssize_t n           # reads stop here: the input's end, or max_size after the start
    Py_ssize_t full_n      # the input's length
    Py_ssize_t pos
    Py_ssize_t max_depth
    Py_ssize_t max_size
    Py_ssize_t max_items
    Py_ssize_t items_left  # of max_items (unused when max_items is -1)
    int profile
    bint build             # False (check): maps with keys equal as Python values pass
    PyObject *data         # the caller's object, for error messages (borrowed)
    Frame *frames
    Py_ssize_t depth       # frames in use
    Py_ssize_t fcap
    Frame inline_frames[INLINE_FRAMES]

# Decoded short ASCII text keys, keyed by their bytes: repeated keys (records, JSON-like
# documents) are not re-decoded or re-allocated. Entries are compact ASCII strs only.
cdef PyObject *key_cache[KEY_CACHE_SIZE]
cdef Py_ssize_t _k
for _k in range(KEY_CACHE_SIZE):
    key_cache[_k] = NULL


cdef int derr(Dec *d, str code, Py_ssize_t offset, str what) except -1:
    raise _decode_error(code, <object>d.data, offset, what)


cdef int dshort(Dec *d, Py_ssize_t offset, str what) except -1:
    """The input, or the part of it max_size allows, ends inside an item."""
    if d.n < d.full_n:
        derr(d, "limit_exceeded", offset, f"data item longer than max_size={d.max_size} bytes")
    derr(d, "truncated", offset, what)


cdef object dec_text(Dec *d, Py_ssize_t start, Py_ssize_t n, bint is_key):
    cdef const uint8_t *s = d.p + d.pos
    cdef size_t slot = 0
    cdef PyObject *hit
    cdef PyObject *r
    cdef bint cacheable = is_key and n <= KEY_CACHE_MAX_LEN
    if cacheable:
        slot = ck_hash_bytes(s, n) & (KEY_CACHE_SIZE - 1)
        hit = key_cache[slot]
        if hit != NULL and PyUnicode_GET_LENGTH_raw(hit) == n and \
                memcmp(PyUnicode_DATA_raw(hit), s, <size_t>n) == 0:
            d.pos += n
            return <object>hit
    r = PyUnicode_DecodeUTF8_raw(<const char *>s, n, NULL)
    if r == NULL:
        if PyErr_ExceptionMatches(UnicodeDecodeError):
            PyErr_Clear()
            derr(d, "invalid_utf8", start, "text string is not valid UTF-8")
        return propagate()
    text = <object>r
    Py_XDECREF(r)
    if d.profile == P_DCBOR and not is_nfc(text):
        derr(d, "non_nfc_text", start, "text string is not in Unicode NFC")
    if cacheable and PyUnicode_IS_COMPACT_ASCII_raw(r):
        Py_XDECREF(key_cache[slot])
        Py_INCREF(text)
        key_cache[slot] = r
    d.pos += n
    return text


cdef object propagate():
    """Re-raise the exception already set by a C API call."""
    raise_pending()


cdef int raise_pending() except -1:
    return -1


cdef object dec_float(Dec *d, Py_ssize_t start, int ai, uint64_t arg):
    cdef double x
    cdef uint64_t bits
    cdef int width
    if ai == 25:
        x = cbor_half_to_double(<uint16_t>arg)
        width = 2
    elif ai == 26:
        x = cbor_single_to_double(<uint32_t>arg)
        width = 4
    else:
        x = cbor_bits_to_double(arg)
        width = 8
    # checks and messages in the twin's order
    if d.profile == P_DAG:
        if width != 8:
            derr(d, "float_outside_profile", start, "dag-cbor floats are always binary64")
        if isnan(x) or isinf(x) or (x == 0.0 and signbit(x)):
            derr(d, "float_outside_profile", start,
                 "NaN, infinity and -0.0 are invalid in dag-cbor")
        return PyFloat_FromDouble(x)
    if d.profile == P_DCBOR:
        if isnan(x):
            if width != 2 or arg != 0x7e00:
                derr(d, "float_outside_profile", start, "the only dcbor NaN is f97e00")
        elif cbor_float_is_reducible(x):  # -0.0 included
            derr(d, "float_outside_profile", start,
                 "integral float must be an integer (dcbor numeric reduction)")
    if width > 2 and cbor_float_shortest(x, &bits) < width:
        derr(d, "float_outside_profile", start, "float not in its shortest exact form")
    return PyFloat_FromDouble(x)


cdef object dec_simple(Dec *d, Py_ssize_t start, uint64_t value):
    if d.profile != P_CORE:
        derr(d, "unsupported_item", start,
             f"simple value {value} ({profile_name(d.profile)} allows false/true/null)")
    if value == 23:
        return _UNDEFINED
    return _Simple(value)


cdef int enter(Dec *d, Py_ssize_t start, int klevel, int kind, uint64_t n) except -1:
    """The checks on opening a container or tag of n children (n pairs for a map), in
    the twin's order: depth, depth inside a map key, max_items."""
    if d.depth >= d.max_depth:
        derr(d, "depth_exceeded", start, f"nesting deeper than max_depth={d.max_depth}")
    if klevel > _MAX_KEY_DEPTH:
        derr(d, "depth_exceeded", start, f"map key nesting deeper than {_MAX_KEY_DEPTH}")
    if d.max_items >= 0:
        if kind == F_MAP:
            if n > <uint64_t>(d.items_left >> 1):
                derr(d, "limit_exceeded", start, f"more than max_items={d.max_items} data items")
            d.items_left -= <Py_ssize_t>(n * 2)
        else:
            if n > <uint64_t>d.items_left:
                derr(d, "limit_exceeded", start, f"more than max_items={d.max_items} data items")
            d.items_left -= <Py_ssize_t>n
    return 0


cdef int push(Dec *d, int kind, Py_ssize_t start, uint64_t n, int klevel) except -1:
    """Open a container or tag frame (after ``enter``'s checks)."""
    cdef Frame *f
    cdef Py_ssize_t remaining, alloc
    enter(d, start, klevel, kind, 1 if kind == F_TAG else n)
    if d.depth == d.fcap:
        grow_frames(d)
    f = &d.frames[d.depth]
    f.obj = NULL
    f.key = NULL
    f.n = <Py_ssize_t>n if n < <uint64_t>0x7fffffffffffffff else 0x7fffffffffffffff
    f.i = 0
    f.head = start
    f.prev_len = -1
    f.kind = kind
    f.klevel = klevel
    f.tag = n
    if kind == F_ARRAY:
        # Each item takes at least one byte: never preallocate more slots than the input
        # could fill (a short input claiming 2**60 items fails later with `truncated`).
        remaining = d.n - d.pos
        alloc = f.n if f.n <= remaining else remaining
        f.obj = PyList_New_raw(alloc)
        if f.obj == NULL:
            return -1
    elif kind == F_MAP:
        remaining = (d.n - d.pos) >> 1  # each pair takes at least two bytes
        f.obj = ck_dict_presized(f.n if f.n <= remaining else remaining)
        if f.obj == NULL:
            return -1
    d.depth += 1
    return 0


cdef int grow_frames(Dec *d) except -1:
    cdef Py_ssize_t cap = d.fcap * 2
    cdef Frame *frames
    if cap > d.max_depth:
        cap = d.max_depth
    if d.frames == d.inline_frames:
        frames = <Frame *>malloc(<size_t>cap * sizeof(Frame))
        if frames != NULL:
            memcpy(frames, d.frames, <size_t>d.depth * sizeof(Frame))
    else:
        frames = <Frame *>realloc(d.frames, <size_t>cap * sizeof(Frame))
    if frames == NULL:
        raise MemoryError()
    d.frames = frames
    d.fcap = cap
    return 0


cdef object finish_container(Frame *f):
    """Hand over a completed frame's list/dict (tuple/FrozenDict inside a key)."""
    cdef PyObject *obj = f.obj
    f.obj = NULL
    result = <object>obj
    Py_XDECREF(obj)
    if f.klevel:
        if f.kind == F_ARRAY:
            return PyList_AsTuple(<PyObject *>result)
        return _FrozenDict(result)
    return result


cdef object finish_tag(Dec *d, Frame *f, object content):
    cdef uint64_t number = f.tag
    cdef Py_ssize_t n
    if d.profile == P_CORE and (number == 2 or number == 3):
        if type(content) is not bytes:
            derr(d, "unsupported_item", f.head,
                 f"bignum tag {number} content is not a byte string")
        n = len(<bytes>content)
        if n > 0 and (<const uint8_t *><bytes>content)[0] == 0:
            derr(d, "non_shortest_integer", f.head, "bignum with a leading zero byte")
        if n <= 8:
            derr(d, "non_shortest_integer", f.head,
                 "bignum whose value fits a major type 0/1 integer")
        value = int.from_bytes(content, "big")
        return value if number == 2 else -1 - value
    if d.profile == P_DAG:
        return make_link(d, f.head, content)
    return _Tag(PyLong_FromUnsignedLongLong(number), content)


cdef object make_link(Dec *d, Py_ssize_t head, object content):
    if type(content) is not bytes or len(<bytes>content) == 0 or (<bytes>content)[0] != 0:
        derr(d, "invalid_link", head, "tag 42 content is not a byte string starting 0x00")
    try:  # Link validates the CID (cid_problem) itself; reuse that, once
        return _Link((<bytes>content)[1:])
    except errors.InvalidLinkError as exc:
        derr(d, "invalid_link", head, str(exc))


cdef object dec_run(Dec *d):
    """Decode one data item starting at d.pos."""
    cdef object val
    cdef Frame *f
    cdef Py_ssize_t start, w, klen, m, before
    cdef uint8_t ib, major, ai
    cdef uint64_t arg
    cdef bint is_key
    cdef int c, klevel
    while True:
        # ---- one head --------------------------------------------------------------
        start = d.pos
        arg = 0
        is_key = False
        klevel = 0
        f = NULL
        if d.depth:
            f = &d.frames[d.depth - 1]
            if f.kind == F_MAP and f.key == NULL:
                is_key = True
                klevel = f.klevel + 1
                f.key_start = start
            elif f.klevel:
                klevel = f.klevel + 1
        if start >= d.n:
            if f != NULL:  # a missing child is reported at its container's head
                dshort(d, f.head, "input ends inside a container")
            dshort(d, start, "input ends before this data item")
        ib = d.p[start]
        major = ib >> 5
        ai = ib & 0x1f
        if ai < 24:
            arg = ai
            d.pos = start + 1
        elif ai < 28:
            w = 1 << (ai - 24)
            if d.n - start - 1 < w:
                dshort(d, start, "input ends inside a head")
            if ai == 24:
                arg = d.p[start + 1]
            elif ai == 25:
                arg = ck_get_be16(d.p + start + 1)
            elif ai == 26:
                arg = ck_get_be32(d.p + start + 1)
            else:
                arg = ck_get_be64(d.p + start + 1)
            if major != 7:
                if (ai == 24 and arg < 24) or (ai == 25 and arg <= 0xff) or \
                        (ai == 26 and arg <= 0xffff) or (ai == 27 and arg <= 0xffffffffULL):
                    derr(d, "non_shortest_integer", start,
                         f"argument {arg} not in its shortest head")
            elif ai == 24 and arg < 32:
                derr(d, "not_well_formed", start, f"simple value {arg} in the two-byte form")
            d.pos = start + 1 + w
        elif ai < 31:
            derr(d, "not_well_formed", start, f"additional information {ai} on major type {major}")
        elif major >= 2 and major != 6:
            derr(d, "indefinite_length", start,
                 "stray break byte" if major == 7 else "indefinite-length item")
        else:
            derr(d, "not_well_formed", start, f"additional information {ai} on major type {major}")

        if is_key and d.profile == P_DAG and major != 3:
            derr(d, "unsupported_item", start, "dag-cbor map key is not a text string")

        # ---- the item ----------------------------------------------------------------
        if major == 0:
            val = PyLong_FromUnsignedLongLong(arg)
        elif major == 1:
            if arg < 0x8000000000000000ULL:
                val = PyLong_FromLongLong(-1 - <int64_t>arg)
            else:
                if d.profile == P_DCBOR:
                    derr(d, "integer_out_of_range", start, "negative integer below -2^63 (dcbor)")
                val = -1 - PyLong_FromUnsignedLongLong(arg)
        elif major == 2:
            if arg > <uint64_t>(d.n - d.pos):
                dshort(d, start, f"string of {arg} bytes runs past the end")
            val = (<const char *>(d.p + d.pos))[:<Py_ssize_t>arg]
            d.pos += <Py_ssize_t>arg
        elif major == 3:
            if arg > <uint64_t>(d.n - d.pos):
                dshort(d, start, f"string of {arg} bytes runs past the end")
            val = dec_text(d, start, <Py_ssize_t>arg, is_key)
        elif major == 4:
            if arg == 0:
                enter(d, start, klevel, F_ARRAY, 0)
                val = () if klevel else []
            else:
                push(d, F_ARRAY, start, arg, klevel)
                continue
        elif major == 5:
            if arg == 0:
                enter(d, start, klevel, F_MAP, 0)
                val = _FrozenDict() if klevel else {}
            else:
                push(d, F_MAP, start, arg, klevel)
                continue
        elif major == 6:
            if d.profile == P_DAG and arg != 42:
                derr(d, "unsupported_item", start, f"tag {arg} (dag-cbor allows only 42)")
            if d.profile == P_DCBOR and (arg == 2 or arg == 3):
                derr(d, "unsupported_item", start, f"bignum tag {arg} (dcbor)")
            push(d, F_TAG, start, arg, klevel)
            continue
        else:
            if ai >= 25:
                val = dec_float(d, start, ai, arg)
            elif arg == 20:
                val = False
            elif arg == 21:
                val = True
            elif arg == 22:
                val = None
            else:
                val = dec_simple(d, start, arg)

        # ---- hand the value to the enclosing frames --------------------------------
        while True:
            if d.depth == 0:
                return val
            f = &d.frames[d.depth - 1]
            if f.kind == F_ARRAY:
                Py_INCREF(val)
                PyList_SET_ITEM_raw(f.obj, f.i, <PyObject *>val)
                f.i += 1
                if f.i < f.n:
                    break
                val = finish_container(f)
            elif f.kind == F_MAP:
                if f.key == NULL:
                    klen = d.pos - f.key_start
                    if f.prev_len >= 0:
                        m = klen if klen < f.prev_len else f.prev_len
                        # the first bytes (the heads) usually decide; skip the call then
                        c = <int>d.p[f.prev_start] - <int>d.p[f.key_start]
                        if c == 0:
                            c = memcmp(d.p + f.prev_start, d.p + f.key_start, <size_t>m)
                        if c == 0 and klen == f.prev_len:
                            derr(d, "duplicate_map_key", f.key_start, "map key equals the previous key")
                        if c > 0 or (c == 0 and klen < f.prev_len):
                            derr(d, "unsorted_map_keys", f.key_start,
                                 "map key sorts before the previous key")
                    f.prev_start = f.key_start
                    f.prev_len = klen
                    # distinct encodings of text or bytes keys are distinct values; other
                    # keys may be equal as Python values (1, 1.0, True; 0.0 and -0.0),
                    # which a dict cannot hold: decode refuses such a map, check passes it
                    if type(val) is not str and type(val) is not bytes and f.i and \
                            d.build and PyDict_Contains(<object>f.obj, val):
                        derr(d, "unrepresentable_map", f.key_start,
                             "map key equals an earlier key as a Python value")
                    Py_INCREF(val)
                    f.key = <PyObject *>val
                    break
                if PyDict_SetItem_raw(f.obj, f.key, <PyObject *>val) < 0:
                    propagate()
                Py_XDECREF(f.key)
                f.key = NULL
                f.i += 1
                if f.i < f.n:
                    break
                val = finish_container(f)
            else:
                val = finish_tag(d, f, val)
            d.depth -= 1


cdef int release_frames(Dec *d) noexcept:
    cdef Py_ssize_t i
    for i in range(d.depth):
        Py_XDECREF(d.frames[i].obj)
        Py_XDECREF(d.frames[i].key)
    d.depth = 0
    if d.frames != d.inline_frames:
        free(d.frames)
    d.frames = d.inline_frames
    return 0


cdef object decode_buffer(object data, const uint8_t *p, Py_ssize_t n, Py_ssize_t start,
                          const Opts *o, bint whole, bint build, Py_ssize_t *end):
    """The item at ``start``; ``whole``: it must end at ``n`` (else trailing_data)."""
    cdef Dec d
    cdef int gc_was_enabled
    d.p = p
    d.full_n = n
    d.n = n if o.max_size < 0 or o.max_size >= n - start else start + o.max_size
    d.pos = start
    d.max_depth = o.max_depth
    d.max_size = o.max_size
    d.max_items = o.max_items
    d.items_left = o.max_items
    d.profile = o.profile
    d.build = build
    d.data = <PyObject *>data
    d.frames = d.inline_frames
    d.depth = 0
    d.fcap = INLINE_FRAMES
    if start == n:
        derr(&d, "empty_input", start, "empty input")
    # Decoding creates many containers and none can be garbage yet: pause the cyclic GC
    # (it would otherwise rescan the growing result on every young-generation pass).
    gc_was_enabled = PyGC_Disable()
    try:
        val = dec_run(&d)
    finally:
        if gc_was_enabled:
            PyGC_Enable()
        release_frames(&d)
    if whole and d.pos != n:
        derr(&d, "trailing_data", d.pos, "bytes after the top-level item")
    end[0] = d.pos
    return val


cdef int get_view(object data, Py_buffer *view) except -1:
    if not PyObject_CheckBuffer(data):
        raise InputTypeError(f"decode() needs a bytes-like object, not {type(data).__name__}")
    try:
        PyObject_GetBuffer(data, view, PyBUF_C_CONTIGUOUS)
    except BufferError as exc:
        raise InputTypeError(f"decode() needs a C-contiguous buffer: {exc}") from None
    return 0


cdef object decode_with(object data, const Opts *o, bint build):
    """Exactly one item filling ``data``."""
    cdef Py_buffer view
    cdef Py_ssize_t end
    if type(data) is bytes:
        return decode_buffer(data, <const uint8_t *><char *><bytes>data, len(<bytes>data), 0,
                             o, True, build, &end)
    get_view(data, &view)
    try:
        return decode_buffer(data, <const uint8_t *>view.buf, view.len, 0, o, True, build, &end)
    finally:
        PyBuffer_Release(&view)


cdef object decode_prefix_with(object data, object offset, const Opts *o):
    cdef Py_buffer view
    cdef Py_ssize_t end, start
    get_view(data, &view)
    try:
        if type(offset) is int and 0 <= offset <= view.len:
            start = offset
        else:
            start = check_offset(offset, view.len)
        val = decode_buffer(data, <const uint8_t *>view.buf, view.len, start, o, False, True,
                            &end)
    finally:
        PyBuffer_Release(&view)
    return val, end


cdef Py_ssize_t check_sequence_with(object data, const Opts *o) except -1:
    cdef Py_buffer view
    cdef Py_ssize_t pos = 0, count = 0
    get_view(data, &view)
    try:
        while pos < view.len:
            decode_buffer(data, <const uint8_t *>view.buf, view.len, pos, o, False, False, &pos)
            count += 1
    finally:
        PyBuffer_Release(&view)
    return count


cdef int set_opts(Opts *o, object profile, object max_depth, object max_size,
                  object max_items) except -1:
    o.profile = profile_id(profile)
    if type(max_depth) is not int or max_depth < 0:
        check_max_depth(max_depth)  # raises unless an int subclass (bool)
    o.max_depth = max_depth if max_depth < 0x7fffffff else 0x7fffffff
    o.max_size = -1 if max_size is None else clip_limit(check_limit("max_size", max_size))
    o.max_items = -1 if max_items is None else clip_limit(check_limit("max_items", max_items))
    return 0


cdef Py_ssize_t clip_limit(object value) except -2:
    return value if value < 0x7fffffffffffffff else 0x7fffffffffffffff


def decode(data, /, *, profile="core", max_depth=DEFAULT_MAX_DEPTH, max_size=None,
           max_items=None):
    """Decode exactly one deterministic CBOR data item from a bytes-like ``data``."""
    cdef Opts o
    set_opts(&o, profile, max_depth, max_size, max_items)
    return decode_with(data, &o, True)


def check(data, /, *, profile="core", max_depth=DEFAULT_MAX_DEPTH, max_size=None,
          max_items=None):
    """Validate exactly one data item; raises what ``decode`` raises, except that valid
    maps whose keys are equal as Python values pass."""
    cdef Opts o
    set_opts(&o, profile, max_depth, max_size, max_items)
    decode_with(data, &o, False)


def decode_prefix(data, offset=0, /, *, profile="core", max_depth=DEFAULT_MAX_DEPTH,
                  max_size=None, max_items=None):
    """Decode the one data item starting at ``offset``: ``(value, end)``."""
    cdef Opts o
    set_opts(&o, profile, max_depth, max_size, max_items)
    return decode_prefix_with(data, offset, &o)


def check_sequence(data, /, *, profile="core", max_depth=DEFAULT_MAX_DEPTH, max_size=None,
                   max_items=None):
    """Validate a CBOR sequence (RFC 8742) item by item; returns the number of items."""
    cdef Opts o
    set_opts(&o, profile, max_depth, max_size, max_items)
    return check_sequence_with(data, &o)


def iter_sequence(source, /, *, profile="core", max_depth=DEFAULT_MAX_DEPTH, max_size=None,
                  max_items=None):
    """The items of a CBOR sequence from a bytes-like object or a binary file."""
    return Decoder(profile=profile, max_depth=max_depth, max_size=max_size,
                   max_items=max_items).iter_sequence(source)


def load(fp, /, *, profile="core", max_depth=DEFAULT_MAX_DEPTH, max_size=None,
         max_items=None):
    """Decode the one data item that fills the rest of binary file ``fp``."""
    return Decoder(profile=profile, max_depth=max_depth, max_size=max_size,
                   max_items=max_items).load(fp)


cdef class Decoder:
    """A reusable strict decoder for one profile and set of limits."""

    cdef Opts _o
    cdef readonly str profile
    cdef readonly object max_depth
    cdef readonly object max_size
    cdef readonly object max_items

    def __init__(self, *, profile="core", max_depth=DEFAULT_MAX_DEPTH, max_size=None,
                 max_items=None):
        set_opts(&self._o, profile, max_depth, max_size, max_items)
        self.profile = profile_name(self._o.profile)
        self.max_depth = max_depth
        self.max_size = max_size
        self.max_items = max_items

    def decode(self, data):
        """Decode exactly one data item filling ``data``."""
        return decode_with(data, &self._o, True)

    def check(self, data):
        """Validate exactly one data item filling ``data`` (see ``check``)."""
        decode_with(data, &self._o, False)

    def decode_prefix(self, data, offset=0):
        """Decode the item at ``offset``: ``(value, offset after it)``."""
        return decode_prefix_with(data, offset, &self._o)

    def check_sequence(self, data):
        """Validate a CBOR sequence; returns the number of items."""
        return check_sequence_with(data, &self._o)

    def iter_sequence(self, source):
        """The items of a CBOR sequence (bytes-like object or binary file)."""
        return _cbor_stream.iter_sequence(self.decode_prefix, source)

    def load(self, fp):
        """Decode the one item filling the rest of binary file ``fp``."""
        return decode_with(_cbor_stream.read_for_load(fp, self.max_size), &self._o, True)
