"""Compiled ASTP Layer 3 Form B kernel (ASTP.md §19.2): the field-ordered compact JSON of a
Layer 3 node, written straight into one C buffer, and its SHA3-256.

Values of exact JSON types (dict, list, str, int, float, bool, None) and top-level fields
already in their §19.2 form are written in C; anything else (UUID and datetime objects,
enumerations, subclasses, other mappings, records) goes through the shared
``canonkit.astp._py.common.l3_field``/``l3_value`` first, exactly as the twin does. Strings are
escaped as ``json.dumps(..., ensure_ascii=False)`` escapes them; floats are their ``repr``
text. Twin: ``canonkit.astp._py.formb`` (docs/astp-kernel-api.md).
"""
from cpython.dict cimport PyDict_GetItem, PyDict_Next
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from cpython.ref cimport PyObject
from cpython.set cimport PySet_Contains
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE
from libc.string cimport memcmp

from cpython.datetime cimport (
    datetime_day, datetime_hour, datetime_microsecond, datetime_minute, datetime_month,
    datetime_second, datetime_year, import_datetime,
)

from collections.abc import Mapping
from datetime import datetime, timezone
from uuid import UUID

from canonkit.astp._py.common import (
    L3_DATETIME, L3_ENUM, L3_INT, L3_MAX_DEPTH, L3_OBJECT, L3_TEXT, L3_UUID, l3_field, l3_value,
)
from canonkit._files import MAX_INTEGER_DIGITS
from canonkit.errors import InvalidFieldError

import pickle

include "astp_kernel.pxi"
include "astp_json_out.pxi"
include "astp_hex_text.pxi"

__all__ = ["copy_stored", "form_b", "form_b_hash", "json_value", "stored_node"]


cdef extern from "Python.h":
    char *PyOS_double_to_string(double val, char format_code, int precision, int flags,
                                int *ptype) except NULL
    void PyMem_Free_char "PyMem_Free"(char *p)
    const char *PyUnicode_AsUTF8AndSize(object o, Py_ssize_t *size) except NULL
    int Py_DTSF_ADD_DOT_0


cdef enum:
    NOGIL_THRESHOLD = 4096

cdef object _UTC = timezone.utc
cdef object _UUID = UUID
cdef object _LOW64 = (1 << 64) - 1
import_datetime()


cdef inline void _digits(char *at, long value, int width) noexcept:
    cdef int k
    for k in range(width - 1, -1, -1):
        at[k] = <char>(48 + value % 10)
        value //= 10


cdef str _utc_text(object value):
    """``value.isoformat()`` of an exact ``datetime`` whose tzinfo is ``timezone.utc`` (what
    ``l3_datetime`` makes of it), written here."""
    cdef char text[32]
    cdef long micro = datetime_microsecond(value)
    cdef int n = 19
    _digits(text, datetime_year(value), 4)
    text[4] = 45
    _digits(text + 5, datetime_month(value), 2)
    text[7] = 45
    _digits(text + 8, datetime_day(value), 2)
    text[10] = 84
    _digits(text + 11, datetime_hour(value), 2)
    text[13] = 58
    _digits(text + 14, datetime_minute(value), 2)
    text[16] = 58
    _digits(text + 17, datetime_second(value), 2)
    if micro:
        text[19] = 46
        _digits(text + 20, micro, 6)
        n = 26
    memcpy(text + n, b"+00:00", 6)
    return text[:n + 6].decode("ascii")


cdef str _uuid_str(object value):
    """``str(value)`` of an exact ``uuid.UUID``: its 128 bits as 8-4-4-4-12 lowercase hex."""
    cdef object number = value.int
    cdef unsigned long long halves[2]
    cdef char text[36]
    cdef int i, k = 0, nibble
    halves[0] = number >> 64
    halves[1] = number & _LOW64
    for i in range(32):
        if i == 8 or i == 12 or i == 16 or i == 20:
            text[k] = 45
            k += 1
        nibble = <int>((halves[i // 16] >> (60 - 4 * (i % 16))) & 15)
        text[k] = _HEX[nibble]
        k += 1
    return text[:36].decode("ascii")


cdef int _text(Out *out, object text) except -1:
    """A JSON string as ``json.dumps(..., ensure_ascii=False)`` writes it, in UTF-8."""
    cdef Py_ssize_t n
    cdef const unsigned char *p
    if PyUnicode_IS_ASCII(text):
        p = <const unsigned char *>PyUnicode_DATA(text)
        n = PyUnicode_GET_LENGTH(text)
    else:
        try:
            p = <const unsigned char *>PyUnicode_AsUTF8AndSize(text, &n)
        except UnicodeEncodeError as exc:
            raise InvalidFieldError(f"Form B text is not encodable as UTF-8: {exc.reason}") from None
    return _escaped(out, p, n)


cdef int _float(Out *out, double x) except -1:
    """``repr(x)`` as a JSON string (``"2.5"``, ``"1e+16"``, ``"nan"``, ``"-inf"``)."""
    cdef char *text = PyOS_double_to_string(x, 114, 0, Py_DTSF_ADD_DOT_0, NULL)   # 'r'epr
    cdef Py_ssize_t n = 0
    while text[n]:
        n += 1
    try:
        _byte(out, 34)
        _put(out, text, n)
        _byte(out, 34)
    finally:
        PyMem_Free_char(text)
    return 0


cdef int _value(Out *out, object value, int depth) except -1:
    """One value of exact JSON type in C; anything else through ``l3_value`` first."""
    cdef type t = type(value)
    cdef Py_ssize_t i
    cdef bint first = True
    if value is None:
        return _put(out, b"null", 4)
    if value is True:
        return _put(out, b"true", 4)
    if value is False:
        return _put(out, b"false", 5)
    if t is str:
        return _text(out, value)
    if t is int:
        return _int(out, value)
    if t is float:
        return _float(out, <double>value)
    if t is dict or t is list:
        if depth >= L3_MAX_DEPTH:
            raise InvalidFieldError(f"Form B value nested deeper than {L3_MAX_DEPTH} containers")
        if t is list:
            _byte(out, 91)
            i = 0
            while i < PyList_GET_SIZE(value):   # re-read: an item's conversion may run code
                if i:
                    _byte(out, 44)
                _value(out, <object>PyList_GET_ITEM(value, i), depth + 1)
                i += 1
            return _byte(out, 93)
        _byte(out, 123)
        for k, v in (<dict>value).items():   # iteration fails loudly if a value mutates it
            if type(k) is not str:
                if not isinstance(k, str):
                    raise InvalidFieldError(
                        f"Form B object keys must be text, got {type(k).__name__}")
                k = str.__str__(k)
            if not first:
                _byte(out, 44)
            first = False
            _text(out, k)
            _byte(out, 58)
            _value(out, v, depth + 1)
        return _byte(out, 125)
    return _value(out, l3_value(value, depth), depth)


cdef bint _datetime_text(object value):
    """Exact text ``YYYY-MM-DDTHH:MM:SS[.ffffff]+00:00`` naming a real instant, as
    ``isoformat`` writes it (six fraction digits only when not all zero)."""
    cdef Py_ssize_t n
    cdef const unsigned char *p
    cdef int k, year, month, day, hour, minute, second, days
    if type(value) is not str or not PyUnicode_IS_ASCII(value):
        return False
    n = PyUnicode_GET_LENGTH(value)
    if n != 25 and n != 32:
        return False
    p = <const unsigned char *>PyUnicode_DATA(value)
    for k in range(n - 6):
        if k in (4, 7):
            if p[k] != 45:
                return False
        elif k == 10:
            if p[k] != 84:
                return False
        elif k in (13, 16):
            if p[k] != 58:
                return False
        elif k == 19:
            if p[k] != 46:
                return False
        elif p[k] < 48 or p[k] > 57:
            return False
    if memcmp(p + n - 6, b"+00:00", 6) != 0:
        return False
    if n == 32 and memcmp(p + 20, b"000000", 6) == 0:
        return False
    year = (p[0] - 48) * 1000 + (p[1] - 48) * 100 + (p[2] - 48) * 10 + (p[3] - 48)
    month = (p[5] - 48) * 10 + (p[6] - 48)
    day = (p[8] - 48) * 10 + (p[9] - 48)
    hour = (p[11] - 48) * 10 + (p[12] - 48)
    minute = (p[14] - 48) * 10 + (p[15] - 48)
    second = (p[17] - 48) * 10 + (p[18] - 48)
    if year < 1 or month < 1 or month > 12 or hour > 23 or minute > 59 or second > 59:
        return False
    if month == 2:
        days = 29 if (year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)) else 28
    elif month in (4, 6, 9, 11):
        days = 30
    else:
        days = 31
    return 1 <= day <= days


cdef int _field(Out *out, tuple entry, object value) except -1:
    """One top-level field: the common shapes in C, the rest through ``l3_field``."""
    cdef object name = <object>PyTuple_GET_ITEM(entry, 0)
    cdef int kind = <object>PyTuple_GET_ITEM(entry, 1)
    cdef object nullable = <object>PyTuple_GET_ITEM(entry, 2)
    cdef object allowed = <object>PyTuple_GET_ITEM(entry, 3)
    cdef type t = type(value)
    if value is None and nullable:
        return _put(out, b"null", 4)
    if kind == L3_TEXT and t is str:
        return _text(out, value)
    if kind == L3_UUID and _lower_hex(value, 36):
        return _text(out, value)
    if kind == L3_DATETIME and _datetime_text(value):
        return _text(out, value)
    if kind == L3_DATETIME and t is datetime and value.tzinfo is _UTC:   # l3_datetime's result
        return _text(out, _utc_text(value))
    if kind == L3_UUID and t is _UUID:                                  # l3_field's result
        return _text(out, _uuid_str(value))
    if kind == L3_INT and t is int and value >= 0:
        return _int(out, value)
    if kind == L3_ENUM and t is str and PySet_Contains(allowed, value):
        return _text(out, value)
    if kind == L3_OBJECT and t is dict:
        try:
            return _value(out, value, 0)
        except InvalidFieldError as exc:
            raise InvalidFieldError(f"{name}: {exc}", detail=name) from None
    return _value(out, l3_field(name, kind, nullable, allowed, value), 0)


#: each layout's field names as written before their values (``{"node_id":``,
#: ``,"node_type":``, ...), by the layout's identity (the layout is kept with them, so the
#: identity stays its own); callers pass a few long-lived layouts
cdef dict _HEADS = {}


cdef tuple _heads(tuple entries):
    cdef object cached = _HEADS.get(id(entries))
    cdef Out out
    cdef Py_ssize_t i
    cdef list heads = []
    if cached is not None and (<tuple>cached)[0] is entries:
        return <tuple>(<tuple>cached)[1]
    out.data = NULL
    out.size = out.room = 0
    try:
        for i in range(PyTuple_GET_SIZE(entries)):
            out.size = 0
            _byte(&out, 44 if i else 123)
            _text(&out, (<tuple>PyTuple_GET_ITEM(entries, i))[0])
            _byte(&out, 58)
            heads.append(PyBytes_FromStringAndSize(out.data, out.size))
    finally:
        PyMem_Free(out.data)
    if len(_HEADS) >= 32:
        _HEADS.clear()
    _HEADS[id(entries)] = (entries, tuple(heads))
    return tuple(heads)


cdef int _write(Out *out, object layout, object fields) except -1:
    cdef tuple entries = tuple(layout)
    cdef Py_ssize_t i, n = PyTuple_GET_SIZE(entries)
    cdef tuple entry, heads
    cdef object name, value, head
    cdef PyObject *ref
    cdef bint exact = type(fields) is dict
    if not exact and not isinstance(fields, Mapping):
        raise InvalidFieldError(f"Form B fields must be a mapping, got {type(fields).__name__}")
    heads = _heads(entries)
    if n == 0:
        _byte(out, 123)
    for i in range(n):
        entry = <tuple>PyTuple_GET_ITEM(entries, i)
        name = <object>PyTuple_GET_ITEM(entry, 0)
        if exact:
            ref = PyDict_GetItem(fields, name)
            if ref == NULL:
                raise InvalidFieldError(
                    f"{name}: missing (every field takes part, null or not)", detail=name)
            value = <object>ref
        else:
            if name not in fields:
                raise InvalidFieldError(
                    f"{name}: missing (every field takes part, null or not)", detail=name)
            value = fields[name]
        head = <object>PyTuple_GET_ITEM(heads, i)
        _put(out, PyBytes_AS_STRING(head), PyBytes_GET_SIZE(head))
        _field(out, entry, value)
    return _byte(out, 125)


def form_b(layout, fields) -> bytes:
    """The Form B preimage: the layout's fields, in order, as compact JSON in UTF-8."""
    cdef Out out
    out.data = NULL
    out.size = out.room = 0
    try:
        _write(&out, layout, fields)
        return PyBytes_FromStringAndSize(out.data, out.size)
    finally:
        PyMem_Free(out.data)


def form_b_hash(layout, fields) -> str:
    """SHA3-256 of ``form_b(layout, fields)``, as hex."""
    cdef Out out
    out.data = NULL
    out.size = out.room = 0
    try:
        _write(&out, layout, fields)
        return _digest_hex(&out)
    finally:
        PyMem_Free(out.data)


cdef str _digest_hex(Out *out):
    cdef uint8_t digest[32]
    if out.size >= NOGIL_THRESHOLD:
        with nogil:
            ck_sha3_256(<const uint8_t *>out.data, <size_t>out.size, digest)
    else:
        ck_sha3_256(<const uint8_t *>out.data, <size_t>out.size, digest)
    return _hex_of(digest)


#: integers at or past this magnitude have more digits than the strict JSON reader reads
cdef object _UNREADABLE = 10 ** MAX_INTEGER_DIGITS


cdef int _readable(object name, object value, int depth) except -1:
    """Refuses an integer the strict JSON reader would refuse, anywhere in a stored value
    (exact JSON types, at most ``L3_MAX_DEPTH`` deep: what Form B admitted)."""
    cdef type t = type(value)
    cdef int overflow = 0
    cdef Py_ssize_t i, pos = 0
    cdef PyObject *key
    cdef PyObject *item
    if t is int:
        PyLong_AsLongLongAndOverflow(value, &overflow)
        if overflow and not -_UNREADABLE < value < _UNREADABLE:
            raise InvalidFieldError(
                f"{name}: an integer of more than {MAX_INTEGER_DIGITS} digits; an export or "
                "journal holding it could not be read back", detail=name)
    elif t is dict:
        while PyDict_Next(value, &pos, &key, &item):
            _readable(name, <object>item, depth + 1)
    elif t is list:
        for i in range(PyList_GET_SIZE(value)):
            _readable(name, <object>PyList_GET_ITEM(value, i), depth + 1)
    return 0


def stored_node(layout, fields) -> tuple:
    """``(node, content_hash)``: the layout's fields as ``json_value`` makes them, in layout
    order (a node as a Layer 3 writer stores it), and ``form_b_hash(layout, fields)``.
    Refused as ``form_b`` refuses; then a field holding an integer of more than
    ``MAX_INTEGER_DIGITS`` digits, which the strict JSON reader would not read back
    (``InvalidFieldError`` naming the field)."""
    cdef Out out
    cdef str digest
    cdef dict node = {}
    cdef tuple entries = tuple(layout)
    cdef Py_ssize_t i
    out.data = NULL
    out.size = out.room = 0
    try:
        _write(&out, entries, fields)
        digest = _digest_hex(&out)
    finally:
        PyMem_Free(out.data)
    for i in range(PyTuple_GET_SIZE(entries)):
        name = (<tuple>PyTuple_GET_ITEM(entries, i))[0]
        node[name] = _json_value(fields[name], 0)
    for name, value in node.items():
        _readable(name, value, 0)
    return node, digest


cdef object _NOT_COPIED = object()


cdef object _copy(object value, int depth):
    """A deep copy of exact JSON values (floats kept), or ``_NOT_COPIED``."""
    cdef type t = type(value)
    cdef Py_ssize_t i, n, pos = 0
    cdef list items
    cdef dict members
    cdef PyObject *key
    cdef PyObject *item
    if t is str or t is int or t is float or t is bool or value is None:
        return value
    if depth >= L3_MAX_DEPTH:
        return _NOT_COPIED
    if t is list:
        n = PyList_GET_SIZE(value)
        items = [None] * n
        for i in range(n):
            copied = _copy(<object>PyList_GET_ITEM(value, i), depth + 1)
            if copied is _NOT_COPIED:
                return _NOT_COPIED
            items[i] = copied
        return items
    if t is dict:
        members = {}
        while PyDict_Next(value, &pos, &key, &item):
            copied = _copy(<object>item, depth + 1)
            if copied is _NOT_COPIED:
                return _NOT_COPIED
            members[<object>key] = copied
        return members
    return _NOT_COPIED


def copy_stored(value):
    """A deep copy of stored values: exact dicts, lists, text, integers of any size, floats,
    booleans and None, in C; anything else (or nested deeper than ``L3_MAX_DEPTH``) by a
    pickle round trip."""
    copied = _copy(value, 0)
    if copied is _NOT_COPIED:
        return pickle.loads(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
    return copied


cdef object _json_value(object value, int depth):
    """``l3_value`` of exact JSON types in C (a copy of containers, floats as their ``repr``
    text); anything else, and every refusal, through the shared ``l3_value``."""
    cdef type t = type(value)
    cdef Py_ssize_t i, n
    cdef list items
    cdef dict members
    cdef char *text
    if t is str or t is int or t is bool or value is None:
        return value
    if t is datetime and value.tzinfo is _UTC:     # what l3_datetime makes of it
        return _utc_text(value)
    if t is _UUID:                                 # what l3_value makes of it
        return _uuid_str(value)
    if t is float:
        text = PyOS_double_to_string(<double>value, 114, 0, Py_DTSF_ADD_DOT_0, NULL)
        try:
            return text.decode("ascii")
        finally:
            PyMem_Free_char(text)
    if (t is list or t is dict) and depth < L3_MAX_DEPTH:
        if t is list:
            n = PyList_GET_SIZE(value)
            items = [None] * n
            for i in range(n):
                items[i] = _json_value(<object>PyList_GET_ITEM(value, i), depth + 1)
            return items
        for k in (<dict>value):
            if type(k) is not str:
                return l3_value(value, depth)
        members = {}
        for k, v in (<dict>value).items():
            members[k] = _json_value(v, depth + 1)
        return members
    return l3_value(value, depth)


def json_value(value):
    """``l3_value(value)``: the exact JSON types Form B serializes (a deep copy of
    containers)."""
    return _json_value(value, 0)
