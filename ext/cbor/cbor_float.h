/* IEEE 754 binary16/32/64 conversions for the CBOR codec, done on the bit patterns.
 *
 * Why bit-level: a C float<->double cast goes through the FPU, which quiets signalling
 * NaNs (sets the top mantissa bit) and so changes the payload. CBOR core keeps NaN
 * payloads, so every conversion here moves sign, exponent and mantissa explicitly.
 * All functions are exact; none rounds.
 */
#ifndef CANONKIT_CBOR_FLOAT_H
#define CANONKIT_CBOR_FLOAT_H

#include <math.h>
#include <stdint.h>
#include <string.h>

static inline double cbor_bits_to_double(uint64_t b) {
    double d;
    memcpy(&d, &b, 8);
    return d;
}

static inline uint64_t cbor_double_to_bits(double d) {
    uint64_t b;
    memcpy(&b, &d, 8);
    return b;
}

/* binary16 -> binary64, exact, NaN payload kept. */
static inline double cbor_half_to_double(uint16_t h) {
    uint64_t sign = (uint64_t)(h >> 15) << 63;
    unsigned exp = (h >> 10) & 0x1f;
    uint64_t mant = h & 0x3ff;
    if (exp == 0) { /* zero or subnormal: mant * 2^-24 is exact in binary64 */
        double v = ldexp((double)mant, -24);
        return sign ? -v : v;
    }
    if (exp == 31) /* Inf / NaN */
        return cbor_bits_to_double(sign | 0x7ff0000000000000ULL | (mant << 42));
    return cbor_bits_to_double(sign | ((uint64_t)(exp - 15 + 1023) << 52) | (mant << 42));
}

/* binary32 -> binary64, exact, NaN payload kept. */
static inline double cbor_single_to_double(uint32_t f) {
    uint64_t sign = (uint64_t)(f >> 31) << 63;
    unsigned exp = (f >> 23) & 0xff;
    uint64_t mant = f & 0x7fffff;
    if (exp == 0) {
        double v = ldexp((double)mant, -149);
        return sign ? -v : v;
    }
    if (exp == 255)
        return cbor_bits_to_double(sign | 0x7ff0000000000000ULL | (mant << 29));
    return cbor_bits_to_double(sign | ((uint64_t)(exp - 127 + 1023) << 52) | (mant << 29));
}

/* The shortest of binary16/32/64 that holds x exactly (NaN: that keeps its payload and
 * sign). Returns the width in bytes (2, 4 or 8) and stores that width's bit pattern. */
static inline int cbor_float_shortest(double x, uint64_t *out) {
    uint64_t b = cbor_double_to_bits(x);
    uint64_t sign = b >> 63;
    int exp = (int)((b >> 52) & 0x7ff);
    uint64_t mant = b & 0xfffffffffffffULL;
    uint64_t m53;
    int e, shift;

    if (exp == 0x7ff) { /* Inf or NaN */
        if ((mant & ((1ULL << 42) - 1)) == 0) {
            *out = (sign << 15) | 0x7c00 | (mant >> 42);
            return 2;
        }
        if ((mant & ((1ULL << 29) - 1)) == 0) {
            *out = (sign << 31) | 0x7f800000ULL | (mant >> 29);
            return 4;
        }
        *out = b;
        return 8;
    }
    if (exp == 0) {
        if (mant == 0) { /* +-0 */
            *out = sign << 15;
            return 2;
        }
        *out = b; /* binary64 subnormals are far below binary32's range */
        return 8;
    }
    e = exp - 1023;
    m53 = (1ULL << 52) | mant;
    if (e >= -14 && e <= 15) {
        if ((mant & ((1ULL << 42) - 1)) == 0) {
            *out = (sign << 15) | ((uint64_t)(e + 15) << 10) | (mant >> 42);
            return 2;
        }
    } else if (e >= -24 && e < -14) { /* binary16 subnormal: k * 2^-24, k < 2^10 */
        shift = 28 - e;
        if ((m53 & ((1ULL << shift) - 1)) == 0) {
            *out = (sign << 15) | (m53 >> shift);
            return 2;
        }
    }
    if (e >= -126 && e <= 127) {
        if ((mant & ((1ULL << 29) - 1)) == 0) {
            *out = (sign << 31) | ((uint64_t)(e + 127) << 23) | (mant >> 29);
            return 4;
        }
    } else if (e >= -149 && e < -126) { /* binary32 subnormal: k * 2^-149, k < 2^23 */
        shift = -97 - e;
        if ((m53 & ((1ULL << shift) - 1)) == 0) {
            *out = (sign << 31) | (m53 >> shift);
            return 4;
        }
    }
    *out = b;
    return 8;
}

/* dcbor numeric reduction: x is integral and inside -2^63 .. 2^64-1. */
static inline int cbor_float_is_reducible(double x) {
    return x == floor(x) && x >= -9223372036854775808.0 && x < 18446744073709551616.0;
}

#endif
