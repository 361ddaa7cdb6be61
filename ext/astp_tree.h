/* ASTP Merkle tree kernels (ASTP.md §5.1, §10) over ext/keccak.h.
 *
 * Every preimage of the tree fits one SHA3-256 block (rate 136 bytes), so each node costs
 * exactly one Keccak-f[1600] permutation:
 *   sav 0/1  leaf  "LEAF:" + 64 hex            =  69 bytes
 *            node  "NODE:" + 64 hex + 64 hex   = 133 bytes
 *   sav 2/3  leaf  "TREE_LEAF:v2:" + 32 raw    =  45 bytes
 *            node  "TREE_NODE:v2:" + 32 + 32   =  77 bytes
 * A tree of n leaves therefore costs 2n - 1 permutations (carried-up odd nodes are free).
 *
 * Node values are kept the way the version defines them: sav 0/1 nodes are 64 bytes of
 * lowercase ASCII hex (the text that the parent hashes), sav 2/3 nodes are 32 raw bytes.
 * The hasher keeps one pre-padded block per preimage shape, so hashing a node is two
 * copies into the block plus one permutation.
 */
#ifndef CANONKIT_ASTP_TREE_H
#define CANONKIT_ASTP_TREE_H

#include "keccak.h"

static const char CK_HEXDIGITS[16] = {'0', '1', '2', '3', '4', '5', '6', '7',
                                      '8', '9', 'a', 'b', 'c', 'd', 'e', 'f'};

static inline void ck_hex32(const uint8_t *raw, uint8_t *out64) {
    int i;
    for (i = 0; i < 32; i++) {
        out64[2 * i] = (uint8_t)CK_HEXDIGITS[raw[i] >> 4];
        out64[2 * i + 1] = (uint8_t)CK_HEXDIGITS[raw[i] & 15];
    }
}

static inline int ck_hexval(uint8_t c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* 64 hex characters (either case) -> 32 bytes; returns -1 on a non-hex character. */
static inline int ck_unhex32(const uint8_t *hex, uint8_t *raw) {
    int i, hi, lo;
    for (i = 0; i < 32; i++) {
        hi = ck_hexval(hex[2 * i]);
        lo = ck_hexval(hex[2 * i + 1]);
        if ((hi | lo) < 0) return -1;
        raw[i] = (uint8_t)((hi << 4) | lo);
    }
    return 0;
}

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

static inline void ck_pad_block(uint8_t block[CK_SHA3_256_RATE], const char *prefix,
                                size_t prefix_len, size_t message_len) {
    memset(block, 0, CK_SHA3_256_RATE);
    memcpy(block, prefix, prefix_len);
    block[message_len] = 0x06;
    block[CK_SHA3_256_RATE - 1] |= 0x80;
}

typedef struct {
    int hex;          /* 1: sav 0/1 hex-text tree, 0: sav 2/3 raw-byte tree */
    size_t size;      /* bytes per node value: 64 (hex) or 32 (raw) */
    size_t pfx;       /* prefix length: 5 or 13 */
    uint8_t leaf[CK_SHA3_256_RATE];
    uint8_t node[CK_SHA3_256_RATE];
} ck_tree_hasher;

static inline void ck_tree_hasher_init(ck_tree_hasher *h, int hex) {
    h->hex = hex;
    if (hex) {
        h->size = 64;
        h->pfx = 5;
        ck_pad_block(h->leaf, "LEAF:", 5, 5 + 64);
        ck_pad_block(h->node, "NODE:", 5, 5 + 128);
    } else {
        h->size = 32;
        h->pfx = 13;
        ck_pad_block(h->leaf, "TREE_LEAF:v2:", 13, 13 + 32);
        ck_pad_block(h->node, "TREE_NODE:v2:", 13, 13 + 64);
    }
}

/* Level-0 node of a raw 32-byte input. out may not alias input. */
static inline void ck_tree_leaf(ck_tree_hasher *h, const uint8_t *input, uint8_t *out) {
    if (h->hex) {
        uint8_t digest[32];
        ck_hex32(input, h->leaf + 5);
        ck_sha3_256_padded_block(h->leaf, digest);
        ck_hex32(digest, out);
    } else {
        memcpy(h->leaf + 13, input, 32);
        ck_sha3_256_padded_block(h->leaf, out);
    }
}

/* Parent of two node values; out may alias left or right (both are copied first). */
static inline void ck_tree_node(ck_tree_hasher *h, const uint8_t *left, const uint8_t *right,
                                uint8_t *out) {
    size_t sz = h->size, pfx = h->pfx;
    memcpy(h->node + pfx, left, sz);
    memcpy(h->node + pfx + sz, right, sz);
    if (h->hex) {
        uint8_t digest[32];
        ck_sha3_256_padded_block(h->node, digest);
        ck_hex32(digest, out);
    } else {
        ck_sha3_256_padded_block(h->node, out);
    }
}

/* Level-0 nodes of `first` (optional: the sav 1 Episode input, NULL for none) followed by
 * n inputs of 32 raw bytes, written to work (node values back to back). */
static inline void ck_tree_leaves(ck_tree_hasher *h, const uint8_t *first, const uint8_t *inputs,
                                  size_t n, uint8_t *work) {
    size_t i, sz = h->size;
    if (first) {
        ck_tree_leaf(h, first, work);
        work += sz;
    }
    for (i = 0; i < n; i++)
        ck_tree_leaf(h, inputs + 32 * i, work + sz * i);
}

/* Fold a level of n >= 1 node values in place down to the root at work[0..size). Pairs from
 * the left; an odd level's last node is carried up unchanged. */
static inline void ck_tree_fold(ck_tree_hasher *h, uint8_t *work, size_t n) {
    size_t i, sz = h->size;
    while (n > 1) {
        size_t half = n / 2;
        for (i = 0; i < half; i++)
            ck_tree_node(h, work + sz * (2 * i), work + sz * (2 * i + 1), work + sz * i);
        if (n & 1) {
            memmove(work + sz * half, work + sz * (n - 1), sz);
            half++;
        }
        n = half;
    }
}

/* Level sizes of a tree with n leaves: counts[0] = n, ..., counts[depth-1] = 1; returns the
 * number of levels (at most 64 for any size_t n) and the total node count in *total. */
static inline int ck_tree_shape(size_t n, size_t counts[65], size_t offsets[65], size_t *total) {
    int d = 0;
    size_t off = 0;
    for (;;) {
        counts[d] = n;
        offsets[d] = off;
        off += n;
        d++;
        if (n <= 1) break;
        n = (n + 1) / 2;
    }
    *total = off;
    return d;
}

/* Node j of level d (d >= 1) recomputed from level d-1 in a full level store. */
static inline void ck_tree_recompute(ck_tree_hasher *h, uint8_t *store, const size_t *counts,
                                     const size_t *offsets, int d, size_t j) {
    size_t sz = h->size;
    uint8_t *below = store + sz * offsets[d - 1];
    uint8_t *out = store + sz * (offsets[d] + j);
    if (2 * j + 1 < counts[d - 1])
        ck_tree_node(h, below + sz * (2 * j), below + sz * (2 * j + 1), out);
    else
        memcpy(out, below + sz * (2 * j), sz);
}

/* Build every level above level 0 of a full level store. */
static inline void ck_tree_build_levels(ck_tree_hasher *h, uint8_t *store, const size_t *counts,
                                        const size_t *offsets, int depth) {
    int d;
    size_t j;
    for (d = 1; d < depth; d++)
        for (j = 0; j < counts[d]; j++)
            ck_tree_recompute(h, store, counts, offsets, d, j);
}

/* After level-0 nodes [lo, hi] changed, rehash exactly their ancestors. */
static inline void ck_tree_refresh_range(ck_tree_hasher *h, uint8_t *store, const size_t *counts,
                                         const size_t *offsets, int depth, size_t lo, size_t hi) {
    int d;
    size_t j;
    for (d = 1; d < depth; d++) {
        lo >>= 1;
        hi >>= 1;
        for (j = lo; j <= hi; j++)
            ck_tree_recompute(h, store, counts, offsets, d, j);
    }
}

#endif /* CANONKIT_ASTP_TREE_H */
