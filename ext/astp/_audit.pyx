"""Compiled ASTP audit kernel: §2.3 canonical JSON and the §14 audit record v2 hash, written
straight into C buffers, the record's fields and its SHA3-256 in one pass.

The fast path takes exact JSON types (dict with str keys, list, str, int, float, bool,
None) and records whose fields are already in their stored form (a dict; UUID, instant and
digest text; canonical delta text), and writes them in C. Everything else — other types
(tuples, subclasses, ``uuid.UUID``, datetimes), and every value or record that is refused —
is handed whole to the twin ``canonkit.astp._py.audit``, which decides: the fast path only
ever declines, so both backends give one answer and one error, with its path.

Stored canonical text is read by ``json.loads`` and accepted only when the canonical text
of what it read is the same bytes: a repeated key, whitespace, an escape or a number not in
canonical form all make the two differ (and the twin names the first difference), and
whatever the strict reader would refuse (non-finite numbers, lone surrogates, integers over
``MAX_INTEGER_DIGITS`` digits) is declined first. Twin: docs/astp-kernel-api.md.
"""
from cpython.dict cimport PyDict_GetItem, PyDict_Keys
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from cpython.ref cimport PyObject
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE
from libc.math cimport isfinite
from libc.string cimport memcmp

import json
import sys
import unicodedata

from canonkit.astp._py import audit as _twin
from canonkit.astp._py.common import AUDIT_FIELDS, CANONICAL_MAX_DEPTH
from canonkit._files import MAX_INTEGER_DIGITS

include "astp_kernel.pxi"
include "astp_json_out.pxi"
include "astp_instant_fields.pxi"

__all__ = ["audit_record_digest", "audit_record_hash", "canonical_json", "canonical_json_bytes",
           "es_number", "parse_canonical", "sealed_record"]


cdef extern from "Python.h":
    char *PyOS_double_to_string(double val, char format_code, int precision, int flags,
                                int *ptype) except NULL
    void PyMem_Free_char "PyMem_Free"(char *p)
    const char *PyUnicode_AsUTF8AndSize(object o, Py_ssize_t *size) except NULL
    object PyUnicode_DecodeUTF8(const char *s, Py_ssize_t size, const char *errors)
    int PyUnicode_KIND(object o)
    int Py_DTSF_ADD_DOT_0


cdef enum:
    NOGIL_THRESHOLD = 4096
    DECLINED = 0      # the fast path leaves this value or record to the twin
    WRITTEN = 1

cdef object _loads = json.loads
cdef object _normalize = unicodedata.normalize
cdef int _MAX_DEPTH = CANONICAL_MAX_DEPTH
cdef Py_ssize_t _MAX_DIGITS = MAX_INTEGER_DIGITS
cdef bytes _PREFIX = b"AUDIT_RECORD:v2:"
cdef object _NOT_READ = object()    # what ``_read_canonical`` gives for text it declines
#: the record's fields in hash order, each as (name, tag of its §2.1 kind)
cdef tuple _FIELDS


cdef enum Kind:
    K_UUID, K_STRING, K_STRING_OR_NULL, K_UINT, K_TIMESTAMP, K_BYTES, K_STRING_LIST, K_BOOL,
    K_HASH_OR_NULL


_FIELDS = tuple((name, {"UUID": K_UUID, "STRING": K_STRING, "STRING|NULL": K_STRING_OR_NULL,
                        "UINT": K_UINT, "TIMESTAMP": K_TIMESTAMP, "BYTES": K_BYTES,
                        "LIST(STRING)": K_STRING_LIST, "BOOL": K_BOOL,
                        "HASH|NULL": K_HASH_OR_NULL}[kind]) for name, kind in AUDIT_FIELDS)
cdef Py_ssize_t _CHAIN_KEY = [name for name, _ in AUDIT_FIELDS].index("chain_key")
cdef Py_ssize_t _FORWARD = [name for name, _ in AUDIT_FIELDS].index("forward_delta")


cdef void _init(Out *out) noexcept:
    out.data = NULL
    out.size = out.room = 0


cdef int _hex_nibble(unsigned char c) noexcept:
    if 48 <= c <= 57:
        return c - 48
    if 97 <= c <= 102:
        return c - 87
    if 65 <= c <= 70:
        return c - 55
    return -1


# --- canonical JSON ------------------------------------------------------------------------

cdef int _es_number(Out *out, double x) except -1:
    """ECMAScript ``Number::toString`` of a finite binary64, as the twin's ``es_number``
    derives it from ``repr(abs(x))``."""
    cdef char *text
    cdef char digits[32]
    cdef char body[64]
    cdef int i = 0, k = 0, point, lead, exp = 0, n, e, m = 0
    cdef bint negative = False, in_frac = False
    if x == 0:
        return _byte(out, 48)
    if x < 0:
        x = -x
        negative = True
    text = PyOS_double_to_string(x, 114, 0, Py_DTSF_ADD_DOT_0, NULL)   # repr
    try:
        point = 0
        while text[i] and text[i] != 101:        # the mantissa, up to 'e'
            if text[i] == 46:
                in_frac = True
            else:
                digits[k] = text[i]
                k += 1
                if not in_frac:
                    point += 1
            i += 1
        if text[i] == 101:
            i += 1
            e = 1
            if text[i] == 45:
                e = -1
                i += 1
            elif text[i] == 43:
                i += 1
            while text[i]:
                exp = exp * 10 + (text[i] - 48)
                i += 1
            point += e * exp
    finally:
        PyMem_Free_char(text)
    lead = 0
    while lead < k and digits[lead] == 48:
        lead += 1
    point -= lead
    while k > lead and digits[k - 1] == 48:
        k -= 1
    # value = 0.d1..dk × 10^point, the digits at digits[lead:k]
    n = point
    k -= lead
    if negative:
        body[m] = 45; m += 1
    if k <= n <= 21:
        for i in range(k):
            body[m] = digits[lead + i]; m += 1
        for i in range(n - k):
            body[m] = 48; m += 1
    elif 0 < n <= 21:
        for i in range(k):
            if i == n:
                body[m] = 46; m += 1
            body[m] = digits[lead + i]; m += 1
    elif -6 < n <= 0:
        body[m] = 48; body[m + 1] = 46; m += 2
        for i in range(-n):
            body[m] = 48; m += 1
        for i in range(k):
            body[m] = digits[lead + i]; m += 1
    else:
        e = n - 1
        body[m] = digits[lead]; m += 1
        if k > 1:
            body[m] = 46; m += 1
            for i in range(1, k):
                body[m] = digits[lead + i]; m += 1
        body[m] = 101; body[m + 1] = 43 if e >= 0 else 45; m += 2
        if e < 0:
            e = -e
        if e >= 100:
            body[m] = <char>(48 + e // 100); m += 1
        if e >= 10:
            body[m] = <char>(48 + (e // 10) % 10); m += 1
        body[m] = <char>(48 + e % 10); m += 1
    return _put(out, body, m)


cdef int _string(Out *out, object text, bint normalize) except -1:
    """A string (NFC first when ``normalize``); DECLINED for one holding a lone surrogate."""
    cdef Py_ssize_t n
    cdef const unsigned char *p
    if PyUnicode_IS_ASCII(text):
        _escaped(out, <const unsigned char *>PyUnicode_DATA(text), PyUnicode_GET_LENGTH(text))
        return WRITTEN
    if normalize:
        text = _normalize("NFC", text)
    try:
        p = <const unsigned char *>PyUnicode_AsUTF8AndSize(text, &n)
    except UnicodeEncodeError:
        return DECLINED
    _escaped(out, p, n)
    return WRITTEN


def _utf16_order(key):
    return key.encode("utf-16-be", "surrogatepass")


cdef int _object(Out *out, dict value, int depth, bint reading) except -1:
    """Members in the order of their NFC keys' UTF-16 code units; DECLINED for a key that is
    not exact text or keys that collide after NFC (the twin names them)."""
    cdef list keys = PyDict_Keys(value)
    cdef Py_ssize_t i, n = PyList_GET_SIZE(keys)
    cdef bint ascii = True, bmp = True
    cdef dict members = value
    cdef object key, nfc
    for i in range(n):
        key = <object>PyList_GET_ITEM(keys, i)
        if type(key) is not str:
            return DECLINED
        if not PyUnicode_IS_ASCII(key):
            ascii = False
    if not ascii:
        members = {}
        for i in range(n):
            key = <object>PyList_GET_ITEM(keys, i)
            nfc = key if PyUnicode_IS_ASCII(key) else _normalize("NFC", key)
            if nfc in members:
                return DECLINED
            members[nfc] = value[key]
            if PyUnicode_KIND(nfc) == 4:
                bmp = False
        keys = PyDict_Keys(members)
    if bmp:   # code point order is UTF-16 order below U+10000
        keys.sort()
    else:
        keys.sort(key=_utf16_order)
    _byte(out, 123)
    for i in range(n):
        if i:
            _byte(out, 44)
        key = <object>PyList_GET_ITEM(keys, i)
        if _string(out, key, False) == DECLINED:
            return DECLINED
        _byte(out, 58)
        if _value(out, <object>PyDict_GetItem(members, key), depth + 1, reading) == DECLINED:
            return DECLINED
    _byte(out, 125)
    return WRITTEN


cdef int _value(Out *out, object value, int depth, bint reading) except -1:
    """One value of exact JSON type; DECLINED for anything else or anything refused.
    ``reading``: also decline what the strict JSON reader refuses (long integers)."""
    cdef type t = type(value)
    cdef Py_ssize_t i, n
    cdef double x
    if value is None:
        return _put(out, b"null", 4) + WRITTEN
    if value is True:
        return _put(out, b"true", 4) + WRITTEN
    if value is False:
        return _put(out, b"false", 5) + WRITTEN
    if t is str:
        return _string(out, value, True)
    if t is int:
        n = _int(out, value)
        if reading and n - (out.data[out.size - n] == 45) > _MAX_DIGITS:
            return DECLINED
        return WRITTEN
    if t is float:
        x = <double>value
        if not isfinite(x):
            return DECLINED
        _es_number(out, x)
        return WRITTEN
    if t is list:
        if depth >= _MAX_DEPTH:
            return DECLINED
        _byte(out, 91)
        n = PyList_GET_SIZE(value)
        for i in range(n):
            if i:
                _byte(out, 44)
            if _value(out, <object>PyList_GET_ITEM(value, i), depth + 1, reading) == DECLINED:
                return DECLINED
        _byte(out, 93)
        return WRITTEN
    if t is dict:
        if depth >= _MAX_DEPTH:
            return DECLINED
        return _object(out, value, depth, reading)
    return DECLINED


# --- reading canonical text ---------------------------------------------------------------
# The common case read in one pass: text in the canonical subset of JSON (no whitespace;
# strings with exactly the escapes the writer makes, NFC; object keys strictly ascending;
# numbers as the writer writes them) becomes its value directly. Anything outside that
# subset — including text that is canonical but rarer (keys with characters past U+FFFF,
# numbers the fast checks do not settle) — is declined to the general check below.

cdef struct Reader:
    const unsigned char *p
    Py_ssize_t n
    Py_ssize_t pos


cdef object _read_string(Reader *r, Py_ssize_t *start, Py_ssize_t *end):
    """The string at ``r.pos`` (its opening quote), or ``_NOT_READ``; ``start``/``end``
    bound its raw bytes (between the quotes)."""
    cdef Py_ssize_t i = r.pos + 1, j
    cdef unsigned char c
    cdef bint escapes = False, ascii = True
    cdef bytearray plain
    while True:
        if i >= r.n:
            return _NOT_READ
        c = r.p[i]
        if c == 34:
            break
        if c < 0x20:
            return _NOT_READ
        if c == 92:
            escapes = True
            i += 2
            if i > r.n:
                return _NOT_READ
            continue
        if c >= 0x80:
            ascii = False
        i += 1
    start[0] = r.pos + 1
    end[0] = i
    r.pos = i + 1
    if not escapes:
        text = PyUnicode_DecodeUTF8(<const char *>r.p + start[0], i - start[0], NULL)
    else:
        plain = bytearray()
        j = start[0]
        while j < i:
            c = r.p[j]
            if c != 92:
                plain.append(c)
                j += 1
                continue
            c = r.p[j + 1]
            if c == 34 or c == 92:
                plain.append(c)
            elif c == 110:
                plain.append(10)
            elif c == 114:
                plain.append(13)
            elif c == 116:
                plain.append(9)
            elif c == 98:
                plain.append(8)
            elif c == 102:
                plain.append(12)
            elif (c == 117 and j + 5 < i and r.p[j + 2] == 48 and r.p[j + 3] == 48
                  and (r.p[j + 4] == 48 or r.p[j + 4] == 49)
                  and _hex_nibble(r.p[j + 5]) >= 0 and not (65 <= r.p[j + 5] <= 70)):
                c = <unsigned char>((r.p[j + 4] - 48) * 16 + _hex_nibble(r.p[j + 5]))
                if c in (8, 9, 10, 12, 13):   # these have short forms
                    return _NOT_READ
                plain.append(c)
                j += 4
            else:
                return _NOT_READ
            j += 2
        text = plain.decode("utf-8")
    if not ascii and not unicodedata.is_normalized("NFC", text):
        return _NOT_READ
    return text


cdef enum:
    KEY_SLOTS = 1024        # the key cache: a power of two
    KEY_LONGEST = 64

#: object keys read so far, interned: a key of the canonical subset (ASCII, no escape, at
#: most KEY_LONGEST bytes) is one shared string however often it is read — what a reader
#: of deltas looks up by name then matches by identity — at the slot of its bytes' hash
cdef list _KEYS = [None] * KEY_SLOTS
cdef object _intern = sys.intern


cdef object _read_key(Reader *r):
    """The object key at ``r.pos`` (its opening quote), as ``_read_string`` reads it; one
    of the canonical subset comes from the key cache."""
    cdef Py_ssize_t i = r.pos + 1, n
    cdef Py_ssize_t start = 0, end = 0
    cdef unsigned char c
    cdef unsigned int h = 2166136261u
    cdef object cached
    while i < r.n and i - r.pos <= KEY_LONGEST:
        c = r.p[i]
        if c == 34:
            n = i - r.pos - 1
            cached = <object>PyList_GET_ITEM(_KEYS, h & (KEY_SLOTS - 1))
            if (cached is not None and PyUnicode_GET_LENGTH(cached) == n
                    and memcmp(PyUnicode_DATA(cached), r.p + r.pos + 1, <size_t>n) == 0):
                r.pos = i + 1
                return cached
            key = _read_string(r, &start, &end)     # ASCII without escapes: never declined
            if key is not _NOT_READ:
                key = _intern(key)
                _KEYS[h & (KEY_SLOTS - 1)] = key
            return key
        if c < 0x20 or c == 92 or c >= 0x80:
            break
        h = (h ^ c) * 16777619u
        i += 1
    return _read_string(r, &start, &end)


cdef object _read_number(Reader *r):
    """The number at ``r.pos``, or ``_NOT_READ`` unless the writer writes it so."""
    cdef Py_ssize_t i = r.pos, start = r.pos
    cdef bint real = False
    cdef unsigned char c
    cdef Out back
    cdef double x
    if i < r.n and r.p[i] == 45:
        i += 1
    if i >= r.n or not (48 <= r.p[i] <= 57):
        return _NOT_READ
    if r.p[i] == 48 and i + 1 < r.n and 48 <= r.p[i + 1] <= 57:
        return _NOT_READ       # a leading zero
    while i < r.n:
        c = r.p[i]
        if 48 <= c <= 57:
            i += 1
        elif c == 46 or c == 101 or c == 43 or c == 45:
            real = True
            i += 1
        else:
            break
    r.pos = i
    text = PyUnicode_DecodeUTF8(<const char *>r.p + start, i - start, NULL)
    if not real:
        if i - start - (r.p[start] == 45) > _MAX_DIGITS or (i - start == 2 and r.p[start] == 45
                                                           and r.p[start + 1] == 48):
            return _NOT_READ   # past the strict reader's bound, or -0
        try:
            return int(text)
        except ValueError:     # over a lowered int-to-text digit limit
            return _NOT_READ
    try:
        value = float(text)
    except ValueError:
        return _NOT_READ
    x = <double>value
    if not isfinite(x):
        return _NOT_READ
    _init(&back)
    try:
        _es_number(&back, x)
        if back.size != i - start or memcmp(back.data, r.p + start, <size_t>back.size) != 0:
            return _NOT_READ
    finally:
        PyMem_Free(back.data)
    return value


cdef object _read_value(Reader *r, int depth):
    """The canonical value at ``r.pos``, or ``_NOT_READ``."""
    cdef unsigned char c
    cdef Py_ssize_t start = 0, end = 0
    cdef object last = None
    if r.pos >= r.n:
        return _NOT_READ
    c = r.p[r.pos]
    if c == 34:
        return _read_string(r, &start, &end)
    if c == 123 or c == 91:
        if depth >= _MAX_DEPTH:
            return _NOT_READ
        r.pos += 1
        if c == 91:
            items = []
            if r.pos < r.n and r.p[r.pos] == 93:
                r.pos += 1
                return items
            while True:
                item = _read_value(r, depth + 1)
                if item is _NOT_READ:
                    return _NOT_READ
                items.append(item)
                if r.pos < r.n and r.p[r.pos] == 44:
                    r.pos += 1
                elif r.pos < r.n and r.p[r.pos] == 93:
                    r.pos += 1
                    return items
                else:
                    return _NOT_READ
        members = {}
        if r.pos < r.n and r.p[r.pos] == 125:
            r.pos += 1
            return members
        while True:
            if r.pos >= r.n or r.p[r.pos] != 34:
                return _NOT_READ
            key = _read_key(r)
            if key is _NOT_READ:
                return _NOT_READ
            if PyUnicode_KIND(key) == 4:   # past U+FFFF: UTF-16 order differs, the general check
                return _NOT_READ
            if last is not None and not (last < key):   # strictly ascending code points
                return _NOT_READ
            last = key
            if r.pos >= r.n or r.p[r.pos] != 58:
                return _NOT_READ
            r.pos += 1
            item = _read_value(r, depth + 1)
            if item is _NOT_READ:
                return _NOT_READ
            members[key] = item
            if r.pos < r.n and r.p[r.pos] == 44:
                r.pos += 1
            elif r.pos < r.n and r.p[r.pos] == 125:
                r.pos += 1
                return members
            else:
                return _NOT_READ
    if c == 116 and r.n - r.pos >= 4 and memcmp(r.p + r.pos, b"true", 4) == 0:
        r.pos += 4
        return True
    if c == 102 and r.n - r.pos >= 5 and memcmp(r.p + r.pos, b"false", 5) == 0:
        r.pos += 5
        return False
    if c == 110 and r.n - r.pos >= 4 and memcmp(r.p + r.pos, b"null", 4) == 0:
        r.pos += 4
        return None
    return _read_number(r)


cdef object _read_canonical(object text, const char *p, Py_ssize_t n, Out *scratch):
    """The value of canonical JSON ``text`` (its UTF-8 ``p[:n]``), or ``_NOT_READ`` when the
    fast path declines: read in one pass when it can be, else by ``json.loads`` and a
    comparison with the canonical text of what that read."""
    cdef Reader r
    r.p = <const unsigned char *>p
    r.n = n
    r.pos = 0
    value = _read_value(&r, 0)
    if value is not _NOT_READ and r.pos == n:
        return value
    try:
        value = _loads(text)
    except (ValueError, RecursionError):
        return _NOT_READ
    scratch.size = 0
    if _value(scratch, value, 0, True) == DECLINED:
        return _NOT_READ
    if scratch.size != n or memcmp(scratch.data, p, <size_t>n) != 0:
        return _NOT_READ
    return value


def canonical_json(value) -> str:
    """The canonical text of a JSON-compatible value (dict/list/str/int/float/bool/None)."""
    cdef Out out
    _init(&out)
    try:
        if _value(&out, value, 0, False) == DECLINED:
            return _twin.canonical_json(value)
        return PyUnicode_DecodeUTF8(out.data, out.size, NULL)
    finally:
        PyMem_Free(out.data)


def canonical_json_bytes(value) -> bytes:
    """UTF-8 bytes of ``canonical_json(value)``."""
    cdef Out out
    _init(&out)
    try:
        if _value(&out, value, 0, False) == DECLINED:
            return _twin.canonical_json_bytes(value)
        return PyBytes_FromStringAndSize(out.data, out.size)
    finally:
        PyMem_Free(out.data)


def es_number(x) -> str:
    """ECMAScript ``Number::toString`` of a finite binary64 (RFC 8785 §3.2.2.3)."""
    cdef Out out
    if type(x) is not float or not isfinite(<double>x):
        return _twin.es_number(x)
    _init(&out)
    try:
        _es_number(&out, <double>x)
        return PyUnicode_DecodeUTF8(out.data, out.size, NULL)
    finally:
        PyMem_Free(out.data)


def parse_canonical(text):
    """Parse stored canonical JSON, refusing (``InvalidFieldError``) text that is not JSON or
    is not byte-identical to its own canonical form."""
    cdef Out scratch
    cdef const char *p
    cdef Py_ssize_t n
    cdef object source = text
    if type(text) is bytes:
        try:
            source = PyUnicode_DecodeUTF8(PyBytes_AS_STRING(text), PyBytes_GET_SIZE(text), NULL)
        except UnicodeDecodeError:
            return _twin.parse_canonical(text)
    elif type(text) is not str:
        return _twin.parse_canonical(text)
    try:
        p = PyUnicode_AsUTF8AndSize(source, &n)
    except UnicodeEncodeError:
        return _twin.parse_canonical(text)
    _init(&scratch)
    try:
        value = _read_canonical(source, p, n, &scratch)
    finally:
        PyMem_Free(scratch.data)
    if value is _NOT_READ:
        return _twin.parse_canonical(text)
    return value


# --- the audit record v2 --------------------------------------------------------------------

cdef inline int _u32(Out *out, unsigned long long v) except -1:
    cdef char b[4]
    b[0] = <char>(v >> 24); b[1] = <char>(v >> 16); b[2] = <char>(v >> 8); b[3] = <char>v
    return _put(out, b, 4)


cdef inline int _u64(Out *out, unsigned long long v) except -1:
    cdef char b[8]
    cdef int i
    for i in range(8):
        b[i] = <char>(v >> (56 - 8 * i))
    return _put(out, b, 8)


cdef int _field_string(Out *out, object value) except -1:
    """STRING: tag, length, NFC text in UTF-8."""
    cdef Py_ssize_t n
    cdef const char *p
    if type(value) is not str:
        return DECLINED
    if PyUnicode_IS_ASCII(value):
        p = <const char *>PyUnicode_DATA(value)
        n = PyUnicode_GET_LENGTH(value)
    else:
        value = _normalize("NFC", value)
        try:
            p = PyUnicode_AsUTF8AndSize(value, &n)
        except UnicodeEncodeError:
            return DECLINED
    if n >= 0xFFFFFFFF:
        return DECLINED
    _byte(out, 0x02)
    _u32(out, <unsigned long long>n)
    _put(out, p, n)
    return WRITTEN


cdef int _field_uuid(Out *out, object value) except -1:
    """UUID: tag and 16 bytes, from 8-4-4-4-12 hex text (either case)."""
    cdef const unsigned char *p
    cdef char raw[16]
    cdef int k, j = 0, hi, lo
    if type(value) is not str or not PyUnicode_IS_ASCII(value) or PyUnicode_GET_LENGTH(value) != 36:
        return DECLINED
    p = <const unsigned char *>PyUnicode_DATA(value)
    k = 0
    while k < 36:
        if k == 8 or k == 13 or k == 18 or k == 23:
            if p[k] != 45:
                return DECLINED
            k += 1
            continue
        hi = _hex_nibble(p[k])
        lo = _hex_nibble(p[k + 1])
        if hi < 0 or lo < 0:
            return DECLINED
        raw[j] = <char>(hi * 16 + lo)
        j += 1
        k += 2
    _byte(out, 0x04)
    _put(out, raw, 16)
    return WRITTEN


cdef long long _days_from_civil(int y, int m, int d) noexcept:
    """Days since 1970-01-01 of a proleptic Gregorian date (Hinnant's algorithm)."""
    cdef long long era, yoe, doy, doe
    y -= m <= 2
    era = (y if y >= 0 else y - 399) // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


cdef int _field_timestamp(Out *out, object value) except -1:
    """TIMESTAMP: tag and whole milliseconds since the epoch, from instant text that names a
    real instant at or after 1970 (anything else: the twin's ``timestamp_ms`` decides)."""
    cdef Instant t
    cdef int days_in_month
    cdef long long seconds
    if type(value) is not str or not PyUnicode_IS_ASCII(value):
        return DECLINED
    if _instant_fields(<const unsigned char *>PyUnicode_DATA(value),
                       PyUnicode_GET_LENGTH(value), &t) < 0:
        return DECLINED
    if t.year < 1 or t.month < 1 or t.month > 12 or t.hour > 23 or t.minute > 59 or t.second > 59:
        return DECLINED
    if t.month == 2:
        days_in_month = 29 if (t.year % 4 == 0 and (t.year % 100 != 0 or t.year % 400 == 0)) else 28
    elif t.month == 4 or t.month == 6 or t.month == 9 or t.month == 11:
        days_in_month = 30
    else:
        days_in_month = 31
    if t.day < 1 or t.day > days_in_month:
        return DECLINED
    seconds = (_days_from_civil(t.year, t.month, t.day) * 86400 + t.hour * 3600
               + t.minute * 60 + t.second - t.offset * 60)
    if seconds < 0:
        return DECLINED
    _byte(out, 0x05)
    _u64(out, <unsigned long long>(seconds * 1000 + t.us // 1000))
    return WRITTEN


cdef int _field_delta(Out *out, object value, Out *scratch, list keep, list texts) except -1:
    """BYTES of a delta: stored text when it is canonical (its value appended to ``keep``
    unless that is None), or an object's canonical text; the text appended to ``texts``
    unless that is None."""
    cdef const char *p
    cdef Py_ssize_t n
    if type(value) is str:
        try:
            p = PyUnicode_AsUTF8AndSize(value, &n)
        except UnicodeEncodeError:
            return DECLINED
        read = _read_canonical(value, p, n, scratch)
        if read is _NOT_READ:
            return DECLINED
        if keep is not None:
            keep.append(read)
        if texts is not None:
            texts.append(value)
    else:
        scratch.size = 0
        if _value(scratch, value, 0, False) == DECLINED:
            return DECLINED
        p = scratch.data
        n = scratch.size
        if texts is not None:
            texts.append(PyUnicode_DecodeUTF8(p, n, NULL))
    if n >= 0xFFFFFFFF:
        return DECLINED
    _byte(out, 0x01)
    _u32(out, <unsigned long long>n)
    _put(out, p, n)
    return WRITTEN


cdef int _field(Out *out, int kind, object value, Out *scratch, list keep,
                list texts) except -1:
    cdef Py_ssize_t i, n
    cdef int overflow = 0
    cdef long long v
    cdef uint8_t digest[32]
    if kind == K_STRING:
        return _field_string(out, value)
    if kind == K_STRING_OR_NULL or kind == K_HASH_OR_NULL:
        if value is None:
            return _byte(out, 0x00) + WRITTEN
        if kind == K_STRING_OR_NULL:
            return _field_string(out, value)
        if (type(value) is not str or not PyUnicode_IS_ASCII(value)
                or PyUnicode_GET_LENGTH(value) != 64
                or ck_unhex32(<const uint8_t *>PyUnicode_DATA(value), digest) != 0):
            return DECLINED
        _byte(out, 0x06)
        return _put(out, <const char *>digest, 32) + WRITTEN
    if kind == K_UINT:
        if type(value) is not int:
            return DECLINED
        v = PyLong_AsLongLongAndOverflow(value, &overflow)
        if overflow or v < 0:
            return DECLINED
        _byte(out, 0x03)
        return _u64(out, <unsigned long long>v) + WRITTEN
    if kind == K_UUID:
        return _field_uuid(out, value)
    if kind == K_TIMESTAMP:
        return _field_timestamp(out, value)
    if kind == K_BYTES:
        return _field_delta(out, value, scratch, keep, texts)
    if kind == K_BOOL:
        if value is True or value is False:
            _byte(out, 0x08)
            return _byte(out, 0x01 if value is True else 0x00) + WRITTEN
        return DECLINED
    if kind == K_STRING_LIST:
        if type(value) is not list:
            return DECLINED
        n = PyList_GET_SIZE(value)
        if n >= 0xFFFFFFFF:
            return DECLINED
        _byte(out, 0x07)
        _u32(out, <unsigned long long>n)
        for i in range(n):
            if _field_string(out, <object>PyList_GET_ITEM(value, i)) == DECLINED:
                return DECLINED
        return WRITTEN
    return DECLINED


cdef int _record(Out *out, object record, list keep, list texts) except -1:
    """The record's §2.1 preimage into ``out``; DECLINED for a record the twin must judge
    (not a dict, a field missing or refused, a field in any form but its stored one).
    ``keep``: the forward delta as read; ``texts``: both deltas' canonical text."""
    cdef Out scratch
    cdef Py_ssize_t i
    cdef tuple entry
    cdef PyObject *ref
    cdef object name, value
    cdef int kind
    if type(record) is not dict:
        return DECLINED
    _put(out, PyBytes_AS_STRING(_PREFIX), PyBytes_GET_SIZE(_PREFIX))
    _init(&scratch)
    try:
        for i in range(PyTuple_GET_SIZE(_FIELDS)):
            entry = <tuple>PyTuple_GET_ITEM(_FIELDS, i)
            name = <object>PyTuple_GET_ITEM(entry, 0)
            kind = <object>PyTuple_GET_ITEM(entry, 1)
            ref = PyDict_GetItem(record, name)
            if ref == NULL:
                if kind != K_STRING_OR_NULL and kind != K_HASH_OR_NULL:
                    return DECLINED
                value = None
            else:
                value = <object>ref
            if i == _CHAIN_KEY and (type(value) is not str or PyUnicode_GET_LENGTH(value) == 0):
                return DECLINED    # chain_key: non-empty text
            if _field(out, kind, value, &scratch, keep if i == _FORWARD else None,
                      texts) == DECLINED:
                return DECLINED
    finally:
        PyMem_Free(scratch.data)
    return WRITTEN


cdef str _record_hex(Out *out):
    cdef uint8_t digest[32]
    if out.size >= NOGIL_THRESHOLD:
        with nogil:
            ck_sha3_256(<const uint8_t *>out.data, <size_t>out.size, digest)
    else:
        ck_sha3_256(<const uint8_t *>out.data, <size_t>out.size, digest)
    return _hex_of(digest)


cdef str _hashed(object record, list keep, list texts):
    """The record's hash as ``_record`` writes it (filling ``keep`` and ``texts``), or None
    when it declines the record to the twin."""
    cdef Out out
    _init(&out)
    try:
        if _record(&out, record, keep, texts) == DECLINED:
            return None
        return _record_hex(&out)
    finally:
        PyMem_Free(out.data)


def audit_record_hash(record) -> str:
    """``AUDIT_RECORD:v2:`` hash of a record's stored fields (hex)."""
    digest = _hashed(record, None, None)
    return _twin.audit_record_hash(record) if digest is None else digest


def audit_record_digest(record) -> tuple:
    """``(audit_record_hash(record), forward)``: ``forward`` is the forward delta as
    ``parse_canonical`` reads it when it is stored text, else None. Refusals are those of
    ``audit_record_hash``."""
    cdef list keep = []
    digest = _hashed(record, keep, None)
    if digest is None:
        return _twin.audit_record_digest(record)
    return digest, keep[0] if keep else None


def sealed_record(record) -> tuple:
    """``(forward, reverse, record_hash)`` of a record whose deltas are values: each delta's
    canonical text (a delta stored as text, as it is) and ``audit_record_hash(record)``,
    each delta canonicalized once. Refusals are those of ``canonical_json`` of a delta,
    then of ``audit_record_hash``."""
    cdef list texts = []
    digest = _hashed(record, None, texts)
    if digest is None:
        return _twin.sealed_record(record)
    return texts[0], texts[1], digest
