"""Compiled Episode document scanner: ``scan_episode`` reads an Episode document's JSON
text in one pass into its members and a ``SegmentTable`` (the stored segments in C, no
Python object per segment), and ``plain_json`` says whether orjson may read a text for the
strict reader. The fast path of ``canonkit.astp.documents.read_episode`` and of the
re-verification workers; anything the scanner does not take is read the general, strict way.

Twin: ``canonkit.astp._py.scan`` (docs/astp-kernel-api.md); the differential tests keep the
two in agreement (the scanner may decline where the twin reads, never the other way).
"""
from cpython.dict cimport PyDict_GetItem
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from cpython.ref cimport PyObject
from libc.stddef cimport ptrdiff_t

from canonkit._instant import instant_from_text
from canonkit.errors import InvalidFieldError

include "astp_kernel.pxi"
include "astp_instants.pxi"
include "astp_hex_text.pxi"
include "astp_search.pxi"

__all__ = ["plain_json", "read_instant", "scan_episode", "scan_verdict"]

import_datetime()

cdef str _SEGMENT = "segment"


# --- Episode documents: the scanner (JSON bytes -> members + a segment table) ---------------
# ``scan_episode`` reads an Episode document's JSON text in one pass. The stored segments are
# parsed straight into a C table (no Python object per segment); every other top-level
# member is handed to orjson as its own span of the text, so its value is exactly what
# ``orjson.loads`` of the whole document holds. A document is taken only when every segment
# is in the canonical shape, the text around it is plain (no escapes where the scanner
# reads, no repeated key, no non-ASCII key) and every member's span passes the strict
# checks (``_plain_value``: no key repeated at any depth, no integer that orjson and the
# strict reader would read differently) — so the fast path reads nothing the strict reader
# (``canonkit._files.loads_json``) refuses, and reads it as that reader does. Anything else
# returns None and the caller parses the document the general, strict way, which decides
# (and words any refusal).

from libc.stdint cimport int64_t, uint64_t
from libc.stdlib cimport free, malloc, qsort, realloc
from libc.string cimport memchr, memcmp, memset
from cpython.bytes cimport PyBytes_Check

import orjson

cdef object _loads = orjson.loads

cdef enum:
    SCAN_MAX_DEPTH = 200        # deeper members are left to the general reader
    SCAN_MAX_INT_DIGITS = 18    # a longer integer may leave 64 bits: the general reader
    SCAN_MAX_KEYS = 64          # keys per object the scanner compares for repeats
    SCAN_MAX_OPEN_KEYS = 512    # keys of all the objects open at once
    SCAN_MAX_TEXT = 256         # node_type / schema_version longer than this: general reader
    F_INDEX = 1
    F_CONTENT = 2
    F_NODE_ID = 4
    F_NODE_TYPE = 8
    F_SCHEMA = 16
    F_PARENT = 32
    F_TIER = 64
    F_CREATED = 128
    F_LEAF_INDEX = 256
    TIER_NONE = 0
    TIER_OTHER = 1
    TIER_EPHEMERAL = 2


cdef struct Seg:
    uint64_t index
    uint8_t content[32]
    uint8_t node_id[16]
    uint8_t parent[16]
    Py_ssize_t type_at, type_len          # node_type in the text; type_len -1: "segment"
    Py_ssize_t schema_at, schema_len      # schema_version; schema_len -1: absent
    Py_ssize_t tier_at, tier_len          # retention_tier (TIER_OTHER only)
    Py_ssize_t created_at, created_len    # created_at text; created_len -1: absent
    int64_t created_us                    # created_at as UTC microseconds since 1970
    int fields
    int tier


cdef inline Py_ssize_t _ws(const unsigned char *p, Py_ssize_t i, Py_ssize_t n) noexcept:
    while i < n and (p[i] == 32 or p[i] == 10 or p[i] == 13 or p[i] == 9):
        i += 1
    return i


cdef Py_ssize_t _skip_string(const unsigned char *p, Py_ssize_t i, Py_ssize_t n) noexcept:
    """p[i] is '"': the index after the closing quote, or -1 (unterminated)."""
    i += 1
    while i < n:
        if p[i] == 34:
            return i + 1
        if p[i] == 92:
            i += 2
        else:
            i += 1
    return -1


cdef inline bint _is_ws(unsigned char c) noexcept:
    return c == 32 or c == 10 or c == 13 or c == 9


cdef Py_ssize_t _plain_number(const unsigned char *p, Py_ssize_t i, Py_ssize_t n) noexcept:
    """p[i] starts a number: the index after it, or -1 for an integer of more than
    SCAN_MAX_INT_DIGITS digits (orjson reads one outside 64 bits as a float, the strict
    reader as an int: the general reader decides)."""
    cdef Py_ssize_t digits = 0
    cdef bint integer = True
    cdef unsigned char c
    while i < n:
        c = p[i]
        if c >= 48 and c <= 57:
            if integer:
                digits += 1
        elif c == 46 or c == 101 or c == 69:
            integer = False
        elif c != 45 and c != 43:
            break
        i += 1
    if integer and digits > SCAN_MAX_INT_DIGITS:
        return -1
    return i


cdef Py_ssize_t _plain_value(const unsigned char *p, Py_ssize_t i, Py_ssize_t n) noexcept:
    """The end of the JSON value at p[i], or -1 when the general (strict) reader must
    read it: a key repeated in any object at any depth, a key with an escape (two
    spellings of one key), an integer of more than SCAN_MAX_INT_DIGITS digits, nesting
    deeper than SCAN_MAX_DEPTH, more than SCAN_MAX_KEYS keys in one object or
    SCAN_MAX_OPEN_KEYS in the open objects. Only delimits and checks: orjson reads the
    span, and refuses what is not JSON."""
    cdef Py_ssize_t key_at[SCAN_MAX_OPEN_KEYS]
    cdef Py_ssize_t key_len[SCAN_MAX_OPEN_KEYS]
    cdef int first_key[SCAN_MAX_DEPTH + 1]
    cdef bint is_object[SCAN_MAX_DEPTH + 1]
    cdef int depth = 0, keys = 0, k
    cdef bint want_key = False
    cdef Py_ssize_t j, length
    cdef unsigned char c
    if i >= n:
        return -1
    c = p[i]
    if c == 34:
        return _skip_string(p, i, n)
    if c == 45 or (c >= 48 and c <= 57):
        return _plain_number(p, i, n)
    if c != 123 and c != 91:  # true, false, null (or not JSON): to the next delimiter
        while i < n:
            c = p[i]
            if c == 44 or c == 125 or c == 93 or _is_ws(c):
                break
            i += 1
        return i
    while i < n:
        c = p[i]
        if c == 34:
            if not want_key:
                i = _skip_string(p, i, n)
                if i < 0:
                    return -1
                continue
            j = i + 1
            while j < n and p[j] != 34:
                if p[j] == 92:
                    return -1  # an escaped key: the strict reader compares decoded keys
                j += 1
            if j >= n:
                return -1
            length = j - i - 1
            for k in range(first_key[depth], keys):
                if key_len[k] == length and memcmp(p + key_at[k], p + i + 1, length) == 0:
                    return -1  # a repeated key
            if keys - first_key[depth] >= SCAN_MAX_KEYS or keys >= SCAN_MAX_OPEN_KEYS:
                return -1
            key_at[keys] = i + 1
            key_len[keys] = length
            keys += 1
            want_key = False
            i = j + 1
            continue
        if c == 123 or c == 91:
            depth += 1
            if depth > SCAN_MAX_DEPTH:
                return -1
            is_object[depth] = c == 123
            first_key[depth] = keys
            want_key = c == 123
        elif c == 125 or c == 93:
            if depth == 0:
                return -1
            keys = first_key[depth]
            depth -= 1
            want_key = False
            if depth == 0:
                return i + 1
        elif c == 44:
            want_key = is_object[depth]
        elif c == 45 or (c >= 48 and c <= 57):
            i = _plain_number(p, i, n)
            if i < 0:
                return -1
            continue
        i += 1
    return -1


cdef Py_ssize_t _after(const unsigned char *p, Py_ssize_t i, Py_ssize_t n, unsigned char close,
                       bint *closed) noexcept:
    """After a member or an element: the start of the next one (past ``,`` and
    whitespace), or, with *closed set, the index of ``close`` ending the container; -1 for
    anything else."""
    i = _ws(p, i, n)
    if i >= n:
        return -1
    closed[0] = p[i] == close
    if closed[0]:
        return i
    if p[i] != 44:
        return -1
    return _ws(p, i + 1, n)


cdef Py_ssize_t _plain_string(const unsigned char *p, Py_ssize_t i, Py_ssize_t n,
                              Py_ssize_t *end) noexcept:
    """p[i] is '"': a string of printable ASCII without escapes. Its length (the text is
    p[i+1 : i+1+length]) and *end after the quote, or -1 for anything else."""
    cdef Py_ssize_t j = i + 1
    cdef unsigned char c
    while j < n:
        c = p[j]
        if c == 34:
            end[0] = j + 1
            return j - i - 1
        if <unsigned char>(c - 32) > 94 or c == 92:
            return -1
        j += 1
    return -1


cdef extern from "astp_tree.h" nogil:
    signed char ck_hex_values[256]
    enum:
        CK_MAX_LANES
        CK_SHA3_256_RATE
    void ck_sha3_256_padded_many(const uint8_t *const *blocks, uint8_t *const *out, int count)
    int ck_unhex(const uint8_t *hex, uint8_t *raw, int n)


cdef int _uuid16(const unsigned char *s, Py_ssize_t length, uint8_t *out) noexcept:
    """8-4-4-4-12 hex text (either case) into out[16]; -1 for anything else."""
    cdef uint8_t digits[32]
    if length != 36 or s[8] != 45 or s[13] != 45 or s[18] != 45 or s[23] != 45:
        return -1
    memcpy(digits, s, 8)
    memcpy(digits + 8, s + 9, 4)
    memcpy(digits + 12, s + 14, 4)
    memcpy(digits + 16, s + 19, 4)
    memcpy(digits + 20, s + 24, 12)
    return ck_unhex(digits, out, 16)


cdef inline int _fixed(const unsigned char *p, Py_ssize_t i, Py_ssize_t n, Py_ssize_t length
                       ) noexcept:
    """Whether p[i] opens a string of exactly ``length`` characters (the caller checks
    them: hex digits and dashes only, so no escape or control character can hide)."""
    return i + length + 1 < n and p[i] == 34 and p[i + length + 1] == 34


cdef Py_ssize_t _uint(const unsigned char *p, Py_ssize_t i, Py_ssize_t n, uint64_t *out) noexcept:
    """A JSON integer of plain digits (no sign, fraction or exponent) below 2^64: the index
    after it, or -1."""
    cdef uint64_t v = 0, d
    cdef Py_ssize_t start = i
    while i < n and p[i] >= 48 and p[i] <= 57:
        d = p[i] - 48
        if v > (<uint64_t>0xFFFFFFFFFFFFFFFF - d) // 10:
            return -1
        v = v * 10 + d
        i += 1
    if i == start or (p[start] == 48 and i - start > 1):
        return -1
    if i < n and (p[i] == 46 or p[i] == 101 or p[i] == 69):
        return -1
    out[0] = v
    return i


cdef inline int _leap(int y) noexcept:
    return (y % 4 == 0 and y % 100 != 0) or y % 400 == 0


cdef int64_t _days_from_civil(int y, int m, int d) noexcept:
    cdef int64_t era, yoe, doy, doe
    y -= m <= 2
    era = (y if y >= 0 else y - 399) // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


cdef int _instant_us(const unsigned char *p, Py_ssize_t n, int64_t *out) noexcept:
    """The instant ``_instant_fields`` reads, as UTC microseconds; -1 for text of any other
    shape or an invalid date or time (where ``_fast_instant`` leaves it to instant_from_text)."""
    cdef Instant t
    cdef int mdays
    if _instant_fields(p, n, &t) < 0:
        return -1
    if t.year < 1 or t.month < 1 or t.month > 12 or t.day < 1 or t.hour > 23:
        return -1
    if t.minute > 59 or t.second > 59:
        return -1
    if t.month == 2:
        mdays = 29 if _leap(t.year) else 28
    elif t.month == 4 or t.month == 6 or t.month == 9 or t.month == 11:
        mdays = 30
    else:
        mdays = 31
    if t.day > mdays:
        return -1
    out[0] = ((_days_from_civil(t.year, t.month, t.day) * 86400 + t.hour * 3600
               + t.minute * 60 + t.second) * 1000000 + t.us - <int64_t>t.offset * 60000000)
    return 0


cdef inline bint _literal(const unsigned char *k, Py_ssize_t room, const char *key,
                          Py_ssize_t length) noexcept:
    """Whether the text at k (``room`` bytes readable) is ``key`` and its closing quote."""
    return room > length and memcmp(k, key, length) == 0 and k[length] == 34


cdef int _key(const unsigned char *p, Py_ssize_t i, Py_ssize_t n, bint por,
              Py_ssize_t *end) noexcept:
    """p[i] is the '"' opening a segment key: its F_* bit and *end after its closing
    quote, or 0 for a key outside the canonical shape. A key is compared with the one
    literal its first character allows, closing quote included, so no other key (and no
    escape or control character) can match."""
    cdef const unsigned char *k = p + i + 1
    cdef Py_ssize_t room = n - i - 1
    cdef int f = 0
    cdef Py_ssize_t length = 0
    if room < 8:
        return 0
    if k[0] == 115:    # s
        if _literal(k, room, b"sequence_index", 14):
            f, length = F_INDEX, 14
        elif _literal(k, room, b"schema_version", 14):
            f, length = F_SCHEMA, 14
    elif k[0] == 99:   # c
        if _literal(k, room, b"content_hash", 12):
            f, length = F_CONTENT, 12
        elif not por and _literal(k, room, b"created_at", 10):
            f, length = F_CREATED, 10
    elif k[0] == 110:  # n
        if _literal(k, room, b"node_id", 7):
            f, length = F_NODE_ID, 7
        elif _literal(k, room, b"node_type", 9):
            f, length = F_NODE_TYPE, 9
    elif k[0] == 112:  # p
        if _literal(k, room, b"parent_node_id", 14):
            f, length = F_PARENT, 14
    elif k[0] == 114:  # r
        if not por and _literal(k, room, b"retention_tier", 14):
            f, length = F_TIER, 14
    elif k[0] == 108:  # l
        if por and _literal(k, room, b"leaf_index", 10):
            f, length = F_LEAF_INDEX, 10
    end[0] = i + length + 2
    return f


cdef Py_ssize_t _segment(const unsigned char *p, Py_ssize_t i, Py_ssize_t n, bint por,
                         Seg *s) noexcept:
    """The object at p[i] as one canonical segment into *s: the index after it, or -1."""
    cdef Py_ssize_t vlen, end = 0
    cdef int f, seen = 0
    cdef bint closed = False
    cdef uint64_t leaf_index = 0
    cdef const unsigned char *q
    s.fields = 0
    s.tier = TIER_NONE
    s.type_len = -1
    s.schema_len = -1
    s.created_len = -1
    if i >= n or p[i] != 123:
        return -1
    i = _ws(p, i + 1, n)
    if i < n and p[i] == 125:
        return -1  # no content_hash
    while True:
        if i >= n or p[i] != 34:
            return -1
        f = _key(p, i, n, por, &end)
        if f == 0 or seen & f:
            return -1  # a key the fast path does not read, or a repeated key
        seen |= f
        s.fields |= f
        i = end
        if i < n and p[i] == 58:
            i += 1
        else:
            i = _ws(p, i, n)
            if i >= n or p[i] != 58:
                return -1
            i += 1
        if i < n and p[i] <= 32:
            i = _ws(p, i, n)
        if i >= n:
            return -1
        if f == F_INDEX:
            i = _uint(p, i, n, &s.index)
            if i < 0:
                return -1
        elif f == F_LEAF_INDEX:
            i = _uint(p, i, n, &leaf_index)
            if i < 0:
                return -1
        elif p[i] == 110:  # null: only where the general reader reads null as absent
            if n - i < 4 or memcmp(p + i, b"null", 4) != 0:
                return -1
            if f == F_PARENT or f == F_TIER or f == F_CREATED:
                s.fields &= ~f
            else:
                return -1
            i += 4
        elif f == F_CONTENT:
            if not _fixed(p, i, n, 64) or ck_unhex(p + i + 1, s.content, 32) != 0:
                return -1
            i += 66
        elif f == F_NODE_ID:
            if not _fixed(p, i, n, 36) or _uuid16(p + i + 1, 36, s.node_id) != 0:
                return -1
            i += 38
        elif f == F_PARENT:
            if not _fixed(p, i, n, 36) or _uuid16(p + i + 1, 36, s.parent) != 0:
                return -1
            i += 38
        elif p[i] != 34:
            return -1
        elif f == F_CREATED:
            # an instant is at most 32 characters, all of them digits and separators: the
            # first quote ends it, and _instant_us accepts no other character
            q = <const unsigned char *>memchr(p + i + 1, 34, min(n - i - 1, 40))
            if q == NULL:
                return -1
            vlen = q - (p + i + 1)
            if _instant_us(p + i + 1, vlen, &s.created_us) != 0:
                return -1
            s.created_at, s.created_len = i + 1, vlen
            i += vlen + 2
        elif f == F_TIER and _fixed(p, i, n, 8) and memcmp(p + i + 1, b"STANDARD", 8) == 0:
            s.tier_at, s.tier_len, s.tier = i + 1, 8, TIER_OTHER
            i += 10
        elif f == F_TIER and _fixed(p, i, n, 9) and memcmp(p + i + 1, b"EPHEMERAL", 9) == 0:
            s.tier_at, s.tier_len, s.tier = i + 1, 9, TIER_EPHEMERAL
            i += 11
        else:
            vlen = _plain_string(p, i, n, &end)
            if vlen < 0:
                return -1
            if f == F_NODE_TYPE:
                if vlen > SCAN_MAX_TEXT:
                    return -1
                s.type_at, s.type_len = i + 1, vlen
            elif f == F_SCHEMA:
                if vlen > SCAN_MAX_TEXT:
                    return -1
                s.schema_at, s.schema_len = i + 1, vlen
            else:  # F_TIER: another tier
                s.tier_at, s.tier_len = i + 1, vlen
                s.tier = TIER_EPHEMERAL if (vlen == 9 and memcmp(p + i + 1, b"EPHEMERAL", 9) == 0) \
                    else TIER_OTHER
            i = end
        if i < n and p[i] == 44:  # the common separator, then the next key's quote
            i += 1
            if i < n and p[i] <= 32:
                i = _ws(p, i, n)
            continue
        i = _after(p, i, n, 125, &closed)
        if i < 0:
            return -1
        if closed:
            break
    if not s.fields & F_CONTENT:
        return -1
    if por and not s.fields & F_INDEX:
        if not s.fields & F_LEAF_INDEX:
            return -1
        s.index = leaf_index
        s.fields |= F_INDEX
    if not s.fields & F_INDEX and s.tier != TIER_EPHEMERAL:
        return -1
    return i + 1


cdef class SegmentTable:
    """An Episode's stored (non-EPHEMERAL) segments in sequence order, held as C values that
    point into the document's text. Iterating gives ``Segment`` values (made on demand);
    the hot path reads ``content_raw()`` and ``leaves_v2_raw()`` instead."""
    cdef Seg *segs
    cdef Py_ssize_t n
    cdef bytes text
    cdef object segment_type
    cdef list made
    #: ``{(sav, ov): spine root hex}`` of the stored order, as the verdict found them (the
    #: general path then need not fold them again); None until then
    cdef public dict spine_roots

    def __dealloc__(self):
        free(self.segs)

    def __len__(self):
        return self.n

    cdef object _make(self, Py_ssize_t k):
        cdef Seg *s = &self.segs[k]
        cdef const unsigned char *p = <const unsigned char *>PyBytes_AS_STRING(self.text)
        node_id = _uuid_text(s.node_id) if s.fields & F_NODE_ID else None
        parent = _uuid_text(s.parent) if s.fields & F_PARENT else None
        node_type = _SEGMENT if s.type_len < 0 else (<bytes>p[s.type_at:s.type_at + s.type_len]).decode("ascii")
        schema = None if s.schema_len < 0 else (<bytes>p[s.schema_at:s.schema_at + s.schema_len]).decode("ascii")
        tier = None if s.tier == TIER_NONE else (<bytes>p[s.tier_at:s.tier_at + s.tier_len]).decode("ascii")
        created = None
        if s.created_len >= 0:
            created = _fast_instant((<bytes>p[s.created_at:s.created_at + s.created_len]).decode("ascii"))
        return self.segment_type(<object>s.index, _hex_of(s.content), node_id, node_type, schema,
                                 parent, tier, created, None, None)

    def __getitem__(self, Py_ssize_t k):
        if k < 0:
            k += self.n
        if not 0 <= k < self.n:
            raise IndexError("segment index out of range")
        return self._make(k)

    def __iter__(self):
        cdef Py_ssize_t k
        for k in range(self.n):
            yield self._make(k)

    @property
    def stored_leaf_hashes(self) -> bool:
        """Whether any segment carries a stored ``leaf_hash`` (never, on this path)."""
        return False

    def content_raw(self) -> bytes:
        """The content hashes, 32 raw bytes each, in sequence order."""
        cdef bytes out = PyBytes_FromStringAndSize(NULL, 32 * self.n)
        cdef uint8_t *o = <uint8_t *>PyBytes_AS_STRING(out)
        cdef Py_ssize_t k
        for k in range(self.n):
            memcpy(o + 32 * k, self.segs[k].content, 32)
        return out

    def content_hex(self) -> list:
        return [_hex_of(self.segs[k].content) for k in range(self.n)]

    def spine_keys(self) -> tuple:
        """``(ids, hashes)``: every segment's ``node_id`` and ``parent_node_id``, and its
        ``content_hash`` and ``leaf_hash`` (None where absent), as ``SegmentList.spine_keys``
        gives them, without a ``Segment`` per segment."""
        cdef set ids = set(), hashes = set()
        cdef Py_ssize_t k
        cdef Seg *s
        for k in range(self.n):
            s = &self.segs[k]
            ids.add(_uuid_text(s.node_id) if s.fields & F_NODE_ID else None)
            ids.add(_uuid_text(s.parent) if s.fields & F_PARENT else None)
            hashes.add(_hex_of(s.content))
        if self.n:
            hashes.add(None)   # no stored leaf_hash on this path
        return ids, hashes

    def spine_hits(self, ids, hashes) -> tuple:
        """``(ids found, hashes found)``: the texts of ``ids`` that are a segment's
        ``node_id`` or ``parent_node_id``, and of ``hashes`` that are its ``content_hash``,
        as ``spine_keys`` writes them (so only lowercase canonical text can be found), as
        ``SegmentList.spine_hits`` gives them — without a text per segment."""
        cdef list id_texts = [x for x in ids if _lower_hex(x, 36)]
        cdef list hash_texts = [x for x in hashes if _lower_hex(x, 64)]
        cdef Probe *id_probes = NULL
        cdef Probe *hash_probes = NULL
        cdef set found_ids = set(), found_hashes = set()
        cdef Py_ssize_t k, n_ids = len(id_texts), n_hashes = len(hash_texts)
        cdef Seg *s
        cdef Probe *hit
        cdef uint64_t id_firsts[4]
        cdef uint64_t hash_firsts[4]
        if not n_ids and not n_hashes:
            return found_ids, found_hashes
        try:
            id_probes = _probes(id_texts, 16, id_firsts)
            hash_probes = _probes(hash_texts, 32, hash_firsts)
            for k in range(self.n):
                s = &self.segs[k]
                if s.fields & F_NODE_ID and _maybe(id_firsts, s.node_id[0]):
                    hit = _find(id_probes, n_ids, s.node_id, 16)
                    if hit != NULL:
                        found_ids.add(id_texts[hit.at])
                if s.fields & F_PARENT and _maybe(id_firsts, s.parent[0]):
                    hit = _find(id_probes, n_ids, s.parent, 16)
                    if hit != NULL:
                        found_ids.add(id_texts[hit.at])
                if _maybe(hash_firsts, s.content[0]):
                    hit = _find(hash_probes, n_hashes, s.content, 32)
                    if hit != NULL:
                        found_hashes.add(hash_texts[hit.at])
        finally:
            free(id_probes)
            free(hash_probes)
        return found_ids, found_hashes

    def leaves_v2_raw(self, int sav) -> bytes:
        """The ``hash_version`` 2 leaf hashes (ASTP.md §4.1), 32 raw bytes each; the same
        InvalidFieldError as the general path for a segment without the leaf fields."""
        cdef Py_ssize_t k
        out = self._leaves_v2()
        if out is None:
            for k in range(self.n):
                if not self.segs[k].fields & F_NODE_ID or self.segs[k].schema_len < 0:
                    raise InvalidFieldError(f"segment {self.segs[k].index} lacks the leaf-hash "
                                            f"fields sav {sav} needs")
        return out

    cdef object _leaves_v2(self):
        """The v2 leaf hashes as bytes, or None when a segment lacks the leaf fields. A
        preimage that fits one SHA3-256 block (every canonical one does) is written
        straight into a pre-padded block, and CK_MAX_LANES of them are hashed side by side."""
        cdef bytes out = PyBytes_FromStringAndSize(NULL, 32 * self.n)
        cdef uint8_t *o = <uint8_t *>PyBytes_AS_STRING(out)
        cdef const unsigned char *p = <const unsigned char *>PyBytes_AS_STRING(self.text)
        cdef uint8_t buf[FAST_LEAF_ROOM]
        cdef uint8_t blocks[CK_MAX_LANES][CK_SHA3_256_RATE]
        cdef const uint8_t *pending[CK_MAX_LANES]
        cdef uint8_t *dest[CK_MAX_LANES]
        cdef Py_ssize_t k, m, type_len
        cdef int filled = 0
        cdef uint8_t *b
        cdef Seg *s
        for k in range(self.n):
            s = &self.segs[k]
            if not s.fields & F_NODE_ID or s.schema_len < 0:
                return None
            type_len = 7 if s.type_len < 0 else s.type_len
            m = 30 + 5 + type_len + 5 + s.schema_len + 9 + 33 + (17 if s.fields & F_PARENT else 1)
            if m >= CK_SHA3_256_RATE:
                _leaf_v2_preimage(p, s, buf)
                ck_sha3_256(buf, <size_t>m, o + 32 * k)
                continue
            b = blocks[filled]
            memset(b, 0, CK_SHA3_256_RATE)
            _leaf_v2_preimage(p, s, b)
            b[m] = 0x06
            b[CK_SHA3_256_RATE - 1] |= 0x80
            pending[filled] = b
            dest[filled] = o + 32 * k
            filled += 1
            if filled == CK_MAX_LANES:
                ck_sha3_256_padded_many(pending, dest, filled)
                filled = 0
        if filled:
            ck_sha3_256_padded_many(pending, dest, filled)
        return out


cdef Py_ssize_t _leaf_v2_preimage(const unsigned char *p, const Seg *s, uint8_t *buf) noexcept:
    """The §4.1 leaf preimage of a segment with the leaf fields into buf; its length."""
    cdef Py_ssize_t m, w
    memcpy(buf, b"LEAF_HASH:v2:", 13)
    buf[13] = 0x04
    memcpy(buf + 14, s.node_id, 16)
    m = 30
    if s.type_len < 0:
        m += _put_string(<const unsigned char *>b"segment", 7, buf + m)
    else:
        m += _put_string(p + s.type_at, s.type_len, buf + m)
    m += _put_string(p + s.schema_at, s.schema_len, buf + m)
    buf[m] = 0x03
    for w in range(8):
        buf[m + 1 + w] = <uint8_t>(s.index >> (56 - 8 * w))
    m += 9
    buf[m] = 0x06
    memcpy(buf + m + 1, s.content, 32)
    m += 33
    if s.fields & F_PARENT:
        buf[m] = 0x04
        memcpy(buf + m + 1, s.parent, 16)
        m += 17
    else:
        buf[m] = 0x00
        m += 1
    return m


cdef inline Py_ssize_t _put_string(const unsigned char *s, Py_ssize_t length, uint8_t *out) noexcept:
    """A STRING field (ASTP.md §2.1) of ASCII text: tag, u32 length, bytes."""
    out[0] = 0x02
    out[1] = <uint8_t>(length >> 24)
    out[2] = <uint8_t>(length >> 16)
    out[3] = <uint8_t>(length >> 8)
    out[4] = <uint8_t>length
    memcpy(out + 5, s, length)
    return length + 5


cdef struct Probe:
    uint8_t raw[32]       # a UUID's 16 bytes or a digest's 32
    Py_ssize_t at         # its text's index in the query


cdef inline bint _maybe(const uint64_t *firsts, uint8_t first) noexcept:
    """Whether a probe starts with byte ``first`` (a bitmap of the probes' first bytes)."""
    return (firsts[first >> 6] >> (first & 63)) & 1


cdef int _probe_order16(const void *a, const void *b) noexcept nogil:
    return memcmp(a, b, 16)


cdef int _probe_order32(const void *a, const void *b) noexcept nogil:
    return memcmp(a, b, 32)


cdef Probe *_probes(list texts, int width, uint64_t *firsts) except? NULL:
    """The raw bytes of hex ``texts`` (already checked), sorted for ``_find``; ``firsts``
    (4 words) gets the bitmap of their first bytes."""
    cdef Py_ssize_t i, k, j
    cdef Probe *probes
    cdef object text
    cdef const unsigned char *p
    firsts[0] = firsts[1] = firsts[2] = firsts[3] = 0
    if not texts:
        return NULL
    probes = <Probe *>malloc(len(texts) * sizeof(Probe))
    if probes == NULL:
        raise MemoryError()
    for i in range(len(texts)):
        text = texts[i]
        p = <const unsigned char *>PyUnicode_DATA(text)
        j = 0
        k = 0
        while j < width:
            if p[k] == 45:
                k += 1
                continue
            probes[i].raw[j] = <uint8_t>(_hex_value(p[k]) * 16 + _hex_value(p[k + 1]))
            j += 1
            k += 2
        probes[i].at = i
        firsts[probes[i].raw[0] >> 6] |= (<uint64_t>1) << (probes[i].raw[0] & 63)
    qsort(probes, <size_t>len(texts), sizeof(Probe),
          _probe_order16 if width == 16 else _probe_order32)
    return probes


cdef Probe *_find(Probe *probes, Py_ssize_t n, const uint8_t *raw, int width) noexcept:
    """The probe of ``raw`` (binary search), or NULL."""
    cdef Py_ssize_t lo = 0, hi = n, mid
    cdef int order
    while lo < hi:
        mid = (lo + hi) // 2
        order = memcmp(probes[mid].raw, raw, <size_t>width)
        if order == 0:
            return &probes[mid]
        if order < 0:
            lo = mid + 1
        else:
            hi = mid
    return NULL


cdef str _uuid_text(const uint8_t *raw):
    """Canonical lowercase 8-4-4-4-12 text of 16 raw bytes."""
    cdef char text[36]
    cdef const char *digits = b"0123456789abcdef"
    cdef int i, k = 0
    for i in range(16):
        if i == 4 or i == 6 or i == 8 or i == 10:
            text[k] = 45
            k += 1
        text[k] = digits[raw[i] >> 4]
        text[k + 1] = digits[raw[i] & 15]
        k += 2
    return text[:36].decode("ascii")


cdef object _segments(bytes text, const unsigned char *p, Py_ssize_t i, Py_ssize_t n, bint por,
                      object segment_type, Py_ssize_t *end):
    """The array at p[i] as (SegmentTable, excluded hex list, latest created_at in UTC
    microseconds or None); None when any item is outside the canonical shape or the
    stored indexes are not strictly ascending (the general reader sorts or refuses)."""
    cdef SegmentTable table = SegmentTable.__new__(SegmentTable)
    cdef Py_ssize_t cap = 64, k = 0
    cdef Seg *grown
    cdef Seg s
    cdef list excluded = []
    cdef bint any_created = False, closed = False
    cdef int64_t latest = 0
    table.text = text
    table.segment_type = segment_type
    table.segs = <Seg *>malloc(cap * sizeof(Seg))
    if table.segs == NULL:
        raise MemoryError()
    if i >= n or p[i] != 91:
        return None
    i = _ws(p, i + 1, n)
    if i < n and p[i] == 93:
        end[0] = i + 1
        table.n = 0
        return table, excluded, None
    while True:
        i = _segment(p, i, n, por, &s)
        if i < 0:
            return None
        if s.created_len >= 0:
            if not any_created or s.created_us > latest:
                latest = s.created_us
            any_created = True
        if s.tier == TIER_EPHEMERAL:
            excluded.append(_hex_of(s.content))
        else:
            if k and s.index <= table.segs[k - 1].index:
                return None
            if k == cap:
                cap *= 2
                grown = <Seg *>realloc(table.segs, cap * sizeof(Seg))
                if grown == NULL:
                    raise MemoryError()
                table.segs = grown
            table.segs[k] = s
            k += 1
            table.n = k
        i = _after(p, i, n, 93, &closed)
        if i < 0:
            return None
        if closed:
            break
    end[0] = i + 1
    table.n = k
    return table, excluded, (latest if any_created else None)


cdef struct Sig:
    uint8_t content[32]
    Py_ssize_t received_at, received_len      # received_at text; received_len -1: absent
    int64_t received_us
    int spine


cdef int _signal(const unsigned char *p, Py_ssize_t i, Py_ssize_t n, Sig *g, Py_ssize_t *end
                 ) noexcept:
    """The object at p[i] as one canonical signal (content_hash, placement, received_at)."""
    cdef Py_ssize_t klen, kat, vend = 0, vlen
    cdef int seen = 0, f
    cdef bint closed = False
    g.received_len = -1
    g.spine = 0
    if i >= n or p[i] != 123:
        return -1
    i = _ws(p, i + 1, n)
    while True:
        if i >= n or p[i] != 34:
            return -1
        kat = i + 1
        klen = _plain_string(p, i, n, &vend)
        if klen == 12 and memcmp(p + kat, b"content_hash", 12) == 0:
            f = 1
        elif klen == 9 and memcmp(p + kat, b"placement", 9) == 0:
            f = 2
        elif klen == 11 and memcmp(p + kat, b"received_at", 11) == 0:
            f = 4
        else:
            return -1
        if seen & f:
            return -1
        seen |= f
        i = _ws(p, vend, n)
        if i >= n or p[i] != 58:
            return -1
        i = _ws(p, i + 1, n)
        if f == 1:
            if not _fixed(p, i, n, 64) or ck_unhex32(p + i + 1, g.content) != 0:
                return -1
            i += 66
        elif f == 4 and n - i >= 4 and memcmp(p + i, b"null", 4) == 0:
            i += 4
        else:
            if i >= n or p[i] != 34:
                return -1
            vlen = _plain_string(p, i, n, &vend)
            if vlen < 0:
                return -1
            if f == 2:
                g.spine = vlen == 5 and memcmp(p + i + 1, b"SPINE", 5) == 0
            elif _instant_us(p + i + 1, vlen, &g.received_us) != 0:
                return -1
            else:
                g.received_at, g.received_len = i + 1, vlen
            i = vend
        i = _after(p, i, n, 125, &closed)
        if i < 0:
            return -1
        if closed:
            break
    if seen & 3 != 3:
        return -1  # content_hash and placement are required
    end[0] = i + 1
    return 0


cdef struct SpineSig:
    uint8_t content[32]
    int64_t received_us
    Py_ssize_t received_at, received_len      # received_at text; received_len -1: absent
    Py_ssize_t position                       # among all the signals of the document


cdef int _arrival(const void *a, const void *b) noexcept nogil:
    """Stored (arrival) order: received_at, then document order."""
    cdef const SpineSig *x = <const SpineSig *>a
    cdef const SpineSig *y = <const SpineSig *>b
    if x.received_us != y.received_us:
        return -1 if x.received_us < y.received_us else 1
    return -1 if x.position < y.position else (1 if x.position > y.position else 0)


cdef int _digest_order(const void *a, const void *b) noexcept nogil:
    return memcmp(a, b, 32)


cdef class _Signals:
    """A document's SPINE signals as the scanner read them, in stored order, held in C:
    ``signals()`` makes the ``Signal`` values only when the general path needs them."""
    cdef SpineSig *sigs
    cdef Py_ssize_t n
    cdef object latest              # latest received_at of any signal (UTC us), or None
    cdef bint repeated              # whether a SPINE content hash repeats
    cdef bytes text

    def __dealloc__(self):
        free(self.sigs)

    cdef tuple signals(self, object signal_type):
        """``(SPINE Signal values in stored order, latest_received_us, repeated)``."""
        cdef list spine = []
        cdef Py_ssize_t k
        cdef SpineSig *g
        cdef const unsigned char *p = <const unsigned char *>PyBytes_AS_STRING(self.text)
        for k in range(self.n):
            g = &self.sigs[k]
            received = None
            if g.received_len >= 0:
                received = _fast_instant(
                    (<bytes>p[g.received_at:g.received_at + g.received_len]).decode("ascii"))
            spine.append(signal_type(_hex_of(g.content), received))
        return spine, self.latest, self.repeated


cdef _Signals _signals(bytes text, const unsigned char *p, Py_ssize_t i, Py_ssize_t n,
                       Py_ssize_t *end):
    """The signals array at p[i] (SPINE signals in stored order, the latest received_at of
    any signal, whether a SPINE content hash repeats); None outside the canonical shape."""
    cdef _Signals out = _Signals.__new__(_Signals)
    cdef Sig g
    cdef Py_ssize_t position = 0, cap = 0, k
    cdef bint timed = True, any_received = False, closed = False
    cdef int64_t latest = 0
    cdef SpineSig *grown
    cdef uint8_t *digests
    out.text = text
    out.latest = None
    if i >= n or p[i] != 91:
        return None
    i = _ws(p, i + 1, n)
    if i < n and p[i] == 93:
        end[0] = i + 1
        return out
    while True:
        if _signal(p, i, n, &g, &i) != 0:
            return None
        if g.received_len >= 0:
            if not any_received or g.received_us > latest:
                latest = g.received_us
            any_received = True
        if g.spine:
            if out.n == cap:
                cap = 16 if cap == 0 else 2 * cap
                grown = <SpineSig *>realloc(out.sigs, cap * sizeof(SpineSig))
                if grown == NULL:
                    raise MemoryError()
                out.sigs = grown
            memcpy(out.sigs[out.n].content, g.content, 32)
            out.sigs[out.n].received_at = g.received_at
            out.sigs[out.n].received_len = g.received_len
            out.sigs[out.n].received_us = g.received_us if g.received_len >= 0 else 0
            out.sigs[out.n].position = position
            timed = timed and g.received_len >= 0
            out.n += 1
        position += 1
        i = _after(p, i, n, 93, &closed)
        if i < 0:
            return None
        if closed:
            break
    end[0] = i + 1
    if out.n and timed:
        qsort(out.sigs, <size_t>out.n, sizeof(SpineSig), _arrival)
    if out.n > 1:
        digests = <uint8_t *>malloc(32 * out.n)
        if digests == NULL:
            raise MemoryError()
        for k in range(out.n):
            memcpy(digests + 32 * k, out.sigs[k].content, 32)
        qsort(digests, <size_t>out.n, 32, _digest_order)
        for k in range(1, out.n):
            if memcmp(digests + 32 * (k - 1), digests + 32 * k, 32) == 0:
                out.repeated = True
                break
        free(digests)
    if any_received:
        out.latest = latest
    return out


cdef bint _members(bytes text, const unsigned char *p, Py_ssize_t i, Py_ssize_t n,
                   bint stored, object segment_type, object signal_type, Py_ssize_t *end,
                   dict out, list found) except -1:
    """The object at p[i] into ``out``: every member parsed by orjson, except the segments,
    which are scanned into ``found`` — slot 0 for the top level's ``segments``
    (``canonkit-episode/1``), slot 1 for ``stored.segments`` (``astp-proof-of-record/1``),
    into which ``stored`` is descended — and the top level's ``signals`` array (slot 2).
    False when the text is outside the fast path."""
    cdef Py_ssize_t kat, klen, vstart, vend = 0
    cdef str key
    cdef dict inner
    cdef bint closed = False
    if i >= n or p[i] != 123:
        return False
    i = _ws(p, i + 1, n)
    if i < n and p[i] == 125:
        end[0] = i + 1
        return True
    while True:
        if i >= n or p[i] != 34:
            return False
        kat = i + 1
        klen = _plain_string(p, i, n, &vend)
        if klen < 0:
            return False
        key = (<bytes>p[kat:kat + klen]).decode("ascii")
        if key in out:
            return False  # a repeated key: the general (strict) reader refuses it
        i = _ws(p, vend, n)
        if i >= n or p[i] != 58:
            return False
        i = _ws(p, i + 1, n)
        if key == "segments":
            scanned = _segments(text, p, i, n, stored, segment_type, &vend)
            if scanned is None:
                return False
            found[1 if stored else 0] = scanned
            out[key] = None  # marks the key as seen; removed below
            i = vend
        elif key == "signals" and not stored and i < n and p[i] == 91:
            scanned = _signals(text, p, i, n, &vend)
            if scanned is None:
                return False
            found[2] = scanned
            out[key] = None
            i = vend
        elif key == "stored" and not stored and i < n and p[i] == 123:
            inner = {}
            if not _members(text, p, i, n, True, segment_type, signal_type, &vend, inner, found):
                return False
            out[key] = inner
            i = vend
        else:
            vstart = i
            i = _plain_value(p, i, n)
            if i < 0:
                return False
            try:
                out[key] = _loads(text[vstart:i])
            except orjson.JSONDecodeError:
                return False
        i = _after(p, i, n, 125, &closed)
        if i < 0:
            return False
        if closed:
            break
    out.pop("segments", None)
    if found[2] is not None and not stored:
        out.pop("signals", None)
    end[0] = i + 1
    return True


cdef tuple _scan(object data, object segment_type, object signal_type):
    """``scan_episode`` with the signals still in C (a ``_Signals``, or None)."""
    cdef bytes text
    cdef const unsigned char *p
    cdef Py_ssize_t n, end = 0
    cdef dict members = {}
    cdef list found = [None, None, None]
    if not PyBytes_Check(data):
        return None
    text = <bytes>data
    p = <const unsigned char *>PyBytes_AS_STRING(text)
    n = PyBytes_GET_SIZE(text)
    if not _members(text, p, _ws(p, 0, n), n, False, segment_type, signal_type, &end, members,
                    found):
        return None
    if _ws(p, end, n) != n:
        return None
    fmt = members.get("format")
    if fmt == "canonkit-episode/1":
        scanned = found[0]
    elif fmt == "astp-proof-of-record/1" and members.get("profile") == "full":
        scanned = found[1]
    else:
        return None
    if scanned is None:
        return None
    table, excluded, latest = scanned
    return members, table, excluded, latest, (found[2] if fmt == "canonkit-episode/1" else None)


cdef tuple _with_signals(tuple scanned, object signal_type):
    """A scan as ``scan_episode`` gives it: the signals as ``Signal`` values."""
    members, table, excluded, latest, signals = scanned
    if signals is not None:
        signals = (<_Signals>signals).signals(signal_type)
    return members, table, excluded, latest, signals


def scan_episode(data, segment_type, signal_type):
    """Read an Episode document's JSON text (``bytes``) on the fast path: ``(members,
    table, excluded, latest_created_us, signals)`` — ``members`` the top-level members as
    ``orjson.loads`` gives them, without the stored segments (``segments``, or
    ``stored["segments"]`` for ``astp-proof-of-record/1``), which are ``table`` and
    ``excluded`` instead, and (``canonkit-episode/1``) without ``signals`` when that array
    was read here: ``signals`` is then ``(SPINE Signal values in stored order,
    latest_received_us, repeated)``, else None — or None when the general reader must
    decide. docs/astp-kernel-api.md."""
    cdef tuple scanned = _scan(data, segment_type, signal_type)
    return None if scanned is None else _with_signals(scanned, signal_type)


def scan_verdict(data, segment_type, signal_type, search_cap=40320):
    """``(verdict, scanned)`` of an Episode document's JSON text: ``verdict`` is
    ``(outcome, episode_id, components, construction, order, flags, reason)``, what
    ``reproduce(..., search_cap=search_cap)`` says of the document, when that is
    ``reproduced`` (from the stored order with no note, or ``reproduced_by_search``) under
    its seal's own construction or ``reproduced_under_other_construction``
    (``astp_verdict.pxi``). ``scanned`` is what ``scan_episode`` gives, for the general path
    to go on from, when there is no verdict or the document carries a Layer 3 member (whose
    verification reads the Episode); else None. docs/astp-kernel-api.md."""
    cdef tuple scanned = _scan(data, segment_type, signal_type)
    if scanned is None:
        return None, None
    members, table, excluded, latest, signals = scanned
    if isinstance(search_cap, bool) or not isinstance(search_cap, int) or search_cap < 0:
        raise InvalidFieldError(f"search_cap must be a non-negative integer, got {search_cap!r}")
    verdict = _verdict(members, table, excluded, latest, signals,
                       members.get("format") == "astp-proof-of-record/1", search_cap)
    if verdict is not None and members.get("layer3") is None:
        return verdict, None
    return verdict, _with_signals(scanned, signal_type)


include "astp_verdict.pxi"


def plain_json(data):
    """Whether orjson may read ``data`` for the strict reader (``canonkit._files.loads_json``):
    ``orjson.loads`` either refuses it or gives exactly the strict reader's value. True
    only when ``data`` is ``bytes`` holding one value (JSON whitespace around it) that
    passes ``_plain_value`` (no key repeated at any depth, no escaped key, no integer of
    more than SCAN_MAX_INT_DIGITS digits, bounded nesting): what else the strict reader
    refuses (NaN, infinities, lone surrogates, bad UTF-8) orjson refuses too. False sends
    the text to the strict reader. docs/astp-kernel-api.md."""
    cdef const unsigned char *p
    cdef Py_ssize_t n, end
    if not PyBytes_Check(data):
        return False
    p = <const unsigned char *>PyBytes_AS_STRING(data)
    n = PyBytes_GET_SIZE(data)
    end = _plain_value(p, _ws(p, 0, n), n)
    return end >= 0 and _ws(p, end, n) == n


def read_instant(text):
    """``canonkit._instant.instant_from_text(text)``: the same datetime, or the same
    ValueError. The shapes of canonical documents (``_instant_fields``) are read in C;
    any other text is left to ``instant_from_text``. docs/astp-kernel-api.md."""
    cdef object value
    if type(text) is str:
        value = _fast_instant(<str>text)
        if value is not None:
            return value
    return instant_from_text(text)
