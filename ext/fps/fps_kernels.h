/* FPS/1 copy kernels for ext/fps/_primitives.pyx: vectorisable byte loops and 64-bit register
 * permutations; no per-bit loops, no tables.
 *
 * Bit order is MSB-first (FPS.md §1): bit i of a payload is bit 7 - i%8 of byte i/8, so a
 * bit shift across bytes is a shift of the payload read as a big-endian integer. Output
 * and input never overlap (the caller guarantees it). Every
 * function reads and writes only the byte ranges its comment names; callers have checked
 * the ranges. No function allocates or calls Python: all run without the GIL.
 */
#ifndef CANONKIT_FPS_KERNELS_H
#define CANONKIT_FPS_KERNELS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(_MSC_VER)
#include <stdlib.h>
#define FPS_BSWAP64(x) _byteswap_uint64(x)
#else
#define FPS_BSWAP64(x) __builtin_bswap64(x)
#endif

#if defined(__SSE2__) || defined(_M_X64) || (defined(_M_IX86_FP) && _M_IX86_FP >= 2)
#include <emmintrin.h>
#define FPS_HAVE_SSE2 1
#endif

#if defined(_MSC_VER)
#define FPS_RESTRICT __restrict
#else
#define FPS_RESTRICT __restrict__
#endif

static inline uint64_t fps_load64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static inline void fps_store64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

/* The bits of every byte of x reversed in place (bytes stay where they are). */
static inline uint64_t fps_reverse_bits_in_bytes(uint64_t x) {
    x = ((x >> 1) & 0x5555555555555555ULL) | ((x & 0x5555555555555555ULL) << 1);
    x = ((x >> 2) & 0x3333333333333333ULL) | ((x & 0x3333333333333333ULL) << 2);
    x = ((x >> 4) & 0x0F0F0F0F0F0F0F0FULL) | ((x & 0x0F0F0F0F0F0F0F0FULL) << 4);
    return x;
}

/* dst[i] = low byte of (b(i) << s | src[i] >> (8 - s)) for i < n, where b(0) = prev and
 * b(i) = src[i-1]; 1 <= s <= 7. Reads src[0..n), writes dst[0..n); dst must not overlap
 * src (callers route overlapping outputs through a scratch buffer). This is the stream
 * "prev, src..." shifted left by s bits: an unaligned bit slice, or (with s = 8 - p) an
 * insert written at bit phase p.
 *
 * Written as a plain byte loop on purpose: with no loop-carried value and restrict
 * pointers, GCC/Clang -O3 vectorise it to 16/32-byte shifts (measured 2.7x faster than an
 * explicit 64-bit bswap/shift loop, whose variable shifts and byte swaps do not
 * vectorise); without vectorisation it is still a branch-free, table-free loop. */
static inline void fps_shift_copy(uint8_t *FPS_RESTRICT dst, const uint8_t *FPS_RESTRICT src,
                                  size_t n, unsigned s, unsigned prev) {
    const unsigned r = 8 - s;
    if (n == 0) return;
    dst[0] = (uint8_t)((prev << s) | ((unsigned)src[0] >> r));
    for (size_t i = 1; i < n; i++)
        dst[i] = (uint8_t)(((unsigned)src[i - 1] << s) | ((unsigned)src[i] >> r));
}

/* Bit slice: bits [bit_offset, bit_offset + 8*n) of src into dst[0..n).
 * Needs src to hold ceil((bit_offset + 8n) / 8) bytes. */
static inline void fps_slice_bits(uint8_t *FPS_RESTRICT dst, const uint8_t *src,
                                  uint64_t bit_offset, size_t n) {
    size_t k = (size_t)(bit_offset >> 3);
    unsigned s = (unsigned)(bit_offset & 7);
    if (n == 0) return;
    if (s == 0) {
        memcpy(dst, src + k, n);
    } else {  /* bit_offset + 8n <= 8*len and s > 0 imply src[k + n] exists */
        fps_shift_copy(dst, src + k + 1, n, s, src[k]);
    }
}

/* The unit order of a 16-byte vector reversed: bytes (reverse_bits also reverses the bits
 * of every byte), 2-byte words or 4-byte longs. */
#ifdef FPS_HAVE_SSE2
static inline __m128i fps_reverse_vec(__m128i x, unsigned unit_bytes, int reverse_bits) {
    x = _mm_shuffle_epi32(x, 0x1B);                     /* longs */
    if (unit_bytes == 4) return x;
    x = _mm_shufflehi_epi16(_mm_shufflelo_epi16(x, 0xB1), 0xB1);  /* words */
    if (unit_bytes == 2) return x;
    x = _mm_or_si128(_mm_srli_epi16(x, 8), _mm_slli_epi16(x, 8));  /* bytes */
    if (!reverse_bits) return x;
    {
        const __m128i m1 = _mm_set1_epi8(0x55), m2 = _mm_set1_epi8(0x33);
        const __m128i m4 = _mm_set1_epi8(0x0F);
        x = _mm_or_si128(_mm_and_si128(_mm_srli_epi16(x, 1), m1),
                         _mm_slli_epi16(_mm_and_si128(x, m1), 1));
        x = _mm_or_si128(_mm_and_si128(_mm_srli_epi16(x, 2), m2),
                         _mm_slli_epi16(_mm_and_si128(x, m2), 2));
        x = _mm_or_si128(_mm_and_si128(_mm_srli_epi16(x, 4), m4),
                         _mm_slli_epi16(_mm_and_si128(x, m4), 4));
    }
    return x;
}
#endif

/* The same for an 8-byte block held in a register (the lane permutations are the same in
 * either host byte order). */
static inline uint64_t fps_reverse_u64(uint64_t x, unsigned unit_bytes, int reverse_bits) {
    if (unit_bytes == 4) return (x >> 32) | (x << 32);
    if (unit_bytes == 2) {
        x = (x >> 32) | (x << 32);
        return ((x >> 16) & 0x0000FFFF0000FFFFULL) | ((x & 0x0000FFFF0000FFFFULL) << 16);
    }
    x = FPS_BSWAP64(x);
    return reverse_bits ? fps_reverse_bits_in_bytes(x) : x;
}

/* dst[0..n) = the units of src[0..n) in reverse order; unit_bytes is 1, 2 or 4 and n is
 * a multiple of it. With reverse_bits (unit_bytes == 1) every byte is also bit-reversed:
 * the full bit reversal.
 *
 * Words and longs: a plain loop of 2-/4-byte moves, which GCC/Clang -O3 vectorise into
 * 16-byte loads and lane shuffles (measured 1.5-1.7x an explicit 64-bit rotate loop).
 * Bytes and bits: each 8-byte block from the end of src is loaded once, byte-swapped in a
 * register (and, for bits, the bits of every byte reversed by three mask-and-shift steps)
 * and stored at the front of dst; a byte-by-byte loop would not vectorise without SSSE3.
 * These lane permutations do not depend on host endianness. */
static inline void fps_reverse_units(uint8_t *FPS_RESTRICT dst,
                                     const uint8_t *FPS_RESTRICT src, size_t n,
                                     unsigned unit_bytes, int reverse_bits) {
    if (unit_bytes == 4) {
        size_t m = n / 4;
        for (size_t i = 0; i < m; i++) {
            uint32_t v;
            memcpy(&v, src + 4 * (m - 1 - i), 4);
            memcpy(dst + 4 * i, &v, 4);
        }
        return;
    }
    if (unit_bytes == 2) {
        size_t m = n / 2;
        for (size_t i = 0; i < m; i++) {
            uint16_t v;
            memcpy(&v, src + 2 * (m - 1 - i), 2);
            memcpy(dst + 2 * i, &v, 2);
        }
        return;
    }
    size_t i = 0;
    if (reverse_bits) {
#ifdef FPS_HAVE_SSE2
        /* 16 bytes per step (1.4x the 64-bit loop): reverse the byte order of the
         * vector (32-bit lanes, then 16-bit halves, then bytes), then the bits of
         * every byte; 16-bit shifts are safe because the masks keep bits in their byte */
        for (; i + 16 <= n; i += 16) {
            __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(src + n - i - 16));
            _mm_storeu_si128((__m128i *)(void *)(dst + i), fps_reverse_vec(x, 1, 1));
        }
#endif
        for (; i + 8 <= n; i += 8)
            fps_store64(dst + i, fps_reverse_bits_in_bytes(FPS_BSWAP64(fps_load64(src + n - i - 8))));
        for (; i < n; i++)
            dst[i] = (uint8_t)fps_reverse_bits_in_bytes(src[n - 1 - i]);
    } else {
        for (; i + 8 <= n; i += 8)
            fps_store64(dst + i, FPS_BSWAP64(fps_load64(src + n - i - 8)));
        for (; i < n; i++)
            dst[i] = src[n - 1 - i];
    }
}

/* buf[0..n) reversed in place, unit by unit (same result as fps_reverse_units into a
 * separate buffer): blocks are taken from both ends, each permuted in a register and
 * stored at the mirrored position, so no scratch buffer is needed and every byte is read
 * and written once. 16-byte vectors, then 8-byte words, then single units; a unit left in
 * the middle stays where it is (for bits, the bits of the middle byte are reversed). */
static inline void fps_reverse_inplace_impl(uint8_t *buf, size_t n, unsigned unit_bytes,
                                            int reverse_bits) {
    size_t lo = 0, hi = n;  /* [lo, hi) is still to be reversed; n - hi == lo */
#ifdef FPS_HAVE_SSE2
    while (hi - lo >= 32) {
        __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(buf + lo));
        __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(buf + hi - 16));
        _mm_storeu_si128((__m128i *)(void *)(buf + lo), fps_reverse_vec(b, unit_bytes, reverse_bits));
        _mm_storeu_si128((__m128i *)(void *)(buf + hi - 16), fps_reverse_vec(a, unit_bytes, reverse_bits));
        lo += 16;
        hi -= 16;
    }
#endif
    while (hi - lo >= 16) {
        uint64_t a = fps_load64(buf + lo), b = fps_load64(buf + hi - 8);
        fps_store64(buf + lo, fps_reverse_u64(b, unit_bytes, reverse_bits));
        fps_store64(buf + hi - 8, fps_reverse_u64(a, unit_bytes, reverse_bits));
        lo += 8;
        hi -= 8;
    }
    while (hi - lo >= 2 * (size_t)unit_bytes) {
        uint8_t a[4], b[4];
        memcpy(a, buf + lo, unit_bytes);
        memcpy(b, buf + hi - unit_bytes, unit_bytes);
        if (reverse_bits) {
            a[0] = (uint8_t)fps_reverse_bits_in_bytes(a[0]);
            b[0] = (uint8_t)fps_reverse_bits_in_bytes(b[0]);
        }
        memcpy(buf + lo, b, unit_bytes);
        memcpy(buf + hi - unit_bytes, a, unit_bytes);
        lo += unit_bytes;
        hi -= unit_bytes;
    }
    if (reverse_bits && hi - lo == 1)
        buf[lo] = (uint8_t)fps_reverse_bits_in_bytes(buf[lo]);
}

/* One call per level with constant arguments, so each loop is compiled for its level. */
static inline void fps_reverse_units_inplace(uint8_t *buf, size_t n, unsigned unit_bytes,
                                             int reverse_bits) {
    if (unit_bytes == 4)
        fps_reverse_inplace_impl(buf, n, 4, 0);
    else if (unit_bytes == 2)
        fps_reverse_inplace_impl(buf, n, 2, 0);
    else if (reverse_bits)
        fps_reverse_inplace_impl(buf, n, 1, 1);
    else
        fps_reverse_inplace_impl(buf, n, 1, 0);
}

/* Bit splice: dst = bits [0, off) of src ++ ins[0..m) ++ bits [off + cut, 8n) of src,
 * with cut a multiple of 8 (checked by the caller), off + cut <= 8n.
 * dst holds n - cut/8 + m bytes. */
static inline void fps_splice_bits(uint8_t *FPS_RESTRICT dst, const uint8_t *src, size_t n,
                                   uint64_t off, uint64_t cut, const uint8_t *ins, size_t m) {
    size_t q = (size_t)(off >> 3);
    unsigned p = (unsigned)(off & 7);
    size_t t = (size_t)((off + cut) >> 3); /* byte holding the first tail bit */
    memcpy(dst, src, q);
    if (p == 0) {
        if (m) memcpy(dst + q, ins, m);
        memcpy(dst + q + m, src + t, n - t);
        return;
    }
    /* the tail starts at bit phase p too (cut % 8 == 0), and p > 0 means src[t] exists */
    unsigned head = src[q] >> (8 - p);              /* the p head bits of byte q */
    unsigned low_mask = (1u << (8 - p)) - 1u;       /* the 8 - p low bits of a byte */
    if (m) fps_shift_copy(dst + q, ins, m, 8 - p, head);
    unsigned last = m ? (unsigned)(ins[m - 1] & ((1u << p) - 1u)) : head;
    dst[q + m] = (uint8_t)((last << (8 - p)) | (src[t] & low_mask));
    memcpy(dst + q + m + 1, src + t + 1, n - t - 1);
}

#endif /* CANONKIT_FPS_KERNELS_H */
