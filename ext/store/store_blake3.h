/* BLAKE3-256 of small inputs, in portable C, written from the BLAKE3 specification, so
 * that the store's batch readers can verify small objects on any thread without the GIL
 * (the blake3 package needs the GIL for inputs under 2 KiB). Larger inputs keep going to
 * the blake3 package, whose SIMD kernels hash many chunks at once. Checked against the
 * blake3 package on every length around the block, chunk and tree boundaries
 * (tests/test_store_batches.py).
 *
 * The input is cut into chunks of 1024 bytes, each compressed a 64-byte block at a time
 * into a chaining value (counter = the chunk's index; CHUNK_START on its first block,
 * CHUNK_END on its last); chaining values are merged pairwise into parent nodes as the
 * chunks complete (a stack: a left-complete binary tree), and the root compression
 * (ROOT) gives the 32 bytes of the hash. */
#ifndef CK_STORE_BLAKE3_H
#define CK_STORE_BLAKE3_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum { CK_B3_CHUNK_START = 1, CK_B3_CHUNK_END = 2, CK_B3_PARENT = 4, CK_B3_ROOT = 8 };

static const uint32_t ck_b3_iv[8] = {
    0x6A09E667u, 0xBB67AE85u, 0x3C6EF372u, 0xA54FF53Au,
    0x510E527Fu, 0x9B05688Cu, 0x1F83D9ABu, 0x5BE0CD19u,
};

/* The message word each position of each of the seven rounds takes: round r + 1 takes
   round r's words permuted by (2, 6, 3, 10, 7, 0, 4, 13, 1, 11, 12, 5, 9, 14, 15, 8). */
static const uint8_t ck_b3_schedule[7][16] = {
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
    {2, 6, 3, 10, 7, 0, 4, 13, 1, 11, 12, 5, 9, 14, 15, 8},
    {3, 4, 10, 12, 13, 2, 7, 14, 6, 5, 9, 0, 11, 15, 8, 1},
    {10, 7, 12, 9, 14, 3, 13, 15, 4, 0, 11, 2, 5, 8, 1, 6},
    {12, 13, 9, 11, 15, 10, 14, 8, 7, 2, 5, 3, 0, 1, 6, 4},
    {9, 14, 11, 5, 8, 12, 15, 1, 13, 3, 0, 10, 2, 6, 4, 7},
    {11, 15, 5, 0, 1, 9, 8, 6, 14, 10, 2, 12, 3, 4, 7, 13},
};

static inline uint32_t ck_b3_rotr(uint32_t w, int c)
{
    return (w >> c) | (w << (32 - c));
}

static inline uint32_t ck_b3_load(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16)
           | ((uint32_t)p[3] << 24);
}

#define CK_B3_G(a, b, c, d, x, y) do {          \
        a = a + b + (x); d = ck_b3_rotr(d ^ a, 16); \
        c = c + d;       b = ck_b3_rotr(b ^ c, 12); \
        a = a + b + (y); d = ck_b3_rotr(d ^ a, 8);  \
        c = c + d;       b = ck_b3_rotr(b ^ c, 7);  \
    } while (0)

/* The compression function; `cv` receives the first 8 words of its output (a chaining
   value, or the hash when ROOT is set). */
static void ck_b3_compress(uint32_t cv[8], const uint32_t m[16], uint32_t block_len,
                           uint64_t counter, uint32_t flags)
{
    uint32_t s0 = cv[0], s1 = cv[1], s2 = cv[2], s3 = cv[3];
    uint32_t s4 = cv[4], s5 = cv[5], s6 = cv[6], s7 = cv[7];
    uint32_t s8 = ck_b3_iv[0], s9 = ck_b3_iv[1], s10 = ck_b3_iv[2], s11 = ck_b3_iv[3];
    uint32_t s12 = (uint32_t)counter, s13 = (uint32_t)(counter >> 32);
    uint32_t s14 = block_len, s15 = flags;
    for (int r = 0; r < 7; r++) {
        const uint8_t *w = ck_b3_schedule[r];
        CK_B3_G(s0, s4, s8, s12, m[w[0]], m[w[1]]);
        CK_B3_G(s1, s5, s9, s13, m[w[2]], m[w[3]]);
        CK_B3_G(s2, s6, s10, s14, m[w[4]], m[w[5]]);
        CK_B3_G(s3, s7, s11, s15, m[w[6]], m[w[7]]);
        CK_B3_G(s0, s5, s10, s15, m[w[8]], m[w[9]]);
        CK_B3_G(s1, s6, s11, s12, m[w[10]], m[w[11]]);
        CK_B3_G(s2, s7, s8, s13, m[w[12]], m[w[13]]);
        CK_B3_G(s3, s4, s9, s14, m[w[14]], m[w[15]]);
    }
    cv[0] = s0 ^ s8;  cv[1] = s1 ^ s9;  cv[2] = s2 ^ s10; cv[3] = s3 ^ s11;
    cv[4] = s4 ^ s12; cv[5] = s5 ^ s13; cv[6] = s6 ^ s14; cv[7] = s7 ^ s15;
}

/* The chaining value of one chunk of `len` bytes (1 to 1024; 0 only for the empty
   input), or with `root` the hash of an input that is this one chunk. */
static void ck_b3_chunk(const uint8_t *p, size_t len, uint64_t counter, int root,
                        uint32_t cv[8])
{
    size_t blocks = len ? (len + 63) / 64 : 1;
    uint32_t m[16];
    memcpy(cv, ck_b3_iv, sizeof ck_b3_iv);
    for (size_t b = 0; b < blocks; b++) {
        size_t have = b + 1 < blocks ? 64 : len - 64 * b;
        uint8_t last[64];
        const uint8_t *src = last;
        uint32_t flags = b == 0 ? CK_B3_CHUNK_START : 0;
        if (have == 64) {
            src = p + 64 * b;
        } else {  /* the last block, zero-padded (the empty input: p may be NULL) */
            memset(last, 0, sizeof last);
            if (have)
                memcpy(last, p + 64 * b, have);
        }
        for (int i = 0; i < 16; i++)
            m[i] = ck_b3_load(src + 4 * i);
        if (b + 1 == blocks)
            flags |= CK_B3_CHUNK_END | (root ? CK_B3_ROOT : 0);
        ck_b3_compress(cv, m, (uint32_t)have, counter, flags);
    }
}

/* A parent node over two chaining values: `right` receives its chaining value (or, with
   ROOT in `flags`, the hash). */
static void ck_b3_parent(const uint32_t left[8], uint32_t right[8], uint32_t flags)
{
    uint32_t m[16];
    memcpy(m, left, 32);
    memcpy(m + 8, right, 32);
    memcpy(right, ck_b3_iv, sizeof ck_b3_iv);
    ck_b3_compress(right, m, 64, 0, CK_B3_PARENT | flags);
}

/* BLAKE3-256 of `n` bytes at `p` into `out`. Needs no lock and no Python. */
static void ck_b3_hash(const uint8_t *p, size_t n, uint8_t out[32])
{
    uint32_t cv[8], stack[64][8];
    size_t depth = 0;
    uint64_t chunk = 0;
    if (n <= 1024) {
        ck_b3_chunk(p, n, 0, 1, cv);
    } else {
        for (; n - 1024 * chunk > 1024; chunk++) {  /* every chunk but the last */
            uint64_t total = chunk + 1;
            ck_b3_chunk(p + 1024 * chunk, 1024, chunk, 0, cv);
            for (; (total & 1) == 0; total >>= 1)  /* merge completed subtrees */
                ck_b3_parent(stack[--depth], cv, 0);
            memcpy(stack[depth++], cv, 32);
        }
        ck_b3_chunk(p + 1024 * chunk, n - 1024 * chunk, chunk, 0, cv);
        while (depth > 0) {
            depth--;
            ck_b3_parent(stack[depth], cv, depth == 0 ? CK_B3_ROOT : 0);
        }
    }
    for (int i = 0; i < 8; i++) {
        out[4 * i] = (uint8_t)cv[i];
        out[4 * i + 1] = (uint8_t)(cv[i] >> 8);
        out[4 * i + 2] = (uint8_t)(cv[i] >> 16);
        out[4 * i + 3] = (uint8_t)(cv[i] >> 24);
    }
}

#endif
