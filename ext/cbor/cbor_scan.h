/* The validator's per-item tests on short byte runs (ext/cbor/_decode.pyx, chk_loop):
 * whether a short text string is ASCII, and the order of a map key after the previous
 * one. Both are the same functions of the same bytes as cbor_dec.h's scalar versions
 * (cd_is_ascii, cd_key_cmp), which stay the reference and the fallback.
 *
 * Where the 64 bytes from the run's first byte lie inside the input, the test reads them
 * as four 16-byte SSE2 vectors (SSE2 is part of x86-64, so this needs no dispatch and
 * inlines into the loop) and masks off the bytes past the run: a fixed amount of work
 * whatever the length, so the loop's branches no longer follow each string's length
 * (twitter's keys and values are mostly 3-40 bytes, and the word loops they replace
 * mispredicted on their exits). Bytes read past the run are ignored, never trusted.
 * Elsewhere (the last 64 bytes of the input, other CPUs), the scalar versions run.
 */
#ifndef CANONKIT_CBOR_SCAN_H
#define CANONKIT_CBOR_SCAN_H

#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "cbor_dec.h" /* CD_INLINE, cd_is_ascii, cd_key_cmp */

#if defined(__SSE2__) || defined(_M_X64)
#define CK_SSE2 1
#include <emmintrin.h>
#else
#define CK_SSE2 0
#endif

#define CK_WINDOW 64 /* bytes a vector test reads from the run's first byte */
#ifndef CK_KEY_SSE
#define CK_KEY_SSE 1
#endif
#ifndef CK_VAL_SSE
#define CK_VAL_SSE 1
#endif

#if CK_SSE2
/* The top bit of each of the 16 bytes at s. */
CD_INLINE uint64_t ck_high16(const unsigned char *s) {
    return (uint32_t)_mm_movemask_epi8(_mm_loadu_si128((const __m128i *)s));
}

/* One bit per byte of the 64 bytes at s: its top bit. */
CD_INLINE uint64_t ck_high64(const unsigned char *s) {
    return ck_high16(s) | ck_high16(s + 16) << 16 | ck_high16(s + 32) << 32 |
           ck_high16(s + 48) << 48;
}

/* The bytes at a against those at b, 16 at a time: bit i of *le is set where
 * a[i] <= b[i] (unsigned), of *eq where a[i] == b[i]. */
CD_INLINE void ck_order16(const unsigned char *a, const unsigned char *b, int k,
                          uint64_t *le, uint64_t *eq) {
    __m128i x = _mm_loadu_si128((const __m128i *)(a + 16 * k));
    __m128i y = _mm_loadu_si128((const __m128i *)(b + 16 * k));
    *le |= (uint64_t)(uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_min_epu8(x, y), x))
           << (16 * k);
    *eq |= (uint64_t)(uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(x, y)) << (16 * k);
}
#endif

/* The low n bits (0 <= n <= 64). */
CD_INLINE uint64_t ck_low_bits(Py_ssize_t n) {
    return n >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << n) - 1;
}

/* All n bytes at s below 0x80; ``room``: the bytes of the input from s on (>= n). */
CD_INLINE int ck_is_ascii(const unsigned char *s, Py_ssize_t n, Py_ssize_t room) {
#if CK_SSE2 && CK_VAL_SSE
    if (n <= CK_WINDOW && room >= CK_WINDOW) return (ck_high64(s) & ck_low_bits(n)) == 0;
#endif
    if (room >= n + 8) return cd_is_ascii_padded(s, n);
    return cd_is_ascii(s, n);
}

/* Whether key b (lb bytes of its encoding) sorts after key a (la bytes), given over
 * their first m = min(la, lb) < 64 bytes the bits le (a[i] <= b[i]) and eq (a[i] ==
 * b[i]). The end of the shorter key is one more position, where it is the smaller: b is
 * after a where a position with a[i] < b[i] comes before every one with a[i] > b[i]. */
CD_INLINE int ck_after(Py_ssize_t la, Py_ssize_t lb, uint64_t le, uint64_t eq) {
    Py_ssize_t m = la < lb ? la : lb;
    uint64_t low = ck_low_bits(m);
    uint64_t less = (le & ~eq & low) | (uint64_t)(la < lb) << m;
    uint64_t more = (~le & low) | (uint64_t)(la > lb) << m;
    return (less & (more - 1)) != 0;
}

/* cd_key_cmp for the key order's error path (the common path only asks ck_after). */
static inline int ck_key_cmp_slow(const unsigned char *a, Py_ssize_t la, const unsigned char *b,
                           Py_ssize_t lb) {
    return cd_key_cmp(a, la, b, lb, 0);
}

/* cd_key_order: the order check of the map key key_start..end after the previous key
 * (*prev_start, *prev_len; none when *prev_len < 0), which it then becomes: -1 in order
 * (or the first key), else cd_key_cmp's result (0 the same key, > 0 out of order). */
CD_INLINE int ck_key_order(const unsigned char *p, Py_ssize_t full_n, Py_ssize_t key_start,
                           Py_ssize_t end, Py_ssize_t *prev_start, Py_ssize_t *prev_len) {
    const unsigned char *a = p + *prev_start, *b = p + key_start;
    Py_ssize_t la = *prev_len, lb = end - key_start, m;
    uint64_t x, y;
    int c;
    *prev_start = key_start;
    *prev_len = lb;
    if (la < 0) return -1;
    c = (int)a[0] - (int)b[0]; /* the heads usually decide */
    if (c) return c < 0 ? -1 : c;
    m = la < lb ? la : lb;
    if (m <= 24 && full_n - key_start >= 24) {
        Py_ssize_t i;
        for (i = 0; i < m; i += 8) {
            memcpy(&x, a + i, 8);
            memcpy(&y, b + i, 8);
            if (x != y) {
                if (CD_LITTLE_ENDIAN) {
                    x = cd_bswap64(x);
                    y = cd_bswap64(y);
                }
                if (m - i < 8) {
                    x >>= 8 * (8 - (m - i));
                    y >>= 8 * (8 - (m - i));
                    if (x == y) break;
                }
                return x < y ? -1 : 1;
            }
        }
        c = la < lb ? -1 : (la > lb);
        return c;
    }
    c = cd_key_cmp(a, la, b, lb, full_n - key_start >= 8);
    return c < 0 ? -1 : c;
}

/* The common map key, a text string of 0-23 ASCII bytes ending inside the first n bytes
 * (reads stay below full_n), at ``start``: its order after the previous key is checked
 * (*order: ck_key_order's result; the key becomes the previous one) and its end
 * returned. Else -1, and only the head was read. */
CD_INLINE Py_ssize_t ck_short_key(const unsigned char *p, Py_ssize_t n, Py_ssize_t full_n,
                                  Py_ssize_t start, Py_ssize_t *prev_start,
                                  Py_ssize_t *prev_len, int *order) {
    unsigned ib;
    Py_ssize_t len, end;
    if (start >= n) return -1;
#ifdef CK_PREFETCH
    __builtin_prefetch(p + start + CK_PREFETCH);
#endif
    ib = p[start];
    if (ib < 0x60 || ib >= 0x78) return -1;
    len = (Py_ssize_t)ib - 0x60;
    end = start + 1 + len;
    if (end > n) return -1;
#if CK_SSE2 && CK_KEY_SSE
    if (full_n - start >= 32) { /* the key, at most 24 bytes, inside 32: two loads each */
        const unsigned char *b = p + start;
        if ((ck_high16(b) | ck_high16(b + 16) << 16) & ck_low_bits(len) << 1) return -1;
        *order = ck_key_order(p, full_n, start, end, prev_start, prev_len);
        return end;
    }
#endif
    if (!ck_is_ascii(p + start + 1, len, full_n - start - 1)) return -1;
    *order = ck_key_order(p, full_n, start, end, prev_start, prev_len);
    return end;
}

#endif /* CANONKIT_CBOR_SCAN_H */
