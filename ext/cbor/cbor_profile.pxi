# The profile numbers both CBOR extensions (_cbor: encode, _cbor_decode: decode) switch
# on, and the one place a profile name becomes one. Included textually by both.

cdef enum:
    P_CORE = 0
    P_DCBOR = 1
    P_DAG = 2


cdef int profile_id(object profile) except -1:
    if profile == "core":
        return P_CORE
    if profile == "dcbor":
        return P_DCBOR
    if profile == "dag-cbor":
        return P_DAG
    check_profile(profile)  # raises UnknownProfileError
    return -1
