/* Strict UTF-8 validation for the CBOR validator (ext/cbor/_decode.pyx): the same
 * acceptance as CPython's "strict" decoder (RFC 3629: no overlong forms, no surrogates
 * U+D800..U+DFFF, nothing above U+10FFFF, no truncated sequence).
 *
 * Four kernels, one answer:
 *   - scalar: 8-byte ASCII skip, then byte by byte; every platform, and short strings;
 *   - SSSE3/SSE4.1 (16-byte blocks), AVX2 (32-byte blocks) and AVX-512BW (64-byte
 *     blocks): the "lookup" algorithm of J. Keiser and D. Lemire, "Validating UTF-8 In
 *     Less Than One Instruction Per Byte", Software: Practice and Experience 51(5), 2021
 *     (as in simdjson and simdutf). Every error is a property of one byte and the three
 *     before it: three 16-entry tables, indexed by the high and low nibble of the
 *     previous byte and the high nibble of this one, give each pair a set of error
 *     classes, and a byte may only be a continuation where a 3- or 4-byte lead two or
 *     three bytes back says it must be one.
 * The vector kernels are compiled with target attributes and chosen once at import
 * (cu_utf8_init, __builtin_cpu_supports), so the module still runs on a baseline x86-64.
 * The scalar kernel is the reference: tests compare every kernel with it and with
 * CPython at every length 0-256 and around every block boundary.
 *
 * A vector kernel reads each block's three predecessors with unaligned loads at -1, -2, -3
 * (the first block shifts them in as zeros, i.e. ASCII). The SSE4.1 and AVX2 kernels read
 * the last partial block as an overlapping block ending at the string's end: every check
 * is a function of a byte and its three predecessors, so checking a byte twice changes
 * nothing. The AVX-512 kernel loads a partial block, and the predecessors of the first,
 * with masks instead, so it takes any length and a string shorter than 64 bytes is one
 * block. Nothing outside [s, s + n) is read.
 */
#ifndef CANONKIT_CBOR_UTF8_H
#define CANONKIT_CBOR_UTF8_H

#include <Python.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define CU_X86 1
#include <immintrin.h>
#else
#define CU_X86 0
#endif

/* kernel ids (cu_utf8_select / the test hook in _decode.pyx) */
#define CU_SCALAR 0
#define CU_SSE 1
#define CU_AVX2 2
#define CU_AVX512 3

/* The shortest strings the vector kernels take: a block and its three predecessors (the
 * last block overlaps the one before). From there on they beat the scalar kernel at every
 * length (bench/utf8_kernels.py: 19 bytes, 8.7 ns against 16.5 ns per string). */
#ifndef CU_SIMD_MIN /* -D for measuring (at least 19, and CU_AVX2_MIN at least 35) */
#define CU_SIMD_MIN 19
#endif
#ifndef CU_AVX2_MIN
#define CU_AVX2_MIN 35
#endif
/* The AVX-512 kernel takes any length (masked loads); below this the scalar one is as
 * fast (bench/utf8_kernels.py: 12 bytes, 7.1 ns against 8.4 ns per string). */
#ifndef CU_AVX512_MIN
#define CU_AVX512_MIN 12
#endif

#define CU_HIGH_BITS 0x8080808080808080ULL

/* Every kernel returns 0 (invalid), 1 (valid, not all ASCII) or 2 (all ASCII). */
#define CU_INVALID 0
#define CU_UNICODE 1
#define CU_ASCII 2

static inline int cu_utf8_scalar(const unsigned char *s, Py_ssize_t n) {
    const unsigned char *e = s + n;
    uint64_t w;
    unsigned c, c1;
    int kind = CU_ASCII;
    while (s < e) {
        if (e - s >= 8) {
            memcpy(&w, s, 8);
            if (!(w & CU_HIGH_BITS)) {
                s += 8;
                continue;
            }
        }
        c = *s;
        if (c < 0x80) {
            s++;
            continue;
        }
        kind = CU_UNICODE;
        if (c < 0xC2) return 0; /* continuation byte, or an overlong 2-byte lead */
        if (c < 0xE0) {
            if (e - s < 2 || (s[1] & 0xC0) != 0x80) return 0;
            s += 2;
            continue;
        }
        if (c < 0xF0) {
            if (e - s < 3) return 0;
            c1 = s[1];
            if ((c1 & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80) return 0;
            if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 >= 0xA0)) return 0;
            s += 3;
            continue;
        }
        if (c < 0xF5) {
            if (e - s < 4) return 0;
            c1 = s[1];
            if ((c1 & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80 || (s[3] & 0xC0) != 0x80)
                return 0;
            if ((c == 0xF0 && c1 < 0x90) || (c == 0xF4 && c1 >= 0x90)) return 0;
            s += 4;
            continue;
        }
        return 0;
    }
    return kind;
}

/* Error classes of a (previous byte, this byte) pair; a pair is bad when the three table
 * entries share a bit. TWO_CONTS (continuation after continuation) is not an error by
 * itself: it must coincide exactly with the places a 3/4-byte lead demands one. */
#define CU_TOO_SHORT (1 << 0)  /* 11______ then 0_______ or 11______ */
#define CU_TOO_LONG (1 << 1)   /* 0_______ then 10______ */
#define CU_OVERLONG_3 (1 << 2) /* 11100000 then 100_____ */
#define CU_TOO_LARGE (1 << 3)  /* 11110100 then 1001____ or 101_____; 11110101+ then 10______ */
#define CU_SURROGATE (1 << 4)  /* 11101101 then 101_____ */
#define CU_OVERLONG_2 (1 << 5) /* 1100000_ then 10______ */
#define CU_TOO_LARGE_1000 (1 << 6) /* 11110101+ then 1000____ */
#define CU_OVERLONG_4 (1 << 6) /* 11110000 then 1000____ */
#define CU_TWO_CONTS (1 << 7)  /* 10______ then 10______ */
#define CU_CARRY (CU_TOO_SHORT | CU_TOO_LONG | CU_TWO_CONTS)

/* the 16 entries of each table, as the arguments of _mm_setr_epi8 */
#define CU_BYTE1_HIGH                                                                      \
    CU_TOO_LONG, CU_TOO_LONG, CU_TOO_LONG, CU_TOO_LONG, CU_TOO_LONG, CU_TOO_LONG,          \
        CU_TOO_LONG, CU_TOO_LONG, CU_TWO_CONTS, CU_TWO_CONTS, CU_TWO_CONTS, CU_TWO_CONTS,  \
        CU_TOO_SHORT | CU_OVERLONG_2, CU_TOO_SHORT,                                        \
        CU_TOO_SHORT | CU_OVERLONG_3 | CU_SURROGATE,                                       \
        CU_TOO_SHORT | CU_TOO_LARGE | CU_TOO_LARGE_1000 | CU_OVERLONG_4
#define CU_BIG (CU_CARRY | CU_TOO_LARGE | CU_TOO_LARGE_1000)
#define CU_BYTE1_LOW                                                                       \
    CU_CARRY | CU_OVERLONG_3 | CU_OVERLONG_2 | CU_OVERLONG_4, CU_CARRY | CU_OVERLONG_2,     \
        CU_CARRY, CU_CARRY, CU_CARRY | CU_TOO_LARGE, CU_BIG, CU_BIG, CU_BIG, CU_BIG,       \
        CU_BIG, CU_BIG, CU_BIG, CU_BIG, CU_BIG | CU_SURROGATE, CU_BIG, CU_BIG
#define CU_CONT_ANY (CU_TOO_LONG | CU_OVERLONG_2 | CU_TWO_CONTS)
#define CU_BYTE2_HIGH                                                                      \
    CU_TOO_SHORT, CU_TOO_SHORT, CU_TOO_SHORT, CU_TOO_SHORT, CU_TOO_SHORT, CU_TOO_SHORT,    \
        CU_TOO_SHORT, CU_TOO_SHORT,                                                        \
        CU_CONT_ANY | CU_OVERLONG_3 | CU_TOO_LARGE_1000 | CU_OVERLONG_4,                   \
        CU_CONT_ANY | CU_OVERLONG_3 | CU_TOO_LARGE, CU_CONT_ANY | CU_SURROGATE | CU_TOO_LARGE, \
        CU_CONT_ANY | CU_SURROGATE | CU_TOO_LARGE, CU_TOO_SHORT, CU_TOO_SHORT,             \
        CU_TOO_SHORT, CU_TOO_SHORT

#if CU_X86

#define CU_SSE_TARGET __attribute__((target("ssse3,sse4.1")))
#define CU_AVX2_TARGET __attribute__((target("avx2")))

/* The error bits (nonzero: invalid) of the 16 bytes in, whose predecessors at -1, -2, -3
 * are p1, p2, p3. */
CU_SSE_TARGET static inline __m128i cu_sse_block(__m128i in, __m128i p1, __m128i p2,
                                                 __m128i p3) {
    const __m128i nib = _mm_set1_epi8(0x0F);
    const __m128i t1h = _mm_setr_epi8(CU_BYTE1_HIGH);
    const __m128i t1l = _mm_setr_epi8(CU_BYTE1_LOW);
    const __m128i t2h = _mm_setr_epi8(CU_BYTE2_HIGH);
    __m128i b1h = _mm_shuffle_epi8(t1h, _mm_and_si128(_mm_srli_epi16(p1, 4), nib));
    __m128i b1l = _mm_shuffle_epi8(t1l, _mm_and_si128(p1, nib));
    __m128i b2h = _mm_shuffle_epi8(t2h, _mm_and_si128(_mm_srli_epi16(in, 4), nib));
    __m128i special = _mm_and_si128(_mm_and_si128(b1h, b1l), b2h);
    /* 0x80 where a 3-byte lead is 2 back or a 4-byte lead 3 back: must be a continuation */
    __m128i must23 = _mm_or_si128(_mm_subs_epu8(p2, _mm_set1_epi8((char)(0xE0 - 0x80))),
                                  _mm_subs_epu8(p3, _mm_set1_epi8((char)(0xF0 - 0x80))));
    return _mm_xor_si128(special, _mm_and_si128(must23, _mm_set1_epi8((char)0x80)));
}

/* Nonzero where a block's last three bytes start a sequence that runs past the block. */
CU_SSE_TARGET static inline __m128i cu_sse_incomplete(__m128i in) {
    const __m128i max = _mm_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                      (char)(0xF0 - 1), (char)(0xE0 - 1), (char)(0xC0 - 1));
    return _mm_subs_epu8(in, max);
}

/* n >= CU_SIMD_MIN (at least 19: the overlapping last block's predecessors). */
CU_SSE_TARGET static inline int cu_utf8_sse(const unsigned char *s, Py_ssize_t n) {
    __m128i err, incomplete, in;
    Py_ssize_t i;
    int unicode;
    in = _mm_loadu_si128((const __m128i *)s);
    unicode = !_mm_testz_si128(in, _mm_set1_epi8((char)0x80));
    if (unicode) {
        err = cu_sse_block(in, _mm_slli_si128(in, 1), _mm_slli_si128(in, 2),
                           _mm_slli_si128(in, 3));
        incomplete = cu_sse_incomplete(in);
    } else {
        err = incomplete = _mm_setzero_si128();
    }
    for (i = 16;; i += 16) {
        if (i + 16 > n) {
            if (i == n) break;
            i = n - 16; /* the last bytes, as a block overlapping the one before */
        }
        in = _mm_loadu_si128((const __m128i *)(s + i));
        if (_mm_testz_si128(in, _mm_set1_epi8((char)0x80))) {
            err = _mm_or_si128(err, incomplete); /* ASCII cannot finish a sequence */
            incomplete = _mm_setzero_si128();
        } else {
            unicode = 1;
            err = _mm_or_si128(
                err, cu_sse_block(in, _mm_loadu_si128((const __m128i *)(s + i - 1)),
                                  _mm_loadu_si128((const __m128i *)(s + i - 2)),
                                  _mm_loadu_si128((const __m128i *)(s + i - 3))));
            incomplete = cu_sse_incomplete(in);
        }
        if (i + 16 == n) break;
    }
    err = _mm_or_si128(err, incomplete);
    return !_mm_testz_si128(err, err) ? CU_INVALID : unicode ? CU_UNICODE : CU_ASCII;
}

CU_AVX2_TARGET static inline __m256i cu_avx2_block(__m256i in, __m256i p1, __m256i p2,
                                                   __m256i p3) {
    const __m256i nib = _mm256_set1_epi8(0x0F);
    const __m256i t1h = _mm256_setr_epi8(CU_BYTE1_HIGH, CU_BYTE1_HIGH);
    const __m256i t1l = _mm256_setr_epi8(CU_BYTE1_LOW, CU_BYTE1_LOW);
    const __m256i t2h = _mm256_setr_epi8(CU_BYTE2_HIGH, CU_BYTE2_HIGH);
    __m256i b1h = _mm256_shuffle_epi8(t1h, _mm256_and_si256(_mm256_srli_epi16(p1, 4), nib));
    __m256i b1l = _mm256_shuffle_epi8(t1l, _mm256_and_si256(p1, nib));
    __m256i b2h = _mm256_shuffle_epi8(t2h, _mm256_and_si256(_mm256_srli_epi16(in, 4), nib));
    __m256i special = _mm256_and_si256(_mm256_and_si256(b1h, b1l), b2h);
    __m256i must23 =
        _mm256_or_si256(_mm256_subs_epu8(p2, _mm256_set1_epi8((char)(0xE0 - 0x80))),
                        _mm256_subs_epu8(p3, _mm256_set1_epi8((char)(0xF0 - 0x80))));
    return _mm256_xor_si256(special,
                            _mm256_and_si256(must23, _mm256_set1_epi8((char)0x80)));
}

CU_AVX2_TARGET static inline __m256i cu_avx2_incomplete(__m256i in) {
    const __m256i max = _mm256_setr_epi8(
        -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
        -1, -1, -1, -1, -1, -1, -1, -1, (char)(0xF0 - 1), (char)(0xE0 - 1), (char)(0xC0 - 1));
    return _mm256_subs_epu8(in, max);
}

/* n >= CU_AVX2_MIN (at least 35). */
CU_AVX2_TARGET static inline int cu_utf8_avx2(const unsigned char *s, Py_ssize_t n) {
    __m256i err, incomplete, in, lo;
    Py_ssize_t i;
    int unicode;
    in = _mm256_loadu_si256((const __m256i *)s);
    unicode = !_mm256_testz_si256(in, _mm256_set1_epi8((char)0x80));
    if (unicode) {
        /* the first block's predecessors: zeros, then the block shifted by 1, 2, 3 bytes
         * across the two lanes (lo: zeros in the low lane, in's low lane in the high one) */
        lo = _mm256_permute2x128_si256(in, in, 0x08);
        err = cu_avx2_block(in, _mm256_alignr_epi8(in, lo, 15),
                            _mm256_alignr_epi8(in, lo, 14), _mm256_alignr_epi8(in, lo, 13));
        incomplete = cu_avx2_incomplete(in);
    } else {
        err = incomplete = _mm256_setzero_si256();
    }
    for (i = 32;; i += 32) {
        if (i + 32 > n) {
            if (i == n) break;
            i = n - 32;
        }
        in = _mm256_loadu_si256((const __m256i *)(s + i));
        if (_mm256_testz_si256(in, _mm256_set1_epi8((char)0x80))) {
            err = _mm256_or_si256(err, incomplete);
            incomplete = _mm256_setzero_si256();
        } else {
            unicode = 1;
            err = _mm256_or_si256(
                err, cu_avx2_block(in, _mm256_loadu_si256((const __m256i *)(s + i - 1)),
                                   _mm256_loadu_si256((const __m256i *)(s + i - 2)),
                                   _mm256_loadu_si256((const __m256i *)(s + i - 3))));
            incomplete = cu_avx2_incomplete(in);
        }
        if (i + 32 == n) break;
    }
    err = _mm256_or_si256(err, incomplete);
    return !_mm256_testz_si256(err, err) ? CU_INVALID : unicode ? CU_UNICODE : CU_ASCII;
}


#define CU_AVX512_TARGET __attribute__((target("avx512f,avx512bw")))

CU_AVX512_TARGET static inline __m512i cu_avx512_block(__m512i in, __m512i p1, __m512i p2,
                                                       __m512i p3) {
    const __m512i nib = _mm512_set1_epi8(0x0F);
    const __m512i t1h = _mm512_broadcast_i32x4(_mm_setr_epi8(CU_BYTE1_HIGH));
    const __m512i t1l = _mm512_broadcast_i32x4(_mm_setr_epi8(CU_BYTE1_LOW));
    const __m512i t2h = _mm512_broadcast_i32x4(_mm_setr_epi8(CU_BYTE2_HIGH));
    __m512i b1h = _mm512_shuffle_epi8(t1h, _mm512_and_si512(_mm512_srli_epi16(p1, 4), nib));
    __m512i b1l = _mm512_shuffle_epi8(t1l, _mm512_and_si512(p1, nib));
    __m512i b2h = _mm512_shuffle_epi8(t2h, _mm512_and_si512(_mm512_srli_epi16(in, 4), nib));
    __m512i must23 =
        _mm512_or_si512(_mm512_subs_epu8(p2, _mm512_set1_epi8((char)(0xE0 - 0x80))),
                        _mm512_subs_epu8(p3, _mm512_set1_epi8((char)(0xF0 - 0x80))));
    /* (b1h & b1l & b2h) ^ (must23 & 0x80), two ternary-logic steps */
    __m512i special = _mm512_ternarylogic_epi64(b1h, b1l, b2h, 0x80); /* a & b & c */
    return _mm512_ternarylogic_epi64(special, must23, _mm512_set1_epi8((char)0x80),
                                     0x78); /* a ^ (b & c) */
}

/* Nonzero if a sequence starting in the last three bytes before e runs past e. */
static inline int cu_open_at(const unsigned char *e) {
    return e[-1] >= 0xC0 || e[-2] >= 0xE0 || e[-3] >= 0xF0;
}

/* Any n >= 1, in 64-byte blocks. A block the string ends inside is loaded with a mask:
 * its lanes past the end read as zeros (ASCII), so a sequence the string cuts short is an
 * error there like any other; only a string ending on a block's last byte needs the
 * check of its last three bytes. The predecessors of the first block and of a partial
 * last one are loaded with masks too (lanes before s and past the end read as zeros):
 * nothing outside [s, s + n) is read. */
CU_AVX512_TARGET static int cu_utf8_avx512(const unsigned char *s, Py_ssize_t n) {
    const __m512i high = _mm512_set1_epi8((char)0x80);
    __m512i err, in, p1, p2, p3;
    __mmask64 m;
    Py_ssize_t i;
    int unicode, open;
    m = n >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << n) - 1;
    in = _mm512_maskz_loadu_epi8(m, s);
    unicode = open = _mm512_test_epi8_mask(in, high) != 0;
    if (unicode)
        err = cu_avx512_block(in, _mm512_maskz_loadu_epi8(m << 1, s - 1),
                              _mm512_maskz_loadu_epi8(m << 2, s - 2),
                              _mm512_maskz_loadu_epi8(m << 3, s - 3));
    else
        err = _mm512_setzero_si512();
    for (i = 64; i < n; i += 64) {
        if (n - i >= 64) {
            in = _mm512_loadu_si512((const void *)(s + i));
        } else { /* the last block, partial */
            m = ((__mmask64)1 << (n - i)) - 1;
            in = _mm512_maskz_loadu_epi8(m, s + i);
        }
        if (!_mm512_test_epi8_mask(in, high)) {
            /* ASCII cannot finish a sequence the block before left open */
            if (open && cu_open_at(s + i)) return CU_INVALID;
            open = 0;
            continue;
        }
        unicode = open = 1;
        if (n - i >= 64) {
            p1 = _mm512_loadu_si512((const void *)(s + i - 1));
            p2 = _mm512_loadu_si512((const void *)(s + i - 2));
            p3 = _mm512_loadu_si512((const void *)(s + i - 3));
        } else {
            p1 = _mm512_maskz_loadu_epi8(m << 1 | 1, s + i - 1);
            p2 = _mm512_maskz_loadu_epi8(m << 2 | 3, s + i - 2);
            p3 = _mm512_maskz_loadu_epi8(m << 3 | 7, s + i - 3);
        }
        err = _mm512_or_si512(err, cu_avx512_block(in, p1, p2, p3));
    }
    if (open && !(n & 63) && cu_open_at(s + n)) return CU_INVALID;
    return _mm512_test_epi8_mask(err, err) ? CU_INVALID : unicode ? CU_UNICODE : CU_ASCII;
}

#endif /* CU_X86 */

/* One entry per kernel: the kernel for every length, the scalar one below the
 * lengths where the vector one pays (CU_SIMD_MIN, CU_AVX2_MIN, CU_AVX512_MIN). Out of
 * line, and called through a pointer: a validator's loop holds one indirect call per
 * text it validates, not the dispatch (inlined, that made its loop 5-10% slower on
 * documents with little text: canada, citm, bench/cbor_ab.py). */
#if defined(_MSC_VER)
#define CU_NOINLINE static __declspec(noinline)
#else
#define CU_NOINLINE static __attribute__((noinline))
#endif
CU_NOINLINE int cu_kind_scalar(const unsigned char *s, Py_ssize_t n) {
    return cu_utf8_scalar(s, n);
}
#if CU_X86
CU_NOINLINE int cu_kind_sse(const unsigned char *s, Py_ssize_t n) {
    return n >= CU_SIMD_MIN ? cu_utf8_sse(s, n) : cu_utf8_scalar(s, n);
}
CU_NOINLINE int cu_kind_avx2(const unsigned char *s, Py_ssize_t n) {
    if (n >= CU_AVX2_MIN) return cu_utf8_avx2(s, n);
    return n >= CU_SIMD_MIN ? cu_utf8_sse(s, n) : cu_utf8_scalar(s, n);
}
CU_NOINLINE int cu_kind_avx512(const unsigned char *s, Py_ssize_t n) {
    return n >= CU_AVX512_MIN ? cu_utf8_avx512(s, n) : cu_utf8_scalar(s, n);
}
#endif

/* The widest kernel in use, and its entry; set once by cu_utf8_init (at import) or the
 * test hook. */
static int cu_utf8_kernel = CU_SCALAR;
static int (*cu_utf8_entry)(const unsigned char *, Py_ssize_t) = cu_kind_scalar;

/* The widest kernel this CPU runs. */
static inline int cu_utf8_best(void) {
#if CU_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw"))
        return CU_AVX512;
    if (__builtin_cpu_supports("avx2")) return CU_AVX2;
    if (__builtin_cpu_supports("ssse3") && __builtin_cpu_supports("sse4.1")) return CU_SSE;
#endif
    return CU_SCALAR;
}

/* Use kernel k and narrower ones; 0, or -1 if this CPU cannot run it. */
static inline int cu_utf8_select(int k) {
    if (k < CU_SCALAR || k > cu_utf8_best()) return -1;
    cu_utf8_kernel = k;
#if CU_X86
    cu_utf8_entry = k == CU_AVX512 ? cu_kind_avx512
                    : k == CU_AVX2 ? cu_kind_avx2
                    : k == CU_SSE  ? cu_kind_sse
                                   : cu_kind_scalar;
#endif
    return 0;
}

static inline void cu_utf8_init(void) { cu_utf8_select(cu_utf8_best()); }

/* Kernel k itself on the n bytes at s, for the tests: CU_INVALID, CU_UNICODE or CU_ASCII,
 * or -1 where k does not take n bytes (the SSE4.1 and AVX2 kernels need a block and its
 * three predecessors) or this CPU does not run it. */
static inline int cu_utf8_raw(int k, const unsigned char *s, Py_ssize_t n) {
    if (k < CU_SCALAR || k > cu_utf8_best()) return -1;
#if CU_X86
    if (k == CU_AVX512) return n >= 1 ? cu_utf8_avx512(s, n) : -1;
    if (k == CU_AVX2) return n >= 35 ? cu_utf8_avx2(s, n) : -1;
    if (k == CU_SSE) return n >= 19 ? cu_utf8_sse(s, n) : -1;
#endif
    return cu_utf8_scalar(s, n);
}

/* CU_INVALID, CU_UNICODE or CU_ASCII for the n bytes at s, with the widest kernel in use
 * that takes n bytes. */
static inline int cd_utf8_kind(const unsigned char *s, Py_ssize_t n) {
    return cu_utf8_entry(s, n);
}

static inline int cd_utf8_valid(const unsigned char *s, Py_ssize_t n) {
    return cd_utf8_kind(s, n) != CU_INVALID;
}

#endif /* CANONKIT_CBOR_UTF8_H */
