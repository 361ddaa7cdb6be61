# The verdict of the common Episode in C (``scan_verdict``), included by _scan.pyx: it
# reads the scanner's segment table, signals and members directly.
#
# Most Episodes of a corpus reproduce under the construction their seal names, from the
# stored order, with no note, or else under one of the other constructions tried without
# any tie search. For such a document ``scan_verdict`` gives exactly what
# ``reproduce(read_episode_bytes(data))`` says of it — outcome, episode id, components,
# construction, flags, reason — without an Episode, a Segment or a Signal object: the
# reader's and the seal's checks are the ones of documents.py and reproduce.py
# (``_read_episode_doc``, ``_read_proof_of_record``, ``check_identifiers``, ``_refusal``,
# ``_attempt``, ``_alternatives``), the roots those of seal.py's ``compute_roots``, each over
# raw digest buffers. Whatever departs from that in any way — a value of an unexpected type
# or shape, a default or a note, an annotation, an attempt that would search tied signals,
# structural members given as nodes, a Layer 3 member, no construction reproducing — is
# declined (None), and the general path, which is the oracle, decides and words it.
# Declining is always correct; a verdict is given only where the general path is certain to
# agree (tests/test_episode_readers.py holds the two to it on mutated and hostile documents).

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
cdef frozenset _POSTURES = frozenset({"all_external", "declared_only", "none"})
cdef object _entry_hashes = None    # canonkit.astp.context.entry_hashes
cdef object _ASTPError = None       # canonkit.errors.ASTPError

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
    # what an attempt under one construction comes to
    ATTEMPT_DECLINE = -1    # the general path must decide (an annotation, an error)
    ATTEMPT_FAILS = 0
    ATTEMPT_OK = 1


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


cdef _Buffer _sorted_set(_Buffer members):
    """A sorted distinct copy of ``members`` (a set's members, ASTP.md §2.2 / §6)."""
    cdef _Buffer out = _buffer(members.n)
    memcpy(out.p, members.p, 32 * members.n)
    out.n = <Py_ssize_t>ck_sorted_distinct(out.p, <size_t>members.n)
    return out


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


cdef int _cmp_digest(const void *a, const void *b) noexcept nogil:
    return memcmp(a, b, 32)


cdef class _Episode:
    """What the verdict reads of one Episode document (the general reader's Episode, as raw
    buffers) and the roots it has computed so far, each once."""
    cdef SegmentTable table
    cdef object episode_id              # canonical: a UUID lowercased
    cdef dict seal
    cdef object annotation              # resolved_signal_order
    cdef object entries                 # context entries: a list or None
    cdef _Buffer signals                # SPINE signal content hashes, stored order
    cdef _Signals spine                 # the same with their instants (canonkit-episode/1)
    cdef unsigned long long cap         # the tie search's cap (saturated)
    cdef _Buffer excluded
    cdef _Buffer structural
    cdef object leaves                  # v2 leaf hashes: bytes, False (no leaf fields), None
    cdef uint8_t first[32]              # H(utf8(episode id)): the sav 1 Episode input
    cdef bint first_done
    cdef uint8_t sealed[6][32]          # the seal's digests, parsed
    cdef bint recorded[6]               # whether the seal records each (not null)
    cdef uint8_t sets[2][2][32]         # [version - 1][manifest, exclusion]
    cdef bint sets_done[2]
    cdef uint8_t structural_root[32]
    cdef bint structural_done
    cdef uint8_t context_root[32]
    cdef int context_state              # 0 not yet, ATTEMPT_OK, ATTEMPT_FAILS, ATTEMPT_DECLINE
    cdef dict roots                     # {(sav, ov): spine root hex}, stored order

    cdef int stored_root(self, int sav, int ov, uint8_t *root) except -2:
        """The spine root of the stored order under (sav, ov): 0, or ATTEMPT_FAILS when the
        construction cannot be applied (no leaf fields, no input)."""
        cdef Py_ssize_t count, j
        cdef _Buffer inputs
        cdef bytes text
        if sav == 1 and not self.first_done:    # common.episode_leaf_input
            text = (<str>self.episode_id).encode("utf-8")
            ck_sha3_256(<const uint8_t *>PyBytes_AS_STRING(text), <size_t>PyBytes_GET_SIZE(text),
                        self.first)
            self.first_done = True
        if sav >= 2:
            if self.leaves is None:
                self.leaves = self.table._leaves_v2()
                if self.leaves is None:
                    self.leaves = False
            if self.leaves is False:
                return ATTEMPT_FAILS    # a segment without the leaf fields
            count = self.table.n
            inputs = _buffer(count)
            memcpy(inputs.p, PyBytes_AS_STRING(self.leaves), 32 * count)
        else:
            count = self.table.n + (self.signals.n if ov == 1 else 0)
            inputs = _buffer(count)
            for j in range(self.table.n):
                memcpy(inputs.p + 32 * j, self.table.segs[j].content, 32)
            if ov == 1:
                memcpy(inputs.p + 32 * self.table.n, self.signals.p, 32 * self.signals.n)
        if count == 0:
            return ATTEMPT_FAILS        # no spine input: refused
        _root(sav, self.first if sav == 1 else NULL, inputs.p, count, root)
        self.roots[sav, ov] = _hex_of(root)
        return 0

    cdef void set_roots(self, int version) noexcept:
        """The signal manifest and exclusion set of a set version (1: sav 0/1, 2: sav 2/3)."""
        cdef _Buffer members
        cdef int k
        cdef bytes prefix
        if self.sets_done[version - 1]:
            return
        for k in range(2):
            members = _sorted_set(self.signals if k == 0 else self.excluded)
            prefix = (b"SIGNAL_MANIFEST" if k == 0 else b"EXCLUSION") + (b":v1:" if version == 1
                                                                        else b":v2:")
            if version == 1:
                ck_set_v1(<const uint8_t *>PyBytes_AS_STRING(prefix),
                          <size_t>PyBytes_GET_SIZE(prefix), members.p, <size_t>members.n,
                          self.sets[0][k])
            else:
                ck_set_v2(<const uint8_t *>PyBytes_AS_STRING(prefix),
                          <size_t>PyBytes_GET_SIZE(prefix), members.p, <size_t>members.n,
                          self.sets[1][k])
        self.sets_done[version - 1] = True

    cdef int context(self) except -2:
        """The context manifest (``context.py``) under the seal's capture posture:
        ATTEMPT_OK, ATTEMPT_FAILS where the general path refuses the construction (an
        unknown posture, an entry it cannot hash), ATTEMPT_DECLINE where it would raise
        another error."""
        global _entry_hashes, _ASTPError
        cdef list hashes
        cdef _Buffer raw
        cdef uint8_t root[32]
        cdef bytes text, preimage
        cdef Py_ssize_t k, count
        if self.context_state:
            return self.context_state
        posture = self.seal.get("capture_posture")
        self.context_state = ATTEMPT_FAILS
        if posture is None or type(posture) is not str or posture not in _POSTURES:
            return self.context_state   # no or an unknown capture posture: refused
        if _entry_hashes is None:       # context.py imports the kernels: bound on first use
            from canonkit.astp.context import entry_hashes as _entry_hashes
            from canonkit.errors import ASTPError as _ASTPError
        try:
            hashes = _entry_hashes([] if self.entries is None else self.entries)
        except Exception as exc:
            if not isinstance(exc, _ASTPError):
                self.context_state = ATTEMPT_DECLINE
            return self.context_state
        count = len(hashes)
        raw = _buffer(count)
        for k in range(count):
            if _hex64(hashes[k], raw.p + 32 * k) != 0:
                self.context_state = ATTEMPT_DECLINE
                return self.context_state
        text = (<str>posture).encode("ascii")
        preimage = (b"CONTEXT_MANIFEST:v1:\x02" + _u32be(len(text)) + text + b"\x03"
                    + _u64be(<unsigned long long>count))
        if count:
            qsort(raw.p, <size_t>count, 32, _cmp_digest)
            _root(2, NULL, raw.p, count, root)
            preimage += b"\x06" + PyBytes_FromStringAndSize(<char *>root, 32)
        else:
            preimage += b"\x00"
        ck_sha3_256(<const uint8_t *>PyBytes_AS_STRING(preimage),
                    <size_t>PyBytes_GET_SIZE(preimage), self.context_root)
        self.context_state = ATTEMPT_OK
        return self.context_state

    cdef int search(self, int sav, list order) except -2:
        """``reproduce._spine``'s tie search under (sav, ordering 1), ASTP.md §12:
        ATTEMPT_OK with ``order`` when an order of the tied SPINE signals rebuilds the
        sealed root (the first of the canonical enumeration, ext/astp/astp_tie_lanes.h);
        ATTEMPT_FAILS when a signal has no timestamp, nothing is tied, the orders outnumber
        the cap or none rebuilds it; ATTEMPT_DECLINE where the search is left to the
        general path (one Keccak lane, groups too far apart for the lanes)."""
        cdef _Signals spine = self.spine
        cdef size_t *starts
        cdef size_t count, k, m, f, g = 0, shift = 1 if sav == 1 else 0
        cdef size_t *found = NULL
        cdef unsigned long long space = 1, tried = 0
        cdef ck_odometer odo
        cdef ck_tie_lanes lanes
        cdef _Buffer inputs
        cdef _Tree tree
        cdef uint8_t *leaves0 = NULL
        cdef uint8_t target[64]
        cdef int outcome
        if spine is None:
            return ATTEMPT_FAILS        # proof-of-record signals carry no timestamps
        for k in range(<size_t>spine.n):
            if spine.sigs[k].received_len < 0:
                return ATTEMPT_FAILS    # a signal without a timestamp: no search possible
        starts = <size_t *>malloc(sizeof(size_t) * (2 * <size_t>spine.n + 1))
        if starts == NULL:
            raise MemoryError()
        odo.starts = NULL
        try:
            k = 0                       # reproduce.tie_groups: runs of equal instants
            while k < <size_t>spine.n:
                m = k + 1
                while m < <size_t>spine.n and spine.sigs[m].received_us == spine.sigs[k].received_us:
                    m += 1
                if m - k > 1:
                    starts[g] = <size_t>self.table.n + k
                    starts[spine.n + g] = m - k
                    g += 1
                    for f in range(2, m - k + 1):   # the space: the product of (m - k)!
                        if space > self.cap // f:
                            space = self.cap + 1    # more than the cap (saturated)
                            break
                        space *= f
                k = m
            if g == 0 or space > self.cap:
                return ATTEMPT_FAILS    # nothing tied, or the cap hit
            if ck_keccak_lanes() < 2:
                return ATTEMPT_DECLINE
            if ck_odometer_init(&odo, starts, starts + spine.n, g, shift) != 0:
                raise MemoryError()
            count = <size_t>(self.table.n + spine.n)
            inputs = _buffer(<Py_ssize_t>count)
            for k in range(<size_t>self.table.n):
                memcpy(inputs.p + 32 * k, self.table.segs[k].content, 32)
            memcpy(inputs.p + 32 * self.table.n, self.signals.p, 32 * spine.n)
            tree = _build_tree(sav <= 1, self.first if sav == 1 else NULL, inputs.p,
                               <Py_ssize_t>count)
            if ck_tie_window(odo.pos, odo.npos, tree.depth) > CK_TIE_MAX_WINDOW:
                return ATTEMPT_DECLINE
            leaves0 = <uint8_t *>malloc(tree.h.size * (count + shift))
            if leaves0 == NULL:
                raise MemoryError()
            memcpy(leaves0, tree.store, tree.h.size * (count + shift))
            ck_hex32(self.sealed[SEAL_SPINE], target)   # sav 0/1: the hex-text tree
            if ck_tie_init(&lanes, &tree.h, tree.store, tree.counts, tree.offsets, tree.depth,
                           leaves0, odo.pos, odo.npos) != 0:
                ck_tie_free(&lanes)
                raise MemoryError()
            with nogil:
                outcome = ck_tie_search(&lanes, &odo, target, &tried, _interrupted)
            ck_tie_free(&lanes)
            if outcome == CK_TIE_NO_MEMORY:
                raise MemoryError()
            if outcome == CK_TIE_INTERRUPTED:
                _raise_pending()
            if outcome != CK_TIE_FOUND:
                return ATTEMPT_FAILS    # every order tried
            found = <size_t *>malloc(sizeof(size_t) * count)
            if found == NULL:
                raise MemoryError()
            ck_odometer_order(&odo, count, found)
            for k in range(<size_t>self.table.n, count):
                order.append(_hex_of(self.signals.p + 32 * (found[k] - <size_t>self.table.n)))
            return ATTEMPT_OK
        finally:
            free(starts)
            free(leaves0)
            free(found)
            ck_odometer_free(&odo)

    cdef int attempt(self, int sav, int ov, list components, list order) except -2:
        """``reproduce._attempt`` under (sav, ov): ATTEMPT_OK with ``components`` (in
        _VERDICT_COMPONENTS order) filled and, when the root was found by searching tied
        signals, ``order`` the signals' content hashes in the order found; ATTEMPT_FAILS; or
        ATTEMPT_DECLINE where the general path must decide (an annotation to check, a search
        this one does not run)."""
        cdef uint8_t value[6][32]
        cdef uint8_t uuid[16]
        cdef uint8_t buf[16 + 17 + 5 * 33]
        cdef int version = 1 if sav <= 1 else 2, k, state
        cdef Py_ssize_t m
        cdef _Buffer members
        if ov == 1 and self.annotation is not None:
            return ATTEMPT_DECLINE      # an annotation to check
        if self.stored_root(sav, ov, value[SEAL_SPINE]) != 0:
            return ATTEMPT_FAILS
        del order[:]
        if memcmp(value[SEAL_SPINE], self.sealed[SEAL_SPINE], 32) != 0:
            if not (ov == 1 and sav <= 1 and self.signals.n):
                return ATTEMPT_FAILS
            state = self.search(sav, order)   # reproduce._spine: the tied signals' orders
            if state != ATTEMPT_OK:
                return state
            memcpy(value[SEAL_SPINE], self.sealed[SEAL_SPINE], 32)
        self.set_roots(version)
        memcpy(value[SEAL_MANIFEST], self.sets[version - 1][0], 32)
        memcpy(value[SEAL_EXCLUSION], self.sets[version - 1][1], 32)
        if sav <= 1:                    # roots.episode_root_v1
            memcpy(buf, b"NODE:", 5)
            ck_hex32(value[SEAL_SPINE], buf + 5)
            ck_hex32(value[SEAL_MANIFEST], buf + 69)
            ck_hex32(value[SEAL_EXCLUSION], buf + 133)
            ck_sha3_256(buf, 197, value[SEAL_EPISODE])
        else:                           # roots.episode_root_v2 / v3
            if sav == 3:
                state = self.context()
                if state != ATTEMPT_OK:
                    return state
                memcpy(value[SEAL_CONTEXT], self.context_root, 32)
            if not _is_uuid(self.episode_id):
                return ATTEMPT_FAILS    # the Episode root needs a UUID: not applicable
            _uuid16(<const unsigned char *>PyUnicode_DATA(self.episode_id), 36, uuid)
            if not self.structural_done:    # sets.structural_manifest_hash
                members = _sorted_set(self.structural)
                ck_set_v2(<const uint8_t *>b"STRUCTURAL_MANIFEST:v1:", 23, members.p,
                          <size_t>members.n, self.structural_root)
                self.structural_done = True
            memcpy(value[SEAL_STRUCTURAL], self.structural_root, 32)
            memcpy(buf, b"EPISODE_ROOT:v2:" if sav == 2 else b"EPISODE_ROOT:v3:", 16)
            buf[16] = 0x04
            memcpy(buf + 17, uuid, 16)
            m = 33
            for k in (SEAL_SPINE, SEAL_MANIFEST, SEAL_STRUCTURAL, SEAL_EXCLUSION, SEAL_CONTEXT):
                if k == SEAL_CONTEXT and sav == 2:
                    break
                buf[m] = 0x06
                memcpy(buf + m + 1, value[k], 32)
                m += 33
            ck_sha3_256(buf, <size_t>m, value[SEAL_EPISODE])
        components[SEAL_SPINE] = "ok"
        for k in range(1, 6):
            if (k == SEAL_STRUCTURAL and sav < 2) or (k == SEAL_CONTEXT and sav < 3):
                components[k] = "not_checked"
            elif not self.recorded[k]:
                components[k] = "absent"    # a pre-4.3.0 seal never recorded it
            elif memcmp(value[k], self.sealed[k], 32) != 0:
                return ATTEMPT_FAILS
            else:
                components[k] = "ok"
        if sav == 3 and self.recorded[SEAL_CONTEXT] and self.seal.get("context_entry_count") != (
                0 if self.entries is None else len(self.entries)):
            return ATTEMPT_FAILS
        count = self.seal.get("leaf_count")
        if count is not None and count != self.table.n:
            return ATTEMPT_FAILS
        return ATTEMPT_OK


# reproduce._alternatives: the other constructions, nearest first (same family and
# ordering, then the other ordering, then the other family), for each sealed (sav, ov)
cdef dict _ALTERNATIVES = {}
for _sav in range(4):
    for _ov in (1, 2):
        if _sav >= 2 and _ov != 2:
            continue
        _ALTERNATIVES[_sav, _ov] = tuple(sorted(
            [(s, o) for s in range(4) for o in (1, 2)
             if not (s >= 2 and o != 2) and (s, o) != (_sav, _ov)],
            key=lambda pair, sav=_sav, ov=_ov: (pair[0] // 2 != sav // 2, pair[1] != ov,
                                                abs(pair[0] - sav), pair[0])))


cdef _Episode _read(dict members, SegmentTable table, list excluded, object latest_created,
                    object signals, bint por, list flags):
    """The Episode as documents.py reads it (``flags`` gets its reading flags), or None for
    a document it would refuse or read in a way the verdict does not follow."""
    cdef _Episode e = _Episode.__new__(_Episode)
    cdef object value, stored
    cdef dict seal
    cdef int64_t closed_us = 0, us = 0
    cdef int state
    cdef bint closed = False, repeated
    cdef Py_ssize_t j
    cdef _Signals spine
    if "seal" not in members:  # (a Layer 3 member does not change the verdict: the
        return None            # Spine is judged apart from it, ASTP.md §19)
    value = members["seal"]
    if type(value) is not dict:
        return None                     # no seal record (or not an object): general path
    seal = e.seal = <dict>value
    value = members.get("episode_id")
    if type(value) is not str or not value:
        return None
    e.episode_id = (<str>value).lower() if _is_uuid(value) else value
    e.table = table
    e.roots = {}
    if por:
        stored = members.get("stored")
        if type(stored) is not dict or not _entries((<dict>stored).get("context_entries")):
            return None
        e.signals = _digest_list((<dict>stored).get("signal_content_hashes"), None)
        e.excluded = _digest_list((<dict>stored).get("excluded_content_hashes"),
                                  _hex_list(excluded))
        e.structural = _digest_list((<dict>stored).get("structural_member_hashes"), None)
        if e.signals is None or e.excluded is None or e.structural is None:
            return None
        e.entries = (<dict>stored).get("context_entries")
        e.annotation = (<dict>stored).get("resolved_signal_order")
        for key in ("closed_at", "sealed_at"):
            if _instant_of(seal.get(key), &us) == INSTANT_OTHER:
                return None
        repeated = _sorted_set(e.signals).n < e.signals.n
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
        spine = e.spine = <_Signals>signals
        repeated = spine.repeated
        if closed and ((latest_created is not None and <int64_t>latest_created > closed_us)
                       or (spine.latest is not None and <int64_t>spine.latest > closed_us)):
            flags.append("post_closure_append")
        e.signals = _buffer(spine.n)
        for j in range(spine.n):
            memcpy(e.signals.p + 32 * j, spine.sigs[j].content, 32)
        e.excluded = _hex_list(excluded)
        value = members.get("structural_members")
        if value is not None and type(value) is not list:
            return None
        e.structural = _buffer(0 if value is None else len(<list>value))
        for j in range(e.structural.n):
            item = (<list>value)[j]
            if type(item) is not dict or "type" in <dict>item:
                return None             # a member given as a node: hashed by structural.py
            if _hex64((<dict>item).get("hash"), e.structural.p + 32 * j) != 0:
                return None
        e.entries = members.get("context_entries")
        if not _entries(e.entries):
            return None
        e.annotation = seal.get("resolved_signal_order")
    if repeated:
        flags.insert(0, "duplicate_signal")
    return e


cdef bint _refused(_Episode e, bint por, dict members) except -1:
    """``reproduce._refusal`` and ``check_identifiers``: whether the seal is refused (or
    read with a default) before any hashing, which the general path words; else the seal's
    digests are parsed into ``e``."""
    cdef dict seal = e.seal
    cdef int64_t sealed_us = 0, closed_us = 0
    cdef int state, k
    cdef bint sealed, closed
    cdef object value
    sav = seal.get("spine_algorithm_version")
    ov = seal.get("ordering_version")
    if type(sav) is not int or not 0 <= sav <= 3:
        return True                     # absent (a default and its note) or unknown
    if type(ov) is not int or (ov != 1 and ov != 2) or (sav >= 2 and ov != 2):
        return True
    for k in range(6):
        value = seal.get(_VERDICT_SEAL_KEYS[k])
        e.recorded[k] = value is not None
        if e.recorded[k] and _hex64(value, e.sealed[k]) != 0:
            return True
    if not e.recorded[SEAL_SPINE]:
        return True
    if sav >= 2 and not (e.recorded[SEAL_MANIFEST] and e.recorded[SEAL_EXCLUSION]
                         and e.recorded[SEAL_STRUCTURAL] and e.recorded[SEAL_EPISODE]):
        return True
    if sav == 3 and (not e.recorded[SEAL_CONTEXT] or seal.get("capture_posture") is None
                     or seal.get("context_entry_count") is None):
        return True
    value = seal.get("leaf_count")
    if value is not None and type(value) is not int:
        return True
    # sealed_at and closed_at: the seal's, else the Episode's
    state = _instant_of(seal.get("sealed_at"), &sealed_us)
    if state == INSTANT_OTHER:
        return True
    sealed = state == INSTANT_READ
    if not sealed and not por:
        sealed = _instant_of(members.get("sealed_at"), &sealed_us) == INSTANT_READ
    state = _instant_of(seal.get("closed_at"), &closed_us)
    if state == INSTANT_OTHER:
        return True
    closed = state == INSTANT_READ
    if not closed and not por:
        closed = _instant_of(members.get("closed_at"), &closed_us) == INSTANT_READ
    return sealed and closed and sealed_us < closed_us


cdef object _verdict(dict members, SegmentTable table, list excluded, object latest_created,
                     object signals, bint por, object search_cap):
    """``(outcome, episode_id, components, construction, order, flags, reason)`` when the
    general path reproduces the document under its seal's own construction, from the stored
    order with no note (``reproduced``) or by searching its tied signals
    (``reproduced_by_search``), or else under another construction
    (``reproduced_under_other_construction``), and it carries no Layer 3; None for every
    other document."""
    cdef list flags = [], components = [None] * 6, order = []
    cdef _Episode e = _read(members, table, excluded, latest_created, signals, por, flags)
    cdef int sav, ov, state
    if e is None or _refused(e, por, members):
        return None
    e.cap = search_cap if search_cap < <object>0xFFFFFFFFFFFFFFFF else 0xFFFFFFFFFFFFFFFF
    sav, ov = e.seal["spine_algorithm_version"], e.seal["ordering_version"]
    try:
        state = e.attempt(sav, ov, components, order)
        if state == ATTEMPT_OK:
            return ("reproduced_by_search" if order else "reproduced", e.episode_id,
                    dict(zip(_VERDICT_COMPONENTS, components)), f"sav{sav}",
                    order or None, flags, None)
        if state == ATTEMPT_DECLINE:
            return None
        for alt_sav, alt_ov in _ALTERNATIVES[sav, ov]:
            state = e.attempt(alt_sav, alt_ov, components, order)
            if state == ATTEMPT_DECLINE:
                return None
            if state == ATTEMPT_OK:
                name = f"sav{alt_sav}" if alt_ov == ov else f"sav{alt_sav}/ov{alt_ov}"
                return ("reproduced_under_other_construction", e.episode_id,
                        dict(zip(_VERDICT_COMPONENTS, components)), name, order or None,
                        flags, f"seal names sav{sav}/ov{ov}; rebuilt only under {name}")
        return None                     # not reproducible: the general path words why
    finally:
        table.spine_roots = e.roots     # the general path need not fold them again

