# Readers of the object store's byte formats (STORE.md §2, §6), compiled. Same API,
# results and errors as src/canonkit/_store_py.py (the oracle); differential tests hold
# them together.
#
# Index and Pack hold their buffer (an mmap) for their lifetime, so a lookup is a fan-out
# read and a binary search over the digests with memcmp, and reading an entry is a bounds
# check and one copy (or none: copy=False). read_many resolves a whole batch of digests in
# one call. Every bounds check happens before the read it guards. BLAKE3 is the blake3
# package's (its SIMD kernels, the GIL released on large inputs), handed views of the
# mapping rather than copies.
#
# A mapped file that shrinks underneath (another process truncates it) would raise SIGBUS
# on the next read past its new end: store_guard.h turns that into zeros and a mark, and
# every reader checks the mark after reading, so it is a "truncated" CorruptObjectError.
# A reader calls back into Python (inflate); while it does, it cannot be released, and no
# reader can be initialised twice: the buffer it reads never goes away underneath it.
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.unicode cimport PyUnicode_GET_LENGTH

cdef extern from "Python.h":
    int PyUnicode_KIND(object o)
    void *PyUnicode_DATA(object o)
    int PyUnicode_1BYTE_KIND
cdef extern from "store_guard.h":
    Py_ssize_t ck_guard_register(const void *p, Py_ssize_t n)
    void ck_guard_release(Py_ssize_t slot)
    int ck_guard_shrunk(Py_ssize_t slot)
cdef extern from "store_inflate.h":
    ctypedef struct ck_inflated:
        int zerr
        int eof
        size_t produced
        size_t left
        char msg[200]
    int ck_inflate(const unsigned char *data, size_t n, unsigned char *out, size_t logical,
                   ck_inflated *r) noexcept
cdef extern from "store_batch.h":
    ctypedef struct ck_job:
        const unsigned char *src
        size_t n
        unsigned char *dst
        size_t logical
        const unsigned char *want
        int deflated
        int hashed
        int first
        int ok
    void ck_batch(ck_job *jobs, Py_ssize_t count) noexcept nogil
    void ck_b3_hash(const unsigned char *p, size_t n, unsigned char *out) noexcept nogil
    int CK_LANE_HASH
from libc.stdint cimport uint8_t, uint64_t
from libc.stdlib cimport qsort
from libc.string cimport memcmp, memcpy
from cpython.mem cimport PyMem_Free, PyMem_Malloc

import mmap as _mmap
import os as _os
import threading

from blake3 import blake3

from canonkit.errors import CorruptObjectError, InUseError, SchemaViolationError
from canonkit.store._format_py import (
    DIGEST, ENTRY_HEADER, FANOUT, FORM_DEFLATE, FORM_RAW, INDEX_HEADER, INDEX_MAGIC,
    LOOSE_HEADER, LOOSE_MAGIC, MAP_HEADS, PACK_HEADER, PACK_MAGIC, TRAILER, VERSION,
)

__all__ = [
    "DIGEST", "ENTRY_HEADER", "FANOUT", "FORM_DEFLATE", "FORM_RAW", "INDEX_HEADER",
    "INDEX_MAGIC", "LOOSE_HEADER", "LOOSE_MAGIC", "PACK_HEADER", "PACK_MAGIC", "TRAILER",
    "GUARDS_MAPPINGS", "MAP_HEADS", "VERSION", "Index", "Pack", "parse_address",
    "parse_addresses", "read_loose",
]

GUARDS_MAPPINGS = True

# The format's constants are declared once, in the twin (STORE.md §2); the readers here use
# C copies of them, set when the module is imported.
cdef Py_ssize_t C_LOOSE_HEADER = LOOSE_HEADER
cdef Py_ssize_t C_PACK_HEADER = PACK_HEADER
cdef Py_ssize_t C_ENTRY_HEADER = ENTRY_HEADER
cdef Py_ssize_t C_INDEX_HEADER = INDEX_HEADER
cdef Py_ssize_t C_FANOUT = FANOUT
cdef Py_ssize_t C_DIGEST = DIGEST
cdef Py_ssize_t C_TRAILER = TRAILER
cdef uint64_t C_VERSION = VERSION
cdef int C_FORM_RAW = FORM_RAW
cdef int C_FORM_DEFLATE = FORM_DEFLATE
cdef bytes C_LOOSE_MAGIC = LOOSE_MAGIC
cdef bytes C_PACK_MAGIC = PACK_MAGIC
cdef bytes C_INDEX_MAGIC = INDEX_MAGIC
cdef int C_MAP_HEAD_FIRST = min(MAP_HEADS)
cdef int C_MAP_HEAD_END = max(MAP_HEADS) + 1
assert len(MAP_HEADS) == C_MAP_HEAD_END - C_MAP_HEAD_FIRST  # one range, tested as such


_local = threading.local()  # one reusable hasher per thread

# Inputs of at least this many bytes are hashed by BLAKE3 on several threads (its tree
# splits them; the digest is the same): a 1 MiB object or a pack's body then costs a
# fraction of one pass. Below it a second thread costs more than it saves.
MT_HASH_BYTES = 1 << 20
cdef Py_ssize_t C_MT_HASH_BYTES = MT_HASH_BYTES
# BLAKE3's threads are a pool that a forked child does not have (a job handed to it there
# would wait forever): after a fork, this process's hashing stays on one thread.
cdef bint _threads_ok = True


def _forked():
    global _threads_ok
    _threads_ok = False


_os.register_at_fork(after_in_child=_forked)
cdef unsigned long C_ZLIB_MAX = 0xFFFFFFFF  # zlib's uInt: larger inputs go to Python

# A batch reader (fsck's entries, get_many) inflates and hashes the small entries of a
# batch on two threads without the GIL (store_batch.h's ck_batch), then hands them out in
# order: up to this many entries at a time, holding at most this many inflated bytes (a
# hostile pack declaring large objects costs no more memory than one entry).
cdef Py_ssize_t C_BATCH_ENTRIES = 4096
cdef uint64_t C_BATCH_BYTES = 8 << 20


cdef inline uint64_t _be64(const uint8_t *p) noexcept nogil:
    return ((<uint64_t>p[0] << 56) | (<uint64_t>p[1] << 48) | (<uint64_t>p[2] << 40)
            | (<uint64_t>p[3] << 32) | (<uint64_t>p[4] << 24) | (<uint64_t>p[5] << 16)
            | (<uint64_t>p[6] << 8) | <uint64_t>p[7])


cdef inline uint64_t _be32(const uint8_t *p) noexcept nogil:
    return (<uint64_t>p[0] << 24) | (<uint64_t>p[1] << 16) | (<uint64_t>p[2] << 8) | p[3]


cdef object _corrupt(str code, object offset, str what):
    return CorruptObjectError(f"{what} at offset {offset}", offset=offset, detail=code)


cdef object _detached(object exc):
    """An error to keep: without its traceback and context, whose frames would hold views
    of the pack's mapping (which could then not be closed)."""
    exc.__traceback__ = None
    exc.__context__ = None
    return exc


cdef object _hasher():
    try:
        return _local.hasher
    except AttributeError:
        h = _local.hasher = blake3()
        return h


cdef bytes _blake3(object data, Py_ssize_t n):
    if n >= C_MT_HASH_BYTES and _threads_ok:
        return blake3(data, max_threads=blake3.AUTO).digest()
    h = _hasher()
    h.reset()
    h.update(data)
    return h.digest()


cdef int _verify(object data, const uint8_t *digest, object at) except -1:
    """Raise digest_mismatch unless BLAKE3(data) == the 32 bytes at ``digest``."""
    cdef bytes got = _blake3(data, len(data))
    if memcmp(PyBytes_AS_STRING(got), digest, C_DIGEST) != 0:
        raise _corrupt("digest_mismatch", at, "BLAKE3 of the logical bytes differs from "
                                              "the object's digest")
    return 0


cdef struct _Framed:  # what Pack._entry read of an entry's frame (check_entries_summary)
    int form
    uint64_t logical
    int first  # a raw entry's first byte, -1 if not read (DEFLATE, or empty)


cdef inline bint _map_head(int first) noexcept nogil:
    """Whether a first byte starts a CBOR map of definite length (``MAP_HEADS``)."""
    return C_MAP_HEAD_FIRST <= first < C_MAP_HEAD_END


cdef struct _Want:
    const uint8_t *digest
    uint64_t offset
    Py_ssize_t slot
    bint found


cdef int _by_digest(const void *a, const void *b) noexcept nogil:
    cdef const _Want *x = <const _Want *>a
    cdef const _Want *y = <const _Want *>b
    cdef int c = memcmp(x.digest, y.digest, C_DIGEST)
    if c:
        return c
    return -1 if x.slot < y.slot else (1 if x.slot > y.slot else 0)


cdef const uint8_t *_digest_ptr(object digest) except? NULL:
    if digest is None:
        return NULL
    if type(digest) is not bytes or PyBytes_GET_SIZE(digest) != C_DIGEST:
        raise ValueError("a digest is 32 bytes")
    return <const uint8_t *>PyBytes_AS_STRING(digest)


cdef class _Buffer:
    """Holds one buffer (an mmap or bytes) until ``release``; a mapped one is guarded
    against its file shrinking (store_guard.h)."""
    cdef Py_buffer view
    cdef bint held
    cdef bint started      # __init__ has run: a reader is initialised once
    cdef int busy          # calls running that call back into Python (inflate)
    cdef Py_ssize_t slot   # the guard's slot for a mapped buffer, or -1
    cdef const uint8_t *p
    cdef Py_ssize_t n
    cdef object obj
    cdef object base       # the buffer as one byte view: every view handed out slices it

    def __cinit__(self, buffer, *args, **kwargs):
        PyObject_GetBuffer(buffer, &self.view, PyBUF_SIMPLE)
        self.held = True
        self.slot = -1
        self.obj = buffer
        self.base = memoryview(buffer).cast("B")
        self.p = <const uint8_t *>self.view.buf
        self.n = self.view.len
        if isinstance(buffer, _mmap.mmap):
            self.slot = ck_guard_register(self.p, self.n)

    def __dealloc__(self):
        if self.held:
            ck_guard_release(self.slot)
            PyBuffer_Release(&self.view)

    def release(self):
        """Let go of the buffer (an mmap can then be closed); the object is unusable.
        ``InUseError`` from inside one of its own calls (its ``inflate``)."""
        if self.busy:
            raise InUseError(f"this {type(self).__name__} is reading; it cannot be "
                               f"released from inside its own call")
        if self.held:
            self.held = False
            ck_guard_release(self.slot)
            self.slot = -1
            self.p = NULL
            self.n = 0
            PyBuffer_Release(&self.view)
            self.base.release()  # views sliced from it keep the buffer until they go
            self.base = None
            self.obj = None

    cdef int _begin(self) except -1:
        if self.started:
            raise InUseError(f"this {type(self).__name__} is initialised already")
        self.started = True
        return 0

    cdef int _live(self) except -1:
        if not self.held:
            raise ValueError("the buffer was released")
        return 0

    cdef object _shrunk(self, object offset):
        """The error to raise when the mapped file has shrunk since it was mapped, else
        None: what was read may be zeros put there by the guard, never data."""
        if self.slot >= 0 and ck_guard_shrunk(self.slot):
            return _corrupt("truncated", offset, f"the file shrank below the {self.n} "
                                                 f"bytes it had when it was mapped")
        return None

    cdef int _intact(self, object offset) except -1:
        problem = self._shrunk(offset)
        if problem is not None:
            raise problem
        return 0

    def intact(self):
        """False once the mapped file is known to have shrunk (every read then fails)."""
        return self._shrunk(0) is None


cdef uint64_t _inline_limit(object inflate):
    """How large an object ``inflate`` lets this kernel inflate itself (0: none): an
    inflater marked ``deflate.inlinable`` returns, up to that declared length, exactly what
    ``deflate.inflate`` does."""
    limit = getattr(inflate, "inline_limit", None)
    if type(limit) is not int or limit <= 0:
        return 0
    return min(<uint64_t>limit, <uint64_t>C_ZLIB_MAX - 1)


cdef inline bint _zlib_header_ok(const uint8_t *p, uint64_t n) noexcept:
    """deflate._header's checks: a zlib stream header, no preset dictionary."""
    if n < 2:
        return False
    cdef int cmf = p[0], flg = p[1]
    return not (cmf & 0x0F != 8 or cmf >> 4 > 7 or (cmf << 8 | flg) % 31 or flg & 0x20)


cdef object _inflate_inline(const uint8_t *p, uint64_t n, uint64_t logical,
                            const uint8_t *want):
    """``deflate.inflate``'s result for an intact stream of ``n`` bytes at ``p``, inflated
    in C (store_inflate.h) and verified; None when anything is wrong with it, for the
    caller to call ``inflate`` itself, which says exactly what (its zlib's message and
    all: the error is the same whichever reader meets it)."""
    cdef ck_inflated r
    if not _zlib_header_ok(p, n):
        return None
    out = PyBytes_FromStringAndSize(NULL, <Py_ssize_t>logical)
    if ck_inflate(p, n, <unsigned char *>PyBytes_AS_STRING(out), logical, &r) < 0:
        raise MemoryError()
    if r.zerr or not r.eof or r.left or r.produced != logical:
        return None
    if want != NULL and memcmp(PyBytes_AS_STRING(_blake3(out, <Py_ssize_t>logical)), want,
                               C_DIGEST) != 0:
        return None
    return out


def read_loose(data, digest, inflate, copy=True):
    """The logical bytes of a loose file (raw or DEFLATE form); ``copy=False``: a raw
    payload is a memoryview of ``data``."""
    cdef Py_buffer view
    cdef const uint8_t *want = _digest_ptr(digest)
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    cdef const uint8_t *p = <const uint8_t *>view.buf
    cdef Py_ssize_t n = view.len
    cdef uint64_t logical, have
    cdef int form
    try:
        if n < C_LOOSE_HEADER:
            raise _corrupt("truncated", n, f"loose header needs {C_LOOSE_HEADER} bytes, "
                                           f"the file has {n}")
        if memcmp(p, <const char *>C_LOOSE_MAGIC, 4) != 0:
            raise _corrupt("bad_magic", 0, "not a loose object file (magic is not "
                                           f"{LOOSE_MAGIC.decode()})")
        form = p[4]
        if form != C_FORM_RAW and form != C_FORM_DEFLATE:
            raise _corrupt("bad_form", 4, f"unknown form byte {form:#04x}")
        logical = _be64(p + 5)
        have = <uint64_t>(n - C_LOOSE_HEADER)
        if form == C_FORM_RAW:
            if have != logical:
                raise _corrupt("truncated" if have < logical else "trailing_bytes",
                               C_LOOSE_HEADER + min(have, logical),
                               f"raw payload has {have} bytes, the header says {logical}")
            if copy:
                out = PyBytes_FromStringAndSize(<const char *>p + C_LOOSE_HEADER,
                                                <Py_ssize_t>have)
            else:
                out = memoryview(data).cast("B")[C_LOOSE_HEADER:]
            if want != NULL:
                _verify(out, want, C_LOOSE_HEADER)
            return out
        if logical <= _inline_limit(inflate) and <uint64_t>(n - C_LOOSE_HEADER) <= C_ZLIB_MAX:
            out = _inflate_inline(p + C_LOOSE_HEADER, n - C_LOOSE_HEADER, logical, want)
            if out is not None:
                return out
        # inflate checks the digest itself: it may stream the output into the hash
        return inflate(memoryview(data).cast("B")[C_LOOSE_HEADER:], logical, C_LOOSE_HEADER,
                       digest)
    finally:
        PyBuffer_Release(&view)


cdef uint64_t _header(const uint8_t *p, Py_ssize_t n, const char *magic, str what,
                      Py_ssize_t minimum, str short) except? 0xFFFFFFFFFFFFFFFF:
    """The count of a pack or index header after checking its size, magic and version."""
    cdef uint64_t version
    if n < minimum:
        raise _corrupt("truncated", n, short)
    if memcmp(p, magic, 4) != 0:
        raise _corrupt("bad_magic", 0, f"not a {what} (magic is not {magic.decode()})")
    version = _be32(p + 4)
    if version != C_VERSION:
        raise _corrupt("bad_version", 4, f"{what} version {version}, expected {C_VERSION}")
    return _be64(p + 8)


cdef class Index(_Buffer):
    """A ``.idx`` file held as a buffer. The constructor checks the header and the exact
    size; ``check`` does the rest of fsck's index checks."""
    cdef readonly object count
    cdef readonly bytes pack_trailer
    cdef readonly bytes checksum
    cdef uint64_t n_entries
    cdef const uint8_t *fan
    cdef const uint8_t *dig
    cdef const uint8_t *off

    def __init__(self, buffer):
        self._begin()
        cdef const uint8_t *p = self.p
        cdef Py_ssize_t n = self.n
        cdef uint64_t count
        count = _header(p, n, <const char *>C_INDEX_MAGIC, "index", C_INDEX_HEADER + C_FANOUT + 2 * C_TRAILER,
                        "index shorter than its fixed parts")
        expected = C_INDEX_HEADER + C_FANOUT + <object>count * (C_DIGEST + 8) + 2 * C_TRAILER
        if n != expected:
            raise _corrupt("truncated" if n < expected else "trailing_bytes", min(n, expected),
                           f"index of {count} entries must be {expected} bytes, is {n}")
        self.n_entries = count
        self.count = count
        self.fan = p + C_INDEX_HEADER
        self.dig = self.fan + C_FANOUT
        self.off = self.dig + count * C_DIGEST
        self.pack_trailer = PyBytes_FromStringAndSize(<const char *>self.off + count * 8,
                                                      C_TRAILER)
        self.checksum = PyBytes_FromStringAndSize(<const char *>p + n - C_TRAILER, C_TRAILER)
        self._intact(n)

    def fanout(self, int b):
        self._live()
        if not 0 <= b < 256:
            raise IndexError(b)
        value = _be64(self.fan + 8 * b)
        self._intact(self.n)
        return value

    def digest(self, uint64_t i):
        self._live()
        if i >= self.n_entries:
            raise IndexError(i)
        value = PyBytes_FromStringAndSize(<const char *>self.dig + i * C_DIGEST, C_DIGEST)
        self._intact(self.n)
        return value

    def offset(self, uint64_t i):
        self._live()
        if i >= self.n_entries:
            raise IndexError(i)
        value = _be64(self.off + 8 * i)
        self._intact(self.n)
        return value

    def entries(self):
        """``(digests, offsets)``: every digest (a list of 32-byte ``bytes``) and its
        offset, in index order."""
        self._live()
        cdef Py_ssize_t i, n = <Py_ssize_t>self.n_entries
        cdef list digests = [None] * n
        cdef list offsets = [None] * n
        for i in range(n):
            digests[i] = PyBytes_FromStringAndSize(<const char *>self.dig + i * C_DIGEST,
                                                   C_DIGEST)
            offsets[i] = _be64(self.off + 8 * i)
        self._intact(self.n)
        return digests, offsets

    cdef inline long long _find(self, const uint8_t *d) noexcept nogil:
        """The position of digest ``d``, or -1: the fan-out narrows, then bisect_left
        (a corrupt fan-out may narrow to a miss but never leaves the table)."""
        cdef uint64_t lo = 0, hi, mid, first = d[0]
        if first:
            lo = _be64(self.fan + 8 * (first - 1))
        hi = _be64(self.fan + 8 * first)
        if hi > self.n_entries:
            hi = self.n_entries
        if lo > hi:
            lo = hi
        cdef uint64_t top = hi
        while lo < hi:
            mid = (lo + hi) // 2
            if memcmp(self.dig + mid * C_DIGEST, d, C_DIGEST) < 0:
                lo = mid + 1
            else:
                hi = mid
        if lo < top and memcmp(self.dig + lo * C_DIGEST, d, C_DIGEST) == 0:
            return <long long>lo
        return -1

    def lookup(self, digest):
        """The entry offset of ``digest``, or -1."""
        self._live()
        cdef const uint8_t *d = _digest_ptr(digest)
        if d == NULL:
            raise ValueError("a digest is 32 bytes")
        cdef long long i = self._find(d)
        cdef object value = -1 if i < 0 else <object>_be64(self.off + 8 * i)
        self._intact(self.n)
        return value

    def lookup_many(self, digests):
        """``[lookup(d) for d in digests]`` for concatenated 32-byte digests."""
        self._live()
        if type(digests) is not bytes or PyBytes_GET_SIZE(digests) % C_DIGEST:
            raise ValueError("digests must be concatenated 32-byte digests")
        cdef const uint8_t *d = <const uint8_t *>PyBytes_AS_STRING(digests)
        cdef Py_ssize_t k, m = PyBytes_GET_SIZE(digests) // C_DIGEST
        cdef long long i
        cdef list out = [None] * m
        for k in range(m):
            i = self._find(d + k * C_DIGEST)
            out[k] = -1 if i < 0 else _be64(self.off + 8 * i)
        self._intact(self.n)
        return out

    def check(self):
        """Structural findings ``(code, offset, detail)``: fan-out monotone and consistent
        with the digests, digests strictly ascending, the checksum."""
        self._live()
        cdef list found = []
        cdef uint64_t previous = 0, value, total, i
        cdef uint64_t counts[256]
        cdef int b
        cdef bint monotone = True
        for b in range(256):
            value = _be64(self.fan + 8 * b)
            if value < previous:
                found.append(("index_fanout", C_INDEX_HEADER + 8 * b,
                              f"fan-out entry {b} ({value}) is below entry {b - 1} "
                              f"({previous})"))
                monotone = False
                break
            previous = value
        if monotone:
            if previous != self.n_entries:
                found.append(("index_fanout", C_INDEX_HEADER + 8 * 255,
                              f"last fan-out entry is {previous}, the count is "
                              f"{self.n_entries}"))
            else:
                for b in range(256):
                    counts[b] = 0
                for i in range(self.n_entries):
                    counts[self.dig[i * C_DIGEST]] += 1
                total = 0
                for b in range(256):
                    total += counts[b]
                    value = _be64(self.fan + 8 * b)
                    if total != value:
                        found.append(("index_fanout", C_INDEX_HEADER + 8 * b,
                                      f"fan-out entry {b} is {value}, the digests give "
                                      f"{total}"))
                        break
        for i in range(1, self.n_entries):
            if memcmp(self.dig + i * C_DIGEST, self.dig + (i - 1) * C_DIGEST, C_DIGEST) <= 0:
                found.append(("index_unsorted", C_INDEX_HEADER + C_FANOUT + i * C_DIGEST,
                              f"digest {i} does not follow digest {i - 1} in strictly "
                              f"ascending order"))
                break
        body = self.base[:self.n - C_TRAILER]
        if blake3(body).digest() != self.checksum:
            found.append(("index_checksum", self.n - C_TRAILER,
                          "the index checksum is not BLAKE3 of the preceding bytes"))
        body.release()
        self._intact(self.n)
        return found


cdef class _Batch


cdef class Pack(_Buffer):
    """A ``.pack`` file held as a buffer. The constructor checks the header; ``entry``
    checks each entry's framing as it reads it; ``scan`` walks all of them."""
    cdef readonly object count
    cdef readonly object end
    cdef readonly bytes trailer
    cdef uint64_t c_end

    def __init__(self, buffer):
        self._begin()
        cdef const uint8_t *p = self.p
        cdef Py_ssize_t n = self.n
        self.count = _header(p, n, <const char *>C_PACK_MAGIC, "pack", C_PACK_HEADER + C_TRAILER,
                             "pack shorter than header and trailer")
        self.c_end = <uint64_t>(n - C_TRAILER)
        self.end = self.c_end
        self.trailer = PyBytes_FromStringAndSize(<const char *>p + self.c_end, C_TRAILER)
        self._intact(n)

    def body_digest(self):
        """BLAKE3 of every byte before the trailer (what the trailer must be)."""
        self._live()
        body = self.base[:self.c_end]
        try:
            got = _blake3(body, <Py_ssize_t>self.c_end)
        finally:
            body.release()
        self._intact(self.c_end)
        return got

    cdef int _frame(self, uint64_t offset, int *form, uint64_t *stored,
                    uint64_t *logical) except -1:
        cdef const uint8_t *p = self.p
        if offset < <uint64_t>C_PACK_HEADER or offset >= self.c_end:
            raise _corrupt("bad_offset", offset, "entry offset outside the pack's entries")
        if offset + C_ENTRY_HEADER > self.c_end:
            raise _corrupt("truncated", offset, "entry header runs into the trailer")
        form[0] = p[offset]
        stored[0] = _be64(p + offset + 1)
        logical[0] = _be64(p + offset + 9)
        if form[0] != C_FORM_RAW and form[0] != C_FORM_DEFLATE:
            raise _corrupt("bad_form", offset, f"unknown form byte {form[0]:#04x}")
        if stored[0] > self.c_end - offset - C_ENTRY_HEADER:
            raise _corrupt("truncated", offset + 1, f"stored length {stored[0]} runs past "
                                                    f"the pack's entries")
        if form[0] == C_FORM_RAW and stored[0] != logical[0]:
            raise _corrupt("length_mismatch", offset + 9, f"raw entry stores {stored[0]} "
                                                          f"bytes but says {logical[0]}")
        return 0

    def frame(self, offset):
        """``(form, stored, logical)`` of the entry at ``offset``, framing checked."""
        self._live()
        cdef int form
        cdef uint64_t stored, logical
        if offset < 0:
            raise _corrupt("bad_offset", offset, "entry offset outside the pack's entries")
        try:
            self._frame(offset, &form, &stored, &logical)
        except CorruptObjectError:
            self._intact(offset)
            raise
        self._intact(offset)
        return form, stored, logical

    cdef object _entry(self, uint64_t offset, const uint8_t *want, object inflate, bint copy,
                       _Framed *framed=NULL):
        """One entry, verified; a shrunk file is reported as such (whatever the zeros it
        left read as). The caller holds ``busy`` (inflate is Python). ``framed``, if
        given, receives the entry's form, logical length and first byte."""
        try:
            out = self._entry_bytes(offset, want, inflate, copy, framed)
        except CorruptObjectError:
            self._intact(offset)
            raise
        self._intact(offset)
        return out

    cdef object _entry_bytes(self, uint64_t offset, const uint8_t *want, object inflate,
                             bint copy, _Framed *framed):
        cdef int form
        cdef uint64_t stored, logical
        self._frame(offset, &form, &stored, &logical)
        cdef uint64_t start = offset + C_ENTRY_HEADER
        if framed != NULL:  # read here, before _entry checks the mapping is intact
            framed.form = form
            framed.logical = logical
            framed.first = self.p[start] if form == C_FORM_RAW and stored else -1
        if form == C_FORM_RAW:
            if copy:
                out = PyBytes_FromStringAndSize(<const char *>self.p + start,
                                                <Py_ssize_t>stored)
            else:
                out = self.base[start:start + stored]
            if want != NULL:
                _verify(out, want, start)
            return out
        if logical <= _inline_limit(inflate) and stored <= C_ZLIB_MAX:
            out = _inflate_inline(self.p + start, stored, logical, want)
            if out is not None:
                return out
        # inflate checks the digest itself: it may stream the output into the hash
        digest = None if want == NULL else PyBytes_FromStringAndSize(<const char *>want,
                                                                      C_DIGEST)
        return inflate(self.base[start:start + stored], logical, start, digest)

    cdef object _staged(self, uint64_t at, uint64_t limit, const uint8_t *want, bint keep,
                        ck_job *job):
        """Stage the entry at ``at`` as a batch job (``job`` filled in): returns its
        output buffer (bytes: a DEFLATE entry's, or a raw one's copy when ``keep``), or
        True for a raw entry hashed where it lies, or None when the entry is read one by
        one instead: a DEFLATE one larger than ``limit``, a raw one larger than the lanes
        hash, its framing or zlib header wrong (that path says what)."""
        cdef int form
        cdef uint64_t stored, logical
        try:
            self._frame(at, &form, &stored, &logical)
        except CorruptObjectError:
            return None
        cdef const uint8_t *src = self.p + at + C_ENTRY_HEADER
        if form == C_FORM_DEFLATE:
            if logical > limit or stored > C_ZLIB_MAX or not _zlib_header_ok(src, stored):
                return None
        elif logical > <uint64_t>CK_LANE_HASH:
            return None
        out = True
        job.dst = NULL
        if form == C_FORM_DEFLATE or keep:
            out = PyBytes_FromStringAndSize(NULL, <Py_ssize_t>logical)
            job.dst = <unsigned char *>PyBytes_AS_STRING(out)
        job.src = src
        job.n = stored
        job.logical = logical
        job.want = want
        job.deflated = form == C_FORM_DEFLATE
        job.ok = 0
        return out

    cdef int _run_batch(self, ck_job *jobs, Py_ssize_t n) except -1:
        """Run the staged jobs on two threads; if the mapping shrank meanwhile what was
        read may be zeros, so no job counts (each entry is then read one by one)."""
        cdef Py_ssize_t i
        if n == 0:
            return 0
        with nogil:
            ck_batch(jobs, n)
        if self._shrunk(0) is not None:
            for i in range(n):
                jobs[i].ok = 0
        return 0

    cdef object _batched(self, object staged, ck_job *job):
        """A staged entry's result if its job went wholly right and its digest (if one
        was asked for) holds, else None: bytes, or for a raw entry hashed where it lies
        the view of it that ``entry(copy=False)`` gives."""
        if staged is None or not job.ok:
            return None
        if job.want != NULL and not job.hashed:  # larger than the lanes hash: SIMD
            if memcmp(PyBytes_AS_STRING(_blake3(staged, <Py_ssize_t>job.logical)), job.want,
                      C_DIGEST) != 0:
                return None
        if staged is True:
            start = job.src - self.p
            return self.base[start:start + job.n]
        return staged

    def entry(self, offset, digest, inflate, copy=True):
        """The logical bytes of the entry at ``offset``; with ``copy=False`` a raw entry is
        a memoryview into the pack (verified first unless ``digest`` is None)."""
        self._live()
        if offset < 0:
            raise _corrupt("bad_offset", offset, "entry offset outside the pack's entries")
        cdef const uint8_t *want = _digest_ptr(digest)
        self.busy += 1
        try:
            return self._entry(offset, want, inflate, copy)
        finally:
            self.busy -= 1

    def find(self, Index index, digest, bint verify, inflate, copy=True):
        """``entry`` of ``digest``'s offset in ``index`` (verified unless ``verify`` is
        False), or None if the index does not list it: a ``get`` in one call."""
        self._live()
        index._live()
        cdef const uint8_t *d = _digest_ptr(digest)
        if d == NULL:
            raise ValueError("a digest is 32 bytes")
        cdef long long i = index._find(d)
        index._intact(index.n)
        if i < 0:
            return None
        cdef uint64_t offset = _be64(index.off + 8 * i)
        index._intact(index.n)
        self.busy += 1
        try:
            return self._entry(offset, d if verify else NULL, inflate, copy)
        finally:
            self.busy -= 1

    def read_many(self, Index index, digests, list out, bint verify, inflate, copy=True):
        """Fill every ``None`` slot ``i`` of ``out`` whose digest (``digests[32i:32i+32]``)
        this pack holds; return how many were filled.

        The requests are sorted by digest first: the index is then searched, and the pack
        (written in digest order) read, front to back instead of at random — a batch
        streams through the mapping. The outcome is still that of reading them in request
        order: slots are filled up to the first request whose entry is corrupt, whose
        error is raised. ``copy=False``: raw entries are memoryviews into the pack, as
        ``entry`` gives them, hashed where they lie."""
        self._live()
        index._live()
        if type(digests) is not bytes or PyBytes_GET_SIZE(digests) % C_DIGEST:
            raise ValueError("digests must be concatenated 32-byte digests")
        cdef Py_ssize_t k, j, n = 0, m = PyBytes_GET_SIZE(digests) // C_DIGEST
        if len(out) != m:
            raise ValueError("out must have one slot per digest")
        cdef const uint8_t *d = <const uint8_t *>PyBytes_AS_STRING(digests)
        cdef long long i
        cdef Py_ssize_t first_bad = m, filled = 0
        cdef list got = [None] * m
        cdef _Want *wants = <_Want *>PyMem_Malloc(max(m, 1) * sizeof(_Want))
        if wants == NULL:
            raise MemoryError()
        cdef uint64_t limit = _inline_limit(inflate)
        cdef Py_ssize_t start, stop
        cdef _Batch batch = _Batch()
        self.busy += 1
        index.busy += 1
        try:
            for k in range(m):
                if out[k] is None:
                    wants[n].digest = d + k * C_DIGEST
                    wants[n].slot = k
                    n += 1
            qsort(wants, n, sizeof(_Want), _by_digest)
            for j in range(n):  # every offset first: the index is read front to back
                i = index._find(wants[j].digest)
                wants[j].found = i >= 0
                wants[j].offset = _be64(index.off + 8 * i) if i >= 0 else 0
            index._intact(index.n)
            start = 0
            while start < n:
                # a batch: its small entries inflated and hashed side by side, then each
                # entry in turn (read one by one when the batch did not give it)
                stop = start
                while stop < n and stop - start < C_BATCH_ENTRIES and batch.add(
                        self, stop - start, wants[stop].found and wants[stop].slot <= first_bad,
                        wants[stop].offset, limit, wants[stop].digest if verify else NULL,
                        copy):
                    stop += 1
                batch.run(self)
                for j in range(start, stop):
                    k = wants[j].slot
                    if k > first_bad or not wants[j].found:
                        continue  # not here; or discarded anyway: an earlier request failed
                    value = batch.take(self, j - start)
                    if value is not None:
                        got[k] = value
                        continue
                    try:
                        got[k] = self._entry(wants[j].offset, wants[j].digest if verify else NULL,
                                             inflate, copy)
                    except CorruptObjectError as exc:
                        got[k] = _detached(exc)
                        first_bad = min(first_bad, k)
                batch.clear()
                start = stop
        finally:
            self.busy -= 1
            index.busy -= 1
            PyMem_Free(wants)
        for k in range(m):
            value = got[k]
            if value is None:
                continue
            if isinstance(value, CorruptObjectError):
                raise value
            out[k] = value
            filled += 1
        return filled

    def check_entries(self, offsets, digests, inflate, copy=True):
        """fsck's loop: for each ``offsets[i]``, the entry's logical bytes verified against
        ``digests[32i:32i+32]``, or the ``CorruptObjectError`` it fails with (returned,
        not raised). ``copy=False``: raw entries are memoryviews into the pack, hashed
        where they lie."""
        self._live()
        if type(digests) is not bytes or PyBytes_GET_SIZE(digests) != 32 * len(offsets):
            raise ValueError("one 32-byte digest per offset")
        cdef const uint8_t *d = <const uint8_t *>PyBytes_AS_STRING(digests)
        cdef Py_ssize_t k, m = len(offsets)
        cdef list out = [None] * m
        self.busy += 1
        try:
            for k in range(m):
                offset = offsets[k]
                if offset < 0:
                    out[k] = _corrupt("bad_offset", offset, "entry offset outside the pack's "
                                      "entries")
                    continue
                try:
                    out[k] = self._entry(offset, d + k * C_DIGEST, inflate, copy)
                except CorruptObjectError as exc:
                    out[k] = _detached(exc)
        finally:
            self.busy -= 1
        return out

    def check_entries_summary(self, offsets, digests, inflate, copy=True):
        """``check_entries`` with the leaves summed up instead of returned: ``(leaves,
        leaf_bytes, deflated, deflated_bytes, rest)`` (the twin says what each is). One
        loop in C: a leaf's bytes are hashed and dropped, never handed to Python."""
        self._live()
        if type(digests) is not bytes or PyBytes_GET_SIZE(digests) != 32 * len(offsets):
            raise ValueError("one 32-byte digest per offset")
        cdef const uint8_t *d = <const uint8_t *>PyBytes_AS_STRING(digests)
        cdef Py_ssize_t k, n, m = len(offsets)
        cdef Py_ssize_t n_leaves = 0, deflated = 0
        cdef uint64_t leaf_bytes = 0, deflated_bytes = 0
        cdef int first
        cdef _Framed framed
        cdef list rest = []
        leaves = PyBytes_FromStringAndSize(NULL, 32 * m)  # shrunk to n_leaves at the end
        cdef uint8_t *o = <uint8_t *>PyBytes_AS_STRING(leaves)
        cdef uint64_t limit = _inline_limit(inflate)
        cdef Py_ssize_t start = 0, stop
        cdef ck_job *job
        cdef _Batch batch = _Batch()
        self.busy += 1
        try:
            while start < m:
                # a batch: its small entries inflated and hashed side by side, then every
                # entry in turn (one the batch did not give is read one by one)
                stop = start
                while stop < m and stop - start < C_BATCH_ENTRIES:
                    offset = offsets[stop]
                    if not batch.add(self, stop - start, offset >= 0,
                                     offset if offset >= 0 else 0, limit,
                                     d + stop * C_DIGEST, False):
                        break
                    stop += 1
                batch.run(self)
                for k in range(start, stop):
                    offset = offsets[k]
                    job = batch.job(k - start)
                    got = batch.take(self, k - start)
                    if got is not None and job.deflated:
                        framed.form = C_FORM_DEFLATE
                        framed.logical = job.logical
                    elif got is not None and not _map_head(job.first):
                        # a raw leaf, verified where it lies: counted, not handed out
                        memcpy(o + n_leaves * C_DIGEST, d + k * C_DIGEST, C_DIGEST)
                        n_leaves += 1
                        leaf_bytes += job.logical
                        continue
                    else:
                        got = None  # not from the batch, or a raw structured entry
                    if got is None:
                        if offset < 0:
                            rest.append((k, _corrupt("bad_offset", offset, "entry offset "
                                                     "outside the pack's entries")))
                            continue
                        try:
                            got = self._entry(offset, d + k * C_DIGEST, inflate, copy, &framed)
                        except CorruptObjectError as exc:
                            rest.append((k, _detached(exc)))
                            continue
                    if framed.form == C_FORM_DEFLATE:
                        deflated += 1
                        deflated_bytes += framed.logical
                    if type(got) is bytes:
                        n = PyBytes_GET_SIZE(got)
                        first = (<const uint8_t *>PyBytes_AS_STRING(got))[0] if n else -1
                    elif type(got) is memoryview and framed.form == C_FORM_RAW:
                        first = framed.first  # a view of the raw entry: read in _entry
                    elif isinstance(got, (bytes, memoryview)):
                        first = got[0] if len(got) else -1
                    else:
                        rest.append((k, got))  # not bytes (a streamed object): Python's
                        continue
                    if _map_head(first):
                        rest.append((k, got))
                        continue
                    memcpy(o + n_leaves * C_DIGEST, d + k * C_DIGEST, C_DIGEST)
                    n_leaves += 1
                    leaf_bytes += framed.logical
                batch.clear()
                start = stop
        finally:
            self.busy -= 1
        return (leaves[:n_leaves * C_DIGEST], leaf_bytes, deflated, deflated_bytes, rest)

    def scan(self):
        """Walk the framing from the header: the entry offsets found, and the first
        framing problem (``(code, offset, detail)``) or None. A clean walk ends exactly at
        the trailer after ``count`` entries."""
        self._live()
        cdef list offsets = []
        cdef uint64_t at = C_PACK_HEADER, stored, logical
        cdef int form
        while at < self.c_end:
            try:
                self._frame(at, &form, &stored, &logical)
                self._intact(at)
            except CorruptObjectError as exc:
                problem = self._shrunk(at) or exc
                return offsets, (str(problem.detail),
                                 problem.offset if problem.offset is not None else at,
                                 str(problem))
            offsets.append(at)
            at += C_ENTRY_HEADER + stored
        if len(offsets) != self.count:
            return offsets, ("pack_count", 8, f"the header says {self.count} entries, "
                                              f"the pack holds {len(offsets)}")
        return offsets, None


cdef class _Batch:
    """A batch reader's current batch: the entries staged as jobs for the two lanes
    (store_batch.h) and the position each belongs to; at most ``C_BATCH_ENTRIES``
    positions and ``C_BATCH_BYTES`` of output."""
    cdef ck_job *jobs
    cdef int *job_of     # position -> its job, or -1 (read one by one)
    cdef list staged     # job -> its output (bytes, or True: a raw entry hashed in place)
    cdef Py_ssize_t count
    cdef uint64_t held

    def __cinit__(self):
        self.jobs = <ck_job *>PyMem_Malloc(C_BATCH_ENTRIES * sizeof(ck_job))
        self.job_of = <int *>PyMem_Malloc(C_BATCH_ENTRIES * sizeof(int))
        if self.jobs == NULL or self.job_of == NULL:
            raise MemoryError()
        self.staged = [None] * C_BATCH_ENTRIES

    def __dealloc__(self):
        PyMem_Free(self.jobs)
        PyMem_Free(self.job_of)

    cdef bint add(self, Pack pack, Py_ssize_t pos, bint wanted, uint64_t at, uint64_t limit,
                  const uint8_t *want, bint keep) except -1:
        """Position ``pos``: its entry (at ``at``, if ``wanted``) staged as a job when it
        can be (``Pack._staged``); False, and nothing added, when the batch holds too
        many bytes to take it."""
        self.job_of[pos] = -1
        if not wanted:
            return True
        item = pack._staged(at, limit, want, keep, &self.jobs[self.count])
        if item is None:
            return True
        if self.count and self.held + self.jobs[self.count].logical > C_BATCH_BYTES:
            return False
        self.held += self.jobs[self.count].logical
        self.staged[self.count] = item
        self.job_of[pos] = <int>self.count
        self.count += 1
        return True

    cdef int run(self, Pack pack) except -1:
        return pack._run_batch(self.jobs, self.count)

    cdef ck_job *job(self, Py_ssize_t pos) noexcept:
        return NULL if self.job_of[pos] < 0 else &self.jobs[self.job_of[pos]]

    cdef object take(self, Pack pack, Py_ssize_t pos):
        """Position ``pos``'s result from the batch (``Pack._batched``), or None."""
        cdef int j = self.job_of[pos]
        if j < 0:
            return None
        item = self.staged[j]
        self.staged[j] = None
        return pack._batched(item, &self.jobs[j])

    cdef void clear(self) noexcept:
        cdef Py_ssize_t i
        for i in range(self.count):
            self.staged[i] = None
        self.count = 0
        self.held = 0


cdef inline int _hexval(Py_UCS4 c) noexcept:
    if 48 <= c <= 57:
        return <int>c - 48
    if 97 <= c <= 102:
        return <int>c - 87
    return -1


cdef int _parse_into(object item, uint8_t *o, Py_ssize_t k, bint many) except -1:
    """The digest of address ``item`` into ``o``; SchemaViolationError otherwise."""
    cdef Py_ssize_t j
    cdef int hi, lo
    cdef const char *p
    if (type(item) is str and PyUnicode_GET_LENGTH(item) == 71
            and PyUnicode_KIND(item) == PyUnicode_1BYTE_KIND):
        p = <const char *>PyUnicode_DATA(item)  # Latin-1 bytes: one per character
        if memcmp(p, b"blake3:", 7) == 0:
            for j in range(32):
                hi = _hexval(<uint8_t>p[7 + 2 * j])
                lo = _hexval(<uint8_t>p[8 + 2 * j])
                if hi < 0 or lo < 0:
                    break
                o[j] = <uint8_t>(hi << 4 | lo)
            else:
                return 0
    where = f"addresses[{k}] is" if many else "not"
    raise SchemaViolationError(f"{where} {'not ' if many else ''}a blake3 address: {item!r}",
                               detail="address")


def _portable_blake3(data):
    """BLAKE3-256 of ``data`` by the batch lanes' portable C (store_blake3.h): for tests,
    which hold it to the blake3 package."""
    cdef Py_buffer view
    cdef uint8_t out[32]
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        with nogil:
            ck_b3_hash(<const uint8_t *>view.buf, <size_t>view.len, out)
    finally:
        PyBuffer_Release(&view)
    return PyBytes_FromStringAndSize(<const char *>out, 32)


def parse_address(text):
    """The 32 digest bytes of one ``"blake3:<64 lowercase hex>"`` address."""
    cdef uint8_t out[32]
    _parse_into(text, out, 0, False)
    return PyBytes_FromStringAndSize(<const char *>out, 32)


def parse_addresses(addresses):
    """The concatenated 32-byte digests of ``"blake3:<64 lowercase hex>"`` addresses;
    ``SchemaViolationError`` (detail ``"address"``, as ``objects.parse_address``) naming
    the first malformed one and its position."""
    cdef Py_ssize_t m = len(addresses), k
    cdef bytearray out = bytearray(m * C_DIGEST)
    cdef uint8_t *o = <uint8_t *>(<char *>out)
    for k in range(m):
        _parse_into(addresses[k], o + k * C_DIGEST, k, True)
    return bytes(out)
