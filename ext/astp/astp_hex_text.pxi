# Lowercase hex text as ASTP writes identifiers and digests, checked in C: a UUID's canonical
# 8-4-4-4-12 form (36 characters) and a digest's 64 characters. Included after
# astp_kernel.pxi (its PyUnicode helpers) by the kernels that read them.


cdef inline int _hex_value(unsigned int c) noexcept:
    """The value of a lowercase hex digit, or -1."""
    if 48 <= c <= 57:
        return c - 48
    if 97 <= c <= 102:
        return c - 87
    return -1


cdef bint _lower_hex(object text, Py_ssize_t n):
    """Exact ASCII text of ``n`` lowercase hex characters (``n`` 64: a digest) or, ``n`` 36,
    lowercase canonical 8-4-4-4-12 UUID text."""
    cdef Py_ssize_t k
    cdef const unsigned char *p
    if type(text) is not str or not PyUnicode_IS_ASCII(text) or PyUnicode_GET_LENGTH(text) != n:
        return False
    p = <const unsigned char *>PyUnicode_DATA(text)
    for k in range(n):
        if n == 36 and (k == 8 or k == 13 or k == 18 or k == 23):
            if p[k] != 45:
                return False
        elif _hex_value(p[k]) < 0:
            return False
    return True
