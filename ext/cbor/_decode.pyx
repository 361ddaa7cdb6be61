# cython: cdivision=True, initializedcheck=False
"""Compiled strict deterministic CBOR decoder and validator (profiles core, dcbor,
dag-cbor); ``canonkit.cbor._codec`` re-exports its API.

Same values and same errors (class, code, offset, message) as the pure-Python twin
``canonkit.cbor._codec_py``, the oracle; differential tests keep them identical. Layout:

* ``dec_loop``: decode one item. An iterative loop over a bounds-checked reader with an
  explicit frame stack (no C recursion: 10**6 nested arrays cost a depth check); every
  length is compared with the remaining input before anything is allocated. Values are
  raw owned references handed straight to their container (no reference-count round
  trips through Cython temporaries).
* ``chk_loop``: validate one item without creating Python objects (``check``): the same
  checks in the same order, with UTF-8 and CID structure validated in C.
* Both are compiled once per profile (a fused "profile" argument that Cython resolves at
  compile time), so no item pays a run-time profile dispatch.

Indexing is unchecked (directives above) because every read is preceded by an explicit
length check against ``Dec.n``; those checks are the audit trail.
"""
cimport cython
from cpython.buffer cimport PyBUF_C_CONTIGUOUS, PyBuffer_Release, PyObject_CheckBuffer, PyObject_GetBuffer
from cpython.object cimport PyObject
from cpython.ref cimport Py_DECREF, Py_INCREF
from libc.stdint cimport int64_t, intptr_t, uint8_t, uint16_t, uint32_t, uint64_t, uintptr_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcmp, memcpy

import unicodedata

from canonkit.cbor import _sequences as _cbor_stream
from canonkit import errors
from canonkit.cbor._options import (MAX_KEY_DEPTH, check_hook, check_limit, check_max_depth,
                                    check_offset, check_profile, input_over_max_size)
from canonkit.cbor._types import DEFAULT_MAX_DEPTH, FrozenDict, Link, Simple, Tag, UNDEFINED
from canonkit.cbor._cid import cid_problem
from canonkit.errors import InputTypeError, InUseError

__all__ = ["Decoder", "check", "check_sequence", "decode", "decode_prefix", "iter_sequence",
           "load"]


cdef extern from "Python.h":
    void incref "Py_INCREF"(PyObject *)
    void decref "Py_DECREF"(PyObject *)
    void xdecref "Py_XDECREF"(PyObject *)
    PyObject *PyBytes_FromStringAndSize(const char *, Py_ssize_t) except NULL
    PyObject *PyUnicode_DecodeUTF8(const char *, Py_ssize_t, const char *)
    PyObject *PyUnicode_New(Py_ssize_t, unsigned int) except NULL
    void *PyUnicode_DATA(PyObject *)
    Py_ssize_t PyUnicode_GET_LENGTH(PyObject *)
    bint PyUnicode_IS_COMPACT_ASCII(PyObject *)
    bint PyUnicode_IS_ASCII(PyObject *)
    PyObject *PyList_New(Py_ssize_t) except NULL
    void PyList_SET_ITEM(PyObject *, Py_ssize_t, PyObject *)
    PyObject *PyList_AsTuple(PyObject *) except NULL
    PyObject *PyTuple_New(Py_ssize_t) except NULL
    int PyDict_SetItem(PyObject *, PyObject *, PyObject *) except -1
    int PyDict_SetItem_raw "PyDict_SetItem"(PyObject *, PyObject *, PyObject *)
    int PyDict_Contains(PyObject *, PyObject *) except -1
    PyObject *PyDict_New() except NULL
    PyObject *PyLong_FromUnsignedLongLong(unsigned long long) except NULL
    PyObject *PyLong_FromLongLong(long long) except NULL
    PyObject *PyFloat_FromDouble(double) except NULL
    PyObject *PyNumber_Negative(PyObject *) except NULL
    PyObject *PyNumber_Subtract(PyObject *, PyObject *) except NULL
    PyObject *PyObject_CallOneArg(PyObject *, PyObject *) except NULL
    PyObject *PyErr_Occurred()
    int PyErr_ExceptionMatches(object)
    void PyErr_Clear()
    int PyGC_Disable()
    int PyGC_Enable()
    ctypedef struct PyTypeObject_ "PyTypeObject":
        pass
    PyTypeObject_ PyUnicode_Type
    PyTypeObject_ PyBytes_Type
    PyTypeObject_ *Py_TYPE(PyObject *)

cdef extern from "cbor_float.h":
    double cbor_bits_to_double(uint64_t) noexcept nogil
    double cbor_half_to_double(uint16_t) noexcept nogil
    double cbor_single_to_double(uint32_t) noexcept nogil
    int cbor_float_is_reducible(double) noexcept nogil

cdef extern from "cbor_stack.h":
    intptr_t ck_release_levels(uintptr_t here) noexcept nogil
    uintptr_t ck_stack_here() noexcept nogil

cdef extern from "cbor_dec.h":
    uint16_t cd_be16(const uint8_t *) noexcept nogil
    uint32_t cd_be32(const uint8_t *) noexcept nogil
    uint64_t cd_be64(const uint8_t *) noexcept nogil
    bint cd_is_ascii(const uint8_t *, Py_ssize_t) noexcept nogil
    bint cd_is_ascii_padded(const uint8_t *, Py_ssize_t) noexcept nogil
    int cd_cmp_padded(const uint8_t *, const uint8_t *, Py_ssize_t) noexcept nogil
    int cd_key_cmp(const uint8_t *, Py_ssize_t, const uint8_t *, Py_ssize_t, bint) noexcept nogil
    bint cd_double_fits_single(uint64_t) noexcept nogil
    bint cd_single_fits_half(uint32_t) noexcept nogil
    Py_ssize_t cd_short_ascii_key(const uint8_t *, Py_ssize_t, Py_ssize_t, Py_ssize_t) noexcept nogil
    int cd_key_order(const uint8_t *, Py_ssize_t, Py_ssize_t, Py_ssize_t, Py_ssize_t *,
                     Py_ssize_t *) noexcept nogil
    bint cd_utf8_valid(const uint8_t *, Py_ssize_t) noexcept nogil
    int cd_utf8_kind(const uint8_t *, Py_ssize_t) noexcept nogil
    enum:
        CU_INVALID
        CU_UNICODE
    int cu_utf8_kernel
    int cu_utf8_best() noexcept nogil
    int cu_utf8_select(int) noexcept nogil
    void cu_utf8_init() noexcept nogil
    int cu_utf8_raw(int, const uint8_t *, Py_ssize_t) noexcept nogil
    bint cd_cid_ok(const uint8_t *, Py_ssize_t) noexcept nogil
    PyObject *cd_dict_presized(Py_ssize_t) except NULL
    Py_ssize_t cd_link_content(const uint8_t *, Py_ssize_t, Py_ssize_t, Py_ssize_t *) noexcept nogil
    bint cd_likely(bint) noexcept nogil
    bint cd_unlikely(bint) noexcept nogil

cdef extern from "cbor_check.h":
    Py_ssize_t ck_fast_check(const uint8_t *, Py_ssize_t, Py_ssize_t, Py_ssize_t, Py_ssize_t,
                             int) except? -2
    int ck_fast_enabled
    int (*ck_nfc_ok)(const uint8_t *, Py_ssize_t) except -1

cdef extern from "cbor_link.h":
    void ck_link_setup(PyObject *, PyObject *) noexcept
    PyObject *ck_new_link(PyObject *, const uint8_t *, Py_ssize_t) noexcept

cdef extern from "cbor_build.h":
    int cb_init() except -1
    PyObject *cb_uint(uint64_t) except NULL
    PyObject *cb_ascii(const uint8_t *, Py_ssize_t) except NULL
    Py_ssize_t cb_take_key(const uint8_t *, Py_ssize_t, Py_ssize_t, Py_ssize_t, PyObject **,
                           Py_ssize_t *, Py_ssize_t *, int *) except -2
    int cb_common_item(const uint8_t *, Py_ssize_t, Py_ssize_t, Py_ssize_t *, int, bint,
                       PyObject **) except -1


# --- profiles: one compiled copy of each loop per profile ------------------------------

include "cbor_profile.pxi"

# Empty marker types: a function taking a ``Prof *`` is compiled three times and every
# ``Prof is ...`` test is decided by Cython, not at run time.
cdef struct ProfCore:
    char unused
cdef struct ProfDcbor:
    char unused
cdef struct ProfDag:
    char unused

ctypedef fused Prof:
    ProfCore
    ProfDcbor
    ProfDag

cdef tuple PROFILE_NAMES = ("core", "dcbor", "dag-cbor")


cdef object _is_normalized = unicodedata.is_normalized
cdef object _decode_error = errors.decode_error
cdef object _UNDEFINED = UNDEFINED
cdef object _Tag = Tag
cdef object _Simple = Simple
cdef object _Link = Link
cdef object _FrozenDict = FrozenDict
cdef object _from_bytes = int.from_bytes
cdef int _MAX_KEY_DEPTH = MAX_KEY_DEPTH
ck_link_setup(<PyObject *>Link, <PyObject *>Link.__dict__["cid_bytes"])
cb_init()


# --- state ----------------------------------------------------------------------------

cdef enum:
    F_ARRAY = 0
    F_MAP = 1
    F_TAG = 2

cdef struct Frame:
    # fields every item touches first (one cache line), then the rest
    uint64_t n             # items (array), pairs (map) or the tag number
    uint64_t i             # items / pairs completed
    Py_ssize_t key_start   # map: offset of the current key's head
    Py_ssize_t prev_start  # map: previous key's encoded bytes ...
    Py_ssize_t prev_len    # ... (-1: none yet)
    PyObject *obj          # decode: list or dict under construction (owned); NULL for a tag
    int kind
    int klevel             # 0 outside map keys, else this container's level inside its
                           # outermost key (arrays become tuples there, maps FrozenDicts)
    bint want_key          # check: a map whose next item is a key
    PyObject *key          # decode, map: the key awaiting its value (owned)
    Py_ssize_t head        # offset of the container's (or tag's) head

cdef enum:
    INLINE_FRAMES = 24
    # a decoded value this deep is released within any thread stack's margin; from here on
    # decode asks whether this thread's stack can release a deeper one (cbor_stack.h)
    RELEASE_CHECK_DEPTH = 64
    NO_DEPTH_LIMIT = 0x7fffffff

cdef struct Opts:
    int profile
    Py_ssize_t max_depth
    Py_ssize_t max_size    # -1: no limit
    Py_ssize_t max_items   # -1: no limit
    PyObject *tag_hook     # borrowed; NULL: none
    PyObject *object_hook  # borrowed; NULL: none

cdef struct Dec:
    const uint8_t *p
    Py_ssize_t n           # reads stop here: the input's end, or max_size after the start
    Py_ssize_t full_n      # the input's length
    Py_ssize_t pos
    Py_ssize_t max_depth
    Py_ssize_t max_size
    Py_ssize_t max_items
    Py_ssize_t items_left  # of max_items (unused when max_items is -1)
    PyObject *tag_hook
    PyObject *object_hook
    bint build             # decode (True) or check (False)
    PyObject *data         # the caller's object, for error messages (borrowed)
    Frame *frames
    Py_ssize_t depth       # frames in use
    Py_ssize_t release_depth  # decode: enter() checks the thread's C stack from this depth
    bint release_measured  # release_depth is the thread's (else RELEASE_CHECK_DEPTH)
    Py_ssize_t fcap
    Frame inline_frames[INLINE_FRAMES]

cdef Py_ssize_t _k


# --- errors -----------------------------------------------------------------------------

cdef int derr(Dec *d, str code, Py_ssize_t offset, str what) except -1:
    raise _decode_error(code, <object>d.data, offset, what)


cdef int dshort(Dec *d, Py_ssize_t offset, str what) except -1:
    """The input, or the part of it max_size allows, ends inside an item."""
    if d.n < d.full_n:
        derr(d, "limit_exceeded", offset, f"data item longer than max_size={d.max_size} bytes")
    derr(d, "truncated", offset, what)


cdef int head_error(Dec *d, Py_ssize_t start, int major, int ai) except -1:
    """Additional information 28-31 (no argument follows)."""
    if ai < 31 or major < 2 or major == 6:
        derr(d, "not_well_formed", start, f"additional information {ai} on major type {major}")
    derr(d, "indefinite_length", start,
         "stray break byte" if major == 7 else "indefinite-length item")


cdef int arg_error(Dec *d, Py_ssize_t start, int major, int ai, uint64_t arg) except -1:
    """A head whose argument is not in its shortest form (or f8xx with xx < 32)."""
    if major == 7:
        derr(d, "not_well_formed", start, f"simple value {arg} in the two-byte form")
    derr(d, "non_shortest_integer", start, f"argument {arg} not in its shortest head")


cdef inline bint non_shortest(int ai, uint64_t arg) noexcept nogil:
    if ai == 24:
        return arg < 24
    if ai == 25:
        return arg <= 0xff
    if ai == 26:
        return arg <= 0xffff
    return arg <= 0xffffffffULL


cdef int key_type_error(Dec *d, Py_ssize_t start) except -1:
    derr(d, "unsupported_item", start, "dag-cbor map key is not a text string")


cdef int tag_error(Dec *d, Py_ssize_t start, int profile, uint64_t number) except -1:
    if profile == P_DAG:
        derr(d, "unsupported_item", start, f"tag {number} (dag-cbor allows only 42)")
    derr(d, "unsupported_item", start, f"bignum tag {number} (dcbor)")


cdef int simple_error(Dec *d, Py_ssize_t start, int profile, uint64_t value) except -1:
    derr(d, "unsupported_item", start,
         f"simple value {value} ({PROFILE_NAMES[profile]} allows false/true/null)")


# --- shared checks ------------------------------------------------------------------------

cdef int enter(Dec *d, Py_ssize_t start, int klevel, int kind, uint64_t n) except -1:
    """The checks on opening a container or tag of n children (n pairs for a map), in
    the twin's order: depth, depth inside a map key, max_items."""
    if d.depth >= d.max_depth:
        derr(d, "depth_exceeded", start, f"nesting deeper than max_depth={d.max_depth}")
    if d.depth >= d.release_depth:
        check_release(d, start)
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


cdef int key_order_error(Dec *d, Frame *f, int c) except -1:
    if c == 0:
        derr(d, "duplicate_map_key", f.key_start, "map key equals the previous key")
    derr(d, "unsorted_map_keys", f.key_start, "map key sorts before the previous key")


cdef inline int key_order(Dec *d, Frame *f, Py_ssize_t end) except -1:
    """Compare the key just read (f.key_start .. end) with the previous key's bytes."""
    cdef int c = cd_key_order(d.p, d.full_n, f.key_start, end, &f.prev_start, &f.prev_len)
    if cd_unlikely(c >= 0):
        key_order_error(d, f, c)
    return 0


cdef bint float_ok(Dec *d, Py_ssize_t start, int profile, int ai, uint64_t arg,
                   double *out) except -1:
    """The float of a major-7 head with ai 25-27, checked in the twin's order; the
    shortest-form test works on the bit pattern."""
    cdef double x = 0.0
    cdef bint narrower = False
    if ai == 27:
        if profile == P_DAG:
            # NaN, infinities (exponent all ones) and -0.0 are invalid
            if (arg & 0x7ff0000000000000ULL) == 0x7ff0000000000000ULL or \
                    arg == 0x8000000000000000ULL:
                derr(d, "float_outside_profile", start,
                     "NaN, infinity and -0.0 are invalid in dag-cbor")
            out[0] = cbor_bits_to_double(arg)
            return True
        x = cbor_bits_to_double(arg)
        narrower = cd_double_fits_single(arg)
    elif profile == P_DAG:
        derr(d, "float_outside_profile", start, "dag-cbor floats are always binary64")
    elif ai == 25:
        x = cbor_half_to_double(<uint16_t>arg)
        narrower = False
    else:
        x = cbor_single_to_double(<uint32_t>arg)
        narrower = cd_single_fits_half(<uint32_t>arg)
    if profile == P_DCBOR:
        if x != x:
            if ai != 25 or arg != 0x7e00:
                derr(d, "float_outside_profile", start, "the only dcbor NaN is f97e00")
        elif cbor_float_is_reducible(x):  # -0.0 included
            derr(d, "float_outside_profile", start,
                 "integral float must be an integer (dcbor numeric reduction)")
    if narrower:
        derr(d, "float_outside_profile", start, "float not in its shortest exact form")
    out[0] = x
    return True


cdef int nfc_check(Dec *d, Py_ssize_t start, object text) except -1:
    """dcbor: non-ASCII text must be NFC (ASCII always is)."""
    if not _is_normalized("NFC", text):
        derr(d, "non_nfc_text", start, "text string is not in Unicode NFC")
    return 0


cdef int nfc_ok(const uint8_t *s, Py_ssize_t n) except -1:
    """The first pass's NFC test of dcbor's non-ASCII text (valid UTF-8): 1 or 0."""
    return 1 if _is_normalized("NFC", (<const char *>s)[:n].decode("utf-8")) else 0


ck_nfc_ok = nfc_ok


cdef int check_release(Dec *d, Py_ssize_t start) except -1:
    """The value is released one C frame per level by the interpreter (CPython 3.13):
    refuse nesting this thread's stack could not release, rather than crash when the
    value is dropped. Not part of the twin, which does not see the C stack."""
    cdef intptr_t levels
    if not d.release_measured:
        d.release_measured = True
        levels = ck_release_levels(ck_stack_here())
        d.release_depth = NO_DEPTH_LIMIT if levels < 0 else max(<Py_ssize_t>levels,
                                                                 RELEASE_CHECK_DEPTH)
    if d.depth >= d.release_depth:
        derr(d, "depth_exceeded", start,
             f"nesting of {d.depth + 1} levels is more than this thread's C stack can "
             f"release (decode deep values on a thread with a larger stack)")
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


cdef inline Frame *open_frame(Dec *d, int kind, Py_ssize_t start, uint64_t n,
                              int klevel) except NULL:
    """A new frame on top (after ``enter``'s checks). Decode sets ``obj`` and ``key``."""
    cdef Frame *f
    if d.depth == d.fcap:
        grow_frames(d)
    f = &d.frames[d.depth]
    d.depth += 1
    f.n = n
    f.i = 0
    f.head = start
    f.prev_len = -1
    f.kind = kind
    f.klevel = klevel
    f.want_key = kind == F_MAP
    return f


cdef int release_frames(Dec *d) noexcept:
    cdef Py_ssize_t i
    if d.build:
        for i in range(d.depth):
            xdecref(d.frames[i].obj)
            xdecref(d.frames[i].key)
    d.depth = 0
    if d.frames != d.inline_frames:
        free(d.frames)
    d.frames = d.inline_frames
    return 0


# --- decode: values -----------------------------------------------------------------------

cdef inline bint ascii_text(Dec *d, Py_ssize_t pos, Py_ssize_t n) noexcept:
    if pos + n + 8 <= d.full_n:
        return cd_is_ascii_padded(d.p + pos, n)
    return cd_is_ascii(d.p + pos, n)


cdef PyObject *dec_utf8(Dec *d, Prof *prof, Py_ssize_t start, Py_ssize_t pos,
                        Py_ssize_t n) except NULL:
    """A text value that is not all ASCII (new reference), decoded and validated by
    CPython."""
    cdef PyObject *r = PyUnicode_DecodeUTF8(<const char *>(d.p + pos), n, NULL)
    if r == NULL:
        if PyErr_ExceptionMatches(UnicodeDecodeError):
            PyErr_Clear()
            derr(d, "invalid_utf8", start, "text string is not valid UTF-8")
        return NULL
    if Prof is ProfDcbor:
        try:
            nfc_check(d, start, <object>r)
        except BaseException:
            decref(r)
            raise
    return r


cdef inline PyObject *dec_text(Dec *d, Prof *prof, Py_ssize_t start, Py_ssize_t pos,
                               Py_ssize_t n) except NULL:
    """A text value (new reference). ASCII is copied into a new str without going
    through the UTF-8 decoder."""
    if ascii_text(d, pos, n):
        return cb_ascii(d.p + pos, n)
    return dec_utf8(d, prof, start, pos, n)


cdef PyObject *new_ref(object value) except NULL:
    Py_INCREF(value)
    return <PyObject *>value


cdef PyObject *dec_negative(Dec *d, Prof *prof, Py_ssize_t start, uint64_t arg) except NULL:
    cdef PyObject *big
    if arg < 0x8000000000000000ULL:
        return PyLong_FromLongLong(-1 - <int64_t>arg)
    if Prof is ProfDcbor:
        derr(d, "integer_out_of_range", start, "negative integer below -2^63 (dcbor)")
    big = PyLong_FromUnsignedLongLong(arg)
    try:
        return new_ref(-1 - <object>big)
    finally:
        decref(big)


cdef PyObject *dec_simple(Dec *d, Prof *prof, Py_ssize_t start, uint64_t value) except NULL:
    if value == 20:
        return new_ref(False)
    if value == 21:
        return new_ref(True)
    if value == 22:
        return new_ref(None)
    if Prof is ProfDcbor:
        simple_error(d, start, P_DCBOR, value)
    elif Prof is ProfDag:
        simple_error(d, start, P_DAG, value)
    if value == 23:
        return new_ref(_UNDEFINED)
    return new_ref(_Simple(value))


cdef inline PyObject *dec_float(Dec *d, Prof *prof, Py_ssize_t start, int profile, int ai,
                                uint64_t arg) except NULL:
    """The float of a major-7 head with ai 25-27 (new reference). The binary64 that each
    profile accepts as it is (dag-cbor: finite and not -0.0; core: not exactly a binary32)
    is checked here on its bits; everything else goes through float_ok."""
    cdef double x
    if Prof is ProfDag:
        if ai == 27 and (arg & 0x7ff0000000000000ULL) != 0x7ff0000000000000ULL and \
                arg != 0x8000000000000000ULL:
            return PyFloat_FromDouble(cbor_bits_to_double(arg))
    elif Prof is ProfCore:
        if ai == 27 and not cd_double_fits_single(arg):
            return PyFloat_FromDouble(cbor_bits_to_double(arg))
    float_ok(d, start, profile, ai, arg, &x)
    return PyFloat_FromDouble(x)


cdef PyObject *finish_tag(Dec *d, Prof *prof, Frame *f, PyObject *content) except NULL:
    """The value of a completed tag (new reference); ``content`` stays the caller's."""
    cdef uint64_t number = f.n
    cdef Py_ssize_t n
    cdef object c = <object>content
    if Prof is ProfCore:
        if number == 2 or number == 3:
            if type(c) is not bytes:
                derr(d, "unsupported_item", f.head,
                     f"bignum tag {number} content is not a byte string")
            n = len(<bytes>c)
            if n > 0 and (<const uint8_t *><bytes>c)[0] == 0:
                derr(d, "non_shortest_integer", f.head, "bignum with a leading zero byte")
            if n <= 8:
                derr(d, "non_shortest_integer", f.head,
                     "bignum whose value fits a major type 0/1 integer")
            value = _from_bytes(c, "big")
            return new_ref(value if number == 2 else -1 - value)
    if Prof is ProfDag:
        return new_ref(make_link(d, f.head, c))
    else:
        tag = _Tag(number, c)
        if d.tag_hook != NULL:
            return call_hook(d, d.tag_hook, tag, f.head, True, number)
        return new_ref(tag)


cdef PyObject *link_of(const uint8_t *s, Py_ssize_t n) except NULL:
    """A Link (new reference) of the n CID bytes at s, which cd_cid_ok accepted: the
    constructor's check is that one, so the instance is built without running it."""
    cdef PyObject *r = ck_new_link(<PyObject *>_Link, s, n)
    if r == NULL:
        if PyErr_Occurred():
            return NULL
        return new_ref(_Link((<const char *>s)[:n]))
    return r


cdef object make_link(Dec *d, Py_ssize_t head, object content):
    if type(content) is not bytes or len(<bytes>content) == 0 or (<bytes>content)[0] != 0:
        derr(d, "invalid_link", head, "tag 42 content is not a byte string starting 0x00")
    cdef const uint8_t *s = <const uint8_t *><char *><bytes>content
    cdef PyObject *r
    if cd_cid_ok(s + 1, len(<bytes>content) - 1):
        r = link_of(s + 1, len(<bytes>content) - 1)
        value = <object>r
        decref(r)
        return value
    try:  # Link's constructor says what is wrong with the CID
        return _Link((<bytes>content)[1:])
    except errors.InvalidLinkError as exc:
        derr(d, "invalid_link", head, str(exc))


cdef PyObject *finish_keyed(Dec *d, Frame *f) except NULL:
    """Hand over a completed frame's list/dict (new reference) when it is inside a map key
    (a tuple or FrozenDict) or a map with ``object_hook`` (the hook's result)."""
    cdef PyObject *obj = f.obj
    cdef PyObject *r
    f.obj = NULL
    try:
        if f.kind == F_ARRAY:
            r = PyList_AsTuple(obj)
        elif f.klevel:
            r = new_ref(_FrozenDict(<object>obj))
        else:
            r = call_hook(d, d.object_hook, <object>obj, f.head, False, 0)
    finally:
        decref(obj)
    return r


cdef inline int dec_enter(Dec *d, Py_ssize_t start, int klevel, int kind,
                          uint64_t n) except -1:
    """``enter``'s checks, made where one of them could apply."""
    if cd_unlikely(klevel or not leaf_ok(d)):
        enter(d, start, klevel, kind, n)
    return 0


cdef inline Frame *push_frame(Dec *d, int kind, Py_ssize_t start, uint64_t n,
                              int klevel) except NULL:
    """A new decode frame on top (after dec_enter); its ``obj`` and ``key`` are NULL."""
    cdef Frame *f = open_frame(d, kind, start, n, klevel)
    f.key = NULL
    f.obj = NULL
    return f


cdef inline Frame *open_container(Dec *d, int kind, Py_ssize_t start, Py_ssize_t pos,
                                  uint64_t n, int klevel) except NULL:
    """Open an array or map of n (> 0) items or pairs at ``start``; content at ``pos``."""
    cdef Frame *f
    cdef Py_ssize_t room = d.n - pos
    dec_enter(d, start, klevel, kind, n)
    f = push_frame(d, kind, start, n, klevel)
    if kind == F_ARRAY:
        # Each item takes at least one byte: never preallocate more slots than the input
        # could fill (a short input claiming 2**60 items fails later with `truncated`).
        f.obj = PyList_New(<Py_ssize_t>n if n <= <uint64_t>room else room)
    else:
        room >>= 1  # each pair takes at least two bytes
        f.obj = cd_dict_presized(<Py_ssize_t>n if n <= <uint64_t>room else room)
    return f


cdef inline int key_level(Frame *f, bint is_key) noexcept:
    """The key level of a container or tag opened now as the next item of ``f`` (see
    Frame.klevel)."""
    if f == NULL:
        return 0
    if f.klevel:
        return f.klevel + 1
    return is_key


cdef PyObject *dec_empty(Dec *d, Py_ssize_t start, int major, int klevel) except NULL:
    """An empty array or map (new reference)."""
    enter(d, start, klevel, F_ARRAY if major == 4 else F_MAP, 0)
    if major == 4:
        return PyTuple_New(0) if klevel else PyList_New(0)
    if klevel:
        return new_ref(_FrozenDict())
    if d.object_hook != NULL:
        return new_ref(empty_dict_hook(d, start))
    return PyDict_New()


cdef PyObject *dec_loop(Dec *d, Prof *prof) except NULL:
    """Decode the item at d.pos; returns a new reference and leaves d.pos after it.

    Two paths. The generic one reads any item from its head, with every check. Once an
    item is complete it is handed to its container, which then reads what follows while
    it is of the common kinds: an array its next items while they are scalars valid as
    they stand or small arrays of those (``cb_common_item``), a map its
    next pairs while the key is a short ASCII text (``cb_take_key``, which also checks the
    key's order) and the value such a scalar or array.
    The first item of another kind goes back to the generic path (a key with ``is_key``
    set), so each check is made once, by one of the two paths, in the input's order."""
    cdef const uint8_t *p = d.p
    cdef Py_ssize_t n = d.n
    cdef Py_ssize_t pos = d.pos
    cdef Py_ssize_t start, w, end
    cdef PyObject *val = NULL
    cdef PyObject *done
    cdef Frame *f = NULL
    cdef uint8_t ib
    cdef int major, ai, klevel, c, r
    cdef uint64_t arg
    cdef bint is_key = False
    cdef bint arrays
    cdef int profile
    if Prof is ProfCore:
        profile = P_CORE
    elif Prof is ProfDcbor:
        profile = P_DCBOR
    else:
        profile = P_DAG
    while True:
        # ---- one item, from its head ---------------------------------------------
        start = pos
        if cd_unlikely(start >= n):
            if f != NULL:  # a missing child is reported at its container's head
                dshort(d, f.head, "input ends inside a container")
            dshort(d, start, "input ends before this data item")
        ib = p[start]
        major = ib >> 5
        ai = ib & 0x1f
        if ai < 24:
            arg = ai
            pos = start + 1
        elif cd_likely(ai < 28):
            w = 1 << (ai - 24)
            if cd_unlikely(n - start - 1 < w):
                dshort(d, start, "input ends inside a head")
            if ai == 24:
                arg = p[start + 1]
            elif ai == 25:
                arg = cd_be16(p + start + 1)
            elif ai == 26:
                arg = cd_be32(p + start + 1)
            else:
                arg = cd_be64(p + start + 1)
            if major != 7:
                if cd_unlikely(non_shortest(ai, arg)):
                    arg_error(d, start, major, ai, arg)
            elif ai == 24 and arg < 32:
                arg_error(d, start, major, ai, arg)
            pos = start + 1 + w
        else:
            arg = 0
            head_error(d, start, major, ai)
        if cd_unlikely(is_key):  # f is a map and this is its key
            f.key_start = start
            if Prof is ProfDag:
                if major != 3:
                    key_type_error(d, start)

        if major == 3:
            if cd_unlikely(arg > <uint64_t>(n - pos)):
                dshort(d, start, f"string of {arg} bytes runs past the end")
            val = dec_text(d, prof, start, pos, <Py_ssize_t>arg)
            pos += <Py_ssize_t>arg
        elif major == 0:
            val = cb_uint(arg)
        elif major == 4 or major == 5:
            klevel = key_level(f, is_key)
            if arg == 0:
                val = dec_empty(d, start, major, klevel)
            else:  # its items are read below, by the container
                f = open_container(d, F_ARRAY if major == 4 else F_MAP, start, pos, arg,
                                   klevel)
                val = NULL
        elif major == 7:
            if ai >= 25:
                val = dec_float(d, prof, start, profile, ai, arg)
            else:
                val = dec_simple(d, prof, start, arg)
        elif major == 2:
            if cd_unlikely(arg > <uint64_t>(n - pos)):
                dshort(d, start, f"string of {arg} bytes runs past the end")
            val = PyBytes_FromStringAndSize(<const char *>(p + pos), <Py_ssize_t>arg)
            pos += <Py_ssize_t>arg
        elif major == 1:
            val = dec_negative(d, prof, start, arg)
        else:  # major 6
            if Prof is ProfDag:
                if arg != 42:
                    tag_error(d, start, P_DAG, arg)
            elif Prof is ProfDcbor:
                if arg == 2 or arg == 3:
                    tag_error(d, start, P_DCBOR, arg)
            klevel = key_level(f, is_key)
            is_key = False
            dec_enter(d, start, klevel, F_TAG, 1)
            if Prof is ProfDag:  # a valid link is built from the input in one step
                w = cd_link_content(p, n, pos, &end)
                if w < 0:
                    f = push_frame(d, F_TAG, start, arg, klevel)
                    continue  # its content is the next item
                val = link_of(p + w, end - w)
                pos = end
            else:
                f = push_frame(d, F_TAG, start, arg, klevel)
                continue
        is_key = False

        # ---- hand ``val`` (an owned reference; NULL: a container was opened) to the
        # frames, which then read what follows while it is of the common kinds --------
        while True:
            if f == NULL:
                d.pos = pos
                return val
            if f.kind == F_ARRAY:
                if val != NULL:
                    PyList_SET_ITEM(f.obj, <Py_ssize_t>f.i, val)
                    f.i += 1
                arrays = not f.klevel and leaf_ok(d)  # small arrays may be read in one step
                while f.i < f.n:
                    r = cb_common_item(p, n, d.full_n, &pos, profile, arrays, &val)
                    if r == 0:
                        break
                    PyList_SET_ITEM(f.obj, <Py_ssize_t>f.i, val)
                    f.i += 1
                if f.i < f.n:
                    break  # the generic path reads the next item
            elif f.kind == F_MAP:
                if val != NULL:
                    if f.key == NULL:  # a key cb_take_key did not take
                        f.key = val  # owned by the frame from here (freed on errors)
                        key_order(d, f, pos)
                        # distinct encodings of text or bytes keys are distinct values;
                        # other keys may be equal as Python values (1, 1.0, True; 0.0 and
                        # -0.0), which a dict cannot hold
                        if f.i and Py_TYPE(val) != &PyUnicode_Type and \
                                Py_TYPE(val) != &PyBytes_Type and PyDict_Contains(f.obj, val):
                            derr(d, "unrepresentable_map", f.key_start,
                                 "map key equals an earlier key as a Python value")
                        break  # the generic path reads its value
                    dict_set(f, val)
                arrays = not f.klevel and leaf_ok(d)
                while f.i < f.n:
                    w = cb_take_key(p, n, d.full_n, pos, &f.key, &f.prev_start, &f.prev_len,
                                    &c)
                    if w < 0:
                        is_key = True  # the generic path reads it, and says what is wrong
                        break
                    if cd_unlikely(c >= 0):
                        f.key_start = pos
                        key_order_error(d, f, c)
                    pos = w
                    r = cb_common_item(p, n, d.full_n, &pos, profile, arrays, &val)
                    if r == 0:
                        break  # the generic path reads the value
                    dict_set(f, val)
                if f.i < f.n:
                    break
            else:
                try:
                    done = finish_tag(d, prof, f, val)
                finally:
                    decref(val)
                val = done
                d.depth -= 1
                f = &d.frames[d.depth - 1] if d.depth else NULL
                continue
            # the container is complete: a tuple or FrozenDict inside a map key, a map
            # through object_hook, else the list or dict itself
            if cd_likely(not f.klevel and (f.kind == F_ARRAY or d.object_hook == NULL)):
                val = f.obj
                f.obj = NULL
            else:
                val = finish_keyed(d, f)
            d.depth -= 1
            f = &d.frames[d.depth - 1] if d.depth else NULL


cdef inline bint leaf_ok(Dec *d) noexcept:
    """Whether an array opened now, outside map keys, passes every check of ``enter``
    without it doing anything (so ``cb_common_item`` may read it without ``enter``)."""
    return d.max_items < 0 and d.depth < d.max_depth and d.depth < d.release_depth


cdef inline int dict_set(Frame *f, PyObject *val) except -1:
    """Insert the pair of map frame ``f``: its key and ``val`` (whose reference this
    takes)."""
    cdef int rc = PyDict_SetItem_raw(f.obj, f.key, val)
    decref(val)
    if cd_unlikely(rc < 0):
        return -1
    decref(f.key)
    f.key = NULL
    f.i += 1
    return 0


cdef object empty_dict_hook(Dec *d, Py_ssize_t start):
    cdef PyObject *r = call_hook(d, d.object_hook, {}, start, False, 0)
    value = <object>r
    decref(r)
    return value


cdef PyObject *call_hook(Dec *d, PyObject *hook, object value, Py_ssize_t start,
                         bint is_tag, uint64_t number) except NULL:
    """A hook's result (new reference); its ValueError (bad content) is hook_refused at
    the head of the tag (number ``number``) or map."""
    try:
        return new_ref((<object>hook)(value))
    except ValueError as exc:
        if isinstance(exc, errors.CanonkitError):
            raise
        what = f"tag_hook refused tag {number}" if is_tag else "object_hook refused the map"
        derr(d, "hook_refused", start, f"{what}: {exc}")


# --- check: the same pass without values ------------------------------------------------

cdef int chk_text(Dec *d, Prof *prof, Py_ssize_t start, Py_ssize_t pos,
                  Py_ssize_t n) except -1:
    """Validate a text string that is not all ASCII."""
    cdef const uint8_t *s = d.p + pos
    if not cd_utf8_valid(s, n):
        derr(d, "invalid_utf8", start, "text string is not valid UTF-8")
    if Prof is ProfDcbor:  # only non-ASCII text pays for a str here
        nfc_check(d, start, (<const char *>s)[:n].decode("utf-8"))
    return 0


# From this length on, check validates text without an ASCII pass first; shorter text is
# mostly ASCII, which the inline pass settles without a call (bench/cbor_ab.py: twitter's
# check 4-9% faster than with no pass from 19 bytes; 160 was no better).
cdef enum:
    LONG_TEXT = 64


cdef int chk_long_text(Dec *d, Prof *prof, Py_ssize_t start, Py_ssize_t pos,
                       Py_ssize_t n) except -1:
    """Validate a text string of at least LONG_TEXT bytes: the kernels tell ASCII apart
    while they validate, so no ASCII pass comes first."""
    cdef const uint8_t *s = d.p + pos
    cdef int kind = cd_utf8_kind(s, n)
    if kind == CU_INVALID:
        derr(d, "invalid_utf8", start, "text string is not valid UTF-8")
    if Prof is ProfDcbor:
        if kind == CU_UNICODE:
            nfc_check(d, start, (<const char *>s)[:n].decode("utf-8"))
    return 0


cdef int chk_tag(Dec *d, Prof *prof, Frame *f) except -1:
    """A completed tag's checks on its content, whose head is at f.key_start."""
    cdef Py_ssize_t at = f.key_start
    cdef uint8_t ib = d.p[at]
    cdef int ai = ib & 0x1f
    cdef Py_ssize_t length = 0, payload = at + 1
    cdef const uint8_t *s
    if ib >> 5 == 2:  # a byte string (its head was checked when it was read)
        if ai < 24:
            length = ai
        elif ai == 24:
            length = d.p[at + 1]
            payload = at + 2
        elif ai == 25:
            length = cd_be16(d.p + at + 1)
            payload = at + 3
        elif ai == 26:
            length = cd_be32(d.p + at + 1)
            payload = at + 5
        else:
            length = <Py_ssize_t>cd_be64(d.p + at + 1)
            payload = at + 9
    if Prof is ProfCore:
        if f.n == 2 or f.n == 3:
            if ib >> 5 != 2:
                derr(d, "unsupported_item", f.head,
                     f"bignum tag {f.n} content is not a byte string")
            if length > 0 and d.p[payload] == 0:
                derr(d, "non_shortest_integer", f.head, "bignum with a leading zero byte")
            if length <= 8:
                derr(d, "non_shortest_integer", f.head,
                     "bignum whose value fits a major type 0/1 integer")
    elif Prof is ProfDag:
        s = d.p + payload
        if ib >> 5 != 2 or length == 0 or s[0] != 0:
            derr(d, "invalid_link", f.head, "tag 42 content is not a byte string starting 0x00")
        if not cd_cid_ok(s + 1, length - 1):
            derr(d, "invalid_link", f.head, cid_problem((<const char *>s)[1:length]))
    return 0


cdef inline int child_level(Frame *f) noexcept:
    """The key level a container opened now would have (see Frame.klevel)."""
    if f == NULL:
        return 0
    if f.klevel:
        return f.klevel + 1
    return 1 if f.want_key else 0


cdef inline int enter_fast(Dec *d, Py_ssize_t start, int klevel, int kind,
                           uint64_t n) except -1:
    if cd_unlikely(d.depth >= d.max_depth or d.depth >= d.release_depth or
                   klevel > _MAX_KEY_DEPTH or d.max_items >= 0):
        enter(d, start, klevel, kind, n)
    return 0


cdef int chk_loop(Dec *d, Prof *prof) except -1:
    """Validate the item at d.pos (decode's checks and order, no values); leaves d.pos
    after it. Map frames keep the offset of their next key in ``key_start`` and tag
    frames the offset of their content."""
    cdef const uint8_t *p = d.p
    cdef Py_ssize_t n = d.n
    cdef Py_ssize_t pos = d.pos
    cdef Py_ssize_t start, w
    cdef Frame *f = NULL
    cdef uint8_t ib
    cdef int major, ai, klevel, kind
    cdef uint64_t arg
    cdef int c
    cdef bint key_next = False  # dag-cbor: the next item is a map key
    cdef double x
    cdef int profile
    if Prof is ProfCore:
        profile = P_CORE
    elif Prof is ProfDcbor:
        profile = P_DCBOR
    else:
        profile = P_DAG
    while True:
        start = pos
        if cd_unlikely(start >= n):
            if f != NULL:
                dshort(d, f.head, "input ends inside a container")
            dshort(d, start, "input ends before this data item")
        ib = p[start]
        major = ib >> 5
        ai = ib & 0x1f
        arg = 0
        if ai < 24:
            arg = ai
            pos = start + 1
        elif cd_likely(ai < 28):
            w = 1 << (ai - 24)
            if cd_unlikely(n - start - 1 < w):
                dshort(d, start, "input ends inside a head")
            if ai == 24:
                arg = p[start + 1]
            elif ai == 25:
                arg = cd_be16(p + start + 1)
            elif ai == 26:
                arg = cd_be32(p + start + 1)
            else:
                arg = cd_be64(p + start + 1)
            if major != 7:
                if cd_unlikely(non_shortest(ai, arg)):
                    arg_error(d, start, major, ai, arg)
            elif ai == 24 and arg < 32:
                arg_error(d, start, major, ai, arg)
            pos = start + 1 + w
        else:
            head_error(d, start, major, ai)
        if Prof is ProfDag:
            if key_next:  # a key the short-text path did not take
                key_next = False
                if major != 3:
                    key_type_error(d, start)

        if major == 3 or major == 2:
            if cd_unlikely(arg > <uint64_t>(n - pos)):
                dshort(d, start, f"string of {arg} bytes runs past the end")
            if major == 3:
                if arg >= LONG_TEXT:
                    chk_long_text(d, prof, start, pos, <Py_ssize_t>arg)
                elif not ascii_text(d, pos, <Py_ssize_t>arg):
                    chk_text(d, prof, start, pos, <Py_ssize_t>arg)
            pos += <Py_ssize_t>arg
        elif major == 4 or major == 5:
            kind = F_ARRAY if major == 4 else F_MAP
            klevel = child_level(f)
            enter_fast(d, start, klevel, kind, arg)
            if arg:
                f = open_frame(d, kind, start, arg, klevel)
                f.key_start = pos
                if kind == F_MAP:  # the first key, when a short ASCII text
                    w = cd_short_ascii_key(p, n, d.full_n, pos)
                    if w >= 0:
                        c = cd_key_order(p, d.full_n, pos, w, &f.prev_start, &f.prev_len)
                        if cd_unlikely(c >= 0):
                            key_order_error(d, f, c)
                        f.want_key = False
                        pos = w
                    else:
                        key_next = True
                continue
        elif major == 7:
            if ai >= 25:
                # the value is not needed: core and dag-cbor test the bits only
                if Prof is ProfDcbor:
                    float_ok(d, start, profile, ai, arg, &x)
                elif Prof is ProfDag:
                    if ai != 27 or (arg & 0x7ff0000000000000ULL) == 0x7ff0000000000000ULL or \
                            arg == 0x8000000000000000ULL:
                        float_ok(d, start, profile, ai, arg, &x)  # raises
                elif (cd_double_fits_single(arg) if ai == 27 else
                      (ai == 26 and cd_single_fits_half(<uint32_t>arg))):
                    float_ok(d, start, profile, ai, arg, &x)  # raises
            elif arg < 20 or arg > 22:
                if Prof is ProfDcbor:
                    simple_error(d, start, P_DCBOR, arg)
                elif Prof is ProfDag:
                    simple_error(d, start, P_DAG, arg)
        elif major == 1:
            if Prof is ProfDcbor:
                if arg >= 0x8000000000000000ULL:
                    derr(d, "integer_out_of_range", start,
                         "negative integer below -2^63 (dcbor)")
        elif major == 6:
            if Prof is ProfDag:
                if arg != 42:
                    tag_error(d, start, P_DAG, arg)
            elif Prof is ProfDcbor:
                if arg == 2 or arg == 3:
                    tag_error(d, start, P_DCBOR, arg)
            klevel = child_level(f)
            enter_fast(d, start, klevel, F_TAG, 1)
            f = open_frame(d, F_TAG, start, arg, klevel)
            f.key_start = pos
            continue

        # ---- the item is complete: account for it in the enclosing frames -----------
        while True:
            if f == NULL:
                d.pos = pos
                return 0
            if f.kind == F_ARRAY:
                f.i += 1
                if f.i < f.n:
                    break
            elif f.kind == F_MAP:
                if f.want_key:
                    key_order(d, f, pos)
                    f.want_key = False
                    break
                f.want_key = True
                f.key_start = pos
                f.i += 1
                if f.i < f.n:  # the next key, when a short ASCII text
                    w = cd_short_ascii_key(p, n, d.full_n, pos)
                    if w >= 0:
                        c = cd_key_order(p, d.full_n, pos, w, &f.prev_start, &f.prev_len)
                        if cd_unlikely(c >= 0):
                            key_order_error(d, f, c)
                        f.want_key = False
                        pos = w
                    else:
                        key_next = True
                    break
            elif Prof is ProfDcbor:
                pass  # dcbor has no tag content rules
            elif Prof is ProfCore:
                if f.n == 2 or f.n == 3:
                    chk_tag(d, prof, f)
            else:
                chk_tag(d, prof, f)
            d.depth -= 1
            f = &d.frames[d.depth - 1] if d.depth else NULL


# --- one item ---------------------------------------------------------------------------

cdef int start_dec(Dec *d, object data, const uint8_t *p, Py_ssize_t n, Py_ssize_t start,
                   const Opts *o, bint build) except -1:
    d.p = p
    d.full_n = n
    d.n = n if o.max_size < 0 or o.max_size >= n - start else start + o.max_size
    d.pos = start
    d.max_depth = o.max_depth
    d.max_size = o.max_size
    d.max_items = o.max_items
    d.items_left = o.max_items
    d.tag_hook = o.tag_hook
    d.object_hook = o.object_hook
    d.build = build
    d.data = <PyObject *>data
    d.frames = d.inline_frames
    d.depth = 0
    d.release_depth = RELEASE_CHECK_DEPTH if build else NO_DEPTH_LIMIT
    d.release_measured = not build
    d.fcap = INLINE_FRAMES
    if start == n:
        derr(d, "empty_input", start, "empty input")
    return 0


cdef object read_item(object data, const uint8_t *p, Py_ssize_t n, Py_ssize_t start,
                      const Opts *o, bint whole, Py_ssize_t *end):
    """Decode the item at ``start``; ``whole``: it must end at ``n`` (else trailing_data)."""
    cdef Dec d
    cdef int gc_was_enabled
    cdef PyObject *r
    start_dec(&d, data, p, n, start, o, True)
    # Decoding creates many containers and none can be garbage yet: pause the cyclic GC
    # (it would otherwise rescan the growing result on every young-generation pass).
    gc_was_enabled = PyGC_Disable()
    try:
        if o.profile == P_CORE:
            r = dec_loop(&d, <ProfCore *>NULL)
        elif o.profile == P_DCBOR:
            r = dec_loop(&d, <ProfDcbor *>NULL)
        else:
            r = dec_loop(&d, <ProfDag *>NULL)
    finally:
        if gc_was_enabled:
            PyGC_Enable()
        release_frames(&d)
    value = <object>r
    Py_DECREF(value)  # the loop's reference, now held by ``value``
    if whole and d.pos != n:
        derr(&d, "trailing_data", d.pos, "bytes after the top-level item")
    end[0] = d.pos
    return value


cdef Py_ssize_t check_item(object data, const uint8_t *p, Py_ssize_t n, Py_ssize_t start,
                           const Opts *o, bint whole) except -1:
    """Validate the item at ``start``; returns the offset after it. The first pass
    (cbor_check.h) accepts the common valid item; chk_loop validates from the start
    whatever it leaves, and chk_loop alone refuses."""
    cdef Dec d
    cdef Py_ssize_t end
    if o.max_items < 0:
        end = ck_fast_check(p, n if o.max_size < 0 or o.max_size >= n - start
                            else start + o.max_size, n, start, o.max_depth, o.profile)
        if end >= 0 and (end == n or not whole):
            return end
    start_dec(&d, data, p, n, start, o, False)
    try:
        if o.profile == P_CORE:
            chk_loop(&d, <ProfCore *>NULL)
        elif o.profile == P_DCBOR:
            chk_loop(&d, <ProfDcbor *>NULL)
        else:
            chk_loop(&d, <ProfDag *>NULL)
    finally:
        release_frames(&d)
    if whole and d.pos != n:
        derr(&d, "trailing_data", d.pos, "bytes after the top-level item")
    return d.pos


# --- buffers and options ------------------------------------------------------------------

cdef int get_view(object data, Py_buffer *view) except -1:
    if not PyObject_CheckBuffer(data):
        raise InputTypeError(f"decode() needs a bytes-like object, not {type(data).__name__}")
    try:
        PyObject_GetBuffer(data, view, PyBUF_C_CONTIGUOUS)
    except BufferError as exc:
        raise InputTypeError(f"decode() needs a C-contiguous buffer: {exc}") from None
    return 0


cdef int whole_input_limit(object data, Py_ssize_t n, const Opts *o) except -1:
    if o.max_size >= 0 and n > o.max_size:
        raise input_over_max_size(data, n, o.max_size)
    return 0


cdef object decode_with(object data, const Opts *o):
    """Exactly one item filling ``data``."""
    cdef Py_buffer view
    cdef Py_ssize_t end
    if type(data) is bytes:
        whole_input_limit(data, len(<bytes>data), o)
        return read_item(data, <const uint8_t *><char *><bytes>data, len(<bytes>data), 0, o,
                         True, &end)
    get_view(data, &view)
    try:
        whole_input_limit(data, view.len, o)
        return read_item(data, <const uint8_t *>view.buf, view.len, 0, o, True, &end)
    finally:
        PyBuffer_Release(&view)


cdef int check_with(object data, const Opts *o) except -1:
    cdef Py_buffer view
    if type(data) is bytes:
        whole_input_limit(data, len(<bytes>data), o)
        check_item(data, <const uint8_t *><char *><bytes>data, len(<bytes>data), 0, o, True)
        return 0
    get_view(data, &view)
    try:
        whole_input_limit(data, view.len, o)
        check_item(data, <const uint8_t *>view.buf, view.len, 0, o, True)
    finally:
        PyBuffer_Release(&view)
    return 0


cdef object decode_prefix_with(object data, object offset, const Opts *o):
    cdef Py_buffer view
    cdef Py_ssize_t end, start, n
    if type(data) is bytes:  # no buffer to acquire and release
        n = len(<bytes>data)
        start = ck_offset(<PyObject *>offset, n)
        if start < 0:
            start = check_offset(offset, n)
        value = read_item(data, <const uint8_t *><char *><bytes>data, n, start, o, False, &end)
        return value, end
    get_view(data, &view)
    try:
        start = ck_offset(<PyObject *>offset, view.len)
        if start < 0:
            start = check_offset(offset, view.len)
        value = read_item(data, <const uint8_t *>view.buf, view.len, start, o, False, &end)
    finally:
        PyBuffer_Release(&view)
    return value, end


cdef Py_ssize_t check_prefix_with(object data, object offset, const Opts *o) except -1:
    cdef Py_buffer view
    cdef Py_ssize_t start, end
    get_view(data, &view)
    try:
        start = check_offset(offset, view.len)
        end = check_item(data, <const uint8_t *>view.buf, view.len, start, o, False)
    finally:
        PyBuffer_Release(&view)
    return end


cdef Py_ssize_t check_sequence_with(object data, const Opts *o) except -1:
    cdef Py_buffer view
    cdef Py_ssize_t pos = 0, count = 0
    get_view(data, &view)
    try:
        while pos < view.len:
            pos = check_item(data, <const uint8_t *>view.buf, view.len, pos, o, False)
            count += 1
    finally:
        PyBuffer_Release(&view)
    return count


# The options of a call that passes none, one read-only set per profile: the module
# functions' common call parses and builds nothing. They hold no hook and nothing writes
# them after import (each call's state is its own ``Dec`` on the C stack), so any number
# of threads and nested calls (a hook calling ``decode``) read them at once.
cdef Opts DEFAULT_OPTS[3]
for _k in range(3):
    DEFAULT_OPTS[_k].profile = <int>_k
    DEFAULT_OPTS[_k].max_depth = DEFAULT_MAX_DEPTH if DEFAULT_MAX_DEPTH < 0x7fffffff \
        else 0x7fffffff
    DEFAULT_OPTS[_k].max_size = -1
    DEFAULT_OPTS[_k].max_items = -1
    DEFAULT_OPTS[_k].tag_hook = NULL
    DEFAULT_OPTS[_k].object_hook = NULL
cdef object _DEFAULT_MAX_DEPTH = DEFAULT_MAX_DEPTH


cdef inline const Opts *call_opts(Opts *o, object profile, object max_depth, object max_size,
                                  object max_items, object tag_hook,
                                  object object_hook) except NULL:
    """A module function's options: the profile's ``DEFAULT_OPTS`` when only ``profile``
    is given, else ``o`` filled and checked by ``set_opts``."""
    if (max_depth is _DEFAULT_MAX_DEPTH and max_size is None and max_items is None
            and tag_hook is None and object_hook is None):
        return &DEFAULT_OPTS[profile_id(profile)]
    set_opts(o, profile, max_depth, max_size, max_items, tag_hook, object_hook)
    return o


cdef Py_ssize_t clip_limit(object value) except -2:
    return value if value < 0x7fffffffffffffff else 0x7fffffffffffffff


cdef int set_opts(Opts *o, object profile, object max_depth, object max_size,
                  object max_items, object tag_hook, object object_hook) except -1:
    o.profile = profile_id(profile)
    if type(max_depth) is not int or max_depth < 0:
        check_max_depth(max_depth)  # raises unless an int subclass (bool)
    o.max_depth = max_depth if max_depth < 0x7fffffff else 0x7fffffff
    o.max_size = -1 if max_size is None else clip_limit(check_limit("max_size", max_size))
    o.max_items = -1 if max_items is None else clip_limit(check_limit("max_items", max_items))
    check_hook("tag_hook", tag_hook)
    check_hook("object_hook", object_hook)
    o.tag_hook = NULL if tag_hook is None else <PyObject *>tag_hook  # borrowed: the
    o.object_hook = NULL if object_hook is None else <PyObject *>object_hook  # caller's
    return 0


# --- API ----------------------------------------------------------------------------------

cu_utf8_init()  # the widest UTF-8 kernel this CPU runs, chosen once

_UTF8_KERNELS = ("scalar", "sse4.1", "avx2", "avx512")


def _utf8_kernels():
    """The UTF-8 validation kernels this CPU runs, narrowest first (tests compare them)."""
    return _UTF8_KERNELS[:cu_utf8_best() + 1]


def _utf8_raw(name, data):
    """The UTF-8 kernel ``name`` itself on the bytes ``data``: 0 (invalid), 1 (valid, not
    all ASCII) or 2 (all ASCII); None where it does not take that many bytes. A test hook
    (``ValueError`` for a kernel this CPU does not run)."""
    cdef bytes b = bytes(data)
    cdef int r
    if name not in _UTF8_KERNELS or _UTF8_KERNELS.index(name) > cu_utf8_best():
        raise ValueError(f"UTF-8 kernel {name!r} is not one of {_utf8_kernels()}")
    r = cu_utf8_raw(_UTF8_KERNELS.index(name), <const uint8_t *><char *>b, len(b))
    return None if r < 0 else r


def _first_pass(data, profile="core", max_depth=DEFAULT_MAX_DEPTH):
    """The answer of ``check``'s first pass (cbor_check.h) alone on the item at the start
    of the bytes ``data``: the offset after it, or None when it leaves the item to the
    full validator. A test hook."""
    cdef bytes b = bytes(data)
    cdef Py_ssize_t end
    global ck_fast_enabled
    cdef int was = ck_fast_enabled
    ck_fast_enabled = 1
    try:
        end = ck_fast_check(<const uint8_t *><char *>b, len(b), len(b), 0,
                            min(max_depth, 0x7fffffff), profile_id(profile))
    finally:
        ck_fast_enabled = was
    return None if end < 0 else end


def _check_first_pass(enabled=None):
    """Whether ``check`` runs its first pass (cbor_check.h) before the full validator;
    with ``enabled``, turn it on or off from now on and return the previous setting. A
    test hook: with and without it, ``check`` accepts and refuses the same inputs."""
    global ck_fast_enabled
    cdef bint previous = ck_fast_enabled
    if enabled is not None:
        ck_fast_enabled = 1 if enabled else 0
    return previous


def _utf8_kernel(name=None):
    """The UTF-8 kernel ``check`` uses (strings shorter than a vector block always take the
    scalar one); with ``name``, use that one from now on and return the previous name.
    A test hook: ``ValueError`` for a kernel this CPU does not run."""
    cdef str previous = _UTF8_KERNELS[cu_utf8_kernel]
    if name is not None:
        if name not in _UTF8_KERNELS or cu_utf8_select(_UTF8_KERNELS.index(name)) < 0:
            raise ValueError(f"UTF-8 kernel {name!r} is not one of {_utf8_kernels()}")
    return previous


@cython.boundscheck(False)  # audited: the indexes are in range by construction
@cython.wraparound(False)
def decode(data, /, *, profile="core", max_depth=DEFAULT_MAX_DEPTH, max_size=None,
           max_items=None, tag_hook=None, object_hook=None):
    """Decode exactly one deterministic CBOR data item from a bytes-like ``data``."""
    cdef Opts o
    return decode_with(data, call_opts(&o, profile, max_depth, max_size, max_items, tag_hook,
                                       object_hook))


def check(data, /, *, profile="core", max_depth=DEFAULT_MAX_DEPTH, max_size=None,
          max_items=None):
    """Validate exactly one data item without building values; raises what ``decode``
    raises, except that valid maps whose keys are equal as Python values pass."""
    cdef Opts o
    check_with(data, call_opts(&o, profile, max_depth, max_size, max_items, None, None))


def decode_prefix(data, offset=0, /, *, profile="core", max_depth=DEFAULT_MAX_DEPTH,
                  max_size=None, max_items=None, tag_hook=None, object_hook=None):
    """Decode the one data item starting at ``offset``: ``(value, end)``."""
    cdef Opts o
    return decode_prefix_with(data, offset, call_opts(&o, profile, max_depth, max_size,
                                                      max_items, tag_hook, object_hook))


def check_prefix(data, offset=0, /, *, profile="core", max_depth=DEFAULT_MAX_DEPTH,
                 max_size=None, max_items=None):
    """Validate the one data item starting at ``offset``; returns the offset after it."""
    cdef Opts o
    return check_prefix_with(data, offset, call_opts(&o, profile, max_depth, max_size,
                                                     max_items, None, None))


def check_sequence(data, /, *, profile="core", max_depth=DEFAULT_MAX_DEPTH, max_size=None,
                   max_items=None):
    """Validate a CBOR sequence (RFC 8742) item by item; returns the number of items."""
    cdef Opts o
    return check_sequence_with(data, call_opts(&o, profile, max_depth, max_size, max_items,
                                               None, None))


def iter_sequence(source, /, *, profile="core", max_depth=DEFAULT_MAX_DEPTH, max_size=None,
                  max_items=None, tag_hook=None, object_hook=None):
    """The items of a CBOR sequence from a bytes-like object or a binary file."""
    return Decoder(profile=profile, max_depth=max_depth, max_size=max_size,
                   max_items=max_items, tag_hook=tag_hook,
                   object_hook=object_hook).iter_sequence(source)


def load(fp, /, *, profile="core", max_depth=DEFAULT_MAX_DEPTH, max_size=None,
         max_items=None, tag_hook=None, object_hook=None):
    """Decode the one data item that fills the rest of binary file ``fp``."""
    return Decoder(profile=profile, max_depth=max_depth, max_size=max_size,
                   max_items=max_items, tag_hook=tag_hook, object_hook=object_hook).load(fp)


# --- entry points: the common call without keyword parsing (cbor_entry.pxi) ------------

include "cbor_entry.pxi"


cdef inline const Opts *profile_opts(PyObject *profile) except NULL:
    return &DEFAULT_OPTS[P_CORE if profile == NULL else profile_id(<object>profile)]


cdef PyObject *decode_fast(PyObject **args, Py_ssize_t nargs, PyObject *profile) except NULL:
    return new_ref(decode_with(<object>args[0], profile_opts(profile)))


cdef PyObject *check_fast(PyObject **args, Py_ssize_t nargs, PyObject *profile) except NULL:
    check_with(<object>args[0], profile_opts(profile))
    return new_ref(None)


cdef PyObject *decode_prefix_fast(PyObject **args, Py_ssize_t nargs,
                                  PyObject *profile) except NULL:
    cdef const Opts *o = profile_opts(profile)
    return new_ref(decode_prefix_with(<object>args[0], <object>args[1] if nargs == 2 else 0, o))


cdef PyObject *check_prefix_fast(PyObject **args, Py_ssize_t nargs,
                                 PyObject *profile) except NULL:
    cdef const Opts *o = profile_opts(profile)
    return new_ref(check_prefix_with(<object>args[0], <object>args[1] if nargs == 2 else 0, o))


_OPTIONS = f"profile='core', max_depth={DEFAULT_MAX_DEPTH}, max_size=None, max_items=None"
_HOOKS = "tag_hook=None, object_hook=None"
install_entry(globals(), 0, "decode", f"(data, /, *, {_OPTIONS}, {_HOOKS})", decode_fast, 1)
install_entry(globals(), 1, "check", f"(data, /, *, {_OPTIONS})", check_fast, 1)
install_entry(globals(), 2, "decode_prefix", f"(data, offset=0, /, *, {_OPTIONS}, {_HOOKS})",
              decode_prefix_fast, 2)
install_entry(globals(), 3, "check_prefix", f"(data, offset=0, /, *, {_OPTIONS})",
              check_prefix_fast, 2)


# methods as method descriptors, which the interpreter calls directly; "clinic" signatures
# keep inspect.signature working on them
@cython.binding(False)
@cython.embedsignature.format("clinic")
cdef class Decoder:
    """A reusable strict decoder for one profile, set of limits and hooks.

    Its hooks are held by borrowed pointers while a call runs, so ``__init__`` raises
    ``InUseError`` while one of the decoder's calls is running (a hook may call the decoder
    again, never re-initialise it)."""

    cdef Opts _o
    cdef Py_ssize_t _running  # calls of this decoder under way (a hook may call in again)
    cdef readonly str profile
    cdef readonly object max_depth
    cdef readonly object max_size
    cdef readonly object max_items
    cdef readonly object tag_hook
    cdef readonly object object_hook

    def __init__(self, *, profile="core", max_depth=DEFAULT_MAX_DEPTH, max_size=None,
                 max_items=None, tag_hook=None, object_hook=None):
        cdef Opts o = self._o
        if self._running:
            raise InUseError("Decoder.__init__ while one of its calls is running "
                             "(a hook may use the decoder, never re-initialise it)")
        set_opts(&o, profile, max_depth, max_size, max_items, tag_hook, object_hook)
        self._o = o
        self.profile = PROFILE_NAMES[self._o.profile]
        self.max_depth = max_depth
        self.max_size = max_size
        self.max_items = max_items
        self.tag_hook = tag_hook  # keeps the borrowed pointers in _o alive
        self.object_hook = object_hook

    def decode(self, data):
        """Decode exactly one data item filling ``data``."""
        self._running += 1
        try:
            return decode_with(data, &self._o)
        finally:
            self._running -= 1

    def check(self, data):
        """Validate exactly one data item filling ``data`` (see ``check``)."""
        self._running += 1
        try:
            check_with(data, &self._o)
        finally:
            self._running -= 1

    def decode_prefix(self, data, offset=0):
        """Decode the item at ``offset``: ``(value, offset after it)``."""
        self._running += 1
        try:
            return decode_prefix_with(data, offset, &self._o)
        finally:
            self._running -= 1

    def check_prefix(self, data, offset=0):
        """Validate the item at ``offset``; returns the offset after it."""
        self._running += 1
        try:
            return check_prefix_with(data, offset, &self._o)
        finally:
            self._running -= 1

    def check_sequence(self, data):
        """Validate a CBOR sequence; returns the number of items."""
        self._running += 1
        try:
            return check_sequence_with(data, &self._o)
        finally:
            self._running -= 1

    def iter_sequence(self, source):
        """The items of a CBOR sequence (bytes-like object or binary file)."""
        return _cbor_stream.iter_sequence(self.decode_prefix, source)

    def load(self, fp):
        """Decode the one item filling the rest of binary file ``fp``."""
        self._running += 1   # fp.read is Python code too
        try:
            return decode_with(_cbor_stream.read_for_load(fp, self.max_size), &self._o)
        finally:
            self._running -= 1
