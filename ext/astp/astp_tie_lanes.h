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
 */
#ifndef CANONKIT_ASTP_TIE_LANES_H
#define CANONKIT_ASTP_TIE_LANES_H

#include <stdlib.h>
#include <string.h>
#include "astp_tree.h"

#define CK_TIE_LANES 8
/* A lane's window may hold at most this many nodes; a search whose groups lie further
 * apart runs one candidate at a time (the memory of eight windows stays bounded). */
#define CK_TIE_MAX_WINDOW 8192

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
    const uint8_t *leaves0;     /* level-0 node values of the stored order, by source */
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
    t->held = (size_t *)malloc(CK_TIE_LANES * npos * sizeof(size_t));
    t->dirty = (size_t *)malloc(CK_TIE_LANES * 2 * npos * sizeof(size_t));
    if (!t->nodes || !t->held || !t->dirty)
        return -1;
    for (lane = 0; lane < CK_TIE_LANES; lane++) {
        uint8_t *mine = t->nodes + lane * t->wtotal * t->size;
        for (d = 0; d < depth; d++)
            memcpy(mine + t->woff[d] * t->size, store + (offsets[d] + t->wlo[d]) * t->size,
                   (t->whi[d] - t->wlo[d] + 1) * t->size);
        for (i = 0; i < npos; i++)
            t->held[lane * npos + i] = pos[i];
    }
    return 0;
}

static inline void ck_tie_free(ck_tie_lanes *t) {
    free(t->nodes);
    free(t->held);
    free(t->dirty);
    t->nodes = NULL;
    t->held = t->dirty = NULL;
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
            dirty[n++] = t->pos[i];
        }
    }
    t->ndirty[lane] = n;
}

/* Rehash the ancestors of the dirty nodes of lanes 0..lanes-1, level by level, and return
 * the first lane whose root equals `target` (t->size bytes), or -1. */
static inline int ck_tie_eval(ck_tie_lanes *t, int lanes, const uint8_t *target) {
    const uint8_t *l[CK_MAX_LANES], *r[CK_MAX_LANES];
    uint8_t *out[CK_MAX_LANES];
    int d, lane, k = 0;
    for (d = 1; d < t->depth; d++) {
        size_t below = t->counts[d - 1];
        int from = (d - 1) & 1, to = d & 1;
        for (lane = 0; lane < lanes; lane++) {
            size_t *src = t->dirty + (lane * 2 + from) * t->npos;
            size_t *dst = t->dirty + (lane * 2 + to) * t->npos;
            size_t i, n = 0, j;
            for (i = 0; i < t->ndirty[lane]; i++) {
                j = src[i] >> 1;
                if (n && dst[n - 1] == j)
                    continue;               /* both children dirty: one parent */
                dst[n++] = j;
                if (2 * j + 1 >= below) {   /* the unpaired last node is carried up */
                    memcpy(ck_tie_node(t, lane, d, j), ck_tie_node(t, lane, d - 1, 2 * j),
                           t->size);
                    continue;
                }
                l[k] = ck_tie_node(t, lane, d - 1, 2 * j);
                r[k] = ck_tie_node(t, lane, d - 1, 2 * j + 1);
                out[k] = ck_tie_node(t, lane, d, j);
                if (++k == CK_MAX_LANES) {
                    ck_tree_node_batch(t->h, l, r, out, k);
                    k = 0;
                }
            }
            t->ndirty[lane] = n;
        }
        if (k) {   /* this level is done before the next one reads it */
            ck_tree_node_batch(t->h, l, r, out, k);
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

#endif /* CANONKIT_ASTP_TIE_LANES_H */
