# The instant text reader both the instants helper (astp_instants.pxi) and the audit kernel
# (_audit.pyx) use: the fields of ``YYYY-MM-DDTHH:MM:SS[.fff|.ffffff]`` with ``Z`` or
# ``±HH:MM``, the shape ``canonkit._instant.instant_from_text`` reads, in C. Included after
# astp_kernel.pxi.


cdef inline int _digits(const unsigned char *p, int n) noexcept:
    cdef int v = 0, k
    for k in range(n):
        if p[k] < 48 or p[k] > 57:
            return -1
        v = v * 10 + (p[k] - 48)
    return v


cdef struct Instant:
    int year, month, day, hour, minute, second, us, offset  # offset in minutes east of UTC


cdef int _instant_fields(const unsigned char *p, Py_ssize_t n, Instant *t) noexcept:
    """The fields of ``YYYY-MM-DDTHH:MM:SS[.fff|.ffffff](Z|+HH:MM|-HH:MM)``; -1 for text of
    any other shape. Only the offset is range-checked: the callers decide what an
    out-of-range date or time means."""
    cdef Py_ssize_t pos = 19
    cdef int hh, mm
    if n < 20 or p[4] != 45 or p[7] != 45 or p[10] != 84 or p[13] != 58 or p[16] != 58:
        return -1
    t.year = _digits(p, 4); t.month = _digits(p + 5, 2); t.day = _digits(p + 8, 2)
    t.hour = _digits(p + 11, 2); t.minute = _digits(p + 14, 2); t.second = _digits(p + 17, 2)
    if t.year < 0 or t.month < 0 or t.day < 0 or t.hour < 0 or t.minute < 0 or t.second < 0:
        return -1
    t.us = 0
    if p[19] == 46:  # '.': exactly 3 or 6 digits
        if n >= 26 and _digits(p + 20, 6) >= 0:
            t.us = _digits(p + 20, 6)
            pos = 26
        elif n >= 23 and _digits(p + 20, 3) >= 0 and (n == 23 or _digits(p + 23, 1) < 0):
            t.us = _digits(p + 20, 3) * 1000
            pos = 23
        else:
            return -1
    if n - pos == 1 and p[pos] == 90:  # 'Z'
        t.offset = 0
    elif n - pos == 6 and (p[pos] == 43 or p[pos] == 45) and p[pos + 3] == 58:
        hh = _digits(p + pos + 1, 2)
        mm = _digits(p + pos + 4, 2)
        if hh < 0 or mm < 0 or hh > 23 or mm > 59:
            return -1
        t.offset = (hh * 60 + mm) * (-1 if p[pos] == 45 else 1)
    else:
        return -1
    return 0
