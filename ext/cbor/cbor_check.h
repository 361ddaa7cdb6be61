/* The validator's first pass (ext/cbor/_decode.pyx, check_item): a small C loop that
 * accepts the common valid item and answers "not sure" about everything else.
 *
 * ``check`` runs it first. When it returns the end of the item, the item is valid: it
 * accepts only what the full validator (chk_loop, the twin's checks in the twin's order)
 * accepts. When it returns CK_UNSURE, nothing is decided: chk_loop validates the item
 * from its start and raises the exact error (class, code, offset) or accepts it. So a
 * refusal is always chk_loop's, and an input that fails costs at most this pass more.
 *
 * What it leaves to chk_loop (returns CK_UNSURE): any error; containers and tags as map
 * keys; nesting deeper than CK_FAST_DEPTH; the bignum tags 2 and 3; everything once
 * max_items is set (the caller). What it does, as chk_loop does: heads in their
 * shortest form and inside the input, strict UTF-8 (cbor_utf8.h) and dcbor's NFC (the
 * same Python call, through ck_nfc_ok), map keys in order (cbor_scan.h), dag-cbor's text
 * keys and tag 42 with its CID, the profiles' integer, float and simple value rules,
 * and max_depth (a container or tag opened with max_depth frames open is left to
 * chk_loop, which refuses it).
 *
 * Why a second loop: chk_loop is one large function whose speed moves by 5-15% with any
 * change to its code (its many live values compete for registers); this loop keeps its
 * whole state (position, the open frames) in a few registers and an array on the stack.
 */
#ifndef CANONKIT_CBOR_CHECK_H
#define CANONKIT_CBOR_CHECK_H

#include <Python.h>
#include <stdint.h>

#include "cbor_dec.h"   /* heads, floats, CIDs */
#include "cbor_float.h" /* dcbor's numeric reduction */
#include "cbor_scan.h"  /* ck_is_ascii_w, ck_key_order, ck_short_key */
#include "cbor_utf8.h"  /* cd_utf8_kind */

/* the profile numbers of cbor_profile.pxi (P_CORE, P_DCBOR, P_DAG) */
#define CK_CORE 0
#define CK_DCBOR 1
#define CK_DAG 2

/* Text from this length on goes straight to the UTF-8 kernels, shorter text through the
 * inline ASCII test first (_decode.pyx's LONG_TEXT, which says why). */
#define CK_LONG_TEXT 64

/* Open containers and tags this pass keeps; deeper items are left to chk_loop. */
#define CK_FAST_DEPTH 64

#define CK_F_NONE 0 /* no frame open */
#define CK_F_ARRAY 1
#define CK_F_MAP 2
#define CK_F_TAG 3

typedef struct {
    uint64_t left;       /* items still to read (a map counts keys and values) */
    Py_ssize_t prev;     /* map: the offset of the previous key's head */
    Py_ssize_t prev_len; /* map: that key's length (-1: no key yet) */
    int kind;
} ck_frame;

/* Whether the shortest head of the argument needs a shorter form than ai (24-27). */
CD_INLINE int ck_non_shortest(unsigned ai, uint64_t arg) {
    if (ai == 24) return arg < 24;
    if (ai == 25) return arg <= 0xff;
    if (ai == 26) return arg <= 0xffff;
    return arg <= 0xffffffffULL;
}

/* Whether the profile accepts the float with head ai (25-27) and these bits: float_ok
 * of _decode.pyx. */
CD_INLINE int ck_float_ok(int profile, unsigned ai, uint64_t bits) {
    double x;
    if (profile == CK_DAG) /* binary64 only; no NaN, infinity or -0.0 */
        return ai == 27 && (bits & 0x7ff0000000000000ULL) != 0x7ff0000000000000ULL &&
               bits != 0x8000000000000000ULL;
    if (profile == CK_DCBOR) { /* one NaN (f97e00); integral values are integers */
        x = ai == 27   ? cbor_bits_to_double(bits)
            : ai == 26 ? cbor_single_to_double((uint32_t)bits)
                       : cbor_half_to_double((uint16_t)bits);
        if (x != x ? ai != 25 || bits != 0x7e00 : cbor_float_is_reducible(x)) return 0;
    }
    /* a binary64 with any of its 29 low mantissa bits set is never a binary32 (the
     * common case, tested first) */
    if (ai == 27) return (bits & 0x1fffffffULL) != 0 || !cd_double_fits_single(bits);
    if (ai == 26) return !cd_single_fits_half((uint32_t)bits);
    return 1; /* binary16 is the shortest */
}

/* dcbor's NFC test of non-ASCII text (valid UTF-8), set by _decode.pyx at import: 1 (NFC),
 * 0 (not), -1 (an exception is set). */
static int (*ck_nfc_ok)(const unsigned char *, Py_ssize_t) = NULL;

/* ck_fast_item's answers besides an end: not sure, and an exception raised (by
 * ck_nfc_ok: the full validator would meet the same one). */
#define CK_UNSURE (-1)
#define CK_RAISED (-2)

/* The head at start (inside the first n bytes, its argument in the shortest form): the
 * offset after it, its argument in *arg; else CK_UNSURE. */
CD_INLINE Py_ssize_t ck_head(const unsigned char *p, Py_ssize_t n, Py_ssize_t start,
                             unsigned ib, uint64_t *arg) {
    unsigned ai = ib & 0x1f;
    Py_ssize_t w;
    if (ai < 24) {
        *arg = ai;
        return start + 1;
    }
    if (cd_unlikely(ai >= 28)) return CK_UNSURE; /* reserved, or indefinite length */
    w = (Py_ssize_t)1 << (ai - 24);
    if (n - start - 1 < w) return CK_UNSURE;
    *arg = ai == 24   ? p[start + 1]
           : ai == 25 ? cd_be16(p + start + 1)
           : ai == 26 ? cd_be32(p + start + 1)
                      : cd_be64(p + start + 1);
    if (ib < 0xe0 ? ck_non_shortest(ai, *arg) : ai == 24 && *arg < 32) return CK_UNSURE;
    return start + 1 + w;
}

/* Whether the profile accepts the number or simple value of major type 0, 1 or 7 with
 * this head. */
CD_INLINE int ck_scalar_ok(int profile, unsigned ib, uint64_t arg) {
    unsigned ai = ib & 0x1f;
    if (ib < 0x20) return 1;
    if (ib < 0x40) return profile != CK_DCBOR || arg < 0x8000000000000000ULL;
    if (ai >= 25) return ck_float_ok(profile, ai, arg);
    return profile == CK_CORE || (arg >= 20 && arg <= 22); /* false, true, null */
}

/* The end of the item at pos when this pass accepts it, else CK_UNSURE or CK_RAISED.
 * Items must end inside the first n bytes (the input's end, or max_size after the first
 * item's start); cbor_scan.h's tests read up to full_n, the input's end. ``profile`` is
 * one of CK_CORE, CK_DAG, CK_DCBOR and ``wide`` says whether to use AVX-512 (constants
 * where this is inlined). Laid out as chk_loop is: a map's keys, when short ASCII text,
 * are taken where the item before them ends, so the head decoder mostly sees values. */
CD_INLINE Py_ssize_t ck_fast_item(const unsigned char *p, Py_ssize_t n, Py_ssize_t full_n,
                                  Py_ssize_t pos, Py_ssize_t max_depth, int profile,
                                  int wide) {
    /* the innermost open frame lives in locals (registers), the ones around it in saved */
    ck_frame saved[CK_FAST_DEPTH];
    Py_ssize_t depth = 0, start, end, w, prev = 0, prev_len = -1;
    uint64_t arg, left = 0, k;
    unsigned ib, major, ai;
    int kind = CK_F_NONE, is_key, c;
    for (;;) {
        start = pos;
        if (start >= n) return CK_UNSURE;
        ib = p[start];
        major = ib >> 5;
        ai = ib & 0x1f;
        /* ck_head, written out (calling it made twitter and citm 2-4% slower) */
        if (ai < 24) {
            arg = ai;
            pos = start + 1;
        } else if (cd_likely(ai < 28)) {
            w = (Py_ssize_t)1 << (ai - 24);
            if (n - start - 1 < w) return CK_UNSURE;
            arg = ai == 24   ? p[start + 1]
                  : ai == 25 ? cd_be16(p + start + 1)
                  : ai == 26 ? cd_be32(p + start + 1)
                             : cd_be64(p + start + 1);
            if (major != 7 ? ck_non_shortest(ai, arg) : ai == 24 && arg < 32)
                return CK_UNSURE;
            pos = start + 1 + w;
        } else {
            return CK_UNSURE; /* reserved, or indefinite length */
        }
        /* a map's key here is one ck_short_key did not take */
        is_key = kind == CK_F_MAP && !(left & 1);
        if (major == 3 || major == 2) {
            if (arg > (uint64_t)(n - pos) || (profile == CK_DAG && major == 2 && is_key))
                return CK_UNSURE;
            if (major == 3 &&
                (arg >= CK_LONG_TEXT ||
                 !ck_is_ascii_w(p + pos, (Py_ssize_t)arg, full_n - pos, wide))) {
                c = cd_utf8_kind(p + pos, (Py_ssize_t)arg);
                if (c == CU_INVALID) return CK_UNSURE;
                if (profile == CK_DCBOR && c == CU_UNICODE) {
                    if (ck_nfc_ok == NULL) return CK_UNSURE;
                    c = ck_nfc_ok(p + pos, (Py_ssize_t)arg);
                    if (c <= 0) return c < 0 ? CK_RAISED : CK_UNSURE;
                }
            }
            pos += (Py_ssize_t)arg;
        } else if (major == 4 || major == 5 || major == 6) {
            /* a container (at most as many items as bytes left: more is truncated) or a
             * tag */
            if (is_key || depth >= max_depth || (major != 6 && arg > (uint64_t)(n - pos)))
                return CK_UNSURE;
            if (major == 6) {
                if (profile == CK_DAG) { /* a link: 42, then bytes 0x00 + a CID */
                    if (arg != 42 || cd_link_content(p, n, pos, &end) < 0) return CK_UNSURE;
                    pos = end;
                    goto done;
                }
                if (arg == 2 || arg == 3) return CK_UNSURE; /* bignums */
                arg = 1;
            } else if (major == 4) {
                /* its numbers and simple values are read here, the frames untouched (an
                 * array of them, like a coordinate pair, opens no frame) */
                for (k = arg; k; k--) {
                    if (pos >= n) break;
                    ib = p[pos];
                    if (ib >= 0xfc || (ib >= 0x40 && ib < 0xe0)) break; /* majors 0, 1, 7 */
                    end = ck_head(p, n, pos, ib, &arg);
                    if (end < 0 || !ck_scalar_ok(profile, ib, arg)) break;
                    pos = end;
                }
                arg = k;
            }
            if (!arg) goto done; /* complete (or empty) */
            if (depth == CK_FAST_DEPTH) return CK_UNSURE;
            if (depth) {
                saved[depth - 1].left = left;
                saved[depth - 1].prev = prev;
                saved[depth - 1].prev_len = prev_len;
                saved[depth - 1].kind = kind;
            }
            depth++;
            if (major == 5) {
                kind = CK_F_MAP;
                left = 2 * arg;
                prev = 0;
                prev_len = -1;
                goto key;
            }
            kind = major == 4 ? CK_F_ARRAY : CK_F_TAG;
            left = arg;
            continue;
        } else if (!ck_scalar_ok(profile, ib, arg) || (profile == CK_DAG && is_key)) {
            return CK_UNSURE; /* major 0, 1, 7; dag-cbor's keys are text */
        }
    done: /* the item start..pos is complete: account for it in the open frames */
        for (;;) {
            if (!depth) return pos;
            if (kind == CK_F_MAP) {
                if (!(left & 1)) { /* a key (never a container): the value is next */
                    if (ck_key_order(p, full_n, start, pos, &prev, &prev_len) >= 0)
                        return CK_UNSURE;
                    left--;
                    break;
                }
                if (--left) goto key;
            } else if (--left) {
                break;
            }
            /* the container or tag is complete: an item of the one around it */
            if (--depth) {
                left = saved[depth - 1].left;
                prev = saved[depth - 1].prev;
                prev_len = saved[depth - 1].prev_len;
                kind = saved[depth - 1].kind;
            }
        }
        continue;
    key: /* a map's next item is a key: taken here when short ASCII text */
        end = ck_short_key(p, n, full_n, pos, &prev, &prev_len, &c, wide);
        if (end >= 0) {
            if (c >= 0) return CK_UNSURE; /* out of order */
            pos = end;
            left--;
        }
    }
}

/* One out-of-line copy per profile, and with AVX-512 one more per profile (the short
 * ASCII tests as masked loads: bench/cbor_ab.py, twitter 3-4% faster); ck_fast_check
 * picks one. */
#if defined(_MSC_VER)
#define CK_NOINLINE static __declspec(noinline)
#else
#define CK_NOINLINE static __attribute__((noinline))
#endif
#define CK_FAST_COPY(name, attributes, profile, wide)                                    \
    CK_NOINLINE attributes Py_ssize_t name(const unsigned char *p, Py_ssize_t n,          \
                                           Py_ssize_t full_n, Py_ssize_t pos,             \
                                           Py_ssize_t max_depth) {                        \
        return ck_fast_item(p, n, full_n, pos, max_depth, profile, wide);                 \
    }
CK_FAST_COPY(ck_fast_core, , CK_CORE, 0)
CK_FAST_COPY(ck_fast_dcbor, , CK_DCBOR, 0)
CK_FAST_COPY(ck_fast_dag, , CK_DAG, 0)
#if CU_X86
CK_FAST_COPY(ck_fast_core_avx512, CK_AVX512_TARGET, CK_CORE, 1)
CK_FAST_COPY(ck_fast_dcbor_avx512, CK_AVX512_TARGET, CK_DCBOR, 1)
CK_FAST_COPY(ck_fast_dag_avx512, CK_AVX512_TARGET, CK_DAG, 1)
#endif

/* Whether check runs this pass first (a test hook turns it off, to compare the two). */
static int ck_fast_enabled = 1;

/* The pass for the profile, with AVX-512 when the UTF-8 kernel in use is the AVX-512 one
 * (cu_utf8_select: the CPU has it, and the test hook can take it away). */
static inline Py_ssize_t ck_fast_check(const unsigned char *p, Py_ssize_t n,
                                       Py_ssize_t full_n, Py_ssize_t pos,
                                       Py_ssize_t max_depth, int profile) {
    if (!ck_fast_enabled) return CK_UNSURE;
#if CU_X86
    if (cu_utf8_kernel == CU_AVX512) {
        if (profile == CK_CORE) return ck_fast_core_avx512(p, n, full_n, pos, max_depth);
        if (profile == CK_DCBOR) return ck_fast_dcbor_avx512(p, n, full_n, pos, max_depth);
        return ck_fast_dag_avx512(p, n, full_n, pos, max_depth);
    }
#endif
    if (profile == CK_CORE) return ck_fast_core(p, n, full_n, pos, max_depth);
    if (profile == CK_DCBOR) return ck_fast_dcbor(p, n, full_n, pos, max_depth);
    return ck_fast_dag(p, n, full_n, pos, max_depth);
}

#endif /* CANONKIT_CBOR_CHECK_H */
