/* ASTP Merkle tree kernels (ASTP.md §5.1, §10) over ext/astp/keccak.h and ext/astp_keccak_simd.h.
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
 * The hasher keeps pre-padded blocks per preimage shape, so hashing a node is two copies
 * into a block plus one permutation; nodes are hashed in batches of up to CK_MAX_LANES so
 * that ext/astp/astp_keccak_simd.h can run several permutations side by side.
 */
#ifndef CANONKIT_ASTP_TREE_H
#define CANONKIT_ASTP_TREE_H

#include "astp_keccak_simd.h"

/* Byte -> its two lowercase hex digits, and hex digit -> value (-1: not a hex digit). Built
 * once by ck_hex_tables_init (called before any hashing from the module's init). */
static uint16_t ck_hex_pairs[256];
static int8_t ck_hex_values[256];

static inline void ck_hex_tables_init(void) {
    static const char digits[] = "0123456789abcdef";
    int i;
    for (i = 0; i < 256; i++) {
        uint8_t pair[2] = {(uint8_t)digits[i >> 4], (uint8_t)digits[i & 15]};
        memcpy(&ck_hex_pairs[i], pair, 2);
        ck_hex_values[i] = -1;
    }
    for (i = 0; i < 10; i++) ck_hex_values['0' + i] = (int8_t)i;
    for (i = 0; i < 6; i++) {
        ck_hex_values['a' + i] = (int8_t)(10 + i);
        ck_hex_values['A' + i] = (int8_t)(10 + i);
    }
}

static inline void ck_hex32(const uint8_t *raw, uint8_t *out64) {
    int i;
    for (i = 0; i < 32; i++)
        memcpy(out64 + 2 * i, &ck_hex_pairs[raw[i]], 2);
}

/* 2n hex characters (either case) -> n bytes; returns -1 on a non-hex character. */
static inline int ck_unhex_scalar(const uint8_t *hex, uint8_t *raw, int n) {
    int i, bad = 0;
    for (i = 0; i < n; i++) {
        int hi = ck_hex_values[hex[2 * i]], lo = ck_hex_values[hex[2 * i + 1]];
        bad |= hi | lo;
        raw[i] = (uint8_t)((hi << 4) | (lo & 15));
    }
    return bad < 0 ? -1 : 0;
}

#if CK_X86_SIMD
#include <immintrin.h>

/* ck_hex32 for count values at once with AVX2: the nibbles index a 16-entry digit table
 * (VPSHUFB), then the high/low digit bytes are interleaved back into text order. */
__attribute__((target("avx2"), noinline)) static void
ck_hex32_avx2(const uint8_t *const *raw, uint8_t *const *out, int count) {
    const __m256i digits = _mm256_setr_epi8('0', '1', '2', '3', '4', '5', '6', '7', '8', '9',
                                            'a', 'b', 'c', 'd', 'e', 'f', '0', '1', '2', '3',
                                            '4', '5', '6', '7', '8', '9', 'a', 'b', 'c', 'd',
                                            'e', 'f');
    const __m256i nibble = _mm256_set1_epi8(0x0f);
    int k;
    for (k = 0; k < count; k++) {
        __m256i v = _mm256_loadu_si256((const __m256i *)raw[k]);
        __m256i hi = _mm256_shuffle_epi8(digits, _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble));
        __m256i lo = _mm256_shuffle_epi8(digits, _mm256_and_si256(v, nibble));
        __m256i a = _mm256_unpacklo_epi8(hi, lo);   /* bytes 0-7 | 16-23 */
        __m256i b = _mm256_unpackhi_epi8(hi, lo);   /* bytes 8-15 | 24-31 */
        _mm256_storeu_si256((__m256i *)out[k], _mm256_permute2x128_si256(a, b, 0x20));
        _mm256_storeu_si256((__m256i *)(out[k] + 32), _mm256_permute2x128_si256(a, b, 0x31));
    }
}
#endif

#if CK_X86_SIMD
/* 32 hex characters -> their 32 nibble values; lanes that are no hex digit set *bad. */
__attribute__((target("avx2"))) static inline __m256i ck_nibbles_avx2(__m256i v, __m256i *bad) {
    __m256i lower = _mm256_or_si256(v, _mm256_set1_epi8(0x20));
    __m256i digit = _mm256_sub_epi8(v, _mm256_set1_epi8('0'));      /* 0..9 for '0'..'9' */
    __m256i alpha = _mm256_sub_epi8(lower, _mm256_set1_epi8('a'));  /* 0..5 for a-f, A-F */
    __m256i is_digit = _mm256_cmpeq_epi8(_mm256_min_epu8(digit, _mm256_set1_epi8(9)), digit);
    __m256i is_alpha = _mm256_cmpeq_epi8(_mm256_min_epu8(alpha, _mm256_set1_epi8(5)), alpha);
    *bad = _mm256_or_si256(*bad, _mm256_xor_si256(_mm256_or_si256(is_digit, is_alpha),
                                                  _mm256_set1_epi8(-1)));
    return _mm256_blendv_epi8(_mm256_add_epi8(alpha, _mm256_set1_epi8(10)), digit, is_digit);
}

/* ck_unhex_scalar for n = 16 or 32 with AVX2: nibbles, then each (high, low) pair as
 * 16 * high + low (VPMADDUBSW), packed back to bytes in text order. */
__attribute__((target("avx2"), noinline)) static int
ck_unhex_avx2(const uint8_t *hex, uint8_t *raw, int n) {
    const __m256i weights = _mm256_set1_epi16(0x0110);   /* bytes 16, 1 */
    __m256i bad = _mm256_setzero_si256();
    __m256i a = _mm256_maddubs_epi16(
        ck_nibbles_avx2(_mm256_loadu_si256((const __m256i *)hex), &bad), weights);
    if (n == 32) {
        __m256i b = _mm256_maddubs_epi16(
            ck_nibbles_avx2(_mm256_loadu_si256((const __m256i *)(hex + 32)), &bad), weights);
        /* packus interleaves the 128-bit halves: a0 b0 a1 b1 -> a0 a1 b0 b1 */
        _mm256_storeu_si256((__m256i *)raw,
                            _mm256_permute4x64_epi64(_mm256_packus_epi16(a, b), 0xD8));
    } else {
        __m128i packed = _mm_packus_epi16(_mm256_castsi256_si128(a),
                                          _mm256_extracti128_si256(a, 1));
        _mm_storeu_si128((__m128i *)raw, packed);
    }
    return _mm256_movemask_epi8(bad) ? -1 : 0;
}
#endif

/* 2n hex characters -> n bytes (n = 16 or 32), -1 on a non-hex character; vectorised when
 * the AVX2 or AVX-512F Keccak is in use (so the lane knob of the tests reaches both). */
static inline int ck_unhex(const uint8_t *hex, uint8_t *raw, int n) {
#if CK_X86_SIMD
    if (ck_keccak_lanes() >= 4)
        return ck_unhex_avx2(hex, raw, n);
#endif
    return ck_unhex_scalar(hex, raw, n);
}

/* 64 hex characters (either case) -> 32 bytes; returns -1 on a non-hex character. */
static inline int ck_unhex32(const uint8_t *hex, uint8_t *raw) {
    return ck_unhex(hex, raw, 32);
}

/* Hex text of count 32-byte values; vectorised when the AVX2 or AVX-512F Keccak is in use. */
static inline void ck_hex32_many(const uint8_t *const *raw, uint8_t *const *out, int count) {
    int k;
#if CK_X86_SIMD
    if (ck_keccak_lanes() >= 4) {   /* 4 and 8 lanes imply AVX2 */
        ck_hex32_avx2(raw, out, count);
        return;
    }
#endif
    for (k = 0; k < count; k++)
        ck_hex32(raw[k], out[k]);
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
    uint8_t leaf[CK_MAX_LANES][CK_SHA3_256_RATE];   /* pre-padded, one per batch slot */
    uint8_t node[CK_MAX_LANES][CK_SHA3_256_RATE];
} ck_tree_hasher;

static inline void ck_tree_hasher_init(ck_tree_hasher *h, int hex) {
    int k;
    h->hex = hex;
    h->size = hex ? 64 : 32;
    h->pfx = hex ? 5 : 13;
    for (k = 0; k < CK_MAX_LANES; k++) {
        if (hex) {
            ck_pad_block(h->leaf[k], "LEAF:", 5, 5 + 64);
            ck_pad_block(h->node[k], "NODE:", 5, 5 + 128);
        } else {
            ck_pad_block(h->leaf[k], "TREE_LEAF:v2:", 13, 13 + 32);
            ck_pad_block(h->node[k], "TREE_NODE:v2:", 13, 13 + 64);
        }
    }
}

/* Hash the first count (<= CK_MAX_LANES) filled blocks of `blocks` into out[k] as node
 * values (hex text for sav 0/1). */
static inline void ck_tree_finish(ck_tree_hasher *h, uint8_t (*blocks)[CK_SHA3_256_RATE],
                                  uint8_t *const *out, int count) {
    const uint8_t *b[CK_MAX_LANES];
    uint8_t *o[CK_MAX_LANES];
    uint8_t digest[CK_MAX_LANES][32];
    int k;
    for (k = 0; k < count; k++) {
        b[k] = blocks[k];
        o[k] = h->hex ? digest[k] : out[k];
    }
    ck_sha3_256_padded_many(b, o, count);
    if (h->hex) {
        const uint8_t *d[CK_MAX_LANES];
        for (k = 0; k < count; k++)
            d[k] = digest[k];
        ck_hex32_many(d, out, count);
    }
}

/* Level-0 node values of count raw 32-byte inputs. */
static inline void ck_tree_leaf_batch(ck_tree_hasher *h, const uint8_t *const *input,
                                      uint8_t *const *out, int count) {
    int k;
    if (h->hex) {
        uint8_t *text[CK_MAX_LANES];
        for (k = 0; k < count; k++)
            text[k] = h->leaf[k] + 5;
        ck_hex32_many(input, text, count);
    } else {
        for (k = 0; k < count; k++)
            memcpy(h->leaf[k] + 13, input[k], 32);
    }
    ck_tree_finish(h, h->leaf, out, count);
}

/* Parents of count pairs. Every input is copied before any output is written, so an
 * output may alias any input of the batch. */
static inline void ck_tree_node_batch(ck_tree_hasher *h, const uint8_t *const *left,
                                      const uint8_t *const *right, uint8_t *const *out,
                                      int count) {
    size_t sz = h->size, pfx = h->pfx;
    int k;
    for (k = 0; k < count; k++) {
        memcpy(h->node[k] + pfx, left[k], sz);
        memcpy(h->node[k] + pfx + sz, right[k], sz);
    }
    ck_tree_finish(h, h->node, out, count);
}

static inline void ck_tree_leaf(ck_tree_hasher *h, const uint8_t *input, uint8_t *out) {
    ck_tree_leaf_batch(h, &input, &out, 1);
}

static inline void ck_tree_node(ck_tree_hasher *h, const uint8_t *left, const uint8_t *right,
                                uint8_t *out) {
    ck_tree_node_batch(h, &left, &right, &out, 1);
}

/* Level-0 nodes of `first` (optional: the sav 1 Episode input, NULL for none) followed by
 * n inputs of 32 raw bytes, written to work (node values back to back). */
static inline void ck_tree_leaves(ck_tree_hasher *h, const uint8_t *first, const uint8_t *inputs,
                                  size_t n, uint8_t *work) {
    const uint8_t *in[CK_MAX_LANES];
    uint8_t *out[CK_MAX_LANES];
    size_t i = 0, sz = h->size;
    int k;
    if (first) {
        ck_tree_leaf(h, first, work);
        work += sz;
    }
    while (i < n) {
        for (k = 0; k < CK_MAX_LANES && i < n; k++, i++) {
            in[k] = inputs + 32 * i;
            out[k] = work + sz * i;
        }
        ck_tree_leaf_batch(h, in, out, k);
    }
}

/* Parents j = lo..hi of the level below (`below`, nb nodes) into `here`; the last node
 * of an odd level is carried up unchanged. Safe in place (here == below, lo == 0): batches
 * go left to right and parent j only overwrites slot j <= 2j. */
static inline void ck_tree_parents(ck_tree_hasher *h, uint8_t *below, size_t nb, uint8_t *here,
                                   size_t lo, size_t hi) {
    const uint8_t *l[CK_MAX_LANES], *r[CK_MAX_LANES];
    uint8_t *out[CK_MAX_LANES];
    size_t j = lo, sz = h->size;
    int k;
    while (j <= hi) {
        for (k = 0; k < CK_MAX_LANES && j <= hi && 2 * j + 1 < nb; k++, j++) {
            l[k] = below + sz * (2 * j);
            r[k] = below + sz * (2 * j + 1);
            out[k] = here + sz * j;
        }
        if (k)
            ck_tree_node_batch(h, l, r, out, k);
        if (j <= hi && 2 * j + 1 >= nb) {   /* the unpaired last node */
            memmove(here + sz * j, below + sz * (2 * j), sz);
            j++;
        }
    }
}

/* Fold a level of n >= 1 node values in place down to the root at work[0..size). Pairs from
 * the left; an odd level's last node is carried up unchanged. */
static inline void ck_tree_fold(ck_tree_hasher *h, uint8_t *work, size_t n) {
    while (n > 1) {
        size_t up = (n + 1) / 2;
        ck_tree_parents(h, work, n, work, 0, up - 1);
        n = up;
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

/* Build every level above level 0 of a full level store. */
static inline void ck_tree_build_levels(ck_tree_hasher *h, uint8_t *store, const size_t *counts,
                                        const size_t *offsets, int depth) {
    int d;
    for (d = 1; d < depth; d++)
        ck_tree_parents(h, store + h->size * offsets[d - 1], counts[d - 1],
                        store + h->size * offsets[d], 0, counts[d] - 1);
}

/* After level-0 nodes [lo, hi] changed, rehash exactly their ancestors. */
static inline void ck_tree_refresh_range(ck_tree_hasher *h, uint8_t *store, const size_t *counts,
                                         const size_t *offsets, int depth, size_t lo, size_t hi) {
    int d;
    for (d = 1; d < depth; d++) {
        lo >>= 1;
        hi >>= 1;
        ck_tree_parents(h, store + h->size * offsets[d - 1], counts[d - 1],
                        store + h->size * offsets[d], lo, hi);
    }
}

#endif /* CANONKIT_ASTP_TREE_H */
