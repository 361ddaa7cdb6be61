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

#define CK_F_ARRAY 0
#define CK_F_MAP 1
#define CK_F_TAG 2

typedef struct {
    uint64_t left;       /* items still to read (a map counts keys and values) */
    Py_ssize_t prev;     /* map: the previous key's first byte (-1: none yet) */
    Py_ssize_t prev_len; /* map: its length (-1: none yet) */
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
    if (ai == 27) return !cd_double_fits_single(bits);
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

/* The end of the item at pos when this pass accepts it, else CK_UNSURE or CK_RAISED.
 * Reads stop at n (the input's end, or max_size after the first item's start); cbor_scan.h's
 * tests read up to full_n, the input's end. ``profile`` is one of CK_CORE, CK_DAG,
 * CK_DCBOR (a constant where this is inlined). Laid out as chk_loop is: a map's keys,
 * when short ASCII text, are taken where the item before them ends, so the head decoder
 * mostly sees values. */
CD_INLINE Py_ssize_t ck_fast_item(const unsigned char *p, Py_ssize_t n, Py_ssize_t full_n,
                                  Py_ssize_t pos, Py_ssize_t max_depth, int profile,
                                  int wide) {
    ck_frame frames[CK_FAST_DEPTH];
    ck_frame *f = NULL;
    Py_ssize_t depth = 0, start, w, end;
    unsigned ib, major, ai;
    uint64_t arg;
    int is_key, c;
    for (;;) {
        start = pos;
        if (start >= n) return CK_UNSURE;
        ib = p[start];
        major = ib >> 5;
        ai = ib & 0x1f;
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
        is_key = f != NULL && f->kind == CK_F_MAP && !(f->left & 1);
        if (profile == CK_DAG && is_key && major != 3) return CK_UNSURE;
        if (major == 3 || major == 2) {
            if (arg > (uint64_t)(n - pos)) return CK_UNSURE;
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
        } else if (major == 4 || major == 5) {
            /* as many items as bytes left at most: anything more is truncated */
            if (is_key || depth >= max_depth || arg > (uint64_t)(n - pos))
                return CK_UNSURE;
            if (arg) {
                if (depth == CK_FAST_DEPTH) return CK_UNSURE;
                f = &frames[depth++];
                if (major == 4) {
                    f->kind = CK_F_ARRAY;
                    f->left = arg;
                    continue;
                }
                f->kind = CK_F_MAP;
                f->left = 2 * arg;
                f->prev = 0;
                f->prev_len = -1;
                goto key;
            }
        } else if (major == 7) {
            if (ai >= 25) {
                if (!ck_float_ok(profile, ai, arg)) return CK_UNSURE;
            } else if ((arg < 20 || arg > 22) && profile != CK_CORE) {
                return CK_UNSURE; /* only false, true and null outside core */
            }
        } else if (major == 1) {
            if (profile == CK_DCBOR && arg >= 0x8000000000000000ULL) return CK_UNSURE;
        } else if (major == 6) {
            if (is_key || depth >= max_depth) return CK_UNSURE;
            if (profile == CK_DAG) { /* a link: 42, then bytes 0x00 + a CID */
                if (arg != 42 || cd_link_content(p, n, pos, &end) < 0) return CK_UNSURE;
                pos = end;
            } else {
                if (arg == 2 || arg == 3 || depth == CK_FAST_DEPTH) /* 2, 3: bignums */
                    return CK_UNSURE;
                f = &frames[depth++];
                f->kind = CK_F_TAG;
                f->left = 1;
                continue;
            }
        }
        /* the item start..pos is complete: account for it in the open frames */
        for (;;) {
            if (f == NULL) return pos;
            if (f->kind == CK_F_MAP) {
                if (!(f->left & 1)) { /* a key (never a container): the value is next */
                    if (ck_key_order(p, full_n, start, pos, &f->prev, &f->prev_len) >= 0)
                        return CK_UNSURE;
                    f->left--;
                    break;
                }
                if (--f->left) goto key;
            } else if (--f->left) {
                break;
            }
            /* the container or tag is complete: an item of the one around it */
            depth--;
            f = depth ? &frames[depth - 1] : NULL;
        }
        continue;
    key: /* f is a map whose next item is a key: taken here when short ASCII text */
        end = ck_short_key(p, n, full_n, pos, &f->prev, &f->prev_len, &c, wide);
        if (end >= 0) {
            if (c >= 0) return CK_UNSURE; /* out of order */
            pos = end;
            f->left--;
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
