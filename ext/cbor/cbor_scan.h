/* The per-item tests of the validator's first pass (cbor_check.h) on short byte runs:
 * whether a short text string is ASCII, and the order of a map key after the previous
 * one. The same functions of the same bytes as cbor_dec.h's scalar versions (cd_is_ascii,
 * cd_key_cmp), which the full validator uses and which serve here where the fast forms
 * cannot read enough bytes.
 *
 * A short ASCII test reads the 64 bytes from the run's first byte as four SSE2 vectors
 * (SSE2 is part of x86-64: no dispatch, and it inlines into the loop) and masks off the
 * bytes past the run, or with AVX-512 loads the run's bytes alone with a mask: a fixed
 * amount of work whatever the length, so the loop's branches do not follow each string's
 * length (the word loops they replace mispredicted on their exits; twitter's keys and
 * values are mostly 3-40 bytes). Bytes read past the run are ignored, never trusted; near
 * the end of the input the scalar tests run. Keys are compared head first (it usually
 * decides), then in big-endian words: comparing them as SSE2 vectors, or as 128-bit
 * numbers without branches, was 3-9% slower on twitter and citm (bench/cbor_ab.py).
 */
#ifndef CANONKIT_CBOR_SCAN_H
#define CANONKIT_CBOR_SCAN_H

#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "cbor_dec.h"  /* CD_INLINE, cd_is_ascii, cd_key_cmp */
#include "cbor_utf8.h" /* CU_X86, <immintrin.h> */

#if defined(__SSE2__) || defined(_M_X64)
#define CK_SSE2 1
#include <emmintrin.h>
#else
#define CK_SSE2 0
#endif

#define CK_WINDOW 64 /* bytes a vector test reads from the run's first byte */

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
#endif

/* The low n bits (0 <= n <= 64). */
CD_INLINE uint64_t ck_low_bits(Py_ssize_t n) {
    return n >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << n) - 1;
}

/* All n bytes at s below 0x80; ``room``: the bytes of the input from s on (>= n). */
CD_INLINE int ck_is_ascii(const unsigned char *s, Py_ssize_t n, Py_ssize_t room) {
#if CK_SSE2
    if (n <= CK_WINDOW && room >= CK_WINDOW) return (ck_high64(s) & ck_low_bits(n)) == 0;
#endif
    if (room >= n + 8) return cd_is_ascii_padded(s, n);
    return cd_is_ascii(s, n);
}

#if CU_X86
/* The same tests for the validator's AVX-512 pass (cbor_check.h, CPUs with AVX-512BW):
 * a masked load reads only the run's bytes (the lanes past it are not read, so it needs
 * no room after the run) and one mask instruction tests them. Not always_inline: the
 * baseline pass names them in code its ``wide`` constant removes. */
#define CK_AVX512_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,bmi2")))

CK_AVX512_TARGET static inline int ck_is_ascii_avx512(const unsigned char *s, Py_ssize_t n,
                                                      Py_ssize_t room) {
    if (n <= 64)
        return !_mm512_movepi8_mask(
            _mm512_maskz_loadu_epi8(_bzhi_u64(~0ULL, (unsigned)n), s));
    return room >= n + 8 ? cd_is_ascii_padded(s, n) : cd_is_ascii(s, n);
}
#endif

/* ck_is_ascii, or with ``wide`` (a constant) ck_is_ascii_avx512. */
CD_INLINE int ck_is_ascii_w(const unsigned char *s, Py_ssize_t n, Py_ssize_t room,
                            int wide) {
#if CU_X86
    if (wide) return ck_is_ascii_avx512(s, n, room);
#endif
    (void)wide;
    return ck_is_ascii(s, n, room);
}

/* cd_key_order of cbor_dec.h: the order check of the map key key_start..end after the
 * previous key (*prev_start, *prev_len; none when *prev_len < 0), which it then
 * becomes: -1 in order (or the first key), else cd_key_cmp's sign (0 the same key, > 0
 * out of order). */
CD_INLINE int ck_key_order(const unsigned char *p, Py_ssize_t full_n, Py_ssize_t key_start,
                           Py_ssize_t end, Py_ssize_t *prev_start, Py_ssize_t *prev_len) {
    const unsigned char *a = p + *prev_start, *b = p + key_start;
    Py_ssize_t la = *prev_len, lb = end - key_start, m, i;
    uint64_t x, y;
    int c;
    *prev_start = key_start;
    *prev_len = lb;
    if (la < 0) return -1;
    c = (int)a[0] - (int)b[0]; /* the heads usually decide */
    if (c) return c < 0 ? -1 : c;
    m = la < lb ? la : lb;
    if (m <= 64 && full_n - key_start >= ((m + 7) & ~(Py_ssize_t)7)) {
        /* words of 8, big-endian: the first that differs decides (memcmp's call and its
         * setup cost more than the compare, for keys this short) */
        for (i = 0; i < m; i += 8) {
            memcpy(&x, a + i, 8);
            memcpy(&y, b + i, 8);
            if (x != y) {
                if (CD_LITTLE_ENDIAN) {
                    x = cd_bswap64(x);
                    y = cd_bswap64(y);
                }
                if (m - i < 8) { /* only the bytes before m count */
                    x >>= 8 * (8 - (m - i));
                    y >>= 8 * (8 - (m - i));
                    if (x == y) break;
                }
                return x < y ? -1 : 1;
            }
        }
        return la < lb ? -1 : (la > lb);
    }
    c = cd_key_cmp(a, la, b, lb, full_n - key_start >= 8);
    return c < 0 ? -1 : c;
}

/* The common map key, a text string of 0-23 ASCII bytes ending inside the first n bytes
 * (reads stay below full_n), at ``start``: its order after the previous key is checked
 * (*order: ck_key_order's result; the key becomes the previous one) and its end
 * returned. Else -1, and only the head was read. ``wide``: a constant, see
 * ck_is_ascii_w. */
CD_INLINE Py_ssize_t ck_short_key(const unsigned char *p, Py_ssize_t n, Py_ssize_t full_n,
                                  Py_ssize_t start, Py_ssize_t *prev_start,
                                  Py_ssize_t *prev_len, int *order, int wide) {
    Py_ssize_t len, end;
    if (start >= n) return -1;
    len = (Py_ssize_t)p[start] - 0x60; /* heads 0x60-0x77: text of 0-23 bytes */
    if ((size_t)len >= 24 || len > n - start - 1) return -1;
    end = start + 1 + len;
#if CK_SSE2
    if (!wide && full_n - start >= 32) { /* the key (at most 24 bytes) in two loads */
        const unsigned char *b = p + start;
        if ((ck_high16(b) | ck_high16(b + 16) << 16) & ck_low_bits(len) << 1) return -1;
        *order = ck_key_order(p, full_n, start, end, prev_start, prev_len);
        return end;
    }
#endif
    if (!ck_is_ascii_w(p + start + 1, len, full_n - start - 1, wide)) return -1;
    *order = ck_key_order(p, full_n, start, end, prev_start, prev_len);
    return end;
}

#endif /* CANONKIT_CBOR_SCAN_H */
