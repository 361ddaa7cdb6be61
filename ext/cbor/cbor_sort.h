/* Map-entry ordering for the CBOR encoder.
 *
 * An entry points at its key's bytes (borrowed from a str's cached UTF-8 or from a
 * scratch buffer of encoded keys) and holds the value. Two orders:
 *   text:  (UTF-8 length, bytes) -- for text keys this equals the bytewise order of their
 *          encodings, because a longer text has a head that is >= a shorter one's;
 *   bytes: bytewise order of the complete encoded keys (any key type).
 * Small maps (the common case) use insertion sort; it is also what makes an already
 * sorted map cost one comparison per entry.
 */
#ifndef CANONKIT_CBOR_SORT_H
#define CANONKIT_CBOR_SORT_H

#include <Python.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *p;   /* key bytes (text: UTF-8 payload; bytes order: full encoding) */
    Py_ssize_t n;
    PyObject *key;   /* owned reference (keeps p alive for text keys) */
    PyObject *value; /* owned reference */
} ck_entry;

static inline int ck_cmp_text(const ck_entry *a, const ck_entry *b) {
    const unsigned char *x = (const unsigned char *)a->p, *y = (const unsigned char *)b->p;
    Py_ssize_t i;
    if (a->n != b->n) return a->n < b->n ? -1 : 1;
    /* keys of one length mostly differ in their first bytes: no call for those */
    for (i = 0; i < a->n && i < 16; i++)
        if (x[i] != y[i]) return x[i] < y[i] ? -1 : 1;
    return i < a->n ? memcmp(x + i, y + i, (size_t)(a->n - i)) : 0;
}

static inline int ck_cmp_bytes(const ck_entry *a, const ck_entry *b) {
    Py_ssize_t m = a->n < b->n ? a->n : b->n;
    int c = memcmp(a->p, b->p, (size_t)m);
    if (c) return c;
    if (a->n == b->n) return 0;
    return a->n < b->n ? -1 : 1;
}

static int ck_qcmp_text(const void *a, const void *b) {
    return ck_cmp_text((const ck_entry *)a, (const ck_entry *)b);
}

static int ck_qcmp_bytes(const void *a, const void *b) {
    return ck_cmp_bytes((const ck_entry *)a, (const ck_entry *)b);
}

/* Sort entries; bytes_order selects the comparator. Returns 1 when already sorted. */
static inline int ck_sort_entries(ck_entry *e, Py_ssize_t n, int bytes_order) {
    Py_ssize_t i, j;
    ck_entry t;
    int sorted = 1;
    for (i = 1; i < n; i++) {
        if ((bytes_order ? ck_cmp_bytes(&e[i - 1], &e[i]) : ck_cmp_text(&e[i - 1], &e[i])) > 0) {
            sorted = 0;
            break;
        }
    }
    if (sorted) return 1;
    if (n > 24) {
        qsort(e, (size_t)n, sizeof(ck_entry), bytes_order ? ck_qcmp_bytes : ck_qcmp_text);
        return 0;
    }
    for (i = 1; i < n; i++) {
        t = e[i];
        j = i - 1;
        while (j >= 0 && (bytes_order ? ck_cmp_bytes(&e[j], &t) : ck_cmp_text(&e[j], &t)) > 0) {
            e[j + 1] = e[j];
            j--;
        }
        e[j + 1] = t;
    }
    return 0;
}

/* Sorted-permutation cache for text-key maps of up to CK_PERM_MAX keys. Records built by
 * the same code share their key str objects and insertion order, so the order found for
 * one record applies to the next: the cache is keyed by the key objects' identities in
 * iteration order. It holds references to those keys, so an address cannot be reused by
 * another object while its slot refers to it. Only exact str keys ever enter (whose
 * deallocation runs no Python code). Used with the GIL held. */
#define CK_PERM_SLOTS 64
#define CK_PERM_MAX 16

typedef struct {
    Py_ssize_t n;
    PyObject *keys[CK_PERM_MAX];
    unsigned char perm[CK_PERM_MAX]; /* sorted position j holds original entry perm[j] */
} ck_perm_slot;

static ck_perm_slot ck_perm_cache[CK_PERM_SLOTS];

/* Forced inlining for the per-map helpers called from more than one place: once a
 * second caller appeared, the compiler stopped inlining them into the hot dict path. */
#if defined(__GNUC__) || defined(__clang__)
#define CK_HOT_INLINE static inline __attribute__((always_inline))
#elif defined(_MSC_VER)
#define CK_HOT_INLINE static __forceinline
#else
#define CK_HOT_INLINE static inline
#endif

/* Drop the references an entry array holds (key and value of its first n entries). */
CK_HOT_INLINE void ck_release_entries(ck_entry *e, Py_ssize_t n) {
    Py_ssize_t i;
    for (i = 0; i < n; i++) {
        Py_XDECREF(e[i].key);
        Py_XDECREF(e[i].value);
    }
}

/* Sort text-key entries (order: UTF-8 length, bytes); tmp has room for CK_PERM_MAX. */
CK_HOT_INLINE void ck_sort_text_cached(ck_entry *e, Py_ssize_t n, ck_entry *tmp) {
    uint64_t h = (uint64_t)n;
    Py_ssize_t i, j;
    ck_perm_slot *slot;
    for (i = 1; i < n && ck_cmp_text(&e[i - 1], &e[i]) < 0; i++) {}
    if (i >= n) return; /* already in order (the common case for decoded data) */
    if (n > CK_PERM_MAX) {
        ck_sort_entries(e, n, 0);
        return;
    }
    for (i = 0; i < n; i++)
        h = (h ^ ((uint64_t)(uintptr_t)e[i].key >> 4)) * 0x9E3779B97F4A7C15ULL;
    slot = &ck_perm_cache[(h >> 58) & (CK_PERM_SLOTS - 1)];
    if (slot->n == n) {
        for (i = 0; i < n && slot->keys[i] == e[i].key; i++) {}
        if (i == n) {
            memcpy(tmp, e, (size_t)n * sizeof(ck_entry));
            for (j = 0; j < n; j++) e[j] = tmp[slot->perm[j]];
            return;
        }
    }
    memcpy(tmp, e, (size_t)n * sizeof(ck_entry));
    ck_sort_entries(e, n, 0);
    for (i = 0; i < slot->n; i++) Py_DECREF(slot->keys[i]);
    for (j = 0; j < n; j++) {
        for (i = 0; tmp[i].key != e[j].key; i++) {} /* keys are distinct objects */
        slot->perm[j] = (unsigned char)i;
    }
    for (i = 0; i < n; i++) {
        Py_INCREF(tmp[i].key);
        slot->keys[i] = tmp[i].key;
    }
    slot->n = n;
}

/* Copy the n bytes at s to d with no library call when n <= 32 (map keys, for which the
 * call cost more than the copy): each size class loads the first and the last bytes,
 * overlapping, so only [0, n) is read and written. Used for keys only: inlined into every
 * string write, it slowed the float-heavy documents' encode by 3-5% (code layout). */
static inline void ck_copy(unsigned char *d, const unsigned char *s, size_t n) {
    uint64_t a, b, c, e;
    uint32_t x, y;
    if (n > 16) {
        if (n > 32) {
            memcpy(d, s, n);
            return;
        }
        memcpy(&a, s, 8); memcpy(&b, s + 8, 8);
        memcpy(&c, s + n - 16, 8); memcpy(&e, s + n - 8, 8);
        memcpy(d, &a, 8); memcpy(d + 8, &b, 8);
        memcpy(d + n - 16, &c, 8); memcpy(d + n - 8, &e, 8);
    } else if (n >= 8) {
        memcpy(&a, s, 8); memcpy(&b, s + n - 8, 8);
        memcpy(d, &a, 8); memcpy(d + n - 8, &b, 8);
    } else if (n >= 4) {
        memcpy(&x, s, 4); memcpy(&y, s + n - 4, 4);
        memcpy(d, &x, 4); memcpy(d + n - 4, &y, 4);
    } else if (n) { /* 1 to 3 bytes: 0, n/2 and n-1 cover them */
        d[0] = s[0]; d[n / 2] = s[n / 2]; d[n - 1] = s[n - 1];
    }
}

/* Big-endian stores/loads. */
static inline void ck_put_be16(unsigned char *b, uint16_t v) {
    b[0] = (unsigned char)(v >> 8); b[1] = (unsigned char)v;
}
static inline void ck_put_be32(unsigned char *b, uint32_t v) {
    b[0] = (unsigned char)(v >> 24); b[1] = (unsigned char)(v >> 16);
    b[2] = (unsigned char)(v >> 8); b[3] = (unsigned char)v;
}
static inline void ck_put_be64(unsigned char *b, uint64_t v) {
    ck_put_be32(b, (uint32_t)(v >> 32)); ck_put_be32(b + 4, (uint32_t)v);
}
static inline uint16_t ck_get_be16(const unsigned char *b) {
    return (uint16_t)(((uint16_t)b[0] << 8) | b[1]);
}
static inline uint32_t ck_get_be32(const unsigned char *b) {
    return ((uint32_t)b[0] << 24) | ((uint32_t)b[1] << 16) | ((uint32_t)b[2] << 8) | b[3];
}
static inline uint64_t ck_get_be64(const unsigned char *b) {
    return ((uint64_t)ck_get_be32(b) << 32) | ck_get_be32(b + 4);
}

/* Write a CBOR head (shortest form) at b; returns its length. The caller reserved 9. */
static inline Py_ssize_t ck_write_head(unsigned char *b, unsigned char major, uint64_t arg) {
    major = (unsigned char)(major << 5);
    if (arg < 24) { b[0] = (unsigned char)(major | arg); return 1; }
    if (arg <= 0xff) { b[0] = major | 24; b[1] = (unsigned char)arg; return 2; }
    if (arg <= 0xffff) { b[0] = major | 25; ck_put_be16(b + 1, (uint16_t)arg); return 3; }
    if (arg <= 0xffffffffULL) { b[0] = major | 26; ck_put_be32(b + 1, (uint32_t)arg); return 5; }
    b[0] = major | 27;
    ck_put_be64(b + 1, arg);
    return 9;
}

/* UTF-8 of an exact str: compact ASCII strings are their own UTF-8 (no call); others
 * use (and cache) CPython's UTF-8 form. NULL with an exception for lone surrogates. */
static inline const char *ck_utf8(PyObject *s, Py_ssize_t *n) {
    if (PyUnicode_IS_COMPACT_ASCII(s)) {
        *n = PyUnicode_GET_LENGTH(s);
        return (const char *)PyUnicode_DATA(s);
    }
    return PyUnicode_AsUTF8AndSize(s, n);
}

/* Shorten a fresh, unshared bytes object in place, keeping its allocation: a shrinking
 * realloc of a large block can cost a fresh mapping (and its page faults) on every later
 * call, while a few KiB of slack cost nothing. */
static inline void ck_bytes_truncate(PyObject *b, Py_ssize_t n) {
    Py_SET_SIZE(b, n);
    PyBytes_AS_STRING(b)[n] = '\0';
}

#if defined(__GNUC__) || defined(__clang__)
#define ck_prefetch(p) __builtin_prefetch((p), 0, 3)
#else
#define ck_prefetch(p) ((void)(p))
#endif

/* Prefetch for encoding item i of a long list: an item's object header 16 ahead; 10
 * ahead, if that item is itself a list, its item array; 5 ahead, that list's first two items
 * (coordinate pairs and similar small rows). Each stage reads only lines requested by an
 * earlier one, so none of these loads waits on memory. The list is not modified here. */
static inline void ck_prefetch_list_ahead(PyObject *list, Py_ssize_t i) {
    PyObject **items = ((PyListObject *)list)->ob_item;
    Py_ssize_t n = PyList_GET_SIZE(list);
    PyObject *x;
    if (i + 16 < n) ck_prefetch(items[i + 16]);
    if (i + 10 < n) {
        x = items[i + 10];
        if (PyList_CheckExact(x)) ck_prefetch(((PyListObject *)x)->ob_item);
    }
    if (i + 5 < n) {
        x = items[i + 5];
        if (PyList_CheckExact(x) && PyList_GET_SIZE(x) > 0) {
            PyObject **row = ((PyListObject *)x)->ob_item;
            ck_prefetch(row[0]);
            if (PyList_GET_SIZE(x) > 1) ck_prefetch(row[1]);
        }
    }
}

/* A dict with room for n entries (no rehash while filling); plain PyDict_New where the
 * private presizing call is not available. */
#if PY_VERSION_HEX >= 0x030D0000 || defined(PYPY_VERSION)
#define ck_dict_presized(n) PyDict_New()
#else
#define ck_dict_presized(n) _PyDict_NewPresized(n)
#endif

#endif
