/* Several independent single-block SHA3-256 hashes at once (the tree folds' node hashes).
 *
 * A tree level is many independent one-block hashes, so on x86-64 with GCC/Clang we run 2
 * (SSE2, part of every x86-64 CPU), 4 (AVX2) or 8 (AVX-512F) Keccak-f[1600] states side by
 * side: a GCC vector of uint64_t holds the same lane of every state, and the very same
 * round as the scalar code (CK_KECCAK_F1600_BODY) runs on those vectors. The widest unit
 * the CPU supports is picked once at run time (__builtin_cpu_supports also checks that the
 * OS saves the registers); every other compiler or architecture uses the scalar
 * permutation. ck_keccak_set_lanes() can force a narrower width (tests run every available
 * width; benchmarks compare them).
 */
#ifndef CANONKIT_ASTP_KECCAK_SIMD_H
#define CANONKIT_ASTP_KECCAK_SIMD_H

#include "keccak.h"

#define CK_MAX_LANES 8

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#define CK_X86_SIMD 1
#else
#define CK_X86_SIMD 0
#endif

/* States hashed per call of the widest usable unit: 1, 4 or 8; -1 until first use. */
static int ck_keccak_lanes_detected = -1;
static int ck_keccak_lanes_forced = 0;

static inline int ck_keccak_lanes_available(void) {
    if (ck_keccak_lanes_detected < 0) {
        int lanes = 1;
#if CK_X86_SIMD
        __builtin_cpu_init();
        lanes = 2;
        if (__builtin_cpu_supports("avx2"))
            lanes = __builtin_cpu_supports("avx512f") ? 8 : 4;
#endif
        ck_keccak_lanes_detected = lanes;
    }
    return ck_keccak_lanes_detected;
}

/* Width in use: the forced width if one is set and available, else the detected one. */
static inline int ck_keccak_lanes(void) {
    int available = ck_keccak_lanes_available();
    if (ck_keccak_lanes_forced && ck_keccak_lanes_forced <= available)
        return ck_keccak_lanes_forced;
    return available;
}

/* Force 1, 2, 4 or 8 lanes (0 = automatic); returns -1 if the CPU cannot run that width. */
static inline int ck_keccak_set_lanes(int lanes) {
    if (lanes != 0 && lanes != 1 && lanes != 2 && lanes != 4 && lanes != 8) return -1;
    if (lanes > ck_keccak_lanes_available()) return -1;
    ck_keccak_lanes_forced = lanes;
    return 0;
}

#if CK_X86_SIMD
typedef uint64_t ck_u64x2 __attribute__((vector_size(16)));
typedef uint64_t ck_u64x4 __attribute__((vector_size(32)));

/* blocks[k]: 136 pre-padded bytes of state k; out[k]: its 32-byte digest. SSE2 is part of
 * the x86-64 baseline, so this one needs no target attribute. */
__attribute__((noinline)) static void
ck_sha3_256_padded_x2(const uint8_t *const blocks[2], uint8_t *const out[2]) {
    ck_u64x2 s[25];
    int j, k;
    for (j = 0; j < CK_SHA3_256_LANES; j++)
        s[j] = (ck_u64x2){ck_load64_le(blocks[0] + 8 * j), ck_load64_le(blocks[1] + 8 * j)};
    for (j = CK_SHA3_256_LANES; j < 25; j++)
        s[j] = (ck_u64x2){0, 0};
    CK_KECCAK_F1600_BODY(ck_u64x2, s);
    for (k = 0; k < 2; k++)
        for (j = 0; j < 4; j++)
            ck_store64_le(out[k] + 8 * j, s[j][k]);
}

typedef uint64_t ck_u64x8 __attribute__((vector_size(64)));

__attribute__((target("avx2"), noinline)) static void
ck_sha3_256_padded_x4(const uint8_t *const blocks[4], uint8_t *const out[4]) {
    ck_u64x4 s[25];
    int j, k;
    for (j = 0; j < CK_SHA3_256_LANES; j++)
        s[j] = (ck_u64x4){ck_load64_le(blocks[0] + 8 * j), ck_load64_le(blocks[1] + 8 * j),
                          ck_load64_le(blocks[2] + 8 * j), ck_load64_le(blocks[3] + 8 * j)};
    for (j = CK_SHA3_256_LANES; j < 25; j++)
        s[j] = (ck_u64x4){0, 0, 0, 0};
    CK_KECCAK_F1600_BODY(ck_u64x4, s);
    for (k = 0; k < 4; k++)
        for (j = 0; j < 4; j++)
            ck_store64_le(out[k] + 8 * j, s[j][k]);
}

__attribute__((target("avx512f"), noinline)) static void
ck_sha3_256_padded_x8(const uint8_t *const blocks[8], uint8_t *const out[8]) {
    ck_u64x8 s[25];
    int j, k;
    for (j = 0; j < CK_SHA3_256_LANES; j++)
        s[j] = (ck_u64x8){ck_load64_le(blocks[0] + 8 * j), ck_load64_le(blocks[1] + 8 * j),
                          ck_load64_le(blocks[2] + 8 * j), ck_load64_le(blocks[3] + 8 * j),
                          ck_load64_le(blocks[4] + 8 * j), ck_load64_le(blocks[5] + 8 * j),
                          ck_load64_le(blocks[6] + 8 * j), ck_load64_le(blocks[7] + 8 * j)};
    for (j = CK_SHA3_256_LANES; j < 25; j++)
        s[j] = (ck_u64x8){0, 0, 0, 0, 0, 0, 0, 0};
    CK_KECCAK_F1600_BODY(ck_u64x8, s);
    for (k = 0; k < 8; k++)
        for (j = 0; j < 4; j++)
            ck_store64_le(out[k] + 8 * j, s[j][k]);
}
#endif

/* SHA3-256 of a block that already holds message + padding (all 136 bytes meaningful). */
static inline void ck_sha3_256_padded_block(const uint8_t block[CK_SHA3_256_RATE],
                                            uint8_t out[32]) {
    uint64_t s[25];
    int i;
    for (i = 0; i < CK_SHA3_256_LANES; i++)
        s[i] = ck_load64_le(block + 8 * i);
    for (i = CK_SHA3_256_LANES; i < 25; i++)
        s[i] = 0;
    ck_keccak_f1600(s);
    ck_sha3_256_squeeze(s, out);
}

/* count (<= CK_MAX_LANES) pre-padded blocks -> count digests, as wide as the CPU allows.
 * A partial batch is filled up by repeating the last block into a scratch digest: one
 * wide permutation costs less than the scalar ones it replaces. */
static inline void ck_sha3_256_padded_many(const uint8_t *const *blocks, uint8_t *const *out,
                                           int count) {
#if CK_X86_SIMD
    int lanes = ck_keccak_lanes();
    if (lanes > 1 && count > 1) {
        const uint8_t *b[CK_MAX_LANES];
        uint8_t *o[CK_MAX_LANES];
        uint8_t scratch[32];
        int done = 0, k, width;
        while (done < count) {
            int left = count - done;
            if (left == 1) {
                ck_sha3_256_padded_block(blocks[done], out[done]);
                return;
            }
            /* the widest unit at most twice as wide as what is left */
            width = lanes;
            while (width > 2 && left <= width / 2)
                width /= 2;
            for (k = 0; k < width; k++) {
                int src = done + (k < left ? k : left - 1);
                b[k] = blocks[src];
                o[k] = k < left ? out[src] : scratch;
            }
            if (width == 8)
                ck_sha3_256_padded_x8(b, o);
            else if (width == 4)
                ck_sha3_256_padded_x4(b, o);
            else
                ck_sha3_256_padded_x2(b, o);
            done += width < left ? width : left;
        }
        return;
    }
#endif
    {
        int k;
        for (k = 0; k < count; k++)
            ck_sha3_256_padded_block(blocks[k], out[k]);
    }
}

#endif /* CANONKIT_ASTP_KECCAK_SIMD_H */
