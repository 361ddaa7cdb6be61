/* The set commitments of ASTP.md §2.2 (version 2) and §6 (version 1) over raw 32-byte
 * digests, hashed incrementally (no preimage is built): the hash-set kernel functions of
 * _hash.pyx and the compiled Episode verdict of _scan.pyx both use them.
 *
 *   v1: H(prefix ‖ "|".join(lowercase hex of the sorted distinct members)),
 *       H(prefix ‖ "EMPTY") for no members (lowercase hex sorts as the raw bytes);
 *   v2: H(prefix ‖ u32be(m) ‖ the m sorted distinct members, raw).
 */
#ifndef CANONKIT_ASTP_SETS_H
#define CANONKIT_ASTP_SETS_H

#include <stdlib.h>
#include <string.h>
#include "astp_tree.h"

static int ck_cmp32(const void *a, const void *b) {
    return memcmp(a, b, 32);
}

/* Sort n digests ascending bytewise in place and drop repeats; the distinct count. */
static inline size_t ck_sorted_distinct(uint8_t *buf, size_t n) {
    size_t i, m = 0;
    if (n > 1)
        qsort(buf, n, 32, ck_cmp32);
    for (i = 0; i < n; i++) {
        if (m == 0 || memcmp(buf + 32 * (m - 1), buf + 32 * i, 32) != 0) {
            if (m != i)
                memcpy(buf + 32 * m, buf + 32 * i, 32);
            m++;
        }
    }
    return m;
}

/* Version 1 over m sorted distinct digests. */
static inline void ck_set_v1(const uint8_t *prefix, size_t prefix_len, const uint8_t *members,
                             size_t m, uint8_t out[32]) {
    ck_sha3_256_ctx ctx;
    uint8_t text[65];
    size_t i;
    ck_sha3_256_init(&ctx);
    ck_sha3_256_update(&ctx, prefix, prefix_len);
    if (m == 0)
        ck_sha3_256_update(&ctx, (const uint8_t *)"EMPTY", 5);
    text[64] = '|';
    for (i = 0; i < m; i++) {
        ck_hex32(members + 32 * i, text);
        ck_sha3_256_update(&ctx, text, i + 1 < m ? 65 : 64);
    }
    ck_sha3_256_final(&ctx, out);
}

/* Version 2 over m sorted distinct digests. */
static inline void ck_set_v2(const uint8_t *prefix, size_t prefix_len, const uint8_t *members,
                             size_t m, uint8_t out[32]) {
    ck_sha3_256_ctx ctx;
    uint8_t count[4] = {(uint8_t)(m >> 24), (uint8_t)(m >> 16), (uint8_t)(m >> 8), (uint8_t)m};
    ck_sha3_256_init(&ctx);
    ck_sha3_256_update(&ctx, prefix, prefix_len);
    ck_sha3_256_update(&ctx, count, 4);
    ck_sha3_256_update(&ctx, members, 32 * m);
    ck_sha3_256_final(&ctx, out);
}

#endif /* CANONKIT_ASTP_SETS_H */
