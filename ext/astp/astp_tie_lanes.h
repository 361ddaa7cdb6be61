/* The tie search (ASTP.md §12) over several candidate orders at once.
 *
 * A candidate order changes only the level-0 nodes of the tied groups and their ancestors;
 * one candidate rehashes about one node per level, too few to fill the side-by-side
 * Keccak of ext/astp/astp_keccak_simd.h. So CK_TIE_LANES candidates are held at once, each
 * in a lane of its own: a lane keeps a private copy of the *window* of the tree (at every
 * level, the nodes from the first to the last ancestor of any group position) and reads
 * every other node from the shared tree of the stored order, which no candidate changes.
 * The dirty nodes of all lanes are hashed level by level, up to CK_MAX_LANES at a time.
 *
 * The caller enumerates the candidates (the canonical odometer of _proofs.pyx), loads each
 * into a lane with ck_tie_load, then ck_tie_eval rehashes the lanes and names the first
 * one whose root is the target, so the first match of the canonical enumeration is found
 * and counted exactly as one candidate at a time would.
 *
 * The low levels repeat: a node over a few tied leaves takes only as many values as those
 * leaves have orders, while the candidates number the product over all groups. So the
 * nodes of levels 1 and 2 (CK_TIE_MEMO_LEVELS) are memoized by what they are made of —
 * (level, index, the ids of the two children), an id naming a distinct value at one place
 * (a leaf's id is its source) — and a node whose id is the one its lane already holds is
 * not even passed up: its parent need not change for it. Higher levels are not memoized:
 * over a group of 8 a level-3 node is new for nearly every candidate, and keeping those
 * costs more than it saves. The searches of the synthetic corpora then hash about a third
 * fewer nodes per candidate. The memo holds at most ck_tie_memo_max nodes; past that, new
 * nodes are hashed and given fresh ids (never reused: a miss, never a wrong hit).
 */
#ifndef CANONKIT_ASTP_TIE_LANES_H
#define CANONKIT_ASTP_TIE_LANES_H

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "astp_tree.h"

#define CK_TIE_LANES 8
/* A lane's window may hold at most this many nodes; a search whose groups lie further
 * apart runs one candidate at a time (the memory of eight windows stays bounded). */
#define CK_TIE_MAX_WINDOW 8192
#define CK_TIE_MEMO_LEVELS 2
#define CK_TIE_MEMO_MAX (1 << 16)
static size_t ck_tie_memo_max = CK_TIE_MEMO_MAX;   /* tests lower it to fill the memo */
#define CK_TIE_STORED ((int64_t)-1)   /* the id of a node that holds the stored order's value */

typedef struct {
    int64_t d, j, left, right;   /* level, index, the children's ids; d == 0: a free slot */
    int64_t id;
} ck_tie_key;

typedef struct {
    ck_tree_hasher *h;
    const uint8_t *store;       /* the stored order's tree, every level (never written) */
    const size_t *counts, *offsets;
    int depth;
    size_t size;                /* bytes per node value */
    size_t wlo[65], whi[65], woff[65], wtotal;
    size_t npos;                /* group positions (tree coordinates), ascending */
    const size_t *pos;
    size_t *held;               /* [lane][npos]: the level-0 source each lane holds at pos[i] */
    size_t *dirty;              /* [lane][2][npos]: dirty node indexes of two levels */
    size_t ndirty[CK_TIE_LANES];
    uint8_t *nodes;             /* [lane][wtotal] node values */
    int64_t *ids;               /* [lane][wtotal] their ids (levels 0..CK_TIE_MEMO_LEVELS) */
    const uint8_t *leaves0;     /* level-0 node values of the stored order, by source */
    ck_tie_key *memo;           /* open addressing, memo_mask + 1 slots */
    uint8_t *memo_values;       /* the value of memo entry `id` (ids 0..memo_count - 1) */
    size_t memo_mask, memo_count;
    int64_t fresh;              /* the next id of a node not kept in the memo */
} ck_tie_lanes;

/* Nodes of the window a search over `pos` needs (for the CK_TIE_MAX_WINDOW check). */
static inline size_t ck_tie_window(const size_t *pos, size_t npos, int depth) {
    size_t lo = pos[0], hi = pos[npos - 1], total = 0;
    int d;
    for (d = 0; d < depth; d++, lo >>= 1, hi >>= 1)
        total += hi - lo + 1;
    return total;
}

/* Set up the lanes over a built tree; pos (npos >= 1, ascending, distinct) are the group
 * positions in tree coordinates. Returns -1 when memory is short. */
static inline int ck_tie_init(ck_tie_lanes *t, ck_tree_hasher *h, const uint8_t *store,
                              const size_t *counts, const size_t *offsets, int depth,
                              const uint8_t *leaves0, const size_t *pos, size_t npos) {
    size_t lo = pos[0], hi = pos[npos - 1], i;
    int d, lane;
    memset(t, 0, sizeof(*t));
    t->h = h;
    t->store = store;
    t->counts = counts;
    t->offsets = offsets;
    t->depth = depth;
    t->size = h->size;
    t->pos = pos;
    t->npos = npos;
    t->leaves0 = leaves0;
    for (d = 0; d < depth; d++, lo >>= 1, hi >>= 1) {
        t->wlo[d] = lo;
        t->whi[d] = hi;
        t->woff[d] = t->wtotal;
        t->wtotal += hi - lo + 1;
    }
    t->nodes = (uint8_t *)malloc(CK_TIE_LANES * t->wtotal * t->size);
    t->ids = (int64_t *)malloc(CK_TIE_LANES * t->wtotal * sizeof(int64_t));
    t->held = (size_t *)malloc(CK_TIE_LANES * npos * sizeof(size_t));
    t->dirty = (size_t *)malloc(CK_TIE_LANES * 2 * npos * sizeof(size_t));
    t->memo_mask = 1023;
    t->memo = (ck_tie_key *)calloc(t->memo_mask + 1, sizeof(ck_tie_key));
    t->memo_values = (uint8_t *)malloc(((t->memo_mask + 1) / 2) * t->size);
    t->fresh = (int64_t)ck_tie_memo_max;
    if (!t->nodes || !t->ids || !t->held || !t->dirty || !t->memo || !t->memo_values)
        return -1;
    for (lane = 0; lane < CK_TIE_LANES; lane++) {
        uint8_t *mine = t->nodes + lane * t->wtotal * t->size;
        int64_t *ids = t->ids + lane * t->wtotal;
        for (d = 0; d < depth; d++)
            memcpy(mine + t->woff[d] * t->size, store + (offsets[d] + t->wlo[d]) * t->size,
                   (t->whi[d] - t->wlo[d] + 1) * t->size);
        for (i = 0; i < t->wtotal; i++)
            ids[i] = CK_TIE_STORED;
        for (i = 0; i <= t->whi[0] - t->wlo[0]; i++)
            ids[i] = (int64_t)(t->wlo[0] + i);     /* a leaf's id is its source */
        for (i = 0; i < npos; i++)
            t->held[lane * npos + i] = pos[i];
    }
    return 0;
}

static inline void ck_tie_free(ck_tie_lanes *t) {
    free(t->nodes);
    free(t->ids);
    free(t->held);
    free(t->dirty);
    free(t->memo);
    free(t->memo_values);
    t->nodes = t->memo_values = NULL;
    t->ids = NULL;
    t->held = t->dirty = NULL;
    t->memo = NULL;
}

/* The id of node j of level d as lane `lane` sees it (CK_TIE_STORED outside its window). */
static inline int64_t ck_tie_id_of(const ck_tie_lanes *t, int lane, int d, size_t j) {
    if (j >= t->wlo[d] && j <= t->whi[d])
        return t->ids[lane * t->wtotal + t->woff[d] + (j - t->wlo[d])];
    return CK_TIE_STORED;
}

/* Where lane `lane` keeps the id of node j of level d, a node of its window. */
static inline int64_t *ck_tie_id(ck_tie_lanes *t, int lane, int d, size_t j) {
    return t->ids + lane * t->wtotal + t->woff[d] + (j - t->wlo[d]);
}

static inline size_t ck_tie_slot(const ck_tie_lanes *t, const ck_tie_key *k) {
    uint64_t h = (uint64_t)k->d * 0x9E3779B97F4A7C15ULL ^ (uint64_t)k->j * 0xC2B2AE3D27D4EB4FULL;
    h ^= (uint64_t)k->left * 0x165667B19E3779F9ULL;
    h = (h ^ (h >> 29)) * 0xBF58476D1CE4E5B9ULL;
    h ^= (uint64_t)k->right * 0x94D049BB133111EBULL;
    h ^= h >> 32;
    return (size_t)h & t->memo_mask;
}

/* The memo entry of key k, or -1. */
static inline int64_t ck_tie_find(const ck_tie_lanes *t, const ck_tie_key *k) {
    size_t at = ck_tie_slot(t, k);
    for (;;) {
        const ck_tie_key *e = &t->memo[at];
        if (e->d == 0)
            return -1;
        if (e->d == k->d && e->j == k->j && e->left == k->left && e->right == k->right)
            return e->id;
        at = (at + 1) & t->memo_mask;
    }
}

/* Keep `value` under key k (found first if two lanes made it): its id, or a fresh id that
 * no key names when the memo is full (or memory is short: the search only slows down). */
static inline int64_t ck_tie_keep(ck_tie_lanes *t, ck_tie_key *k, const uint8_t *value) {
    size_t at, i;
    int64_t found = ck_tie_find(t, k);
    if (found >= 0)
        return found;
    if (t->memo_count >= ck_tie_memo_max)
        return t->fresh++;
    if (2 * (t->memo_count + 1) > t->memo_mask + 1) {   /* grow: at most half full */
        size_t slots = 2 * (t->memo_mask + 1);
        ck_tie_key *old = t->memo, *grown = (ck_tie_key *)calloc(slots, sizeof(ck_tie_key));
        uint8_t *values = (uint8_t *)realloc(t->memo_values, (slots / 2) * t->size);
        if (values)
            t->memo_values = values;
        if (!grown || !values) {
            free(grown);
            return t->fresh++;
        }
        t->memo = grown;
        t->memo_mask = slots - 1;
        for (i = 0; i < slots / 2; i++) {
            if (!old[i].d)
                continue;
            at = ck_tie_slot(t, &old[i]);
            while (t->memo[at].d)
                at = (at + 1) & t->memo_mask;
            t->memo[at] = old[i];
        }
        free(old);
    }
    k->id = (int64_t)t->memo_count++;
    memcpy(t->memo_values + k->id * t->size, value, t->size);
    at = ck_tie_slot(t, k);
    while (t->memo[at].d)
        at = (at + 1) & t->memo_mask;
    t->memo[at] = *k;
    return k->id;
}

/* Node j of level d as lane `lane` sees it. */
static inline uint8_t *ck_tie_node(ck_tie_lanes *t, int lane, int d, size_t j) {
    if (j >= t->wlo[d] && j <= t->whi[d])
        return t->nodes + (lane * t->wtotal + t->woff[d] + (j - t->wlo[d])) * t->size;
    return (uint8_t *)t->store + (t->offsets[d] + j) * t->size;
}

/* Put the candidate whose position pos[i] holds the level-0 node of source src[i] into
 * `lane`, marking the positions that differ from what the lane held. */
static inline void ck_tie_load(ck_tie_lanes *t, int lane, const size_t *src) {
    size_t *held = t->held + lane * t->npos, *dirty = t->dirty + lane * 2 * t->npos;
    size_t i, n = 0;
    for (i = 0; i < t->npos; i++) {
        if (held[i] != src[i]) {
            held[i] = src[i];
            memcpy(ck_tie_node(t, lane, 0, t->pos[i]), t->leaves0 + src[i] * t->size, t->size);
            *ck_tie_id(t, lane, 0, t->pos[i]) = (int64_t)src[i];
            dirty[n++] = t->pos[i];
        }
    }
    t->ndirty[lane] = n;
}

/* Rehash the ancestors of the dirty nodes of lanes 0..lanes-1, level by level, and return
 * the first lane whose root equals `target` (t->size bytes), or -1. A node of a memoized
 * level is taken from the memo when it holds it, and passed up only if its id changed. */
static inline int ck_tie_eval(ck_tie_lanes *t, int lanes, const uint8_t *target) {
    const uint8_t *l[CK_MAX_LANES], *r[CK_MAX_LANES];
    uint8_t *out[CK_MAX_LANES];
    ck_tie_key pending[CK_MAX_LANES];   /* the memo keys of the nodes in the batch */
    int64_t *pending_id[CK_MAX_LANES];
    int d, lane, k = 0, q;
    for (d = 1; d < t->depth; d++) {
        size_t below = t->counts[d - 1];
        int from = (d - 1) & 1, to = d & 1, memo = d <= CK_TIE_MEMO_LEVELS;
        for (lane = 0; lane < lanes; lane++) {
            size_t *src = t->dirty + (lane * 2 + from) * t->npos;
            size_t *dst = t->dirty + (lane * 2 + to) * t->npos;
            size_t i, n = 0, j;
            for (i = 0; i < t->ndirty[lane]; i++) {
                j = src[i] >> 1;
                if (n && dst[n - 1] == j)
                    continue;               /* both children dirty: one parent */
                if (i && (src[i - 1] >> 1) == j)
                    continue;               /* this parent was settled from its left child */
                if (2 * j + 1 >= below) {   /* the unpaired last node is carried up */
                    memcpy(ck_tie_node(t, lane, d, j), ck_tie_node(t, lane, d - 1, 2 * j),
                           t->size);
                    if (memo)
                        *ck_tie_id(t, lane, d, j) = ck_tie_id_of(t, lane, d - 1, 2 * j);
                    dst[n++] = j;
                    continue;
                }
                if (memo) {
                    ck_tie_key key;
                    int64_t *id = ck_tie_id(t, lane, d, j), found;
                    key.d = d;
                    key.j = (int64_t)j;
                    key.left = ck_tie_id_of(t, lane, d - 1, 2 * j);
                    key.right = ck_tie_id_of(t, lane, d - 1, 2 * j + 1);
                    key.id = -1;
                    found = ck_tie_find(t, &key);
                    if (found >= 0) {
                        if (found != *id) {  /* another value: copied, and passed up */
                            memcpy(ck_tie_node(t, lane, d, j), t->memo_values + found * t->size,
                                   t->size);
                            *id = found;
                            dst[n++] = j;
                        }
                        continue;
                    }
                    pending[k] = key;
                    pending_id[k] = id;
                } else {
                    pending_id[k] = NULL;
                }
                dst[n++] = j;
                l[k] = ck_tie_node(t, lane, d - 1, 2 * j);
                r[k] = ck_tie_node(t, lane, d - 1, 2 * j + 1);
                out[k] = ck_tie_node(t, lane, d, j);
                if (++k == CK_MAX_LANES) {
                    ck_tree_node_batch(t->h, l, r, out, k);
                    for (q = 0; q < k; q++)
                        if (pending_id[q])
                            *pending_id[q] = ck_tie_keep(t, &pending[q], out[q]);
                    k = 0;
                }
            }
            t->ndirty[lane] = n;
        }
        if (k) {   /* this level is done before the next one reads it */
            ck_tree_node_batch(t->h, l, r, out, k);
            for (q = 0; q < k; q++)
                if (pending_id[q])
                    *pending_id[q] = ck_tie_keep(t, &pending[q], out[q]);
            k = 0;
        }
    }
    for (lane = 0; lane < lanes; lane++) {
        t->ndirty[lane] = 0;
        if (memcmp(ck_tie_node(t, lane, t->depth - 1, 0), target, t->size) == 0)
            return lane;
    }
    return -1;
}

/* --- the canonical enumeration and the search over lanes ------------------------------ */

/* Next lexicographic permutation of a[0..len); returns the first index that changed, or -1
 * after the last permutation (a is then back to ascending order, all of it changed). */
static inline ptrdiff_t ck_next_permutation(size_t *a, size_t len) {
    ptrdiff_t k = (ptrdiff_t)len - 2, l, i, j;
    size_t t;
    while (k >= 0 && a[k] >= a[k + 1]) k--;
    if (k >= 0) {
        l = (ptrdiff_t)len - 1;
        while (a[l] <= a[k]) l--;
        t = a[k]; a[k] = a[l]; a[l] = t;
    }
    for (i = k + 1, j = (ptrdiff_t)len - 1; i < j; i++, j--) {
        t = a[i]; a[i] = a[j]; a[j] = t;
    }
    return k;
}

/* The canonical enumeration of candidate orders (docs/astp-kernel-api.md): each group's
 * permutations in lexicographic order, the last group varying fastest. `perm` holds every
 * group's current permutation back to back (input indexes, group g from base[g]); for the
 * lanes, `pos` are the group positions in tree coordinates ascending, `src` the source each
 * holds now and `slot` where each group entry sits among them. */
typedef struct {
    size_t ngroups, npos, offset;
    size_t *starts, *lengths, *base, *perm, *slot, *pos, *src;   /* one allocation */
} ck_odometer;

static int ck_cmp_pair(const void *a, const void *b) {
    const size_t *x = (const size_t *)a, *y = (const size_t *)b;
    return x[0] < y[0] ? -1 : (x[0] > y[0] ? 1 : 0);
}

/* Groups (start, length) of inputs, positions shifted by `offset` in the tree (1 under
 * sav 1: the Episode input); -1 when memory is short. */
static inline int ck_odometer_init(ck_odometer *o, const size_t *starts, const size_t *lengths,
                                   size_t ngroups, size_t offset) {
    size_t g, i, m = 0, total = 0;
    size_t *pairs;
    memset(o, 0, sizeof(*o));
    for (g = 0; g < ngroups; g++)
        total += lengths[g];
    o->starts = (size_t *)malloc(sizeof(size_t) * (3 * ngroups + 4 * total + 1));
    pairs = (size_t *)malloc(sizeof(size_t) * (2 * total + 1));
    if (!o->starts || !pairs) {
        free(pairs);
        return -1;
    }
    o->ngroups = ngroups;
    o->npos = total;
    o->offset = offset;
    o->lengths = o->starts + ngroups;
    o->base = o->lengths + ngroups;
    o->perm = o->base + ngroups;
    o->slot = o->perm + total;
    o->pos = o->slot + total;
    o->src = o->pos + total;
    for (g = 0; g < ngroups; g++) {
        o->starts[g] = starts[g];
        o->lengths[g] = lengths[g];
        o->base[g] = m;
        for (i = 0; i < lengths[g]; i++) {
            o->perm[m + i] = starts[g] + i;
            pairs[2 * (m + i)] = starts[g] + i;
            pairs[2 * (m + i) + 1] = m + i;
        }
        m += lengths[g];
    }
    qsort(pairs, total, 2 * sizeof(size_t), ck_cmp_pair);   /* positions are distinct */
    for (i = 0; i < total; i++) {
        o->slot[pairs[2 * i + 1]] = i;
        o->pos[i] = o->src[i] = pairs[2 * i] + offset;
    }
    free(pairs);
    return 0;
}

static inline void ck_odometer_free(ck_odometer *o) {
    free(o->starts);
    o->starts = NULL;
}

/* Advance to the next candidate, keeping `src` in step; 1 when every group wrapped back
 * to the stored order (the space is exhausted), else 0. */
static inline int ck_odometer_next(ck_odometer *o) {
    ptrdiff_t g = (ptrdiff_t)o->ngroups - 1, k;
    size_t i;
    while (g >= 0) {
        k = ck_next_permutation(o->perm + o->base[g], o->lengths[g]);
        for (i = k < 0 ? 0 : (size_t)k; i < o->lengths[g]; i++)
            o->src[o->slot[o->base[g] + i]] = o->perm[o->base[g] + i] + o->offset;
        if (k >= 0)
            return 0;
        g--;                       /* wrapped back to the stored order: carry */
    }
    return 1;
}

/* Set `perm` to the candidate `src` describes. */
static inline void ck_odometer_take_src(ck_odometer *o) {
    size_t g, i;
    for (g = 0; g < o->ngroups; g++)
        for (i = 0; i < o->lengths[g]; i++)
            o->perm[o->base[g] + i] = o->src[o->slot[o->base[g] + i]] - o->offset;
}

/* The order of the candidate `perm` describes: out[p] the input at position p (count
 * inputs). */
static inline void ck_odometer_order(const ck_odometer *o, size_t count, size_t *out) {
    size_t g, i;
    for (i = 0; i < count; i++)
        out[i] = i;
    for (g = 0; g < o->ngroups; g++)
        for (i = 0; i < o->lengths[g]; i++)
            out[o->starts[g] + i] = o->perm[o->base[g] + i];
}

#define CK_TIE_FOUND 1
#define CK_TIE_EXHAUSTED 0
#define CK_TIE_NO_MEMORY (-1)
#define CK_TIE_INTERRUPTED (-2)

/* The search over lanes from the odometer's current candidate (the stored order), in the
 * canonical enumeration: CK_TIE_FOUND with `perm` at the first order whose root is
 * `target`, CK_TIE_EXHAUSTED, CK_TIE_NO_MEMORY or CK_TIE_INTERRUPTED (`interrupted`, asked
 * about every 2^16 candidates, returned non-zero). *tried counts the candidates looked at,
 * the one found included. Call without the GIL; `interrupted` takes it. */
static inline int ck_tie_search(ck_tie_lanes *t, ck_odometer *o, const uint8_t *target,
                                unsigned long long *tried, int (*interrupted)(void)) {
    size_t npos = o->npos;
    size_t *held = (size_t *)malloc(CK_TIE_LANES * npos * sizeof(size_t) + 1);
    unsigned long long checked = *tried;
    int exhausted = 0, filled, hit;
    if (!held)
        return CK_TIE_NO_MEMORY;
    while (!exhausted) {
        for (filled = 0; filled < CK_TIE_LANES && !exhausted; filled++) {
            ck_tie_load(t, filled, o->src);
            memcpy(held + filled * npos, o->src, npos * sizeof(size_t));
            exhausted = ck_odometer_next(o);
        }
        hit = ck_tie_eval(t, filled, target);
        if (hit >= 0) {
            *tried += (unsigned long long)(hit + 1);
            memcpy(o->src, held + hit * npos, npos * sizeof(size_t));
            ck_odometer_take_src(o);
            free(held);
            return CK_TIE_FOUND;
        }
        *tried += (unsigned long long)filled;
        if (*tried - checked >= 0x10000) {   /* a long search stays interruptible */
            checked = *tried;
            if (interrupted && interrupted()) {
                free(held);
                return CK_TIE_INTERRUPTED;
            }
        }
    }
    free(held);
    return CK_TIE_EXHAUSTED;
}

#endif /* CANONKIT_ASTP_TIE_LANES_H */
