/* BLAKE3 of many small inputs at once (inputs of at most one chunk, 1024 bytes).
 *
 * Verifying a batch of small objects (get_many, fsck) is mostly hashing, and hashing one
 * 1 KiB input through the blake3 package costs a Python call and a chunk's 16 sequential
 * compressions. An input of at most 1024 bytes is a single chunk: its hash is the root
 * output of chunk 0 (BLAKE3 spec §2.4-2.6: counter 0, flags CHUNK_START on the first
 * block, CHUNK_END|ROOT on the last, the last block zero-padded with its true length), so
 * eight independent inputs can run side by side, one per 32-bit lane of an AVX2 vector:
 * the same rounds (CKB3_ROUND) on uint32_t scalars or on 8-lane GCC vectors. A lane whose
 * input has fewer blocks keeps its chaining value once its last block is done. AVX2 is
 * chosen at run time (__builtin_cpu_supports); elsewhere, or with
 * ckb3_set_portable(1) (the tests compare both), the scalar path hashes one input at a
 * time. Every result is compared with the blake3 package by differential tests.
 */
#ifndef CANONKIT_STORE_BLAKE3_H
#define CANONKIT_STORE_BLAKE3_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define CKB3_BLOCK 64
#define CKB3_CHUNK 1024
#define CKB3_CHUNK_START 1u
#define CKB3_CHUNK_END 2u
#define CKB3_ROOT 8u

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#define CKB3_X86 1
#include <immintrin.h>
#else
#define CKB3_X86 0
#endif

static const uint32_t ckb3_iv[8] = {0x6A09E667u, 0xBB67AE85u, 0x3C6EF372u, 0xA54FF53Au,
                                    0x510E527Fu, 0x9B05688Cu, 0x1F83D9ABu, 0x5BE0CD19u};

/* The message word used at each position of each round: round 0 takes the words in
 * order, each next round permutes the previous one by 2,6,3,10,7,0,4,13,1,11,12,5,9,14,15,8. */
static const uint8_t ckb3_sigma[7][16] = {
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
    {2, 6, 3, 10, 7, 0, 4, 13, 1, 11, 12, 5, 9, 14, 15, 8},
    {3, 4, 10, 12, 13, 2, 7, 14, 6, 5, 9, 0, 11, 15, 8, 1},
    {10, 7, 12, 9, 14, 3, 13, 15, 4, 0, 11, 2, 5, 8, 1, 6},
    {12, 13, 9, 11, 15, 10, 14, 8, 7, 2, 5, 3, 0, 1, 6, 4},
    {9, 14, 11, 5, 8, 12, 15, 1, 13, 3, 0, 10, 2, 6, 4, 7},
    {11, 15, 5, 0, 1, 9, 8, 6, 14, 10, 2, 12, 3, 4, 7, 13},
};

#define CKB3_ROTR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))
#define CKB3_G(v, a, b, c, d, x, y) do {                                 \
        v[a] = v[a] + v[b] + (x); v[d] = CKB3_ROTR(v[d] ^ v[a], 16);     \
        v[c] = v[c] + v[d];       v[b] = CKB3_ROTR(v[b] ^ v[c], 12);     \
        v[a] = v[a] + v[b] + (y); v[d] = CKB3_ROTR(v[d] ^ v[a], 8);      \
        v[c] = v[c] + v[d];       v[b] = CKB3_ROTR(v[b] ^ v[c], 7);      \
    } while (0)
/* One round on a state v[16] and message m[16] of any element type (scalar or vector). */
#define CKB3_ROUND(v, m, r) do {                                                   \
        const uint8_t *s_ = ckb3_sigma[r];                                         \
        CKB3_G(v, 0, 4, 8, 12, m[s_[0]], m[s_[1]]);                                \
        CKB3_G(v, 1, 5, 9, 13, m[s_[2]], m[s_[3]]);                                \
        CKB3_G(v, 2, 6, 10, 14, m[s_[4]], m[s_[5]]);                               \
        CKB3_G(v, 3, 7, 11, 15, m[s_[6]], m[s_[7]]);                               \
        CKB3_G(v, 0, 5, 10, 15, m[s_[8]], m[s_[9]]);                               \
        CKB3_G(v, 1, 6, 11, 12, m[s_[10]], m[s_[11]]);                             \
        CKB3_G(v, 2, 7, 8, 13, m[s_[12]], m[s_[13]]);                              \
        CKB3_G(v, 3, 4, 9, 14, m[s_[14]], m[s_[15]]);                              \
    } while (0)

static inline uint32_t ckb3_load32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline size_t ckb3_blocks(size_t n) { return n ? (n + CKB3_BLOCK - 1) / CKB3_BLOCK : 1; }

/* BLAKE3-256 of one input of at most CKB3_CHUNK bytes, one block after the other. */
static void ckb3_hash_small(const uint8_t *p, size_t n, uint8_t out[32]) {
    uint32_t cv[8], v[16], m[16];
    uint8_t block[CKB3_BLOCK];
    size_t blocks = ckb3_blocks(n), b;
    int i, r;
    memcpy(cv, ckb3_iv, sizeof cv);
    for (b = 0; b < blocks; b++) {
        size_t len = b + 1 < blocks ? CKB3_BLOCK : n - b * CKB3_BLOCK;
        memset(block, 0, sizeof block);
        memcpy(block, p + b * CKB3_BLOCK, len);
        for (i = 0; i < 16; i++) m[i] = ckb3_load32(block + 4 * i);
        for (i = 0; i < 8; i++) { v[i] = cv[i]; v[i + 8] = i < 4 ? ckb3_iv[i] : 0; }
        v[14] = (uint32_t)len;
        v[15] = (b == 0 ? CKB3_CHUNK_START : 0) | (b + 1 == blocks ? CKB3_CHUNK_END | CKB3_ROOT : 0);
        for (r = 0; r < 7; r++) CKB3_ROUND(v, m, r);
        for (i = 0; i < 8; i++) cv[i] = v[i] ^ v[i + 8];
    }
    for (i = 0; i < 8; i++) {
        out[4 * i] = (uint8_t)cv[i]; out[4 * i + 1] = (uint8_t)(cv[i] >> 8);
        out[4 * i + 2] = (uint8_t)(cv[i] >> 16); out[4 * i + 3] = (uint8_t)(cv[i] >> 24);
    }
}

static int ckb3_portable_forced = 0;

/* Hash with the scalar path only (1) or the widest available (0, the default). */
static inline void ckb3_set_portable(int portable) { ckb3_portable_forced = portable; }

#if CKB3_X86
typedef uint32_t ckb3_u32x8 __attribute__((vector_size(32)));

static inline int ckb3_have_avx2(void) {
    static int have = -1;
    if (have < 0) {
        __builtin_cpu_init();
        have = __builtin_cpu_supports("avx2") ? 1 : 0;
    }
    return have;
}

/* rows[i] points at 32 bytes of lane i; out[j] gets 32-bit word j of every lane. */
__attribute__((target("avx2"))) static inline void
ckb3_transpose8(const uint8_t *const rows[8], ckb3_u32x8 out[8]) {
    __m256i r[8], t[8], u[8];
    int i;
    for (i = 0; i < 8; i++) r[i] = _mm256_loadu_si256((const __m256i *)rows[i]);
    for (i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_epi32(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_epi32(r[i], r[i + 1]);
    }
    for (i = 0; i < 8; i += 4) {
        u[i] = _mm256_unpacklo_epi64(t[i], t[i + 2]);
        u[i + 1] = _mm256_unpackhi_epi64(t[i], t[i + 2]);
        u[i + 2] = _mm256_unpacklo_epi64(t[i + 1], t[i + 3]);
        u[i + 3] = _mm256_unpackhi_epi64(t[i + 1], t[i + 3]);
    }
    for (i = 0; i < 4; i++) {
        out[i] = (ckb3_u32x8)_mm256_permute2x128_si256(u[i], u[i + 4], 0x20);
        out[i + 4] = (ckb3_u32x8)_mm256_permute2x128_si256(u[i], u[i + 4], 0x31);
    }
}

/* Eight inputs at once (``count`` <= 8 of them; the other lanes idle). */
__attribute__((target("avx2"), noinline)) static void
ckb3_hash8_avx2(const uint8_t *const *ptrs, const size_t *lens, size_t count,
                uint8_t (*outs)[32]) {
    static const uint8_t zeros[CKB3_BLOCK] = {0};
    uint8_t pad[8][CKB3_BLOCK];
    uint32_t words[8][8];
    size_t blocks[8], most = 0, b;
    ckb3_u32x8 cv[8], v[16], m[16];
    int i, r;
    for (i = 0; i < 8; i++) {
        blocks[i] = (size_t)i < count ? ckb3_blocks(lens[i]) : 0;
        if (blocks[i] > most) most = blocks[i];
    }
    for (i = 0; i < 8; i++) cv[i] = (ckb3_u32x8){0} + ckb3_iv[i];
    for (b = 0; b < most; b++) {
        const uint8_t *lo[8], *hi[8];
        uint32_t len[8], flags[8], active[8];
        for (i = 0; i < 8; i++) {
            const uint8_t *row = zeros;
            len[i] = flags[i] = active[i] = 0;
            if (b < blocks[i]) {
                size_t n = b + 1 < blocks[i] ? CKB3_BLOCK : lens[i] - b * CKB3_BLOCK;
                row = ptrs[i] + b * CKB3_BLOCK;
                if (n < CKB3_BLOCK) {  /* the last, partial block: zero-padded copy */
                    memset(pad[i], 0, CKB3_BLOCK);
                    memcpy(pad[i], row, n);
                    row = pad[i];
                }
                len[i] = (uint32_t)n;
                flags[i] = (b == 0 ? CKB3_CHUNK_START : 0)
                           | (b + 1 == blocks[i] ? CKB3_CHUNK_END | CKB3_ROOT : 0);
                active[i] = 0xFFFFFFFFu;
            }
            lo[i] = row;
            hi[i] = row + 32;
        }
        ckb3_transpose8(lo, m);
        ckb3_transpose8(hi, m + 8);
        for (i = 0; i < 8; i++) v[i] = cv[i];
        for (i = 0; i < 4; i++) v[i + 8] = (ckb3_u32x8){0} + ckb3_iv[i];
        v[12] = v[13] = (ckb3_u32x8){0};
        memcpy(&v[14], len, sizeof len);
        memcpy(&v[15], flags, sizeof flags);
        for (r = 0; r < 7; r++) CKB3_ROUND(v, m, r);
        {
            ckb3_u32x8 keep;
            memcpy(&keep, active, sizeof active);
            for (i = 0; i < 8; i++) cv[i] = ((v[i] ^ v[i + 8]) & keep) | (cv[i] & ~keep);
        }
    }
    {
        const uint8_t *rows[8];
        ckb3_u32x8 lanes[8];
        memcpy(words, cv, sizeof words);  /* words[j][lane] */
        for (i = 0; i < 8; i++) rows[i] = (const uint8_t *)words[i];
        ckb3_transpose8(rows, lanes);      /* lanes[lane][j] */
        for (i = 0; i < (int)count; i++) memcpy(outs[i], &lanes[i], 32);  /* little-endian */
    }
}
#endif

/* 1 if the batch path beats one call per input (AVX2, not forced off), else 0: the scalar
 * path is only the portable reference (the blake3 package is faster one at a time). */
static inline int ckb3_batch_pays(void) {
#if CKB3_X86
    return !ckb3_portable_forced && ckb3_have_avx2();
#else
    return 0;
#endif
}

/* BLAKE3-256 of ``count`` inputs of at most CKB3_CHUNK bytes each. */
static void ckb3_hash_many(const uint8_t *const *ptrs, const size_t *lens, size_t count,
                           uint8_t (*outs)[32]) {
    size_t i = 0;
#if CKB3_X86
    if (!ckb3_portable_forced && ckb3_have_avx2()) {
        for (; i < count; i += 8)
            ckb3_hash8_avx2(ptrs + i, lens + i, count - i < 8 ? count - i : 8, outs + i);
        return;
    }
#endif
    for (; i < count; i++) ckb3_hash_small(ptrs[i], lens[i], outs[i]);
}

/* The same with flat arguments, for callers that cannot spell pointer-to-array types. */
static inline void ckb3_hash_many_flat(const uint8_t **ptrs, const size_t *lens, size_t count,
                                       uint8_t *outs) {
    ckb3_hash_many((const uint8_t *const *)ptrs, lens, count, (uint8_t (*)[32])outs);
}

#endif
