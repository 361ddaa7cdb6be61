/* Object building helpers of the CBOR decoder (ext/cbor/_decode.pyx): the short-key cache,
 * the table of small ints and the table of one-character strings. Used with the GIL held.
 */
#ifndef CANONKIT_CBOR_BUILD_H
#define CANONKIT_CBOR_BUILD_H

#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "cbor_dec.h" /* CD_INLINE, CD_LITTLE_ENDIAN */

/* --- the short-key cache -------------------------------------------------------------
 * Decoded ASCII text map keys of up to CB_KEY_MAX bytes, keyed by their bytes: repeated
 * keys (records, JSON-like documents) are neither re-validated nor re-allocated, and the
 * shared str objects keep their cached hashes for the dict insert. A slot keeps the key's
 * first 16 bytes as two words (zero past the key's end) and its length, so a key of up to
 * 16 bytes is hashed and confirmed with a few word operations and no call; longer keys
 * also compare their remaining bytes. Entries are compact ASCII strs only, so a hit is
 * also the key's ASCII check. Collisions only cost a miss (the slot is then replaced). */
#define CB_KEY_SLOTS 1024 /* a power of two */
#define CB_KEY_MAX 32

typedef struct {
    uint64_t w[2];
    Py_ssize_t n; /* -1: empty */
    PyObject *str;
} cb_key_slot;

/* where a key was looked up: its words and its slot, for cb_key_new */
typedef struct {
    uint64_t w[2];
    size_t slot;
} cb_key_probe;

static cb_key_slot cb_keys[CB_KEY_SLOTS];

/* The first 16 bytes of the n-byte key at s as two words, zero past n. With `padded`, 16
 * bytes can be read at s (whole words are loaded and masked). */
CD_INLINE void cb_key_words(const unsigned char *s, Py_ssize_t n, int padded, uint64_t *w) {
    if (CD_LITTLE_ENDIAN && padded) {
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
    w[0] = w[1] = 0;
    memcpy(w, s, (size_t)(n < 16 ? n : 16));
}

/* The cached str of the n-byte key at s (a new reference), or NULL; *probe is where it
 * belongs either way. n <= CB_KEY_MAX. */
CD_INLINE PyObject *cb_key_get(const unsigned char *s, Py_ssize_t n, int padded,
                               cb_key_probe *probe) {
    uint64_t h, tail;
    const cb_key_slot *e;
    cb_key_words(s, n, padded, probe->w);
    h = (probe->w[0] ^ (uint64_t)n) * 0x9E3779B97F4A7C15ULL;
    h ^= (probe->w[1] + 0x632BE59BD9B4E019ULL) * 0xC2B2AE3D27D4EB4FULL;
    if (n > 16) { /* the last 8 bytes too: long keys often share their first 16 */
        memcpy(&tail, s + n - 8, 8);
        h ^= tail * 0x165667B19E3779F9ULL;
    }
    probe->slot = (size_t)(h ^ (h >> 29) ^ (h >> 47)) & (CB_KEY_SLOTS - 1);
    e = &cb_keys[probe->slot];
    if (e->n == n && e->w[0] == probe->w[0] && e->w[1] == probe->w[1] &&
            (n <= 16 || memcmp((const char *)PyUnicode_DATA(e->str) + 16, s + 16,
                               (size_t)(n - 16)) == 0)) {
        Py_INCREF(e->str);
        return e->str;
    }
    return NULL;
}

/* A new str of the n ASCII bytes at s, also kept in the probed slot (a new reference). */
static PyObject *cb_key_new(const cb_key_probe *probe, const unsigned char *s, Py_ssize_t n) {
    cb_key_slot *e = &cb_keys[probe->slot];
    PyObject *old = e->str;
    PyObject *r = PyUnicode_New(n, 127);
    if (r == NULL)
        return NULL;
    memcpy(PyUnicode_DATA(r), s, (size_t)n);
    Py_INCREF(r);
    e->str = r;
    e->n = n;
    e->w[0] = probe->w[0];
    e->w[1] = probe->w[1];
    Py_XDECREF(old); /* a str: releasing it runs no Python code */
    return r;
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

#endif
