# The verdict of the common Episode in C (``scan_verdict``), included by _scan.pyx: it
# reads the scanner's segment table and members directly.
#
# Most Episodes of a corpus reproduce under the construction their seal names, from the
# stored order, with no note. For such a document ``scan_verdict`` gives exactly what
# ``reproduce(read_episode_bytes(data))`` says of it — episode id, components,
# construction, flags — without an Episode, a Segment or a Signal object: the reader's and
# the seal's checks are the ones of documents.py and reproduce.py (``_read_episode_doc``,
# ``_read_proof_of_record``, ``check_identifiers``, ``_refusal``, ``_attempt``), the roots
# those of seal.py's ``compute_roots``, each over raw digest buffers. Whatever departs from
# that common case in any way — a value of an unexpected type or shape, a default or a note,
# an annotation, a mismatch, structural members given as nodes, a Layer 3 member — is
# declined (None), and the general path, which is the oracle, decides and words it. Declining
# is always correct; a verdict is given only where the general path is certain to agree
# (tests/test_episode_readers.py holds the two to it on mutated and hostile documents).

cdef extern from "astp_sets.h" nogil:
    size_t ck_sorted_distinct(uint8_t *buf, size_t n)
    void ck_set_v1(const uint8_t *prefix, size_t prefix_len, const uint8_t *members, size_t m,
                   uint8_t *out)
    void ck_set_v2(const uint8_t *prefix, size_t prefix_len, const uint8_t *members, size_t m,
                   uint8_t *out)

cdef tuple _VERDICT_COMPONENTS = ("spine_root", "signal_manifest", "exclusion",
                                  "structural_manifest", "context_manifest", "episode_root")
cdef tuple _VERDICT_SEAL_KEYS = ("spine_root", "signal_manifest_hash", "exclusion_hash",
                                 "structural_manifest_hash", "context_manifest_hash",
                                 "episode_root_hash")
cdef tuple _CONSTRUCTIONS = ("sav0", "sav1", "sav2", "sav3")
cdef frozenset _POSTURES = frozenset({"all_external", "declared_only", "none"})
cdef object _entry_hashes = None    # canonkit.astp.context.entry_hashes

cdef enum:
    SEAL_SPINE = 0
    SEAL_MANIFEST = 1
    SEAL_EXCLUSION = 2
    SEAL_STRUCTURAL = 3
    SEAL_CONTEXT = 4
    SEAL_EPISODE = 5
    # the instant of a member: absent (None), read, or anything else (the general path)
    INSTANT_ABSENT = 0
    INSTANT_READ = 1
    INSTANT_OTHER = 2


cdef struct Roots:
    uint8_t value[6][32]       # computed, in _VERDICT_SEAL_KEYS order
    uint8_t sealed[6][32]      # the seal's own, parsed
    bint recorded[6]           # whether the seal records it (not null)


cdef class _Buffer:
    """Digests of 32 raw bytes back to back, owned."""
    cdef uint8_t *p
    cdef Py_ssize_t n

    def __dealloc__(self):
        free(self.p)


cdef _Buffer _buffer(Py_ssize_t n):
    cdef _Buffer b = _Buffer.__new__(_Buffer)
    b.p = <uint8_t *>malloc(32 * n + 1)
    if b.p == NULL:
        raise MemoryError()
    b.n = n
    return b


cdef inline int _hex64(object value, uint8_t *out) noexcept:
    """A digest as ``documents._digest`` reads it (text of 64 hex characters, either case)
    into out[32]; -1 for any other value."""
    if type(value) is not str or not PyUnicode_IS_ASCII(value) or PyUnicode_GET_LENGTH(value) != 64:
        return -1
    return ck_unhex(<const uint8_t *>PyUnicode_DATA(value), out, 32)


cdef int _instant_of(object value, int64_t *us) noexcept:
    """INSTANT_ABSENT for None, INSTANT_READ (and *us, UTC microseconds) for an instant in a
    canonical shape, INSTANT_OTHER for anything else (``parse_instant`` decides)."""
    if value is None:
        return INSTANT_ABSENT
    if type(value) is not str or not PyUnicode_IS_ASCII(value):
        return INSTANT_OTHER
    if _instant_us(<const unsigned char *>PyUnicode_DATA(value), PyUnicode_GET_LENGTH(value),
                   us) != 0:
        return INSTANT_OTHER
    return INSTANT_READ


cdef bint _is_uuid(object value) noexcept:
    """``encoding.is_uuid_text``: 8-4-4-4-12 hex text, either case."""
    cdef uint8_t raw[16]
    return (type(value) is str and PyUnicode_IS_ASCII(value) and PyUnicode_GET_LENGTH(value) == 36
            and _uuid16(<const unsigned char *>PyUnicode_DATA(value), 36, raw) == 0)


cdef _Buffer _digest_list(object values, _Buffer head):
    """``head``'s digests followed by a list of digests (``documents._digest`` each), or
    None for a value that is not a list of them; None (the member absent) is no digest."""
    cdef Py_ssize_t k, m = 0 if head is None else head.n
    cdef _Buffer out
    if values is None:
        values = []
    elif type(values) is not list:
        return None
    out = _buffer(m + len(<list>values))
    if m:
        memcpy(out.p, head.p, 32 * m)
    for k in range(len(<list>values)):
        if _hex64((<list>values)[k], out.p + 32 * (m + k)) != 0:
            return None
    return out


cdef _Buffer _hex_list(list values):
    """Digests the scanner already checked (lowercase hex text) as raw bytes."""
    cdef _Buffer out = _buffer(len(values))
    cdef Py_ssize_t k
    for k in range(len(values)):
        ck_unhex(<const uint8_t *>PyUnicode_DATA(values[k]), out.p + 32 * k, 32)
    return out


cdef bint _entries(object values) noexcept:
    """Whether context entries are a list of objects (or absent), as the readers take them."""
    if values is None:
        return True
    if type(values) is not list:
        return False
    for entry in <list>values:
        if type(entry) is not dict:
            return False
    return True


cdef int _root(int sav, const uint8_t *first, const uint8_t *inputs, Py_ssize_t n,
               uint8_t *root) except -1:
    """The spine root (ASTP.md §5) of [first] + n inputs, raw, folded without the GIL."""
    cdef ck_tree_hasher h
    cdef Py_ssize_t total = n + (1 if first != NULL else 0)
    cdef uint8_t *work
    ck_tree_hasher_init(&h, sav <= 1)
    work = <uint8_t *>malloc(total * h.size + 1)
    if work == NULL:
        raise MemoryError()
    with nogil:
        ck_tree_leaves(&h, first, inputs, <size_t>n, work)
        ck_tree_fold(&h, work, <size_t>total)
    if sav <= 1:
        ck_unhex(work, root, 32)
    else:
        memcpy(root, work, 32)
    free(work)
    return 0


cdef void _set(int version, const char *kind, _Buffer members, uint8_t *out) noexcept:
    """``sets.py``: the signal manifest or exclusion set (``kind`` "SIGNAL_MANIFEST" or
    "EXCLUSION"), or with ``version`` 0 the structural manifest; sorts ``members``."""
    cdef bytes prefix
    cdef size_t m = ck_sorted_distinct(members.p, <size_t>members.n)
    if version == 0:
        ck_set_v2(<const uint8_t *>b"STRUCTURAL_MANIFEST:v1:", 23, members.p, m, out)
        return
    prefix = b"%s:v%d:" % (<bytes>kind, version)
    if version == 1:
        ck_set_v1(<const uint8_t *>PyBytes_AS_STRING(prefix), <size_t>PyBytes_GET_SIZE(prefix),
                  members.p, m, out)
    else:
        ck_set_v2(<const uint8_t *>PyBytes_AS_STRING(prefix), <size_t>PyBytes_GET_SIZE(prefix),
                  members.p, m, out)


cdef int _context_manifest(object posture, list entries, uint8_t *out) except -1:
    """``context.py``: the manifest of the entries under ``posture``; -1 with no exception
    where the general path would refuse (an unknown posture, an entry it cannot hash)."""
    cdef list hashes
    cdef _Buffer raw
    cdef uint8_t root[32]
    cdef bytes text, preimage
    cdef Py_ssize_t k, count
    global _entry_hashes
    if type(posture) is not str or posture not in _POSTURES:
        return -1
    if _entry_hashes is None:   # context.py imports the kernels: bound on first use
        from canonkit.astp.context import entry_hashes as _entry_hashes
    try:
        hashes = _entry_hashes(entries)
    except Exception:
        return -1
    count = len(hashes)
    raw = _buffer(count)
    for k in range(count):
        if _hex64(hashes[k], raw.p + 32 * k) != 0:
            return -1
    text = (<str>posture).encode("ascii")
    preimage = (b"CONTEXT_MANIFEST:v1:\x02" + _u32be(len(text)) + text + b"\x03"
                + _u64be(<unsigned long long>count))
    if count:
        qsort(raw.p, <size_t>count, 32, _cmp_digest)
        _root(2, NULL, raw.p, count, root)
        preimage += b"\x06" + PyBytes_FromStringAndSize(<char *>root, 32)
    else:
        preimage += b"\x00"
    ck_sha3_256(<const uint8_t *>PyBytes_AS_STRING(preimage), <size_t>PyBytes_GET_SIZE(preimage),
                out)
    return 0


cdef int _cmp_digest(const void *a, const void *b) noexcept nogil:
    return memcmp(a, b, 32)


cdef void _episode_root(int sav, const uint8_t *uuid, Roots *r, uint8_t *out) noexcept:
    """``roots.episode_root_v1/v2/v3`` of the computed roots."""
    cdef uint8_t buf[16 + 1 + 16 + 5 * 33]
    cdef Py_ssize_t m, k
    cdef int order[5]
    if sav <= 1:
        memcpy(buf, b"NODE:", 5)
        ck_hex32(r.value[SEAL_SPINE], buf + 5)
        ck_hex32(r.value[SEAL_MANIFEST], buf + 69)
        ck_hex32(r.value[SEAL_EXCLUSION], buf + 133)
        ck_sha3_256(buf, 197, out)
        return
    memcpy(buf, b"EPISODE_ROOT:v2:" if sav == 2 else b"EPISODE_ROOT:v3:", 16)
    buf[16] = 0x04
    memcpy(buf + 17, uuid, 16)
    m = 33
    order[0], order[1], order[2], order[3], order[4] = (
        SEAL_SPINE, SEAL_MANIFEST, SEAL_STRUCTURAL, SEAL_EXCLUSION, SEAL_CONTEXT)
    for k in range(4 if sav == 2 else 5):
        buf[m] = 0x06
        memcpy(buf + m + 1, r.value[order[k]], 32)
        m += 33
    ck_sha3_256(buf, <size_t>m, out)


cdef object _verdict(dict members, SegmentTable table, list excluded, object latest_created,
                     object signals, bint por):
    """``(episode_id, components, construction, flags)`` when the general path reproduces
    the document under its seal's own construction from the stored order with no note and it
    carries no Layer 3; None for every other document."""
    cdef object episode_id, raw_seal, value, stored = None
    cdef dict seal
    cdef int64_t closed_us = 0, sealed_us = 0, us = 0, latest = 0
    cdef bint closed = False, sealed = False, late = False, repeated
    cdef int state, sav, ov, k
    cdef _Buffer signal_raw, excluded_raw, structural_raw, inputs
    cdef Py_ssize_t count, j
    cdef Roots r
    cdef uint8_t first[32]
    cdef uint8_t uuid[16]
    cdef bytes leaves, id_text
    cdef _Signals spine
    cdef list components
    if members.get("layer3") is not None or "seal" not in members:
        return None
    raw_seal = members["seal"]
    if type(raw_seal) is not dict:
        return None                     # no seal record (or not an object): general path
    seal = <dict>raw_seal
    episode_id = members.get("episode_id")
    if type(episode_id) is not str or not episode_id:
        return None
    if _is_uuid(episode_id):
        episode_id = (<str>episode_id).lower()
    # --- the reader: documents.py ---
    if por:
        stored = members.get("stored")
        if type(stored) is not dict or not _entries((<dict>stored).get("context_entries")):
            return None
        signal_raw = _digest_list((<dict>stored).get("signal_content_hashes"), None)
        excluded_raw = _digest_list((<dict>stored).get("excluded_content_hashes"),
                                    _hex_list(excluded))
        structural_raw = _digest_list((<dict>stored).get("structural_member_hashes"), None)
        if signal_raw is None or excluded_raw is None or structural_raw is None:
            return None
        entries = (<dict>stored).get("context_entries")
        annotation = (<dict>stored).get("resolved_signal_order")
        for key in ("closed_at", "sealed_at"):
            if _instant_of(seal.get(key), &us) == INSTANT_OTHER:
                return None
        repeated = ck_sorted_distinct(signal_raw.p, <size_t>signal_raw.n) < <size_t>signal_raw.n
        # the fold order is the stored one: read the digests again in document order
        signal_raw = _digest_list((<dict>stored).get("signal_content_hashes"), None)
    else:
        if signals is None:
            return None                 # the signals were not read by the scanner
        value = members.get("status")
        if value is not None and type(value) is not str:
            return None
        state = _instant_of(members.get("closed_at"), &closed_us)
        if state == INSTANT_OTHER:
            return None
        closed = state == INSTANT_READ
        if _instant_of(members.get("sealed_at"), &us) == INSTANT_OTHER:
            return None
        if not closed:                  # the closure instant the seal recorded
            state = _instant_of(seal.get("closed_at"), &closed_us)
            if state == INSTANT_OTHER:
                return None
            closed = state == INSTANT_READ
        spine = <_Signals>signals
        repeated = spine.repeated
        if closed and ((latest_created is not None and <int64_t>latest_created > closed_us)
                       or (spine.latest is not None and <int64_t>spine.latest > closed_us)):
            late = True
        signal_raw = _buffer(spine.n)
        for j in range(spine.n):
            memcpy(signal_raw.p + 32 * j, spine.sigs[j].content, 32)
        excluded_raw = _hex_list(excluded)
        value = members.get("structural_members")
        if value is not None and type(value) is not list:
            return None
        structural_raw = _buffer(0 if value is None else len(<list>value))
        for j in range(structural_raw.n):
            item = (<list>value)[j]
            if type(item) is not dict or "type" in <dict>item:
                return None             # a member given as a node: hashed by structural.py
            if _hex64((<dict>item).get("hash"), structural_raw.p + 32 * j) != 0:
                return None
        entries = members.get("context_entries")
        if not _entries(entries):
            return None
        annotation = seal.get("resolved_signal_order")
    # --- the seal: reproduce.py's check_identifiers and _refusal ---
    value = seal.get("spine_algorithm_version")
    if type(value) is not int or not 0 <= <object>value <= 3:
        return None
    sav = <int>value
    value = seal.get("ordering_version")
    if type(value) is not int or (value != 1 and value != 2) or (sav >= 2 and value != 2):
        return None
    ov = <int>value
    for k in range(6):
        value = seal.get(_VERDICT_SEAL_KEYS[k])
        r.recorded[k] = value is not None
        if r.recorded[k] and _hex64(value, r.sealed[k]) != 0:
            return None
    if not r.recorded[SEAL_SPINE]:
        return None
    if sav >= 2 and not (r.recorded[SEAL_MANIFEST] and r.recorded[SEAL_EXCLUSION]
                         and r.recorded[SEAL_STRUCTURAL] and r.recorded[SEAL_EPISODE]):
        return None
    if sav == 3 and (not r.recorded[SEAL_CONTEXT] or seal.get("capture_posture") is None
                     or seal.get("context_entry_count") is None):
        return None
    value = seal.get("leaf_count")
    if value is not None and type(value) is not int:
        return None
    state = _instant_of(seal.get("sealed_at"), &sealed_us)
    if state == INSTANT_OTHER:
        return None
    sealed = state == INSTANT_READ
    if not sealed and not por:
        state = _instant_of(members.get("sealed_at"), &sealed_us)
        sealed = state == INSTANT_READ
    state = _instant_of(seal.get("closed_at"), &us)
    if state == INSTANT_OTHER:
        return None
    if state == INSTANT_READ:
        closed_us, closed = us, True
    elif por:
        closed = False
    if sealed and closed and sealed_us < closed_us:
        return None                     # refused: sealed before it closed
    if ov == 1 and annotation is not None:
        return None                     # an annotation to check: the general path
    # --- the claimed construction: reproduce.py's _attempt over seal.py's compute_roots ---
    if sav >= 2:
        leaves = table._leaves_v2()
        if leaves is None:
            return None                 # a segment without the leaf fields
        count = table.n
        inputs = _buffer(count)
        memcpy(inputs.p, PyBytes_AS_STRING(leaves), 32 * count)
    else:
        count = table.n + (signal_raw.n if ov == 1 else 0)
        inputs = _buffer(count)
        for j in range(table.n):
            memcpy(inputs.p + 32 * j, table.segs[j].content, 32)
        if ov == 1:
            memcpy(inputs.p + 32 * table.n, signal_raw.p, 32 * signal_raw.n)
    if count == 0:
        return None                     # no spine input: refused
    if sav == 1:
        id_text = (<str>episode_id).encode("utf-8")
        ck_sha3_256(<const uint8_t *>PyBytes_AS_STRING(id_text), <size_t>PyBytes_GET_SIZE(id_text),
                    first)
    _root(sav, first if sav == 1 else NULL, inputs.p, count, r.value[SEAL_SPINE])
    if memcmp(r.value[SEAL_SPINE], r.sealed[SEAL_SPINE], 32) != 0:
        table.spine_roots = {(sav, ov): _hex_of(r.value[SEAL_SPINE])}
        return None                     # not the stored order: search, other constructions
    _set(1 if sav <= 1 else 2, b"SIGNAL_MANIFEST", signal_raw, r.value[SEAL_MANIFEST])
    _set(1 if sav <= 1 else 2, b"EXCLUSION", excluded_raw, r.value[SEAL_EXCLUSION])
    if sav >= 2:
        if not _is_uuid(episode_id):
            return None                 # no UUID for the Episode root: not applicable
        _uuid16(<const unsigned char *>PyUnicode_DATA(episode_id), 36, uuid)
        _set(0, b"", structural_raw, r.value[SEAL_STRUCTURAL])
    if sav == 3:
        if _context_manifest(seal.get("capture_posture"), [] if entries is None else entries,
                             r.value[SEAL_CONTEXT]) != 0:
            return None
        count = len(entries) if entries is not None else 0
        if seal.get("context_entry_count") != count:
            return None
    _episode_root(sav, uuid, &r, r.value[SEAL_EPISODE])
    components = ["ok", "not_checked", "not_checked", "not_checked", "not_checked", "not_checked"]
    for k in range(1, 6):
        if (k == SEAL_STRUCTURAL and sav < 2) or (k == SEAL_CONTEXT and sav < 3):
            continue
        if not r.recorded[k]:
            components[k] = "absent"    # a pre-4.3.0 seal never recorded it
        elif memcmp(r.value[k], r.sealed[k], 32) != 0:
            return None
        else:
            components[k] = "ok"
    value = seal.get("leaf_count")
    if value is not None and value != table.n:
        return None
    flags = []
    if repeated:
        flags.append("duplicate_signal")
    if late:
        flags.append("post_closure_append")
    return (episode_id, dict(zip(_VERDICT_COMPONENTS, components)), _CONSTRUCTIONS[sav], flags)
