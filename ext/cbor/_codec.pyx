# cython: cdivision=True, initializedcheck=False
"""Compiled strict deterministic CBOR codec (profiles core, dcbor, dag-cbor).

Same API, same bytes and same errors (class, code, offset) as the pure-Python twin
``canonkit.cbor._codec_py``, which is the oracle; differential tests keep them identical.
Spec: CBOR.md. Layout:

* encoder: one recursive walk (one or two C frames a level; depth bounded by max_depth,
  at most MAX_ENCODE_DEPTH, and by the room left on the thread's C stack: check_depth,
  cbor_stack.h) writing into a reusable scratch buffer copied once into the result (a
  write of 1 MiB or more moves the output into a result bytes object sized for it
  instead); exact-type dispatch first; dicts walked once with PyDict_Next into a C array
  of entries, sorted only when not already in order.
* decoder: ``canonkit.cbor._decode`` (ext/cbor/_decode.pyx), re-exported here so that
  ``canonkit.cbor._codec`` is the whole codec.

Indexing is unchecked (directives above) because every read is preceded by an explicit
length check against ``Dec.n``; those checks are the audit trail.
"""
cimport cython
from cpython.buffer cimport PyBUF_C_CONTIGUOUS, PyBUF_SIMPLE, PyBUF_WRITABLE, PyBuffer_Release, PyObject_CheckBuffer, PyObject_GetBuffer
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF, Py_XDECREF, Py_XINCREF
from libc.math cimport isfinite, isinf, isnan, signbit
from libc.stdint cimport int64_t, uint8_t, uint16_t, uint32_t, uint64_t, uintptr_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcmp, memcpy

import unicodedata
from collections.abc import Mapping

from canonkit.cbor import _path as _cbor_path
from canonkit.cbor import _types as _cbor_types
from canonkit import errors
from canonkit.cbor._decode import (Decoder, check, check_prefix, check_sequence, decode,
                                   decode_prefix, iter_sequence, load)
from canonkit.cbor._options import (check_default, check_encode_max_depth, check_encode_offset,
                                    check_profile)
from canonkit.cbor._types import (DEFAULT_MAX_DEPTH, FrozenDict, Link, Simple, Tag, UNDEFINED,
                                  is_simple_value, is_tag_number)
from canonkit.errors import (BufferTooSmallError, ChangedDuringEncodingError,
                             EncodeDepthExceededError, EncodeDuplicateMapKeyError, EncodeError,
                             EncodeFloatOutsideProfileError, EncodeIntegerOutOfRangeError,
                             EncodeNonNFCTextError, EncodeUnsupportedItemError,
                             InUseError, UnsupportedTypeError)

__all__ = ["DEFAULT_MAX_DEPTH", "Decoder", "Encoder", "check", "check_prefix", "check_sequence", "decode",
           "decode_prefix", "encode", "encode_into", "encode_merged", "iter_sequence", "load"]


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
    PyTypeObject_ PyBytes_Type
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

cdef extern from "cbor_stack.h":
    uintptr_t ck_stack_floor(uintptr_t here) noexcept nogil
    uintptr_t ck_stack_here() noexcept nogil

cdef extern from "cbor_link.h":
    void ck_link_setup(PyObject *, PyObject *) noexcept
    PyObject *ck_link_cid(PyObject *) noexcept

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
    PyObject *ck_dict_presized(Py_ssize_t)
    Py_ssize_t ck_write_head(uint8_t *, uint8_t, uint64_t) noexcept
    void ck_copy(uint8_t *, const uint8_t *, size_t) noexcept nogil
    const char *ck_utf8(PyObject *, Py_ssize_t *)
    void ck_bytes_truncate(PyObject *, Py_ssize_t) noexcept
    void ck_prefetch(const void *) noexcept
    void ck_prefetch_list_ahead(PyObject *, Py_ssize_t) noexcept


include "cbor_profile.pxi"

cdef object _is_normalized = unicodedata.is_normalized
cdef object _Mapping = Mapping
cdef object _UNDEFINED = UNDEFINED
cdef object _Tag = Tag
cdef object _Simple = Simple
cdef object _Link = Link
cdef object _FrozenDict = FrozenDict
ck_link_setup(<PyObject *>Link, <PyObject *>Link.__dict__["cid_bytes"])


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
    uintptr_t stack_floor  # the recursion stops above this address (0: not measured yet)


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
    o.stack_floor = like.stack_floor
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
    o.stack_floor = like.stack_floor
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


cdef inline int put_key(Out *o, const char *p, Py_ssize_t n) except -1:
    """put_string of a text map key: keys are mostly short, copied with no library call."""
    if o.cap - o.pos < n + 9:
        out_grow(o, n + 9)
    o.pos += ck_write_head(o.buf + o.pos, 3, <uint64_t>n)
    ck_copy(o.buf + o.pos, <const uint8_t *>p, <size_t>n)
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


cdef enum:
    # levels at the top of a walk that are not compared with the stack's floor: the floor
    # keeps at least 16 KiB free below it (cbor_stack.h), and this many levels take at
    # most about 7 KiB of that even in a sanitizer build
    STACK_FREE_LEVELS = 4


cdef inline int check_depth(Out *o, int depth) except -1:
    if depth >= o.max_depth:
        raise EncodeDepthExceededError(
            f"nesting deeper than {o.max_depth} levels (or a self-referencing container)")
    # each nesting level is a C frame: every level past the first few compares its own
    # with the thread's floor (cbor_stack.h), so a small thread stack or a sanitizer
    # build's large frames stop with an error instead of crashing, whatever a level costs
    if depth >= STACK_FREE_LEVELS:
        if o.stack_floor == 0:  # once per walk; the system is asked once per thread
            o.stack_floor = ck_stack_floor(ck_stack_here()) or 1
        if ck_stack_here() < o.stack_floor:
            return stack_exhausted(depth)
    return 0


cdef int stack_exhausted(int depth) except -1:
    raise EncodeDepthExceededError(
        f"nesting of {depth} levels exhausts this thread's C stack "
        f"(run deep values on a thread with a larger stack)")


cdef inline int enc_child(Out *o, object obj, int depth) except -1:
    """enc_any for a container's item: nested lists, dicts and tags go straight to their
    own walk, so a nesting level costs one or two C frames; enc_any's, the largest,
    stays off the recursion."""
    cdef type t = type(obj)
    if t is dict:
        if o.twin_order and PyDict_Size(obj) != 0:  # enc_dict's steps, one frame less
            check_depth(o, depth)
            return enc_map_twin_order(o, obj, depth)
        return enc_dict(o, obj, depth)
    if t is list:
        return enc_list(o, obj, PyList_GET_SIZE(obj), True, depth)
    if t is _Tag:
        return enc_tag(o, obj, depth)
    return enc_any(o, obj, depth)


cdef inline bint put_scalar(Out *o, PyObject *it) except -1:
    """Write an item of exact str (outside dcbor, whose text is checked for NFC), int,
    float or bytes type, or True, False or None, from the borrowed pointer (no Python code runs
    while it is written, so its container cannot drop it). Returns False, having written
    nothing, for anything else: the caller dispatches it."""
    cdef PyTypeObject_ *t = Py_TYPE_raw(it)
    cdef const char *p
    cdef Py_ssize_t n
    if t == &PyUnicode_Type:
        if o.profile == P_DCBOR:
            return False
        p = ck_utf8(it, &n)
        if p == NULL:
            text_not_encodable(<object>it)
        put_string(o, 3, p, n)
    elif t == &PyLong_Type:
        enc_int_raw(o, it)
    elif t == &PyFloat_Type:
        enc_float(o, PyFloat_AS_DOUBLE_raw(it))
    elif t == &PyBytes_Type:
        put_string(o, 2, PyBytes_AS_STRING_raw(it), PyBytes_GET_SIZE_raw(it))
    elif it == <PyObject *>True:
        put_byte(o, 0xf5)
    elif it == <PyObject *>False:
        put_byte(o, 0xf4)
    elif it == <PyObject *>None:
        put_byte(o, 0xf6)
    else:
        return False
    return True


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
    """Scalars are written by put_scalar straight from the borrowed pointer; anything
    else is held by a reference while it is encoded."""
    cdef Py_ssize_t i
    cdef PyObject *it
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
        if Py_TYPE_raw(it) == &PyFloat_Type:  # vectors, coordinates: floats first
            enc_float(o, PyFloat_AS_DOUBLE_raw(it))
        elif Py_TYPE_raw(it) == &PyList_Type:  # rows of a matrix, coordinate pairs
            if not put_float_row(o, it, depth + 1):
                item = <object>it
                enc_list(o, item, PyList_GET_SIZE(item), True, depth + 1)
        elif not put_scalar(o, it):
            item = <object>it
            enc_child(o, item, depth + 1)
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
            enc_child(o, item, depth + 1)
        except EncodeError as exc:
            _cbor_path.located(exc, _cbor_path.item(i))
            raise
    if is_list and PyList_GET_SIZE(seq) != n:
        return list_changed()
    return 0




cdef int put_entries(Out *o, ck_entry *e, Py_ssize_t n, int depth) except -1:
    """A map of the n sorted text-key entries at e, at nesting ``depth``: its head, then
    each key's string and its value."""
    cdef Py_ssize_t j
    put_head(o, 5, <uint64_t>n)
    for j in range(n):
        put_key(o, e[j].p, e[j].n)
        if not put_scalar(o, e[j].value):
            enc_child(o, <object>e[j].value, depth + 1)
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
        put_entries(o, e, n, depth)
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
                enc_any(&keys, key, depth + 1)  # locates a failure inside the key
                # the walk wrote a map key's values only, which can equal another key's
                # bytes: the duplicate check compares the keys' real encodings
                keys.pos = start
                keys.twin_order = False
                try:
                    enc_any(&keys, key, depth + 1)
                finally:
                    keys.twin_order = True
                offsets.append((start, keys.pos))
                enc_child(o, value, depth + 1)
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


@cython.boundscheck(False)  # audited: the indexes are in range by construction
@cython.wraparound(False)
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
            enc_child(o, <object>e[i].value, depth + 1)
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
        return enc_child(o, tag.value, depth + 1)
    try:
        return enc_child(o, tag.value, depth + 1)
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
    """A Link: the CID of an exact one read from its slot (cbor_link.h), else (a
    subclass, which may define cid_bytes otherwise) as an attribute."""
    cdef PyObject *slot = ck_link_cid(<PyObject *>link) if type(link) is _Link else NULL
    cdef bytes cid = <bytes>slot if slot != NULL and Py_TYPE_raw(slot) == &PyBytes_Type \
        else link.cid_bytes
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


cdef int MAX_DEPTH_DEFAULT = DEFAULT_MAX_DEPTH


cdef inline void default_settings(Out *settings, int profile) noexcept:
    """The settings of an encode call that gives no option but the profile."""
    settings.profile = profile
    settings.max_depth = MAX_DEPTH_DEFAULT
    settings.default = NULL
    settings.hooked = NULL
    settings.pool = NULL
    settings.twin_order = False
    settings.stack_floor = 0


cdef int check_encode_options(Out *settings, object profile, object default,
                              object max_depth) except -1:
    cdef int profile_number = profile_id(profile)
    cdef int depth
    check_default(default)
    depth = check_encode_max_depth(max_depth)
    default_settings(settings, profile_number)
    settings.max_depth = depth
    settings.default = NULL if default is None else <PyObject *>default
    return 0


@cython.boundscheck(False)  # audited: the indexes are in range by construction
@cython.wraparound(False)
def encode(obj, /, *, profile="core", default=None, max_depth=DEFAULT_MAX_DEPTH):
    """Encode ``obj`` as deterministic CBOR under ``profile`` ("core", "dcbor", "dag-cbor").

    ``default(value)`` is called for a value with no CBOR mapping and returns one that has
    (its items may again go through ``default``); ``max_depth`` bounds the nesting."""
    cdef Out settings
    if default is None and max_depth is DEFAULT_MAX_DEPTH:  # the common call: no checks
        default_settings(&settings, profile_id(profile))
    else:
        check_encode_options(&settings, profile, default, max_depth)
    return encode_bytes(obj, &settings, &module_scratch)


include "cbor_entry.pxi"


cdef PyObject *encode_fast(PyObject **args, Py_ssize_t nargs, PyObject *profile) except NULL:
    """``encode(obj)`` / ``encode(obj, profile=...)``: the defaults, no option parsing."""
    cdef Out settings
    default_settings(&settings, P_CORE if profile == NULL else profile_id(<object>profile))
    result = encode_bytes(<object>args[0], &settings, &module_scratch)
    Py_INCREF(result)
    return <PyObject *>result


install_entry(globals(), 0, "encode",
              f"(obj, /, *, profile='core', default=None, max_depth={DEFAULT_MAX_DEPTH})",
              encode_fast, 1)


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
    cdef PyObject *dicts[2]
    cdef int which
    dicts[0] = <PyObject *>first
    dicts[1] = <PyObject *>second
    if n <= POOL_WIDTH and o.pool != NULL:
        pooled = e = o.pool
    else:
        e = <ck_entry *>malloc(<size_t>(n + 1) * sizeof(ck_entry))
        if e == NULL:
            raise MemoryError()
    try:
        for which in range(2):
            ppos = 0
            while PyDict_Next(<object>dicts[which], &ppos, &k, &v):
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
        put_entries(o, e, n, 0)
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


@cython.boundscheck(False)  # audited: the indexes are in range by construction
@cython.wraparound(False)
def encode_into(obj, buffer, offset=0, /, *, profile="core", default=None,
                max_depth=DEFAULT_MAX_DEPTH):
    """Write the encoding of ``obj`` into ``buffer`` at ``offset``; return its length.

    A ``bytearray`` grows to fit; any other writable buffer must have room
    (``BufferTooSmallError`` otherwise). Nothing is written when encoding fails."""
    cdef Out settings
    check_encode_options(&settings, profile, default, max_depth)
    return encode_into_buffer(obj, buffer, offset, &settings, &module_scratch)


# methods as method descriptors, which the interpreter calls directly; "clinic" signatures
# keep inspect.signature working on them
@cython.binding(False)
@cython.embedsignature.format("clinic")
cdef class Encoder:
    """A reusable encoder for one profile, ``default`` hook and depth limit, with its own
    scratch buffer. ``__init__`` raises ``InUseError`` while one of its calls is running
    (the hook is held by a borrowed pointer meanwhile)."""

    cdef Out _settings
    cdef Scratch _scratch
    cdef Py_ssize_t _running  # calls of this encoder under way (``default`` may call in again)
    cdef readonly str profile
    cdef readonly object default
    cdef readonly int max_depth

    def __cinit__(self):
        self._scratch.mem = NULL
        self._scratch.cap = 0
        self._scratch.busy = False
        self._scratch.pool = NULL

    def __init__(self, *, profile="core", default=None, max_depth=DEFAULT_MAX_DEPTH):
        cdef Out settings = self._settings  # the fields options do not set stay as they are
        if self._running:
            raise InUseError("Encoder.__init__ while one of its calls is running "
                             "(default may use the encoder, never re-initialise it)")
        check_encode_options(&settings, profile, default, max_depth)
        self._settings = settings
        self.profile = profile_name(self._settings.profile)
        self.default = default  # holds the reference _settings.default borrows
        self.max_depth = max_depth

    def __dealloc__(self):
        free(self._scratch.mem)
        free(self._scratch.pool)

    def encode(self, obj):
        """Encode ``obj`` under this encoder's settings."""
        self._running += 1
        try:
            return encode_bytes(obj, &self._settings, &self._scratch)
        finally:
            self._running -= 1

    def encode_into(self, obj, buffer, offset=0, /):
        """``encode_into`` under this encoder's settings."""
        self._running += 1
        try:
            return encode_into_buffer(obj, buffer, offset, &self._settings, &self._scratch)
        finally:
            self._running -= 1

    def encode_merged(self, first, second, /):
        """``encode_merged`` under this encoder's settings."""
        self._running += 1
        try:
            return encode_merged_with(first, second, &self._settings, &self._scratch)
        finally:
            self._running -= 1
