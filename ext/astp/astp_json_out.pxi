# The JSON text writer the Form B and audit kernels share: one growing C buffer (``Out``),
# strings escaped as ``json.dumps``/``json.encoder.encode_basestring`` escape them (``"``,
# ``\\``, the short forms \b \f \n \r \t, every other byte below 0x20 as \u00xx; the rest
# raw), integers of any magnitude. Included after astp_kernel.pxi (its bytes helpers).
from cpython.long cimport PyLong_AsLongLongAndOverflow
from cpython.mem cimport PyMem_Free, PyMem_Malloc, PyMem_Realloc

from canonkit.astp._py.common import decimal_text


cdef struct Out:
    char *data
    Py_ssize_t size
    Py_ssize_t room


cdef int _grow(Out *out, Py_ssize_t need) except -1:
    cdef Py_ssize_t room = out.room * 2 if out.room else 1024
    cdef char *data
    while room < out.size + need:
        room *= 2
    data = <char *>PyMem_Realloc(out.data, <size_t>room)
    if data == NULL:
        raise MemoryError()
    out.data = data
    out.room = room
    return 0


cdef inline int _put(Out *out, const char *text, Py_ssize_t n) except -1:
    if out.size + n > out.room:
        _grow(out, n)
    memcpy(out.data + out.size, text, <size_t>n)
    out.size += n
    return 0


cdef inline int _byte(Out *out, char c) except -1:
    if out.size + 1 > out.room:
        _grow(out, 1)
    out.data[out.size] = c
    out.size += 1
    return 0


cdef const char *_HEX = b"0123456789abcdef"


cdef int _escaped(Out *out, const unsigned char *p, Py_ssize_t n) except -1:
    """UTF-8 text ``p[:n]`` as a JSON string, quotes included."""
    cdef Py_ssize_t i, run = 0
    cdef unsigned char c
    cdef char esc[6]
    if out.size + n + 2 > out.room:
        _grow(out, n + 2)
    _byte(out, 34)
    for i in range(n):
        c = p[i]
        if c >= 0x20 and c != 34 and c != 92:
            continue
        _put(out, <const char *>p + run, i - run)
        run = i + 1
        if c == 34:
            _put(out, b'\\"', 2)
        elif c == 92:
            _put(out, b'\\\\', 2)
        elif c == 10:
            _put(out, b'\\n', 2)
        elif c == 13:
            _put(out, b'\\r', 2)
        elif c == 9:
            _put(out, b'\\t', 2)
        elif c == 8:
            _put(out, b'\\b', 2)
        elif c == 12:
            _put(out, b'\\f', 2)
        else:
            esc[0] = 92; esc[1] = 117; esc[2] = 48; esc[3] = 48   # \u00
            esc[4] = _HEX[c >> 4]; esc[5] = _HEX[c & 15]
            _put(out, esc, 6)
    _put(out, <const char *>p + run, n - run)
    return _byte(out, 34)


cdef Py_ssize_t _int(Out *out, object value) except -1:
    """An exact ``int``'s decimal digits, whatever its magnitude; how many were written."""
    cdef int overflow = 0
    cdef long long v = PyLong_AsLongLongAndOverflow(value, &overflow)
    cdef char digits[24]
    cdef int k = 24
    cdef unsigned long long u
    cdef bytes text
    if overflow:   # any magnitude, past Python's int-to-text digit limit too
        text = decimal_text(value).encode("ascii")
        _put(out, PyBytes_AS_STRING(text), PyBytes_GET_SIZE(text))
        return PyBytes_GET_SIZE(text)
    u = <unsigned long long>(-v) if v < 0 else <unsigned long long>v
    while True:
        k -= 1
        digits[k] = <char>(48 + u % 10)
        u //= 10
        if u == 0:
            break
    if v < 0:
        k -= 1
        digits[k] = 45
    _put(out, digits + k, 24 - k)
    return 24 - k
