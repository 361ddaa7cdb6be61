/* BLAKE3 of inputs up to one chunk (1024 bytes): the content addresses of small objects.
 *
 * Written from the BLAKE3 specification (O'Connor, Aumasson, Neves, Wilcox-O'Hearn, 2020):
 * an input of at most 1024 bytes is a single chunk, hashed as 64-byte blocks with the
 * compression function; the last block carries CHUNK_END | ROOT and its output is the
 * hash. Portable scalar C: for inputs this small the cost is the call, not the rounds.
 * Larger inputs take the blake3 package (its tree hashing and SIMD pay off there);
 * tests compare every length 0..1024 and random inputs with that package.
 */
#ifndef CANONKIT_BLAKE3_CHUNK_H
#define CANONKIT_BLAKE3_CHUNK_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define CK_B3_CHUNK_LEN 1024
#define CK_B3_CHUNK_START 1u
#define CK_B3_CHUNK_END 2u
#define CK_B3_ROOT 8u

static const uint32_t ck_b3_iv[8] = {
    0x6A09E667u, 0xBB67AE85u, 0x3C6EF372u, 0xA54FF53Au,
    0x510E527Fu, 0x9B05688Cu, 0x1F83D9ABu, 0x5BE0CD19u,
};

static inline uint32_t ck_b3_rotr(uint32_t w, unsigned c) {
    return (w >> c) | (w << (32 - c));
}

static inline uint32_t ck_b3_load32(const uint8_t *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
           ((uint32_t)p[3] << 24);
}

#define CK_B3_G(a, b, c, d, x, y)               \
    do {                                         \
        s[a] = s[a] + s[b] + (x);                \
        s[d] = ck_b3_rotr(s[d] ^ s[a], 16);      \
        s[c] = s[c] + s[d];                      \
        s[b] = ck_b3_rotr(s[b] ^ s[c], 12);      \
        s[a] = s[a] + s[b] + (y);                \
        s[d] = ck_b3_rotr(s[d] ^ s[a], 8);       \
        s[c] = s[c] + s[d];                      \
        s[b] = ck_b3_rotr(s[b] ^ s[c], 7);       \
    } while (0)

/* The 7 rounds, unrolled with the message schedule spelled out (round r reads the words
 * in the order of the message permutation applied r times), so every index is a
 * constant and the words stay in registers. */
#define CK_B3_ROUND0 \
    CK_B3_G(0, 4, 8, 12, m[0], m[1]); \
    CK_B3_G(1, 5, 9, 13, m[2], m[3]); \
    CK_B3_G(2, 6, 10, 14, m[4], m[5]); \
    CK_B3_G(3, 7, 11, 15, m[6], m[7]); \
    CK_B3_G(0, 5, 10, 15, m[8], m[9]); \
    CK_B3_G(1, 6, 11, 12, m[10], m[11]); \
    CK_B3_G(2, 7, 8, 13, m[12], m[13]); \
    CK_B3_G(3, 4, 9, 14, m[14], m[15])

#define CK_B3_ROUND1 \
    CK_B3_G(0, 4, 8, 12, m[2], m[6]); \
    CK_B3_G(1, 5, 9, 13, m[3], m[10]); \
    CK_B3_G(2, 6, 10, 14, m[7], m[0]); \
    CK_B3_G(3, 7, 11, 15, m[4], m[13]); \
    CK_B3_G(0, 5, 10, 15, m[1], m[11]); \
    CK_B3_G(1, 6, 11, 12, m[12], m[5]); \
    CK_B3_G(2, 7, 8, 13, m[9], m[14]); \
    CK_B3_G(3, 4, 9, 14, m[15], m[8])

#define CK_B3_ROUND2 \
    CK_B3_G(0, 4, 8, 12, m[3], m[4]); \
    CK_B3_G(1, 5, 9, 13, m[10], m[12]); \
    CK_B3_G(2, 6, 10, 14, m[13], m[2]); \
    CK_B3_G(3, 7, 11, 15, m[7], m[14]); \
    CK_B3_G(0, 5, 10, 15, m[6], m[5]); \
    CK_B3_G(1, 6, 11, 12, m[9], m[0]); \
    CK_B3_G(2, 7, 8, 13, m[11], m[15]); \
    CK_B3_G(3, 4, 9, 14, m[8], m[1])

#define CK_B3_ROUND3 \
    CK_B3_G(0, 4, 8, 12, m[10], m[7]); \
    CK_B3_G(1, 5, 9, 13, m[12], m[9]); \
    CK_B3_G(2, 6, 10, 14, m[14], m[3]); \
    CK_B3_G(3, 7, 11, 15, m[13], m[15]); \
    CK_B3_G(0, 5, 10, 15, m[4], m[0]); \
    CK_B3_G(1, 6, 11, 12, m[11], m[2]); \
    CK_B3_G(2, 7, 8, 13, m[5], m[8]); \
    CK_B3_G(3, 4, 9, 14, m[1], m[6])

#define CK_B3_ROUND4 \
    CK_B3_G(0, 4, 8, 12, m[12], m[13]); \
    CK_B3_G(1, 5, 9, 13, m[9], m[11]); \
    CK_B3_G(2, 6, 10, 14, m[15], m[10]); \
    CK_B3_G(3, 7, 11, 15, m[14], m[8]); \
    CK_B3_G(0, 5, 10, 15, m[7], m[2]); \
    CK_B3_G(1, 6, 11, 12, m[5], m[3]); \
    CK_B3_G(2, 7, 8, 13, m[0], m[1]); \
    CK_B3_G(3, 4, 9, 14, m[6], m[4])

#define CK_B3_ROUND5 \
    CK_B3_G(0, 4, 8, 12, m[9], m[14]); \
    CK_B3_G(1, 5, 9, 13, m[11], m[5]); \
    CK_B3_G(2, 6, 10, 14, m[8], m[12]); \
    CK_B3_G(3, 7, 11, 15, m[15], m[1]); \
    CK_B3_G(0, 5, 10, 15, m[13], m[3]); \
    CK_B3_G(1, 6, 11, 12, m[0], m[10]); \
    CK_B3_G(2, 7, 8, 13, m[2], m[6]); \
    CK_B3_G(3, 4, 9, 14, m[4], m[7])

#define CK_B3_ROUND6 \
    CK_B3_G(0, 4, 8, 12, m[11], m[15]); \
    CK_B3_G(1, 5, 9, 13, m[5], m[0]); \
    CK_B3_G(2, 6, 10, 14, m[1], m[9]); \
    CK_B3_G(3, 7, 11, 15, m[8], m[6]); \
    CK_B3_G(0, 5, 10, 15, m[14], m[10]); \
    CK_B3_G(1, 6, 11, 12, m[2], m[12]); \
    CK_B3_G(2, 7, 8, 13, m[3], m[4]); \
    CK_B3_G(3, 4, 9, 14, m[7], m[13])

/* Compress one block into cv (chaining value, updated in place); counter is 0. */
static inline void ck_b3_compress(uint32_t cv[8], const uint8_t block[64],
                                  uint32_t block_len, uint32_t flags) {
    uint32_t m[16], s[16];
    int i;
    for (i = 0; i < 16; i++)
        m[i] = ck_b3_load32(block + 4 * i);
    for (i = 0; i < 8; i++)
        s[i] = cv[i];
    s[8] = ck_b3_iv[0]; s[9] = ck_b3_iv[1]; s[10] = ck_b3_iv[2]; s[11] = ck_b3_iv[3];
    s[12] = 0; s[13] = 0; s[14] = block_len; s[15] = flags;
    CK_B3_ROUND0; CK_B3_ROUND1; CK_B3_ROUND2; CK_B3_ROUND3;
    CK_B3_ROUND4; CK_B3_ROUND5; CK_B3_ROUND6;
    for (i = 0; i < 8; i++)
        cv[i] = s[i] ^ s[i + 8];
}

/* The 32-byte BLAKE3 hash of data[0..n), n <= CK_B3_CHUNK_LEN. */
static inline void ck_b3_hash_chunk(const uint8_t *data, size_t n, uint8_t out[32]) {
    uint32_t cv[8];
    uint8_t last[64];
    uint32_t flags = CK_B3_CHUNK_START;
    size_t tail;
    int i;
    memcpy(cv, ck_b3_iv, sizeof cv);
    while (n > 64) {
        ck_b3_compress(cv, data, 64, flags);
        flags = 0;
        data += 64;
        n -= 64;
    }
    tail = n;
    memset(last, 0, sizeof last);
    if (tail)
        memcpy(last, data, tail);
    ck_b3_compress(cv, last, (uint32_t)tail, flags | CK_B3_CHUNK_END | CK_B3_ROOT);
    for (i = 0; i < 8; i++) {
        out[4 * i] = (uint8_t)cv[i];
        out[4 * i + 1] = (uint8_t)(cv[i] >> 8);
        out[4 * i + 2] = (uint8_t)(cv[i] >> 16);
        out[4 * i + 3] = (uint8_t)(cv[i] >> 24);
    }
}

#endif
