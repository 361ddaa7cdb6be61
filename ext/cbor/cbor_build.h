/* Object building helpers of the CBOR decoder (ext/cbor/_decode.pyx): the short-key cache,
 * the tables of small ints and one-character strings, and the common scalars read in one
 * step (cb_scalar). Used with the GIL held.
 */
#ifndef CANONKIT_CBOR_BUILD_H
#define CANONKIT_CBOR_BUILD_H

#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "cbor_dec.h"   /* CD_INLINE, CD_LITTLE_ENDIAN, heads, ASCII checks */
#include "cbor_float.h" /* cbor_bits_to_double */

/* --- the short-key cache -------------------------------------------------------------
 * Decoded ASCII text map keys of up to CB_KEY_MAX bytes, keyed by their bytes: repeated
 * keys (records, JSON-like documents) are neither re-validated nor re-allocated, and the
 * shared str objects keep their cached hashes for the dict insert. A slot keeps the key's
 * first 16 bytes as two words (zero past the key's end) and its length, so a key of up to
 * 16 bytes is hashed and confirmed with a few word operations and no call; longer keys
 * also compare their remaining bytes. Entries are compact ASCII strs only, so a hit is
 * also the key's ASCII check. Collisions only cost a miss (the slot is then replaced). */
#define CB_KEY_SLOTS 1024 /* 2^10: cb_key_slot_of takes the hash's top 10 bits */
#define CB_KEY_MAX 32

typedef struct {
    uint64_t w[2];
    PyObject *str;
    Py_ssize_t n; /* -1: empty */
} cb_key_slot;

static cb_key_slot cb_keys[CB_KEY_SLOTS];

/* The first 16 bytes of the n-byte key at s as two words, zero past n; `avail` bytes can
 * be read at s (whole words are loaded and masked where the buffer has room). */
CD_INLINE void cb_key_words(const unsigned char *s, Py_ssize_t n, Py_ssize_t avail,
                            uint64_t *w) {
    if (CD_LITTLE_ENDIAN && avail >= 16) {
        memcpy(&w[0], s, 8);
        memcpy(&w[1], s + 8, 8);
        if (n < 8) {
            w[0] &= ((uint64_t)1 << (8 * n)) - 1;
            w[1] = 0;
        } else if (n < 16) {
            w[1] &= ((uint64_t)1 << (8 * (n - 8))) - 1;
        }
        return;
    }
    if (CD_LITTLE_ENDIAN && n < 8 && avail >= 8) {
        memcpy(&w[0], s, 8);
        w[0] &= ((uint64_t)1 << (8 * n)) - 1;
        w[1] = 0;
        return;
    }
    w[0] = w[1] = 0;
    memcpy(w, s, (size_t)(n < 16 ? n : 16));
}

/* The slot of the n-byte key at s whose words are w. One multiply on the path from the
 * first word to the slot: the slot's load waits for the hash, so the hash is short. */
CD_INLINE size_t cb_key_slot_of(const uint64_t *w, const unsigned char *s, Py_ssize_t n) {
    uint64_t h = w[1] * 0xC2B2AE3D27D4EB4FULL, tail;
    if (n > 16) { /* the last 8 bytes too: long keys often share their first 16 */
        memcpy(&tail, s + n - 8, 8);
        h ^= tail * 0x165667B19E3779F9ULL;
    }
    h = ((w[0] ^ h) + (uint64_t)n) * 0x9E3779B97F4A7C15ULL;
    return (size_t)(h >> 54); /* the top bits mix best */
}

/* Whether slot e holds the n-byte key at s, whose words are w. */
CD_INLINE int cb_key_is(const cb_key_slot *e, const uint64_t *w, const unsigned char *s,
                        Py_ssize_t n) {
    return e->n == n && e->w[0] == w[0] && e->w[1] == w[1] &&
           (n <= 16 || memcmp((const char *)PyUnicode_DATA(e->str) + 16, s + 16,
                              (size_t)(n - 16)) == 0);
}

/* Put a new str of the n ASCII bytes at s (words w) in slot e; -1 when out of memory. */
static int cb_key_fill(cb_key_slot *e, const uint64_t *w, const unsigned char *s,
                       Py_ssize_t n) {
    PyObject *old = e->str;
    PyObject *r = PyUnicode_New(n, 127);
    if (r == NULL)
        return -1;
    memcpy(PyUnicode_DATA(r), s, (size_t)n);
    e->str = r;
    e->n = n;
    e->w[0] = w[0];
    e->w[1] = w[1];
    Py_XDECREF(old); /* a str: releasing it runs no Python code */
    return 0;
}

/* The next key of a map, at pos, when it is the common kind: a text string of 0-23 ASCII
 * bytes, or 24-CB_KEY_MAX in its shortest head, inside the first n bytes of p (reads stay
 * below full_n). Returns the offset after it, having set *key (a new reference, from the
 * cache when it was seen) and *order, the key's order after the previous key (*prev_start,
 * *prev_len), which it becomes (cd_key_order: >= 0 is an error the caller reports). -1:
 * not the common kind, nothing done; -2: out of memory. */
CD_INLINE Py_ssize_t cb_take_key(const unsigned char *p, Py_ssize_t n, Py_ssize_t full_n,
                                 Py_ssize_t pos, PyObject **key, Py_ssize_t *prev_start,
                                 Py_ssize_t *prev_len, int *order) {
    Py_ssize_t len, at, end;
    unsigned ib;
    uint64_t w[2];
    cb_key_slot *e;
    if (pos >= n)
        return -1;
    ib = p[pos];
    if (ib >= 0x60 && ib < 0x78) {
        len = (Py_ssize_t)ib - 0x60;
        at = pos + 1;
    } else if (ib == 0x78 && pos + 1 < n && p[pos + 1] >= 24 && p[pos + 1] <= CB_KEY_MAX) {
        len = p[pos + 1];
        at = pos + 2;
    } else {
        return -1;
    }
    end = at + len;
    if (end > n)
        return -1;
    cb_key_words(p + at, len, full_n - at, w);
    e = &cb_keys[cb_key_slot_of(w, p + at, len)];
    if (!cb_key_is(e, w, p + at, len)) { /* a hit was ASCII when it was cached */
        if (end + 8 <= full_n ? !cd_is_ascii_padded(p + at, len) : !cd_is_ascii(p + at, len))
            return -1;
        if (cb_key_fill(e, w, p + at, len) < 0)
            return -2;
    }
    Py_INCREF(e->str);
    *key = e->str;
    *order = cd_key_order(p, full_n, pos, end, prev_start, prev_len);
    return end;
}

/* --- small ints and one-character strings ------------------------------------------------
 * Unsigned ints below CB_SMALL_INTS and one-character ASCII strings, built once: CPython's
 * own shared objects for those values (what int() and str() give), handed out with a
 * reference instead of a call that looks them up. */
#define CB_SMALL_INTS 256

static PyObject *cb_small_ints[CB_SMALL_INTS];
static PyObject *cb_chars[128];

/* Fill the tables and empty the key cache; -1 with an exception on failure. */
static int cb_init(void) {
    int i;
    for (i = 0; i < CB_KEY_SLOTS; i++) {
        cb_keys[i].n = -1;
        cb_keys[i].str = NULL;
    }
    for (i = 0; i < CB_SMALL_INTS; i++)
        if ((cb_small_ints[i] = PyLong_FromLong(i)) == NULL)
            return -1;
    for (i = 0; i < 128; i++)
        if ((cb_chars[i] = PyUnicode_FromOrdinal(i)) == NULL)
            return -1;
    return 0;
}

/* The int of a major type 0 argument (a new reference). */
CD_INLINE PyObject *cb_uint(uint64_t arg) {
    if (arg < CB_SMALL_INTS) {
        Py_INCREF(cb_small_ints[arg]);
        return cb_small_ints[arg];
    }
    if (arg <= (uint64_t)INT64_MAX)
        return PyLong_FromLongLong((long long)arg);
    return PyLong_FromUnsignedLongLong(arg);
}

/* The str of the n ASCII bytes at s (a new reference). */
CD_INLINE PyObject *cb_ascii(const unsigned char *s, Py_ssize_t n) {
    PyObject *r;
    if (n == 1) {
        Py_INCREF(cb_chars[s[0]]);
        return cb_chars[s[0]];
    }
    r = PyUnicode_New(n, 127);
    if (r != NULL)
        memcpy(PyUnicode_DATA(r), s, (size_t)n);
    return r;
}

/* --- the common scalars ---------------------------------------------------------------
 * Most items of most documents are scalars that are valid as they stand: the decode loop
 * reads an array's items and a map's values through cb_scalar while they are, without its
 * generic head decoding and dispatch. Anything else, valid or not, is left to the generic
 * path, which reports what is wrong with it: cb_scalar accepts exactly what that path
 * accepts without an error, so the two cannot disagree about validity. */
#define CB_CORE 0
#define CB_DCBOR 1
#define CB_DAG 2

/* The length of the head at p[at] (its additional information ai, at most `widest`, of
 * 24-27) when its argument is inside the first n bytes and in its shortest form, with
 * *arg; 0 for any other head. */
CD_INLINE int cb_short_head(const unsigned char *p, Py_ssize_t n, Py_ssize_t at, unsigned ai,
                            unsigned widest, uint64_t *arg) {
    if (ai < 24) {
        *arg = ai;
        return 1;
    }
    if (ai > widest)
        return 0;
    if (ai == 24)
        return n - at >= 2 && (*arg = p[at + 1]) >= 24 ? 2 : 0;
    if (ai == 25)
        return n - at >= 3 && (*arg = cd_be16(p + at + 1)) > 0xff ? 3 : 0;
    if (ai == 26)
        return n - at >= 5 && (*arg = cd_be32(p + at + 1)) > 0xffff ? 5 : 0;
    return n - at >= 9 && (*arg = cd_be64(p + at + 1)) > 0xffffffffULL ? 9 : 0;
}

/* The item at *pos when it is one of the common scalars (profile: CB_CORE, CB_DCBOR,
 * CB_DAG), inside the first n bytes of p (reads stay below full_n): an int in its shortest
 * head (a negative one down to -2^63); a byte string or a text string of up to 65535
 * bytes in its shortest head (text: ASCII, or valid UTF-8 outside dcbor, whose non-ASCII
 * text must also be NFC); false, true or null; a binary64 float that the profile takes
 * as it is (dag-cbor: finite and not -0.0; core: not exactly a binary32; dcbor: none).
 * Returns 1 with *out (a new reference) and *pos after the item; 0 for anything else,
 * nothing done; -1 with an exception (out of memory). */
CD_INLINE int cb_scalar(const unsigned char *p, Py_ssize_t n, Py_ssize_t full_n,
                        Py_ssize_t *pos, int profile, PyObject **out) {
    Py_ssize_t at = *pos;
    unsigned ib, ai;
    int w;
    uint64_t arg;
    PyObject *r;
    if (at >= n)
        return 0;
    ib = p[at];
    if (ib == 0xfb && profile != CB_DCBOR) { /* floats first: the bulk of numeric data */
        if (n - at < 9)
            return 0;
        arg = cd_be64(p + at + 1);
        if (profile == CB_DAG ? (arg & 0x7ff0000000000000ULL) == 0x7ff0000000000000ULL ||
                                    arg == 0x8000000000000000ULL
                              : cd_double_fits_single(arg))
            return 0;
        r = PyFloat_FromDouble(cbor_bits_to_double(arg));
        if (r == NULL)
            return -1;
        *out = r;
        *pos = at + 9;
        return 1;
    }
    ai = ib & 0x1f;
    switch (ib >> 5) {
    case 0:
    case 1:
        w = cb_short_head(p, n, at, ai, 27, &arg);
        if (w == 0)
            return 0;
        at += w;
        if (ib < 0x20)
            r = cb_uint(arg);
        else if (arg < 0x8000000000000000ULL)
            r = PyLong_FromLongLong(-1 - (long long)arg);
        else
            return 0;
        break;
    case 2:
    case 3:
        w = cb_short_head(p, n, at, ai, 25, &arg);
        if (w == 0)
            return 0;
        at += w;
        if ((Py_ssize_t)arg > n - at)
            return 0;
        if (ib < 0x60) {
            r = PyBytes_FromStringAndSize((const char *)p + at, (Py_ssize_t)arg);
        } else if (at + (Py_ssize_t)arg + 8 <= full_n ? cd_is_ascii_padded(p + at, (Py_ssize_t)arg)
                                                      : cd_is_ascii(p + at, (Py_ssize_t)arg)) {
            r = cb_ascii(p + at, (Py_ssize_t)arg);
        } else if (profile == CB_DCBOR) {
            return 0;
        } else {
            r = PyUnicode_DecodeUTF8((const char *)p + at, (Py_ssize_t)arg, NULL);
            if (r == NULL && PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
                PyErr_Clear(); /* invalid: the generic path reports it */
                return 0;
            }
        }
        at += (Py_ssize_t)arg;
        break;
    case 7:
        if (ib == 0xf4) {
            r = Py_False;
            Py_INCREF(r);
        } else if (ib == 0xf5) {
            r = Py_True;
            Py_INCREF(r);
        } else if (ib == 0xf6) {
            r = Py_None;
            Py_INCREF(r);
        } else {
            return 0;
        }
        at += 1;
        break;
    default:
        return 0;
    }
    if (r == NULL)
        return -1;
    *out = r;
    *pos = at;
    return 1;
}

/* A new list of the k references at items, which it takes; NULL when out of memory (the
 * references stay the caller's). PyList_New(k) would zero the item array only for it to
 * be overwritten at once: where the list's layout is the documented one of the GIL
 * builds of CPython (an item array from PyMem_Malloc, which list_dealloc releases with
 * PyMem_Free), the array is allocated and filled here and handed to an empty list. */
CD_INLINE PyObject *cb_list_of(PyObject *const *items, Py_ssize_t k) {
    PyObject *list;
#if !defined(PYPY_VERSION) && !defined(Py_GIL_DISABLED) && !defined(Py_LIMITED_API)
    PyObject **mem;
    if (k == 0)
        return PyList_New(0);
    mem = (PyObject **)PyMem_Malloc((size_t)k * sizeof(PyObject *));
    if (mem == NULL)
        return PyErr_NoMemory();
    list = PyList_New(0);
    if (list == NULL) {
        PyMem_Free(mem);
        return NULL;
    }
    memcpy(mem, items, (size_t)k * sizeof(PyObject *));
    ((PyListObject *)list)->ob_item = mem;
    ((PyListObject *)list)->allocated = k;
    Py_SET_SIZE(list, k);
#else
    Py_ssize_t i;
    list = PyList_New(k);
    if (list == NULL)
        return NULL;
    for (i = 0; i < k; i++)
        PyList_SET_ITEM(list, i, items[i]);
#endif
    return list;
}

/* A small array (0-23 items) of common scalars read in one step, for a caller that has
 * found that opening an array here passes every limit (depth, max_items): 1 with *out (a
 * new list) and *pos after the array; 0 when the item at *pos is anything else (not such
 * an array, or an item that is not a common scalar), nothing done; -1 with an exception. */
CD_INLINE int cb_small_array(const unsigned char *p, Py_ssize_t n, Py_ssize_t full_n,
                             Py_ssize_t *pos, int profile, PyObject **out) {
    Py_ssize_t at = *pos, k, i;
    PyObject *items[23];
    PyObject *list;
    int r;
    if (at >= n || p[at] < 0x80 || p[at] > 0x97) /* 0-23 items, in the head */
        return 0;
    k = (Py_ssize_t)p[at] - 0x80;
    at++;
    for (i = 0; i < k; i++) {
        r = cb_scalar(p, n, full_n, &at, profile, &items[i]);
        if (r <= 0) {
            while (i > 0)
                Py_DECREF(items[--i]);
            return r;
        }
    }
    list = cb_list_of(items, k);
    if (list == NULL) {
        while (k > 0)
            Py_DECREF(items[--k]);
        return -1;
    }
    *out = list;
    *pos = at;
    return 1;
}

/* The next item of a container, at *pos, when it is a common scalar (cb_scalar) or, with
 * `arrays` (an array opened here passes every limit, outside map keys), a small array of
 * those (cb_small_array): 1 with *out and *pos after it; 0 for anything else, nothing
 * done; -1 with an exception. */
CD_INLINE int cb_common_item(const unsigned char *p, Py_ssize_t n, Py_ssize_t full_n,
                             Py_ssize_t *pos, int profile, int arrays, PyObject **out) {
    Py_ssize_t at = *pos;
    if (arrays && at < n && (unsigned)(p[at] - 0x80) < 24)
        return cb_small_array(p, n, full_n, pos, profile, out);
    return cb_scalar(p, n, full_n, pos, profile, out);
}

#endif
