"""Compiled ASTP document-reader kernel: ``read_segments`` (the Episode reader's fast path
over a document's stored segments) and the leaf hashes of ASTP.md §4, whose version 2
builds the preimage of canonical inputs in C.

Twin: ``canonkit.astp._py.segments`` (docs/astp-kernel-api.md); the differential tests keep
the two identical.
"""
from cpython.dict cimport PyDict_GetItem
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from cpython.ref cimport PyObject

from canonkit.astp._py.common import U64, uuid_bytes
from canonkit.astp._hash import hash_fields
from canonkit._instant import instant_from_text
from canonkit.errors import InvalidFieldError

include "astp_kernel.pxi"
include "astp_instants.pxi"

__all__ = ["leaf_hash_v1", "leaf_hash_v2", "read_segments"]

import_datetime()


# --- §4 leaf hashes ----------------------------------------------------------------------

cdef inline int _nibble(unsigned char c) noexcept:
    if c >= 48 and c <= 57:
        return c - 48
    if c >= 97 and c <= 102:
        return c - 87
    if c >= 65 and c <= 70:
        return c - 55
    return -1


cdef int _fast_uuid(object value, uint8_t *out) noexcept:
    """1 and out[16] filled when value is an exact ``str`` of 8-4-4-4-12 ASCII hex, else 0."""
    if type(value) is not str or not PyUnicode_IS_ASCII(value) or PyUnicode_GET_LENGTH(value) != 36:
        return 0
    cdef const unsigned char *p = <const unsigned char *>PyUnicode_DATA(value)
    cdef int k = 0, j = 0, hi, lo
    while k < 36:
        if k == 8 or k == 13 or k == 18 or k == 23:
            if p[k] != 45:
                return 0
            k += 1
            continue
        hi = _nibble(p[k])
        lo = _nibble(p[k + 1])
        if hi < 0 or lo < 0:
            return 0
        out[j] = <uint8_t>((hi << 4) | lo)
        j += 1
        k += 2
    return 1


cdef inline Py_ssize_t _fast_string(object value, uint8_t *out, Py_ssize_t room) noexcept:
    """STRING field of an exact ASCII ``str`` (NFC-invariant) into out; its size, or -1."""
    if type(value) is not str or not PyUnicode_IS_ASCII(value):
        return -1
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(value)
    if n + 5 > room:
        return -1
    out[0] = 0x02
    out[1] = <uint8_t>(n >> 24)
    out[2] = <uint8_t>(n >> 16)
    out[3] = <uint8_t>(n >> 8)
    out[4] = <uint8_t>n
    memcpy(out + 5, PyUnicode_DATA(value), n)
    return n + 5


cdef Py_ssize_t _fast_leaf_v2(object node_id, object node_type, object schema_version,
                              object sequence_index, object content_hash, object parent_node_id,
                              uint8_t *buf) except -1:
    """The v2 leaf preimage of canonical inputs (UUID text, ASCII text, exact int, 64-hex
    digest) into buf[FAST_LEAF_ROOM]; its length, or 0 when the general path must decide."""
    cdef Py_ssize_t n = 13, w
    cdef unsigned long long v
    cdef int k
    memcpy(buf, b"LEAF_HASH:v2:", 13)
    buf[n] = 0x04
    if not _fast_uuid(node_id, buf + n + 1):
        return 0
    n += 17
    w = _fast_string(node_type, buf + n, FAST_LEAF_ROOM - 100 - n)
    if w < 0:
        return 0
    n += w
    w = _fast_string(schema_version, buf + n, FAST_LEAF_ROOM - 100 - n)
    if w < 0:
        return 0
    n += w
    if type(sequence_index) is not int or sequence_index < 0 or sequence_index >= U64:
        return 0
    v = <unsigned long long>sequence_index
    buf[n] = 0x03
    for k in range(8):
        buf[n + 1 + k] = <uint8_t>(v >> (56 - 8 * k))
    n += 9
    if (type(content_hash) is not str or not PyUnicode_IS_ASCII(content_hash)
            or PyUnicode_GET_LENGTH(content_hash) != 64
            or ck_unhex32(<const uint8_t *>PyUnicode_DATA(content_hash), buf + n + 1) != 0):
        return 0
    buf[n] = 0x06
    n += 33
    if parent_node_id is None:
        buf[n] = 0x00
        return n + 1
    buf[n] = 0x04
    if not _fast_uuid(parent_node_id, buf + n + 1):
        return 0
    return n + 17


def leaf_hash_v2(node_id, node_type, schema_version, sequence_index, content_hash,
                 parent_node_id) -> str:
    """``hash_version`` 2 leaf hash (ASTP.md §4.1) as hex; ``parent_node_id`` None -> NULL."""
    cdef uint8_t raw[33]
    cdef uint8_t buf[FAST_LEAF_ROOM]
    cdef Py_ssize_t size = _fast_leaf_v2(node_id, node_type, schema_version, sequence_index,
                                         content_hash, parent_node_id, buf)
    if size > 0:  # canonical inputs: one C preimage and one hash
        ck_sha3_256(buf, <size_t>size, raw)
        return _hex_of(raw)
    # anything else (NFC-sensitive text, uuid.UUID, bytes, a refusal): the field encoder
    return hash_fields(b"LEAF_HASH:v2:", (
        ("UUID", node_id), ("STRING", node_type), ("STRING", schema_version),
        ("UINT", sequence_index), ("HASH", content_hash), ("UUID|NULL", parent_node_id),
    )).hex()


cdef bytes _raw_text(object value, str what):
    if not isinstance(value, str):
        raise InvalidFieldError(f"{what} needs text, got {type(value).__name__}")
    try:
        data = value.encode("utf-8")  # v1: no NFC
    except UnicodeEncodeError as exc:
        raise InvalidFieldError(f"{what} is not encodable as UTF-8: {exc.reason}") from None
    return _u32be(len(data)) + data


def leaf_hash_v1(node_id, node_type, schema_version, sequence_index, content_hash,
                 parent_node_id, sealed_at_ms=0) -> str:
    """``hash_version`` 1 leaf hash (ASTP.md §4.2) as hex: raw concatenation, no tags, no NFC;
    absent parent -> 16 zero bytes; ``sealed_at_ms`` 0 for the unsealed (verifier) value."""
    cdef uint8_t raw[32]
    for name, n in (("sequence_index", sequence_index), ("sealed_at_ms", sealed_at_ms)):
        if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n < U64:
            raise InvalidFieldError(f"{name} must be an integer in [0, 2^64), got {n!r}")
    parent = b"\x00" * 16 if parent_node_id is None else uuid_bytes(parent_node_id)
    node = uuid_bytes(node_id)
    texts = _raw_text(node_type, "node_type") + _raw_text(schema_version, "schema_version")
    _parse_digest(content_hash, raw)
    preimage = (node + texts + _u64be(<unsigned long long>sequence_index)
                + PyBytes_FromStringAndSize(<char *>raw, 32)
                + _u64be(<unsigned long long>sealed_at_ms) + parent)
    ck_sha3_256(<const uint8_t *>PyBytes_AS_STRING(preimage), <size_t>PyBytes_GET_SIZE(preimage),
                raw)
    return _hex_of(raw)



# --- Episode segments: the document reader's fast path ------------------------------------
# One call reads the run of canonical segment items of a document with C-level dict access
# and character checks; the first item outside the canonical shape is left to the reader
# (which raises its own InvalidRecordError or reads it). Same contract as the twin.

# the dict keys read_segments looks up, interned once
cdef str _K_CONTENT = "content_hash"
cdef str _K_TIER = "retention_tier"
cdef str _K_CREATED = "created_at"
cdef str _K_HV = "hash_version"
cdef str _K_LEAF = "leaf_hash"
cdef str _K_SEQ = "sequence_index"
cdef str _K_LEAF_INDEX = "leaf_index"
cdef str _K_NODE_ID = "node_id"
cdef str _K_NODE_TYPE = "node_type"
cdef str _K_SCHEMA = "schema_version"
cdef str _K_PARENT = "parent_node_id"
cdef str _EPHEMERAL = "EPHEMERAL"
cdef str _SEGMENT = "segment"


cdef inline int _hexchar(unsigned char c) noexcept:
    """0 for 0-9 a-f, 1 for A-F, -1 otherwise."""
    if (c >= 48 and c <= 57) or (c >= 97 and c <= 102):
        return 0
    if c >= 65 and c <= 70:
        return 1
    return -1


cdef object _seg_hex(object value):
    """Lowercase text of an exact 64-hex-character ``str``; None for anything else."""
    if type(value) is not str or not PyUnicode_IS_ASCII(value) or PyUnicode_GET_LENGTH(value) != 64:
        return None
    cdef const unsigned char *p = <const unsigned char *>PyUnicode_DATA(value)
    cdef int upper = 0, k, r
    for k in range(64):
        r = _hexchar(p[k])
        if r < 0:
            return None
        upper |= r
    return value.lower() if upper else value


cdef object _seg_uuid(object value):
    """Lowercase text of an exact 8-4-4-4-12 hex ``str``; None for anything else."""
    if type(value) is not str or not PyUnicode_IS_ASCII(value) or PyUnicode_GET_LENGTH(value) != 36:
        return None
    cdef const unsigned char *p = <const unsigned char *>PyUnicode_DATA(value)
    cdef int upper = 0, k, r
    for k in range(36):
        if k == 8 or k == 13 or k == 18 or k == 23:
            if p[k] != 45:
                return None
            continue
        r = _hexchar(p[k])
        if r < 0:
            return None
        upper |= r
    return value.lower() if upper else value


cdef inline bint _seg_uint(object value) except -1:
    return type(value) is int and value >= 0


cdef inline object _get(dict item, str key):
    """The value, or None when absent (as ``dict.get``)."""
    cdef PyObject *ref = PyDict_GetItem(item, key)
    return None if ref == NULL else <object>ref


def read_segments(items, Py_ssize_t start, segment_type, list segments, list excluded, *,
                  closed_at=None, bint proof_of_record=False):
    """Read ``items[start:]`` (the stored segments of an Episode document) while each item is
    in the canonical shape, appending ``segment_type(...)`` to ``segments`` (content hashes of
    EPHEMERAL segments to ``excluded``); return ``(stop, late)``. docs/astp-kernel-api.md."""
    cdef bint late = False
    cdef Py_ssize_t stop, n
    cdef dict item
    cdef PyObject *ref
    cdef object obj, index, content, tier, created, instant, hv, leaf, node_id, node_type, schema, parent
    if type(items) is not list:
        return start, late
    n = PyList_GET_SIZE(items)
    for stop in range(start, n):
        obj = <object>PyList_GET_ITEM(items, stop)
        if type(obj) is not dict:
            return stop, late
        item = <dict>obj
        tier = created = hv = leaf = None
        if proof_of_record:
            ref = PyDict_GetItem(item, _K_SEQ)
            if ref == NULL:
                ref = PyDict_GetItem(item, _K_LEAF_INDEX)
            if ref == NULL or not _seg_uint(<object>ref):
                return stop, late
            index = <object>ref
            content = _seg_hex(_get(item, _K_CONTENT))
            if content is None:
                return stop, late
        else:
            tier = _get(item, _K_TIER)
            if tier is not None and type(tier) is not str:
                return stop, late
            content = _seg_hex(_get(item, _K_CONTENT))
            if content is None:
                return stop, late
            created = _get(item, _K_CREATED)
            if created is not None:
                if type(created) is not str:
                    return stop, late
                instant = _fast_instant(<str>created)
                if instant is None:
                    try:
                        instant = instant_from_text(created)
                    except ValueError:
                        return stop, late
                    if instant.tzinfo is None:
                        return stop, late
                created = instant
            if tier is not None and <str>tier == _EPHEMERAL:
                if closed_at is not None and created is not None and created > closed_at:
                    late = True
                excluded.append(content)
                continue
            hv = _get(item, _K_HV)
            if hv is not None and not _seg_uint(hv):
                return stop, late
            leaf = _get(item, _K_LEAF)
            if leaf is not None:
                leaf = _seg_hex(leaf)
                if leaf is None:
                    return stop, late
            ref = PyDict_GetItem(item, _K_SEQ)
            if ref == NULL or not _seg_uint(<object>ref):
                return stop, late
            index = <object>ref
        # the leaf-hash fields, with the reader's defaults for absent keys
        ref = PyDict_GetItem(item, _K_NODE_ID)
        node_id = None
        if ref != NULL:
            node_id = _seg_uuid(<object>ref)
            if node_id is None:
                return stop, late
        ref = PyDict_GetItem(item, _K_NODE_TYPE)
        node_type = _SEGMENT if ref == NULL else <object>ref
        if type(node_type) is not str:
            return stop, late
        ref = PyDict_GetItem(item, _K_SCHEMA)
        schema = None
        if ref != NULL:
            schema = <object>ref
            if type(schema) is not str:
                return stop, late
        parent = _get(item, _K_PARENT)
        if parent is not None:
            parent = _seg_uuid(parent)
            if parent is None:
                return stop, late
        if closed_at is not None and created is not None and created > closed_at:
            late = True
        segments.append(segment_type(index, content, node_id, node_type, schema, parent, tier,
                                     created, hv, leaf))
    return n, late
