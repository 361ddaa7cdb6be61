/* Keccak-f[1600] and SHA3-256 (FIPS 202), written for canonkit from the standard.
 *
 * State: 25 64-bit lanes, lane (x, y) at index x + 5*y (FIPS 202 §3.1.4). Bytes map to
 * lanes little-endian (§B.1), made explicit by ck_load64_le / ck_store64_le so the code is
 * correct on big-endian hosts too; on little-endian hosts they compile to plain moves.
 *
 * The round keeps all lanes in local variables: theta (§3.2.1), rho and pi (§3.2.2–3.2.3)
 * are fused into one rotate-and-place step, then chi (§3.2.4) and iota (§3.2.5), one output
 * plane at a time, alternating between two sets of lane variables (a -> e -> a). The rho
 * offsets and round constants below were derived from the §3.2.2 and §3.2.5 algorithms
 * (t-loop over (x, y) ← (y, 2x + 3y), and the rc(t) LFSR) and are checked by the tests
 * against hashlib.
 *
 * SHA3-256 = Keccak[c=512] with rate 136 bytes and the domain suffix 01 followed by
 * pad10*1, i.e. byte 0x06 after the message and 0x80 in the last rate byte (§6.1, §B.2).
 */
#ifndef CANONKIT_KECCAK_H
#define CANONKIT_KECCAK_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define CK_SHA3_256_RATE 136
#define CK_SHA3_256_LANES 17      /* rate in lanes */
#define CK_SHA3_256_DIGEST 32

/* Defining CK_LITTLE_ENDIAN=0 on the command line forces the byte-by-byte lane code (how
 * the big-endian path is exercised on a little-endian machine). */
#ifndef CK_LITTLE_ENDIAN
#if defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__) && \
    __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define CK_LITTLE_ENDIAN 1
#elif defined(_MSC_VER) || defined(__x86_64__) || defined(__i386__) || defined(_M_X64) || \
    defined(_M_ARM64)
#define CK_LITTLE_ENDIAN 1
#else
#define CK_LITTLE_ENDIAN 0
#endif
#endif

static inline uint64_t ck_load64_le(const uint8_t *p) {
#if CK_LITTLE_ENDIAN
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
#else
    return (uint64_t)p[0] | ((uint64_t)p[1] << 8) | ((uint64_t)p[2] << 16) |
           ((uint64_t)p[3] << 24) | ((uint64_t)p[4] << 32) | ((uint64_t)p[5] << 40) |
           ((uint64_t)p[6] << 48) | ((uint64_t)p[7] << 56);
#endif
}

static inline void ck_store64_le(uint8_t *p, uint64_t v) {
#if CK_LITTLE_ENDIAN
    memcpy(p, &v, 8);
#else
    p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24); p[4] = (uint8_t)(v >> 32); p[5] = (uint8_t)(v >> 40);
    p[6] = (uint8_t)(v >> 48); p[7] = (uint8_t)(v >> 56);
#endif
}

#define CK_ROL64(v, n) (((v) << (n)) | ((v) >> (64 - (n))))

static const uint64_t CK_KECCAK_RC[24] = {
    0x0000000000000001ULL, 0x0000000000008082ULL, 0x800000000000808aULL,
    0x8000000080008000ULL, 0x000000000000808bULL, 0x0000000080000001ULL,
    0x8000000080008081ULL, 0x8000000000008009ULL, 0x000000000000008aULL,
    0x0000000000000088ULL, 0x0000000080008009ULL, 0x000000008000000aULL,
    0x000000008000808bULL, 0x800000000000008bULL, 0x8000000000008089ULL,
    0x8000000000008003ULL, 0x8000000000008002ULL, 0x8000000000000080ULL,
    0x000000000000800aULL, 0x800000008000000aULL, 0x8000000080008081ULL,
    0x8000000000008080ULL, 0x0000000080000001ULL, 0x8000000080008008ULL,
};

/* One round from the lanes aXY (lane (X, Y)) into the lanes eXY, and its mirror. Theta's
 * column parities c and effects d come first; then each output plane Y is made at once:
 * b0..b4 = rho-rotated, pi-placed lanes of that plane (output (X, Y) comes from input
 * (x, y) with X = y, Y = 2x + 3y mod 5), chi on the five, and iota on lane (0, 0). Working
 * plane by plane keeps only five b temporaries alive, which spills less than computing all
 * 25 first. */
#define CK_KECCAK_ROUND_AE(rc) do { \
    c0 = a00 ^ a01 ^ a02 ^ a03 ^ a04; \
    c1 = a10 ^ a11 ^ a12 ^ a13 ^ a14; \
    c2 = a20 ^ a21 ^ a22 ^ a23 ^ a24; \
    c3 = a30 ^ a31 ^ a32 ^ a33 ^ a34; \
    c4 = a40 ^ a41 ^ a42 ^ a43 ^ a44; \
    d0 = c4 ^ CK_ROL64(c1, 1); \
    d1 = c0 ^ CK_ROL64(c2, 1); \
    d2 = c1 ^ CK_ROL64(c3, 1); \
    d3 = c2 ^ CK_ROL64(c4, 1); \
    d4 = c3 ^ CK_ROL64(c0, 1); \
    b0 = a00 ^ d0; \
    b1 = CK_ROL64(a11 ^ d1, 44); \
    b2 = CK_ROL64(a22 ^ d2, 43); \
    b3 = CK_ROL64(a33 ^ d3, 21); \
    b4 = CK_ROL64(a44 ^ d4, 14); \
    e00 = b0 ^ (~b1 & b2); \
    e10 = b1 ^ (~b2 & b3); \
    e20 = b2 ^ (~b3 & b4); \
    e30 = b3 ^ (~b4 & b0); \
    e40 = b4 ^ (~b0 & b1); \
    e00 ^= (rc); \
    b0 = CK_ROL64(a30 ^ d3, 28); \
    b1 = CK_ROL64(a41 ^ d4, 20); \
    b2 = CK_ROL64(a02 ^ d0, 3); \
    b3 = CK_ROL64(a13 ^ d1, 45); \
    b4 = CK_ROL64(a24 ^ d2, 61); \
    e01 = b0 ^ (~b1 & b2); \
    e11 = b1 ^ (~b2 & b3); \
    e21 = b2 ^ (~b3 & b4); \
    e31 = b3 ^ (~b4 & b0); \
    e41 = b4 ^ (~b0 & b1); \
    b0 = CK_ROL64(a10 ^ d1, 1); \
    b1 = CK_ROL64(a21 ^ d2, 6); \
    b2 = CK_ROL64(a32 ^ d3, 25); \
    b3 = CK_ROL64(a43 ^ d4, 8); \
    b4 = CK_ROL64(a04 ^ d0, 18); \
    e02 = b0 ^ (~b1 & b2); \
    e12 = b1 ^ (~b2 & b3); \
    e22 = b2 ^ (~b3 & b4); \
    e32 = b3 ^ (~b4 & b0); \
    e42 = b4 ^ (~b0 & b1); \
    b0 = CK_ROL64(a40 ^ d4, 27); \
    b1 = CK_ROL64(a01 ^ d0, 36); \
    b2 = CK_ROL64(a12 ^ d1, 10); \
    b3 = CK_ROL64(a23 ^ d2, 15); \
    b4 = CK_ROL64(a34 ^ d3, 56); \
    e03 = b0 ^ (~b1 & b2); \
    e13 = b1 ^ (~b2 & b3); \
    e23 = b2 ^ (~b3 & b4); \
    e33 = b3 ^ (~b4 & b0); \
    e43 = b4 ^ (~b0 & b1); \
    b0 = CK_ROL64(a20 ^ d2, 62); \
    b1 = CK_ROL64(a31 ^ d3, 55); \
    b2 = CK_ROL64(a42 ^ d4, 39); \
    b3 = CK_ROL64(a03 ^ d0, 41); \
    b4 = CK_ROL64(a14 ^ d1, 2); \
    e04 = b0 ^ (~b1 & b2); \
    e14 = b1 ^ (~b2 & b3); \
    e24 = b2 ^ (~b3 & b4); \
    e34 = b3 ^ (~b4 & b0); \
    e44 = b4 ^ (~b0 & b1); \
} while (0)

#define CK_KECCAK_ROUND_EA(rc) do { \
    c0 = e00 ^ e01 ^ e02 ^ e03 ^ e04; \
    c1 = e10 ^ e11 ^ e12 ^ e13 ^ e14; \
    c2 = e20 ^ e21 ^ e22 ^ e23 ^ e24; \
    c3 = e30 ^ e31 ^ e32 ^ e33 ^ e34; \
    c4 = e40 ^ e41 ^ e42 ^ e43 ^ e44; \
    d0 = c4 ^ CK_ROL64(c1, 1); \
    d1 = c0 ^ CK_ROL64(c2, 1); \
    d2 = c1 ^ CK_ROL64(c3, 1); \
    d3 = c2 ^ CK_ROL64(c4, 1); \
    d4 = c3 ^ CK_ROL64(c0, 1); \
    b0 = e00 ^ d0; \
    b1 = CK_ROL64(e11 ^ d1, 44); \
    b2 = CK_ROL64(e22 ^ d2, 43); \
    b3 = CK_ROL64(e33 ^ d3, 21); \
    b4 = CK_ROL64(e44 ^ d4, 14); \
    a00 = b0 ^ (~b1 & b2); \
    a10 = b1 ^ (~b2 & b3); \
    a20 = b2 ^ (~b3 & b4); \
    a30 = b3 ^ (~b4 & b0); \
    a40 = b4 ^ (~b0 & b1); \
    a00 ^= (rc); \
    b0 = CK_ROL64(e30 ^ d3, 28); \
    b1 = CK_ROL64(e41 ^ d4, 20); \
    b2 = CK_ROL64(e02 ^ d0, 3); \
    b3 = CK_ROL64(e13 ^ d1, 45); \
    b4 = CK_ROL64(e24 ^ d2, 61); \
    a01 = b0 ^ (~b1 & b2); \
    a11 = b1 ^ (~b2 & b3); \
    a21 = b2 ^ (~b3 & b4); \
    a31 = b3 ^ (~b4 & b0); \
    a41 = b4 ^ (~b0 & b1); \
    b0 = CK_ROL64(e10 ^ d1, 1); \
    b1 = CK_ROL64(e21 ^ d2, 6); \
    b2 = CK_ROL64(e32 ^ d3, 25); \
    b3 = CK_ROL64(e43 ^ d4, 8); \
    b4 = CK_ROL64(e04 ^ d0, 18); \
    a02 = b0 ^ (~b1 & b2); \
    a12 = b1 ^ (~b2 & b3); \
    a22 = b2 ^ (~b3 & b4); \
    a32 = b3 ^ (~b4 & b0); \
    a42 = b4 ^ (~b0 & b1); \
    b0 = CK_ROL64(e40 ^ d4, 27); \
    b1 = CK_ROL64(e01 ^ d0, 36); \
    b2 = CK_ROL64(e12 ^ d1, 10); \
    b3 = CK_ROL64(e23 ^ d2, 15); \
    b4 = CK_ROL64(e34 ^ d3, 56); \
    a03 = b0 ^ (~b1 & b2); \
    a13 = b1 ^ (~b2 & b3); \
    a23 = b2 ^ (~b3 & b4); \
    a33 = b3 ^ (~b4 & b0); \
    a43 = b4 ^ (~b0 & b1); \
    b0 = CK_ROL64(e20 ^ d2, 62); \
    b1 = CK_ROL64(e31 ^ d3, 55); \
    b2 = CK_ROL64(e42 ^ d4, 39); \
    b3 = CK_ROL64(e03 ^ d0, 41); \
    b4 = CK_ROL64(e14 ^ d1, 2); \
    a04 = b0 ^ (~b1 & b2); \
    a14 = b1 ^ (~b2 & b3); \
    a24 = b2 ^ (~b3 & b4); \
    a34 = b3 ^ (~b4 & b0); \
    a44 = b4 ^ (~b0 & b1); \
} while (0)

/* Keccak-f[1600] over an array s[25] of lane type T, in place: loads the lanes into locals,
 * runs the 24 rounds, stores them back. T is uint64_t for one state, or a GCC vector of
 * uint64_t holding lane (x, y) of several independent states (ext/astp/astp_keccak_simd.h); the
 * round uses only ^ & ~ << >> on T, and iota's scalar constant broadcasts. */
#define CK_KECCAK_F1600_BODY(T, s) do { \
    T a00 = (s)[0], a10 = (s)[1], a20 = (s)[2], a30 = (s)[3], a40 = (s)[4]; \
    T a01 = (s)[5], a11 = (s)[6], a21 = (s)[7], a31 = (s)[8], a41 = (s)[9]; \
    T a02 = (s)[10], a12 = (s)[11], a22 = (s)[12], a32 = (s)[13], a42 = (s)[14]; \
    T a03 = (s)[15], a13 = (s)[16], a23 = (s)[17], a33 = (s)[18], a43 = (s)[19]; \
    T a04 = (s)[20], a14 = (s)[21], a24 = (s)[22], a34 = (s)[23], a44 = (s)[24]; \
    T e00, e10, e20, e30, e40, e01, e11, e21, e31, e41, e02, e12, e22, e32, e42; \
    T e03, e13, e23, e33, e43, e04, e14, e24, e34, e44; \
    T b0, b1, b2, b3, b4, c0, c1, c2, c3, c4, d0, d1, d2, d3, d4; \
    int ck_round_; \
    for (ck_round_ = 0; ck_round_ < 24; ck_round_ += 2) { /* a -> e -> a */ \
        CK_KECCAK_ROUND_AE(CK_KECCAK_RC[ck_round_]); \
        CK_KECCAK_ROUND_EA(CK_KECCAK_RC[ck_round_ + 1]); \
    } \
    (s)[0] = a00; (s)[1] = a10; (s)[2] = a20; (s)[3] = a30; (s)[4] = a40; \
    (s)[5] = a01; (s)[6] = a11; (s)[7] = a21; (s)[8] = a31; (s)[9] = a41; \
    (s)[10] = a02; (s)[11] = a12; (s)[12] = a22; (s)[13] = a32; (s)[14] = a42; \
    (s)[15] = a03; (s)[16] = a13; (s)[17] = a23; (s)[18] = a33; (s)[19] = a43; \
    (s)[20] = a04; (s)[21] = a14; (s)[22] = a24; (s)[23] = a34; (s)[24] = a44; \
} while (0)

/* Keccak-f[1600] on s[25] in place (all 24 rounds of Keccak-p[1600, 24]), portable C. */
static inline void ck_keccak_f1600_portable(uint64_t s[25]) {
    CK_KECCAK_F1600_BODY(uint64_t, s);
}

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
/* The same code compiled for BMI1: chi's ~b & c becomes one ANDN instruction (about 15%
 * fewer cycles). Chosen at run time when the CPU has BMI1, unless ck_keccak_portable is
 * set (tests exercise both). */
__attribute__((target("bmi"), noinline)) static void ck_keccak_f1600_bmi(uint64_t s[25]) {
    CK_KECCAK_F1600_BODY(uint64_t, s);
}

static int ck_keccak_have_bmi = -1;
static int ck_keccak_portable = 0;

static inline int ck_keccak_bmi_available(void) {
    if (ck_keccak_have_bmi < 0) {
        __builtin_cpu_init();
        ck_keccak_have_bmi = __builtin_cpu_supports("bmi") ? 1 : 0;
    }
    return ck_keccak_have_bmi;
}

static inline void ck_keccak_f1600(uint64_t s[25]) {
    if (!ck_keccak_portable && ck_keccak_bmi_available())
        ck_keccak_f1600_bmi(s);
    else
        ck_keccak_f1600_portable(s);
}
#else
static int ck_keccak_portable = 0;
static inline int ck_keccak_bmi_available(void) { return 0; }
static inline void ck_keccak_f1600(uint64_t s[25]) { ck_keccak_f1600_portable(s); }
#endif

/* XOR one full rate block (136 bytes) into the state and permute. */
static inline void ck_sha3_256_absorb_block(uint64_t s[25], const uint8_t *block) {
    int i;
    for (i = 0; i < CK_SHA3_256_LANES; i++)
        s[i] ^= ck_load64_le(block + 8 * i);
    ck_keccak_f1600(s);
}

static inline void ck_sha3_256_squeeze(const uint64_t s[25], uint8_t out[32]) {
    ck_store64_le(out, s[0]);
    ck_store64_le(out + 8, s[1]);
    ck_store64_le(out + 16, s[2]);
    ck_store64_le(out + 24, s[3]);
}

/* Incremental SHA3-256: buf holds the pending partial block (buflen < 136). */
typedef struct {
    uint64_t s[25];
    uint8_t buf[CK_SHA3_256_RATE];
    size_t buflen;
} ck_sha3_256_ctx;

static inline void ck_sha3_256_init(ck_sha3_256_ctx *ctx) {
    memset(ctx, 0, sizeof(*ctx));
}

static inline void ck_sha3_256_update(ck_sha3_256_ctx *ctx, const uint8_t *data, size_t len) {
    if (ctx->buflen) {
        size_t take = CK_SHA3_256_RATE - ctx->buflen;
        if (take > len) take = len;
        memcpy(ctx->buf + ctx->buflen, data, take);
        ctx->buflen += take;
        data += take;
        len -= take;
        if (ctx->buflen < CK_SHA3_256_RATE) return;
        ck_sha3_256_absorb_block(ctx->s, ctx->buf);
        ctx->buflen = 0;
    }
    while (len >= CK_SHA3_256_RATE) {     /* whole blocks straight from the input */
        ck_sha3_256_absorb_block(ctx->s, data);
        data += CK_SHA3_256_RATE;
        len -= CK_SHA3_256_RATE;
    }
    if (len) {
        memcpy(ctx->buf, data, len);
        ctx->buflen = len;
    }
}

/* Pads, absorbs the last block and writes the digest; the context is spent afterwards. */
static inline void ck_sha3_256_final(ck_sha3_256_ctx *ctx, uint8_t out[32]) {
    memset(ctx->buf + ctx->buflen, 0, CK_SHA3_256_RATE - ctx->buflen);
    ctx->buf[ctx->buflen] ^= 0x06;
    ctx->buf[CK_SHA3_256_RATE - 1] ^= 0x80;
    ck_sha3_256_absorb_block(ctx->s, ctx->buf);
    ck_sha3_256_squeeze(ctx->s, out);
}

static inline void ck_sha3_256(const uint8_t *data, size_t len, uint8_t out[32]) {
    ck_sha3_256_ctx ctx;
    ck_sha3_256_init(&ctx);
    ck_sha3_256_update(&ctx, data, len);
    ck_sha3_256_final(&ctx, out);
}

#endif /* CANONKIT_KECCAK_H */
