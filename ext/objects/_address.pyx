"""Compiled content addresses and ``address_object``'s common case (twin:
``canonkit.objects._address_py``, which says what each function means).

The hashing is still the ``blake3`` package's (on reused hashers, as in the twin); what
runs in C is everything around it: the kind lookup, the attribute reads and calls of the
common case, taking and returning the hasher, and the hex text, written straight into a
71-character string instead of ``digest().hex()`` and a concatenation.
"""
cimport cython
from cpython.object cimport PyObject
from cpython.unicode cimport PyUnicode_New

from blake3 import blake3 as _blake3

from canonkit.objects._address_py import PARALLEL_MIN

__all__ = ["PARALLEL_MIN", "Addresser", "address", "addresses", "digest_of"]

cdef extern from "Python.h":
    PyObject *PyDict_GetItemWithError(object, object) except? NULL
    Py_ssize_t PyBytes_GET_SIZE(object)
    char *PyBytes_AS_STRING(object)
    Py_ssize_t PyList_GET_SIZE(object)
    void *PyUnicode_DATA(object)

cdef extern from "address_slots.h":
    ctypedef struct ao_slots:
        PyObject *type
    PyObject *ao_slot(ao_slots *, PyObject *, int) noexcept
    void ao_slots_clear(ao_slots *) noexcept

cdef Py_ssize_t C_PARALLEL_MIN = PARALLEL_MIN
cdef object AUTO = _blake3.AUTO
cdef object ONE = 1
cdef list _idle = []  # hashers no call is using (see the twin)
globals()["_idle"] = _idle  # the same list, readable from Python as in the twin (tests)
cdef const char *HEX = b"0123456789abcdef"


# blake3's methods, called as functions on a hasher (no attribute lookup per call)
cdef object _reset = _blake3.reset
cdef object _update = _blake3.update
cdef object _hash_digest = _blake3.digest


cdef bytes _digest(object data, Py_ssize_t n):
    """BLAKE3-256 of ``data`` (``n`` bytes long) on a reused hasher, or on all cores."""
    cdef object hasher
    if n >= C_PARALLEL_MIN:
        return _blake3(data, max_threads=AUTO).digest()
    if PyList_GET_SIZE(_idle):
        hasher = _idle.pop()
    else:
        hasher = _blake3()
    _reset(hasher)
    _update(hasher, data)  # a failure here drops the hasher: only finished ones go back
    cdef bytes digest = _hash_digest(hasher)
    _idle.append(hasher)
    return digest


cdef inline Py_ssize_t _length(object data) except -1:
    if type(data) is bytes:
        return PyBytes_GET_SIZE(data)
    return memoryview(data).nbytes


cdef str _text(bytes digest):
    """``"blake3:" + digest.hex()`` for a 32-byte digest."""
    if PyBytes_GET_SIZE(digest) != 32:  # never from blake3's default output; kept exact
        return "blake3:" + digest.hex()
    cdef str out = PyUnicode_New(71, 127)
    cdef unsigned char *w = <unsigned char *>PyUnicode_DATA(out)
    cdef const unsigned char *d = <const unsigned char *>PyBytes_AS_STRING(digest)
    cdef Py_ssize_t i
    w[0], w[1], w[2], w[3], w[4], w[5], w[6] = 98, 108, 97, 107, 101, 51, 58  # "blake3:"
    for i in range(32):
        w[7 + 2 * i] = HEX[d[i] >> 4]
        w[8 + 2 * i] = HEX[d[i] & 15]
    return out


def digest_of(data, /):
    """The 32 raw BLAKE3-256 digest bytes of ``data``: what another object stores to
    reference it."""
    return _digest(data, _length(data))


def address(data, /):
    """``"blake3:" + lowercase hex(BLAKE3-256(data))``."""
    return _text(_digest(data, _length(data)))


def addresses(items, /):
    """``[address(x) for x in items]`` in one call."""
    return [_text(_digest(item, _length(item))) for item in items]


cdef enum:
    SLOT_CHECK = 0
    SLOT_FAST = 1
    SLOT_ENVELOPE = 2


# a method descriptor, which the interpreter calls directly; "clinic" signatures keep
# inspect.signature working on it
@cython.binding(False)
@cython.embedsignature.format("clinic")
cdef class Addresser:
    """``address_object`` over one ``encode_merged(envelope, fields)``; see the twin."""

    cdef readonly object kinds
    cdef readonly object encode_merged
    cdef readonly object slow
    cdef ao_slots _slots  # where a kind's check, _fast and _envelope are (address_slots.h)

    def __cinit__(self):
        self._slots.type = NULL

    def __dealloc__(self):
        ao_slots_clear(&self._slots)

    def __init__(self, kinds, encode_merged, slow):
        self.kinds = kinds
        self.encode_merged = encode_merged
        self.slow = slow

    def address_object(self, kind, fields, *, version=1):
        """``address(encode_object(kind, fields, version=version))``."""
        cdef PyObject *found
        cdef object spec, data
        # the twin's order: the version first (the int 1 itself needs no comparison; True
        # and 1.0 are no version: the slow path refuses them)
        if (version is ONE or (type(version) is int and version == 1)) and type(kind) is str:
            kinds = self.kinds
            if type(kinds) is dict:
                found = PyDict_GetItemWithError(kinds, kind)
                spec = None if found == NULL else <object>found  # a strong reference now
            else:
                spec = kinds.get(kind)
            if spec is not None and self._attr(spec, SLOT_CHECK) is None and \
                    self._attr(spec, SLOT_FAST)(fields):
                data = self.encode_merged(self._attr(spec, SLOT_ENVELOPE), fields)
                return _text(_digest(data, _length(data)))
        return self.slow(kind, fields, version=version)

    cdef inline object _attr(self, object spec, int which):
        """``spec.check``, ``spec._fast`` or ``spec._envelope``: read from the instance's
        slot where that is what the attribute access would do, else by that access."""
        cdef PyObject *value = ao_slot(&self._slots, <PyObject *>spec, which)
        if value != NULL:
            return <object>value
        if which == SLOT_CHECK:
            return spec.check
        if which == SLOT_FAST:
            return spec._fast
        return spec._envelope
