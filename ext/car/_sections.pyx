# cython: language_level=3
"""The CAR kernel, compiled: the section walk with every block's digest recomputed, and
the check of index entries against the sections. Same API and the same problem tuples as
the twin ``canonkit.car._sections_py`` (the oracle; see it for the contract).

Bounds: every read of the fed buffer is checked against its length in the C helpers of
car_frames.h (or just before, here); every read of the file at an offset goes through
ck_pread into a buffer sized before the read. SHA-256 runs in C (car_sha256.h), with the
GIL released for large blocks; the other hash functions are the twin's, through
``canonkit.car.format.digest``.
"""
from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_GET_SIZE, PyByteArray_Resize
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from cpython cimport array
from libc.errno cimport errno
from libc.stdint cimport uint8_t, uint64_t
from libc.string cimport memcmp, memcpy

import array as _array_module
import os as _os

from canonkit.errors import CanonkitError
from canonkit.car.format import HASH_FUNCTIONS, digest as _twin_digest

__all__ = ["COVERED", "IDENTITY_CID", "EntryChecker", "Problem", "Scanner", "sha256"]

cdef extern from "car_sha256.h":
    void ck_sha256(const uint8_t *p, size_t n, uint8_t *out) nogil
    int ck_sha256_portable_forced
    int ck_sha256_shani_available() nogil

cdef extern from "car_frames.h":
    ctypedef struct ck_cid:
        Py_ssize_t end
        Py_ssize_t mh_start
        Py_ssize_t digest_start
        uint64_t version
        uint64_t codec
        uint64_t hash_code
        uint64_t digest_length
    int CK_VARINT_OK, CK_VARINT_CUT
    int CK_CID_OK, CK_CID_VERSION, CK_CID_VARINT, CK_CID_DIGEST
    int ck_varint(const uint8_t *p, Py_ssize_t pos, Py_ssize_t end, uint64_t *value,
                  Py_ssize_t *next) noexcept nogil
    int ck_parse_cid(const uint8_t *p, Py_ssize_t pos, Py_ssize_t end, ck_cid *c,
                     uint64_t *bad) noexcept nogil
    uint64_t ck_load_le64(const uint8_t *p) noexcept nogil
    Py_ssize_t ck_pread(int fd, uint8_t *buf, Py_ssize_t n, long long offset) noexcept nogil

Problem = tuple
IDENTITY_CID = 0x01
COVERED = 0x02

cdef enum:
    _IDENTITY_CID = 0x01
    _COVERED = 0x02
    _MAX_VARINT = 9
    _CID_HEAD = 45          # 5 varints of at most 9 bytes: section length and CID head
    _NOGIL_HASH = 65536     # blocks at least this long are hashed without the GIL
    _MANY_ROOTS = 8         # more roots than this are looked up in a set
    _DAG_CBOR = 0x71
    _SHA2_256 = 0x12
    _IDENTITY = 0x00

_VARINT_KINDS = (None, "cut", "overlong", "non_minimal")
_CID_REASONS = (None, "version", "varint", "digest")


def sha256(data):
    """SHA-256 of ``data`` (any C-contiguous buffer), computed in C."""
    cdef const uint8_t[::1] view = memoryview(data).cast("B")
    cdef uint8_t out[32]
    cdef Py_ssize_t n = view.shape[0]
    cdef const uint8_t *p = &view[0] if n else <const uint8_t *>b""
    with nogil:
        ck_sha256(p, <size_t>n, out)
    return PyBytes_FromStringAndSize(<char *>out, 32)


def _set_sha256_portable(bint portable):
    """Force the portable SHA-256 (True) or let the CPU's SHA extensions serve (False)."""
    global ck_sha256_portable_forced
    ck_sha256_portable_forced = 1 if portable else 0


def _sha256_has_shani():
    """True when this CPU runs the SHA-extension compression function."""
    return bool(ck_sha256_shani_available())


cdef class _Problems:
    """The problems found, at most ``limit`` per code; the rest are only counted."""

    cdef public list problems
    cdef public dict counts
    cdef Py_ssize_t limit

    def __init__(self, Py_ssize_t limit):
        self.problems = []
        self.counts = {}
        self.limit = limit

    cdef int add(self, str code, long long offset, object cid, tuple info) except -1:
        cdef Py_ssize_t seen = self.counts.get(code, 0)
        self.counts[code] = seen + 1
        if seen < self.limit:
            self.problems.append((code, offset, cid, info))
        return 0


cdef class _Tally:
    """Counts per code (codec or hash function): the run of the last code is counted in C
    and folded into the dict when another code comes, or when read."""

    cdef dict counts
    cdef uint64_t last
    cdef Py_ssize_t run

    def __init__(self):
        self.counts = {}
        self.run = 0

    cdef inline int add(self, uint64_t code) except -1:
        if self.run and code == self.last:
            self.run += 1
            return 0
        self.fold()
        self.last = code
        self.run = 1
        return 0

    cdef int fold(self) except -1:
        if self.run:
            self.counts[self.last] = self.counts.get(self.last, 0) + self.run
            self.run = 0
        return 0

    cdef dict value(self):
        self.fold()
        return self.counts


cdef class Scanner:
    """Walks the sections between ``data_start`` and ``data_end`` (see the twin)."""

    cdef public long long payload_start
    cdef public long long data_end
    cdef public long long position
    cdef public object roots
    cdef public object strict
    cdef public bint record
    cdef _Problems _problems
    cdef public list problems
    cdef public dict counts
    cdef public Py_ssize_t blocks
    cdef public long long block_bytes
    cdef public Py_ssize_t verified
    cdef _Tally _codecs
    cdef _Tally _hashes
    cdef public set roots_found
    cdef public array.array offsets
    cdef public bytearray flags
    cdef public bytearray keys
    cdef public array.array key_ends
    cdef public long long wanted
    cdef public bint done
    cdef public object stopped_at
    cdef long long _zero_start
    cdef Py_ssize_t _zero_count
    cdef tuple _root_list
    cdef Py_ssize_t _recorded

    def __init__(self, long long payload_start, long long data_start, long long data_end, *,
                 roots=(), strict=None, bint record=False, Py_ssize_t limit=1000):
        self.payload_start = payload_start
        self.data_end = data_end
        self.position = data_start
        self.roots = frozenset(roots)
        self._root_list = tuple(self.roots)
        self.strict = strict
        self.record = record
        self._problems = _Problems(limit)
        self.problems = self._problems.problems
        self.counts = self._problems.counts
        self.blocks = 0
        self.block_bytes = 0
        self.verified = 0
        self._codecs = _Tally()
        self._hashes = _Tally()
        self.roots_found = set()
        self.offsets = _array_module.array("Q")
        self.flags = bytearray()
        self.keys = bytearray()
        self.key_ends = _array_module.array("Q")
        self._recorded = 0
        self.wanted = 0
        self.done = False
        self.stopped_at = None
        self._zero_start = -1
        self._zero_count = 0

    @property
    def codecs(self):
        return self._codecs.value()

    @property
    def hashes(self):
        return self._hashes.value()

    def feed(self, view, long long pos):
        """Walk the whole sections in ``view`` (the file's bytes from ``pos``); returns the
        bytes consumed."""
        if pos != self.position:
            raise ValueError(f"fed at offset {pos}, but the walk stands at {self.position}")
        cdef const uint8_t[::1] buf = view
        cdef Py_ssize_t n = buf.shape[0]
        cdef const uint8_t *p = &buf[0] if n else <const uint8_t *>b""
        cdef Py_ssize_t at = 0, q
        cdef uint64_t length
        cdef long long here, available
        cdef int status
        self.wanted = 0
        while not self.done:
            here = pos + at
            if here >= self.data_end:
                self._flush_zeros()
                self.done = True
                break
            status = ck_varint(p, at, n, &length, &q)
            if status != CK_VARINT_OK:
                if status == CK_VARINT_CUT and pos + n < self.data_end:
                    self.wanted = min(_MAX_VARINT, self.data_end - here)
                    break
                self._stop(here, "car_section_length", (_VARINT_KINDS[status],))
                break
            if length == 0:
                if self._zero_count == 0:
                    self._zero_start = here
                self._zero_count += 1
                at = q
                continue
            self._flush_zeros()
            available = self.data_end - (pos + q)
            if length > <uint64_t>available:
                self._stop(here, "car_section_truncated", (length, available))
                break
            if <uint64_t>(n - q) < length:
                self.wanted = q - at + <Py_ssize_t>length
                break
            self._section(view, p, at, q, q + <Py_ssize_t>length, pos)
            at = q + <Py_ssize_t>length
        self.position = pos + at
        return at

    def finish(self):
        self._flush_zeros()

    cdef int _stop(self, long long offset, str code, tuple info) except -1:
        self._flush_zeros()
        self._problems.add(code, offset, None, info)
        self.done = True
        self.stopped_at = offset
        return 0

    cdef int _flush_zeros(self) except -1:
        if self._zero_count:
            self._problems.add("car_zero_length_section", self._zero_start, None,
                               (self._zero_count,))
            self._zero_count = 0
        return 0

    cdef int _record(self, long long offset, uint8_t flag, const uint8_t *key,
                     Py_ssize_t key_length) except -1:
        cdef Py_ssize_t k = self._recorded
        cdef Py_ssize_t used = PyByteArray_GET_SIZE(self.keys)
        array.resize_smart(self.offsets, k + 1)
        self.offsets.data.as_ulonglongs[k] = <unsigned long long>offset
        PyByteArray_Resize(self.flags, k + 1)
        PyByteArray_AS_STRING(self.flags)[k] = <char>flag
        PyByteArray_Resize(self.keys, used + key_length)
        memcpy(PyByteArray_AS_STRING(self.keys) + used, key, <size_t>key_length)
        array.resize_smart(self.key_ends, k + 1)
        self.key_ends.data.as_ulonglongs[k] = <unsigned long long>(used + key_length)
        self._recorded = k + 1
        return 0

    cdef bint _is_root(self, const uint8_t *cid, Py_ssize_t size) except -1:
        cdef bytes root
        if len(self._root_list) > _MANY_ROOTS:
            return PyBytes_FromStringAndSize(<const char *>cid, size) in self.roots
        for root in self._root_list:
            if len(root) == size and memcmp(PyBytes_AS_STRING(root), cid, <size_t>size) == 0:
                return True
        return False

    cdef int _section(self, object view, const uint8_t *p, Py_ssize_t start,
                      Py_ssize_t cid_start, Py_ssize_t end, long long pos) except -1:
        cdef long long offset = pos + start
        cdef ck_cid cid
        cdef uint64_t bad
        cdef int status = ck_parse_cid(p, cid_start, end, &cid, &bad)
        if status != CK_CID_OK:
            self._problems.add("car_cid_invalid", offset, None,
                               (_CID_REASONS[status],
                                _VARINT_KINDS[bad] if status == CK_CID_VARINT else bad))
            return 0
        cdef Py_ssize_t block_start = cid.end
        cdef Py_ssize_t block_length = end - block_start
        cdef Py_ssize_t cid_length = cid.end - cid_start
        self.blocks += 1
        self.block_bytes += block_length
        self._codecs.add(cid.codec)
        self._hashes.add(cid.hash_code)
        if self.record:
            self._record(offset - self.payload_start,
                         _IDENTITY_CID if cid.hash_code == _IDENTITY else 0,
                         p + cid.mh_start, cid.end - cid.mh_start)
        if self._root_list and self._is_root(p + cid_start, cid_length):
            self.roots_found.add(self._cid(p, cid_start, cid_length))
        cdef const uint8_t *digest = p + cid.digest_start
        cdef const uint8_t *block = p + block_start
        cdef uint8_t computed[32]
        cdef bint matched = False
        cdef object function, got
        if cid.hash_code == _SHA2_256 and cid.digest_length <= 32:
            if block_length >= _NOGIL_HASH:
                with nogil:
                    ck_sha256(block, <size_t>block_length, computed)
            else:
                ck_sha256(block, <size_t>block_length, computed)
            matched = memcmp(computed, digest, <size_t>cid.digest_length) == 0
            if not matched:
                self._problems.add("car_digest_mismatch", offset,
                                   self._cid(p, cid_start, cid_length),
                                   (cid.hash_code,
                                    PyBytes_FromStringAndSize(<char *>computed,
                                                              <Py_ssize_t>cid.digest_length),
                                    block_length))
            if cid.digest_length < 32:
                self._problems.add("car_short_digest", offset,
                                   self._cid(p, cid_start, cid_length),
                                   (cid.hash_code, cid.digest_length, 32))
        elif cid.hash_code == _IDENTITY:
            matched = (cid.digest_length == <uint64_t>block_length
                       and memcmp(digest, block, <size_t>block_length) == 0)
            if not matched:
                self._problems.add("car_digest_mismatch", offset,
                                   self._cid(p, cid_start, cid_length),
                                   ("identity", cid.digest_length, block_length))
        else:
            function = HASH_FUNCTIONS.get(cid.hash_code)
            if function is None:
                self._problems.add("car_unknown_multihash", offset,
                                   self._cid(p, cid_start, cid_length), (cid.hash_code,))
            elif cid.digest_length > <uint64_t>function.size and not function.xof:
                self._problems.add("car_digest_length", offset,
                                   self._cid(p, cid_start, cid_length),
                                   (cid.hash_code, cid.digest_length, function.size))
            else:
                got = _twin_digest(cid.hash_code, view[block_start:end], cid.digest_length)
                matched = (len(got) == <Py_ssize_t>cid.digest_length and
                           memcmp(PyBytes_AS_STRING(got), digest, <size_t>cid.digest_length) == 0)
                if not matched:
                    self._problems.add("car_digest_mismatch", offset,
                                       self._cid(p, cid_start, cid_length),
                                       (cid.hash_code, got, block_length))
                if cid.digest_length < <uint64_t>function.size:
                    self._problems.add("car_short_digest", offset,
                                       self._cid(p, cid_start, cid_length),
                                       (cid.hash_code, cid.digest_length, function.size))
        if matched:
            self.verified += 1
        if self.strict is not None and cid.codec == _DAG_CBOR:
            try:
                self.strict(view[block_start:end])
            except CanonkitError as exc:
                self._problems.add("car_strict_decode", offset,
                                   self._cid(p, cid_start, cid_length),
                                   (exc.code, exc.offset, str(exc)))
        return 0

    cdef bytes _cid(self, const uint8_t *p, Py_ssize_t start, Py_ssize_t size):
        return PyBytes_FromStringAndSize(<const char *>p + start, size)


cdef class EntryChecker:
    """Checks index entries against the recorded sections (see the twin). Nothing is
    allocated on an index's word: buffers grow only to hold bytes the file has."""

    cdef public int fd
    cdef public long long payload_start
    cdef public long long data_end
    cdef public object offsets
    cdef public object flags
    cdef public object keys
    cdef public object key_ends
    cdef public bint fully_indexed
    cdef _Problems _problems
    cdef public list problems
    cdef public dict counts
    cdef public Py_ssize_t entries
    cdef const unsigned long long[::1] _offsets
    cdef unsigned char[::1] _flags
    cdef const uint8_t[::1] _keys
    cdef const unsigned long long[::1] _key_ends
    cdef Py_ssize_t _sections
    cdef Py_ssize_t _width
    cdef object _code            # None: car-index-sorted
    cdef uint64_t _code_value
    cdef bytearray _previous     # the previous entry's digest
    cdef bint _has_previous
    cdef bytearray _scratch      # a section's head, read back from the file

    def __init__(self, int fd, long long payload_start, long long data_end, offsets, flags,
                 keys, key_ends, *, bint fully_indexed, Py_ssize_t limit=1000):
        self._sections = len(flags)
        if len(offsets) != self._sections or len(key_ends) != self._sections:
            raise ValueError("offsets, flags and key_ends differ in length")
        self.fd = fd
        self.payload_start = payload_start
        self.data_end = data_end
        self.offsets = offsets
        self.flags = flags
        self.keys = keys
        self.key_ends = key_ends
        self.fully_indexed = fully_indexed
        self._problems = _Problems(limit)
        self.problems = self._problems.problems
        self.counts = self._problems.counts
        self.entries = 0
        if self._sections:
            self._offsets = offsets
            self._flags = flags
            self._key_ends = key_ends
            if len(keys):
                self._keys = keys
        self._width = 8
        self._code = None
        self._previous = bytearray()
        self._has_previous = False
        self._scratch = bytearray()

    def bucket(self, Py_ssize_t width, code):
        self._width = width
        self._code = code
        self._code_value = 0 if code is None else <uint64_t>code
        self._has_previous = False

    cdef Py_ssize_t _find(self, uint64_t offset) noexcept:
        """The index of the section at ``offset``, or -1."""
        cdef Py_ssize_t lo = 0, hi = self._sections, mid
        while lo < hi:
            mid = lo + (hi - lo) // 2
            if self._offsets[mid] < offset:
                lo = mid + 1
            else:
                hi = mid
        if lo < self._sections and self._offsets[lo] == offset:
            return lo
        return -1

    def feed(self, view, long long pos):
        cdef const uint8_t[::1] buf = view
        cdef Py_ssize_t n = buf.shape[0]
        cdef Py_ssize_t width = self._width
        cdef Py_ssize_t size = width - 8
        cdef Py_ssize_t i = 0, k
        cdef const uint8_t *entry
        cdef uint64_t offset
        cdef long long here
        if n < width:
            return
        if PyByteArray_GET_SIZE(self._previous) < size:  # at most one entry: in the view
            self._previous = bytearray(size)
        cdef uint8_t *previous = <uint8_t *>PyByteArray_AS_STRING(self._previous)
        while i + width <= n:
            self.entries += 1
            here = pos + i
            entry = &buf[i]
            offset = ck_load_le64(entry + size)
            if self._has_previous and memcmp(entry, previous, <size_t>size) < 0:
                self._problems.add("car_index_unsorted", here, None, ("entry",))
            memcpy(previous, entry, <size_t>size)
            self._has_previous = True
            i += width
            k = self._find(offset)
            if k < 0:
                self._problems.add("car_index_bad_offset", here, None, (offset,))
                continue
            if self._flags[k] & _COVERED:
                self._problems.add("car_index_duplicate", here, None, (offset,))
                continue
            self._flags[k] |= _COVERED
            self._compare(here, k, entry, size)
            if self._flags[k] & _IDENTITY_CID and not self.fully_indexed:
                self._problems.add("car_index_identity", here, None, (offset,))

    cdef int _compare(self, long long here, Py_ssize_t k, const uint8_t *key,
                      Py_ssize_t size) except -1:
        cdef Py_ssize_t start = <Py_ssize_t>self._key_ends[k - 1] if k else 0
        cdef Py_ssize_t end = <Py_ssize_t>self._key_ends[k]
        cdef const uint8_t *mh = &self._keys[0] if end > 0 else <const uint8_t *>b""
        cdef uint64_t code = 0, length = 0
        cdef Py_ssize_t p = end, q = end  # set by ck_varint; initialised for the compiler
        ck_varint(mh, start, end, &code, &p)   # recorded from a parsed CID: they parse
        ck_varint(mh, p, end, &length, &q)
        cdef Py_ssize_t held = end - q
        cdef tuple info
        if self._code is not None and code != self._code_value:
            info = ("code", self._code, code)
        elif held != size:
            info = ("length", size, held)
        elif memcmp(mh + q, key, <size_t>size) != 0:
            info = ("digest", PyBytes_FromStringAndSize(<const char *>key, size),
                    PyBytes_FromStringAndSize(<const char *>mh + q, held))
        else:
            return 0
        self._problems.add("car_index_mismatch", here,
                           self._kept_cid("car_index_mismatch", k, end - start), info)
        return 0

    cdef object _kept_cid(self, str code, Py_ssize_t k, Py_ssize_t multihash):
        """The CID of section ``k`` for a finding of ``code`` that will be kept (None for
        one only counted, or if the file no longer holds it)."""
        cdef Py_ssize_t seen = self.counts.get(code, 0)
        if seen >= self._problems.limit:
            return None
        cdef long long start = self.payload_start + <long long>self._offsets[k]
        cdef long long limit = self.data_end - start
        cdef Py_ssize_t want = _CID_HEAD + multihash
        cdef Py_ssize_t got, q
        cdef uint64_t length, bad
        cdef ck_cid cid
        if want > limit:
            want = <Py_ssize_t>limit
        if PyByteArray_GET_SIZE(self._scratch) < want:
            self._scratch = bytearray(want)
        cdef uint8_t *raw = <uint8_t *>PyByteArray_AS_STRING(self._scratch)
        with nogil:
            got = ck_pread(self.fd, raw, want, start)
        if got < 0:
            raise OSError(errno, _os.strerror(errno))
        if ck_varint(raw, 0, got, &length, &q) != CK_VARINT_OK:
            return None
        cdef Py_ssize_t end = q + <Py_ssize_t>length if length <= <uint64_t>(got - q) else got
        if ck_parse_cid(raw, q, end, &cid, &bad) != CK_CID_OK:
            return None
        return PyBytes_FromStringAndSize(<const char *>raw + q, cid.end - q)

    def missing(self):
        cdef Py_ssize_t k
        for k in range(self._sections):
            if self._flags[k] & _COVERED or (self._flags[k] & _IDENTITY_CID
                                             and not self.fully_indexed):
                continue
            self._problems.add(
                "car_index_missing", self.payload_start + <long long>self._offsets[k],
                self._kept_cid("car_index_missing", k,
                               <Py_ssize_t>(self._key_ends[k] - (self._key_ends[k - 1] if k else 0))),
                ())
