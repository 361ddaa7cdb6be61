# The profile numbers both CBOR extensions (_codec: encode, _decode: decode) switch
# on, and the one place a profile name becomes one. Included textually by both.

cdef extern from "Python.h":
    bint pp_is_compact_ascii "PyUnicode_IS_COMPACT_ASCII"(object)
    Py_ssize_t pp_length "PyUnicode_GET_LENGTH"(object)
    const char *pp_data "PyUnicode_DATA"(object)

cdef extern from "string.h":
    int pp_memcmp "memcmp"(const void *, const void *, size_t)

cdef enum:
    P_CORE = 0
    P_DCBOR = 1
    P_DAG = 2


cdef int profile_id(object profile) except -1:
    cdef Py_ssize_t n
    if type(profile) is str and pp_is_compact_ascii(profile):
        # the names compared as bytes: a call site's "dag-cbor" is a str of its own (not
        # interned: it is no identifier), and an equality test is a call
        n = pp_length(profile)
        if n == 8 and pp_memcmp(pp_data(profile), b"dag-cbor", 8) == 0:
            return P_DAG
        if n == 4 and pp_memcmp(pp_data(profile), b"core", 4) == 0:
            return P_CORE
        if n == 5 and pp_memcmp(pp_data(profile), b"dcbor", 5) == 0:
            return P_DCBOR
    if profile == "core":
        return P_CORE
    if profile == "dcbor":
        return P_DCBOR
    if profile == "dag-cbor":
        return P_DAG
    check_profile(profile)  # raises UnknownProfileError
    return -1
