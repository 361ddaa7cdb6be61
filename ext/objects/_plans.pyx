"""Compiled fields check of simple object kinds (twin: ``canonkit.objects._plans_py``).

The same predicate as the twin's ``FieldsCheck``, walking the plan in C: for a kind like
``commit`` the whole check is a handful of type and length tests instead of a few dozen
Python bytecodes.
"""
from cpython.object cimport PyObject

from canonkit.objects._plans_py import (ARRAY, BOOL, BYTES, BYTES_SIZED, INT, NULLABLE, TEXT,
                                  TEXT_NON_EMPTY, UINT)

# the plan's op codes are declared once, in the twin, and re-exported with the same API
__all__ = ["ARRAY", "BOOL", "BYTES", "BYTES_SIZED", "INT", "NULLABLE", "TEXT",
           "TEXT_NON_EMPTY", "UINT", "FieldsCheck"]

cdef extern from "Python.h":
    PyObject *PyDict_GetItemWithError(object, object) except? NULL
    Py_ssize_t PyDict_GET_SIZE(object)
    Py_ssize_t PyBytes_GET_SIZE(object)
    Py_ssize_t PyUnicode_GET_LENGTH(object)
    Py_ssize_t PyList_GET_SIZE(object)
    PyObject *PyList_GET_ITEM(object, Py_ssize_t)
    Py_ssize_t PyTuple_GET_SIZE(object)
    PyObject *PyTuple_GET_ITEM(object, Py_ssize_t)
    long long PyLong_AsLongLongAndOverflow(object, int *) except? -1
    int _PyLong_Sign(object)
    size_t _PyLong_NumBits(object) except? <size_t>-1

cdef int OP_BYTES = BYTES, OP_BYTES_SIZED = BYTES_SIZED, OP_TEXT = TEXT
cdef int OP_TEXT_NON_EMPTY = TEXT_NON_EMPTY, OP_UINT = UINT, OP_INT = INT, OP_BOOL = BOOL
cdef int F_NULLABLE = NULLABLE, F_ARRAY = ARRAY
cdef object U64 = 1 << 64
cdef object MINUS_U64 = -(1 << 64)


cdef bint int_in(object value, bint unsigned) except -1:
    """0 <= value < 2**64 (unsigned) or -2**64 <= value < 2**64, for an exact int."""
    cdef int overflow = 0
    cdef long long v = PyLong_AsLongLongAndOverflow(value, &overflow)
    if overflow == 0:
        return v >= 0 or not unsigned
    if unsigned:
        return overflow > 0 and _PyLong_NumBits(value) <= 64
    return MINUS_U64 <= value < U64


cdef bint simple(int op, Py_ssize_t arg, object value) except -1:
    cdef type kind = type(value)
    if op == OP_BYTES_SIZED:
        return kind is bytes and PyBytes_GET_SIZE(value) == arg
    if op == OP_TEXT:
        return kind is str
    if op == OP_UINT:
        return kind is int and int_in(value, True)
    if op == OP_BYTES:
        return kind is bytes
    if op == OP_TEXT_NON_EMPTY:
        return kind is str and PyUnicode_GET_LENGTH(value) > 0
    if op == OP_INT:
        return kind is int and int_in(value, False)
    if op == OP_BOOL:
        return kind is bool
    return False


cdef bint matches(int op, Py_ssize_t arg, object value) except -1:
    cdef int base = op & 15
    cdef Py_ssize_t i, n
    if op & F_NULLABLE and value is None:
        return True
    if op & F_ARRAY:
        if type(value) is list:
            n = PyList_GET_SIZE(value)
            for i in range(n):  # simple() runs no Python code: the list cannot change
                if not simple(base, arg, <object>PyList_GET_ITEM(value, i)):
                    return False
            return True
        if type(value) is tuple:
            n = PyTuple_GET_SIZE(value)
            for i in range(n):
                if not simple(base, arg, <object>PyTuple_GET_ITEM(value, i)):
                    return False
            return True
        return False
    return simple(base, arg, value)


cdef class FieldsCheck:
    """``FieldsCheck(plan).match(fields)``: whether ``fields`` is a dict with exactly the
    plan's fields, each of its type."""

    cdef readonly tuple plan
    cdef Py_ssize_t n

    def __init__(self, plan):
        self.plan = tuple(plan)
        self.n = len(self.plan)

    def match(self, fields):
        cdef Py_ssize_t i
        cdef tuple entry
        cdef PyObject *value
        # held for the whole call: a key's __eq__ may run __init__ and replace self.plan
        cdef tuple plan = self.plan
        cdef Py_ssize_t n = len(plan)
        if type(fields) is not dict or PyDict_GET_SIZE(fields) != n:
            return False
        for i in range(n):
            entry = <tuple>PyTuple_GET_ITEM(plan, i)
            value = PyDict_GetItemWithError(fields, <object>PyTuple_GET_ITEM(entry, 0))
            if value == NULL:
                return False
            if not matches(<int><object>PyTuple_GET_ITEM(entry, 1),
                           <Py_ssize_t><object>PyTuple_GET_ITEM(entry, 2), <object>value):
                return False
        return True
