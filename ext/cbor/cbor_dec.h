/* C helpers of the CBOR decoder and validator (ext/cbor/_decode.pyx): big-endian loads,
 * ASCII checks (strict UTF-8: cbor_utf8.h) and the CID structure check of DAG-CBOR links.
 * Pure functions of their arguments; no Python objects except cd_dict_presized.
 */
#ifndef CANONKIT_CBOR_DEC_H
#define CANONKIT_CBOR_DEC_H

#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "cbor_utf8.h" /* cd_utf8_valid */

#if defined(__GNUC__) || defined(__clang__)
#define CD_INLINE static inline __attribute__((always_inline))
#else
#define CD_INLINE static __forceinline
#endif

#if defined(_MSC_VER)
#include <stdlib.h>
#define CD_LITTLE_ENDIAN 1
#define cd_bswap32 _byteswap_ulong
#define cd_bswap64 _byteswap_uint64
#else
#define CD_LITTLE_ENDIAN (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__)
#define cd_bswap32 __builtin_bswap32
#define cd_bswap64 __builtin_bswap64
#endif

static inline uint16_t cd_be16(const unsigned char *b) {
    return (uint16_t)(((uint16_t)b[0] << 8) | b[1]);
}
static inline uint32_t cd_be32(const unsigned char *b) {
    uint32_t v;
    memcpy(&v, b, 4);
    return CD_LITTLE_ENDIAN ? cd_bswap32(v) : v;
}
static inline uint64_t cd_be64(const unsigned char *b) {
    uint64_t v;
    memcpy(&v, b, 8);
    return CD_LITTLE_ENDIAN ? cd_bswap64(v) : v;
}

#define CD_HIGH_BITS 0x8080808080808080ULL

/* All n bytes below 0x80. */
static inline int cd_is_ascii(const unsigned char *s, Py_ssize_t n) {
    uint64_t acc = 0, w;
    Py_ssize_t i = 0;
    for (; i + 8 <= n; i += 8) {
        memcpy(&w, s + i, 8);
        acc |= w;
    }
    for (; i < n; i++) acc |= s[i];
    return (acc & CD_HIGH_BITS) == 0;
}

/* All n bytes below 0x80, reading whole words: bytes up to 7 past s + n are read (and
 * ignored), so the caller guarantees s + n + 8 is still inside its buffer. */
CD_INLINE int cd_is_ascii_padded(const unsigned char *s, Py_ssize_t n) {
    uint64_t acc = 0, w;
    Py_ssize_t i = 0;
    for (; i + 8 <= n; i += 8) {
        memcpy(&w, s + i, 8);
        acc |= w;
    }
    if (i < n) { /* keep the n - i bytes that belong to the string */
        memcpy(&w, s + i, 8);
        acc |= CD_LITTLE_ENDIAN ? w << (8 * (8 - (n - i))) : w >> (8 * (8 - (n - i)));
    }
    return (acc & CD_HIGH_BITS) == 0;
}

/* memcmp of a and b over m bytes, for a buffer where 8 bytes can be read at a and b. */
CD_INLINE int cd_cmp_padded(const unsigned char *a, const unsigned char *b, Py_ssize_t m) {
    uint64_t x, y;
    if (m <= 0) return 0;
    if (m <= 8) {
        memcpy(&x, a, 8);
        memcpy(&y, b, 8);
        if (CD_LITTLE_ENDIAN) { /* big-endian numbers compare like the bytes */
            x = cd_bswap64(x);
            y = cd_bswap64(y);
        }
        x >>= 8 * (8 - m); /* keep the first m bytes */
        y >>= 8 * (8 - m);
        return x == y ? 0 : (x < y ? -1 : 1);
    }
    return memcmp(a, b, (size_t)m);
}

/* The order of a map key (b, lb bytes of its encoding) after the previous key (a, la
 * bytes): < 0 in order, 0 the same key, > 0 out of order. With ``padded``, 8 bytes can
 * be read at b (and so at a, which comes before it in the same buffer). */
CD_INLINE int cd_key_cmp(const unsigned char *a, Py_ssize_t la, const unsigned char *b,
                         Py_ssize_t lb, int padded) {
    Py_ssize_t m;
    int c = (int)a[0] - (int)b[0]; /* the heads usually decide */
    if (c) return c;
    m = la < lb ? la : lb;
    c = padded ? cd_cmp_padded(a, b, m) : memcmp(a, b, (size_t)m);
    if (c) return c;
    return la < lb ? -1 : (la > lb);
}

/* The order check of the map key key_start..end after the previous key (*prev_start,
 * *prev_len; no previous key when *prev_len < 0), which it then becomes: the result of
 * cd_key_cmp, or -1 for the first key. */
CD_INLINE int cd_key_order(const unsigned char *p, Py_ssize_t full_n, Py_ssize_t key_start,
                           Py_ssize_t end, Py_ssize_t *prev_start, Py_ssize_t *prev_len) {
    int c = -1;
    Py_ssize_t klen = end - key_start;
    if (*prev_len >= 0)
        c = cd_key_cmp(p + *prev_start, *prev_len, p + key_start, klen, key_start + 8 <= full_n);
    *prev_start = key_start;
    *prev_len = klen;
    return c;
}

/* The end of the map key at ``start`` if it is the common kind, a text string of 0-23
 * ASCII bytes inside the first n bytes (reads stay below full_n); else -1. */
CD_INLINE Py_ssize_t cd_short_ascii_key(const unsigned char *p, Py_ssize_t n,
                                        Py_ssize_t full_n, Py_ssize_t start) {
    unsigned ib;
    Py_ssize_t len, end;
    if (start >= n) return -1;
    ib = p[start];
    if (ib < 0x60 || ib >= 0x78) return -1;
    len = (Py_ssize_t)ib - 0x60;
    end = start + 1 + len;
    if (end > n) return -1;
    if (end + 8 <= full_n ? !cd_is_ascii_padded(p + start + 1, len)
                          : !cd_is_ascii(p + start + 1, len))
        return -1;
    return end;
}

/* Whether the binary64 with these bits is exactly a binary32 (NaN: with its payload and
 * sign), i.e. core's shortest form of it is narrower than 8 bytes. */
CD_INLINE int cd_double_fits_single(uint64_t b) {
    int exp = (int)((b >> 52) & 0x7ff);
    uint64_t mant = b & 0xfffffffffffffULL;
    int e;
    if (exp == 0x7ff) return (mant & ((1ULL << 29) - 1)) == 0; /* Inf, NaN */
    if (exp == 0) return mant == 0; /* zeros; binary64 subnormals are far too small */
    e = exp - 1023;
    if (e >= -126 && e <= 127) return (mant & ((1ULL << 29) - 1)) == 0;
    if (e >= -149 && e < -126) /* a binary32 subnormal: k * 2^-149 */
        return ((mant | (1ULL << 52)) & ((1ULL << (-97 - e)) - 1)) == 0;
    return 0;
}

/* Whether the binary32 with these bits is exactly a binary16 (NaN: with its payload and
 * sign). */
CD_INLINE int cd_single_fits_half(uint32_t b) {
    int exp = (int)((b >> 23) & 0xff);
    uint32_t mant = b & 0x7fffff;
    int e;
    if (exp == 0xff) return (mant & ((1u << 13) - 1)) == 0;
    if (exp == 0) return mant == 0; /* binary32 subnormals are below binary16's range */
    e = exp - 127;
    if (e >= -14 && e <= 15) return (mant & ((1u << 13) - 1)) == 0;
    if (e >= -24 && e < -14) /* a binary16 subnormal: k * 2^-24 */
        return ((mant | (1u << 23)) & ((1u << (-1 - e)) - 1)) == 0;
    return 0;
}

/* One minimal unsigned LEB128 varint of at most 9 bytes at *pos (multiformats rules).
 * Returns 0 and advances *pos, or -1. */
static inline int cd_varint(const unsigned char *s, Py_ssize_t n, Py_ssize_t *pos,
                            uint64_t *value) {
    uint64_t v = 0;
    int i;
    unsigned b;
    for (i = 0; i < 9; i++) {
        if (*pos + i >= n) return -1;
        b = s[*pos + i];
        v |= (uint64_t)(b & 0x7F) << (7 * i);
        if (!(b & 0x80)) {
            if (b == 0 && i > 0) return -1;
            *pos += i + 1;
            *value = v;
            return 0;
        }
    }
    return -1;
}

/* The structure check of canonkit.cbor._cid.cid_problem: 1 if cid (no 0x00 prefix) is a
 * CIDv0 (12 20 <32 bytes>) or a CIDv1 whose digest length matches the bytes that follow. */
static inline int cd_cid_ok(const unsigned char *s, Py_ssize_t n) {
    Py_ssize_t pos = 0;
    uint64_t version, codec, hash, len;
    if (n == 34 && s[0] == 0x12 && s[1] == 0x20) return 1;
    if (cd_varint(s, n, &pos, &version) || version != 1) return 0;
    if (cd_varint(s, n, &pos, &codec) || cd_varint(s, n, &pos, &hash) ||
        cd_varint(s, n, &pos, &len))
        return 0;
    return (uint64_t)(n - pos) == len;
}

/* A dict with room for n entries (no rehash while filling); plain PyDict_New where the
 * private presizing call is not available. */
#if PY_VERSION_HEX >= 0x030D0000 || defined(PYPY_VERSION)
#define cd_dict_presized(n) PyDict_New()
#else
#define cd_dict_presized(n) _PyDict_NewPresized(n)
#endif

/* Tag 42's content at pos, when it is a byte string with its shortest head of 1..255
 * bytes, inside the input, holding 0x00 then a CID cd_cid_ok accepts: the offset of the
 * CID (*end: the offset after the string). Else -1, and the generic path decodes the
 * content and reports what is wrong with it. */
static inline Py_ssize_t cd_link_content(const unsigned char *p, Py_ssize_t n, Py_ssize_t pos,
                                         Py_ssize_t *end) {
    Py_ssize_t len, start;
    if (pos >= n)
        return -1;
    if (p[pos] >= 0x41 && p[pos] <= 0x57) {
        len = p[pos] - 0x40;
        start = pos + 1;
    } else if (p[pos] == 0x58 && n - pos > 1 && p[pos + 1] >= 24) {
        len = p[pos + 1];
        start = pos + 2;
    } else {
        return -1;
    }
    if (len > n - start || p[start] != 0 || !cd_cid_ok(p + start + 1, len - 1))
        return -1;
    *end = start + len;
    return start + 1;
}

#if defined(__GNUC__) || defined(__clang__)
#define cd_likely(x) __builtin_expect(!!(x), 1)
#define cd_unlikely(x) __builtin_expect(!!(x), 0)
#else
#define cd_likely(x) (x)
#define cd_unlikely(x) (x)
#endif

#endif
