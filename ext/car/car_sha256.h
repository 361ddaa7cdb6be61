/* SHA-256 (FIPS 180-4) of one buffer, without the GIL: the CID check of CAR blocks.
 *
 * Two compression functions compute the same thing:
 *   - the portable one (any C99 compiler), a direct transcription of FIPS 180-4 §6.2.2;
 *   - on x86-64 with GCC or Clang, one built on the SHA extensions (SHA-NI: sha256rnds2,
 *     sha256msg1, sha256msg2), picked once at run time when the CPU has them (and SSE4.1
 *     for the blend that packs the state).
 * ck_sha256_set_portable(1) forces the portable function (tests run both against
 * hashlib; benchmarks compare them).
 */
#ifndef CANONKIT_CAR_SHA256_H
#define CANONKIT_CAR_SHA256_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#define CK_SHA_X86 1
#include <immintrin.h>
#else
#define CK_SHA_X86 0
#endif

static const uint32_t ck_sha256_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
    0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
    0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
    0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
    0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
    0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
    0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
    0xc67178f2,
};

static const uint32_t ck_sha256_h0[8] = {
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
    0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
};

static inline uint32_t ck_ror32(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

static inline uint32_t ck_load_be32(const uint8_t *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

/* `blocks` consecutive 64-byte blocks into `state` (FIPS 180-4 §6.2.2). */
static void ck_sha256_blocks_portable(uint32_t state[8], const uint8_t *p, size_t blocks) {
    uint32_t w[64];
    while (blocks--) {
        for (int t = 0; t < 16; t++) w[t] = ck_load_be32(p + 4 * t);
        for (int t = 16; t < 64; t++) {
            uint32_t s0 = ck_ror32(w[t - 15], 7) ^ ck_ror32(w[t - 15], 18) ^ (w[t - 15] >> 3);
            uint32_t s1 = ck_ror32(w[t - 2], 17) ^ ck_ror32(w[t - 2], 19) ^ (w[t - 2] >> 10);
            w[t] = w[t - 16] + s0 + w[t - 7] + s1;
        }
        uint32_t a = state[0], b = state[1], c = state[2], d = state[3];
        uint32_t e = state[4], f = state[5], g = state[6], h = state[7];
        for (int t = 0; t < 64; t++) {
            uint32_t t1 = h + (ck_ror32(e, 6) ^ ck_ror32(e, 11) ^ ck_ror32(e, 25))
                          + ((e & f) ^ (~e & g)) + ck_sha256_k[t] + w[t];
            uint32_t t2 = (ck_ror32(a, 2) ^ ck_ror32(a, 13) ^ ck_ror32(a, 22))
                          + ((a & b) ^ (a & c) ^ (b & c));
            h = g; g = f; f = e; e = d + t1;
            d = c; c = b; b = a; a = t1 + t2;
        }
        state[0] += a; state[1] += b; state[2] += c; state[3] += d;
        state[4] += e; state[5] += f; state[6] += g; state[7] += h;
        p += 64;
    }
}

#if CK_SHA_X86
/* The same compression on the SHA extensions. The state lives in two registers as the
 * instructions want it, (A,B,E,F) and (C,D,G,H); each sha256rnds2 does two rounds, taking
 * its two W+K words from the low half of its third operand. Message words are scheduled
 * four at a time: sha256msg1 and sha256msg2 compute W[t..t+3] from the groups before. */
__attribute__((target("sha,sse4.1"), noinline)) static void
ck_sha256_blocks_shani(uint32_t state[8], const uint8_t *p, size_t blocks) {
    const __m128i byteswap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
    __m128i dcba = _mm_loadu_si128((const __m128i *)&state[0]);
    __m128i hgfe = _mm_loadu_si128((const __m128i *)&state[4]);
    __m128i cdab = _mm_shuffle_epi32(dcba, 0xB1);
    __m128i efgh = _mm_shuffle_epi32(hgfe, 0x1B);
    __m128i abef = _mm_alignr_epi8(cdab, efgh, 8);
    __m128i cdgh = _mm_blend_epi16(efgh, cdab, 0xF0);
    while (blocks--) {
        const __m128i abef_in = abef, cdgh_in = cdgh;
        __m128i m[4];
        _Pragma("GCC unroll 16")
        for (int g = 0; g < 16; g++) {  /* rounds 4g .. 4g+3 */
            if (g < 4)
                m[g] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * g)), byteswap);
            __m128i k = _mm_loadu_si128((const __m128i *)&ck_sha256_k[4 * g]);
            __m128i wk = _mm_add_epi32(m[g & 3], k);
            cdgh = _mm_sha256rnds2_epu32(cdgh, abef, wk);
            if (g >= 3 && g <= 14) {  /* W for group g+1 from groups g-3 .. g */
                __m128i w = _mm_alignr_epi8(m[g & 3], m[(g - 1) & 3], 4);
                __m128i next = _mm_add_epi32(m[(g + 1) & 3], w);
                m[(g + 1) & 3] = _mm_sha256msg2_epu32(next, m[g & 3]);
            }
            abef = _mm_sha256rnds2_epu32(abef, cdgh, _mm_shuffle_epi32(wk, 0x0E));
            if (g >= 1 && g <= 12)  /* first half of the schedule of group g+3 */
                m[(g - 1) & 3] = _mm_sha256msg1_epu32(m[(g - 1) & 3], m[g & 3]);
        }
        abef = _mm_add_epi32(abef, abef_in);
        cdgh = _mm_add_epi32(cdgh, cdgh_in);
        p += 64;
    }
    __m128i feba = _mm_shuffle_epi32(abef, 0x1B);
    __m128i dchg = _mm_shuffle_epi32(cdgh, 0xB1);
    _mm_storeu_si128((__m128i *)&state[0], _mm_blend_epi16(feba, dchg, 0xF0));
    _mm_storeu_si128((__m128i *)&state[4], _mm_alignr_epi8(dchg, feba, 8));
}
#endif

typedef void (*ck_sha256_blocks_fn)(uint32_t state[8], const uint8_t *p, size_t blocks);

static int ck_sha256_have_shani = -1;   /* -1 until first use */
static int ck_sha256_portable_forced = 0;

static inline int ck_sha256_shani_available(void) {
    if (ck_sha256_have_shani < 0) {
        int have = 0;
#if CK_SHA_X86
        __builtin_cpu_init();
        have = __builtin_cpu_supports("sha") && __builtin_cpu_supports("sse4.1");
#endif
        ck_sha256_have_shani = have;
    }
    return ck_sha256_have_shani;
}

static inline ck_sha256_blocks_fn ck_sha256_blocks(void) {
#if CK_SHA_X86
    if (!ck_sha256_portable_forced && ck_sha256_shani_available())
        return ck_sha256_blocks_shani;
#endif
    return ck_sha256_blocks_portable;
}

/* The digest of p[0:n] into out[0:32]: whole blocks straight from the input, then the
 * last partial block with its padding (0x80, zeros, the bit length) in one or two blocks. */
static void ck_sha256(const uint8_t *p, size_t n, uint8_t out[32]) {
    ck_sha256_blocks_fn blocks = ck_sha256_blocks();
    uint32_t state[8];
    uint8_t tail[128];
    memcpy(state, ck_sha256_h0, sizeof state);
    size_t whole = n / 64;
    if (whole) blocks(state, p, whole);
    size_t rest = n - whole * 64;
    memcpy(tail, p + whole * 64, rest);
    tail[rest] = 0x80;
    size_t padded = rest < 56 ? 64 : 128;
    memset(tail + rest + 1, 0, padded - rest - 1);
    uint64_t bits = (uint64_t)n * 8;
    for (int i = 0; i < 8; i++) tail[padded - 1 - i] = (uint8_t)(bits >> (8 * i));
    blocks(state, tail, padded / 64);
    for (int i = 0; i < 8; i++) {
        out[4 * i] = (uint8_t)(state[i] >> 24);
        out[4 * i + 1] = (uint8_t)(state[i] >> 16);
        out[4 * i + 2] = (uint8_t)(state[i] >> 8);
        out[4 * i + 3] = (uint8_t)state[i];
    }
}

#endif
