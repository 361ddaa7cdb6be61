/* The CAR section reader in C: varints, CIDs and reads at an offset, exactly as
 * canonkit/car/format.py reads them (its twin; the differential tests compare them).
 *
 * Every read of p[i] is preceded by a check of i against `end`.
 */
#ifndef CANONKIT_CAR_FRAMES_H
#define CANONKIT_CAR_FRAMES_H

#include <Python.h>
#include <errno.h>
#include <stdint.h>

/* varint outcomes; the nonzero ones are VarintProblem's kinds "cut", "overlong",
 * "non_minimal" in this order */
enum { CK_VARINT_OK = 0, CK_VARINT_CUT = 1, CK_VARINT_OVERLONG = 2, CK_VARINT_NON_MINIMAL = 3 };

/* An unsigned LEB128 varint at p[pos] ending before `end`: minimal, at most 9 bytes. */
static inline int ck_varint(const uint8_t *p, Py_ssize_t pos, Py_ssize_t end, uint64_t *value,
                            Py_ssize_t *next) {
    uint64_t v = 0;
    for (int i = 0; i < 9; i++) {
        if (pos + i >= end) return CK_VARINT_CUT;
        uint8_t b = p[pos + i];
        v |= (uint64_t)(b & 0x7F) << (7 * i);
        if (b < 0x80) {
            if (b == 0 && i > 0) return CK_VARINT_NON_MINIMAL;
            *value = v;
            *next = pos + i + 1;
            return CK_VARINT_OK;
        }
    }
    return CK_VARINT_OVERLONG;
}

typedef struct {
    Py_ssize_t end;           /* one past the CID's last byte */
    Py_ssize_t mh_start;      /* the multihash: hash code varint, length varint, digest */
    Py_ssize_t digest_start;
    uint64_t version;
    uint64_t codec;
    uint64_t hash_code;
    uint64_t digest_length;
} ck_cid;

/* CID outcomes; the nonzero ones are CidProblem's reasons "version", "varint", "digest";
 * `bad` receives the value (the version; the varint outcome; the digest length). */
enum { CK_CID_OK = 0, CK_CID_VERSION = 1, CK_CID_VARINT = 2, CK_CID_DIGEST = 3 };

static inline int ck_parse_cid(const uint8_t *p, Py_ssize_t pos, Py_ssize_t end, ck_cid *c,
                               uint64_t *bad) {
    if (end - pos >= 2 && p[pos] == 0x12 && p[pos + 1] == 0x20) {  /* CIDv0 */
        if (end - pos < 34) { *bad = 32; return CK_CID_DIGEST; }
        c->end = pos + 34;
        c->mh_start = pos;
        c->digest_start = pos + 2;
        c->version = 0;
        c->codec = 0x70;
        c->hash_code = 0x12;
        c->digest_length = 32;
        return CK_CID_OK;
    }
    Py_ssize_t q;
    uint64_t length;
    int s = ck_varint(p, pos, end, &c->version, &q);
    if (s) { *bad = (uint64_t)s; return CK_CID_VARINT; }
    if (c->version != 1) { *bad = c->version; return CK_CID_VERSION; }
    if ((s = ck_varint(p, q, end, &c->codec, &q))) { *bad = (uint64_t)s; return CK_CID_VARINT; }
    c->mh_start = q;
    if ((s = ck_varint(p, q, end, &c->hash_code, &q))) { *bad = (uint64_t)s; return CK_CID_VARINT; }
    if ((s = ck_varint(p, q, end, &length, &q))) { *bad = (uint64_t)s; return CK_CID_VARINT; }
    if (length > (uint64_t)(end - q)) { *bad = length; return CK_CID_DIGEST; }
    c->digest_start = q;
    c->digest_length = length;
    c->end = q + (Py_ssize_t)length;
    return CK_CID_OK;
}

static inline uint64_t ck_load_le64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

/* Up to n bytes of file `fd` at `offset` into buf: the count read (fewer only at the end
 * of the file), or -1 with errno set. */
#ifdef _WIN32
#include <io.h>
static Py_ssize_t ck_pread(int fd, uint8_t *buf, Py_ssize_t n, long long offset) {
    if (_lseeki64(fd, offset, SEEK_SET) < 0) return -1;
    Py_ssize_t done = 0;
    while (done < n) {
        int got = _read(fd, buf + done, (unsigned)(n - done > 0x40000000 ? 0x40000000 : n - done));
        if (got < 0) return -1;
        if (got == 0) break;
        done += got;
    }
    return done;
}
#else
#include <unistd.h>
static Py_ssize_t ck_pread(int fd, uint8_t *buf, Py_ssize_t n, long long offset) {
    Py_ssize_t done = 0;
    while (done < n) {
        ssize_t got = pread(fd, buf + done, (size_t)(n - done), (off_t)(offset + done));
        if (got < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        if (got == 0) break;
        done += got;
    }
    return done;
}
#endif

#endif
