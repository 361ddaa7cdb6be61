# The instants of Episode documents, read in C: ``YYYY-MM-DDTHH:MM:SS[.fff|.ffffff]`` with
# ``Z`` or ``±HH:MM``, the shape ``canonkit._instant.instant_from_text`` reads and the
# canonical documents use. Included by the segment reader (_segments.pyx) and the document
# scanner (_scan.pyx), after astp_kernel.pxi (its Unicode accessors); each calls
# ``import_datetime()`` first.
from cpython.datetime cimport datetime_new, import_datetime

from datetime import timedelta, timezone

cdef object _UTC = timezone.utc
cdef dict _OFFSETS = {}   # offset in minutes -> timezone, as instant_from_text builds them


include "astp_instant_fields.pxi"


cdef object _fast_instant(str text):
    """``instant_from_text(text)`` for the shape ``_instant_fields`` reads; None for any
    other text (the caller then asks ``instant_from_text`` itself)."""
    cdef Instant t
    if not PyUnicode_IS_ASCII(text):
        return None
    if _instant_fields(<const unsigned char *>PyUnicode_DATA(text),
                       PyUnicode_GET_LENGTH(text), &t) < 0:
        return None
    if t.offset == 0:
        tz = _UTC
    else:
        tz = _OFFSETS.get(t.offset)
        if tz is None:
            tz = _OFFSETS[t.offset] = timezone(timedelta(minutes=t.offset))
    try:
        return datetime_new(t.year, t.month, t.day, t.hour, t.minute, t.second, t.us, tz)
    except ValueError:  # out-of-range fields: instant_from_text decides
        return None
