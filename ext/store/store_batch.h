/* The store's batch readers (fsck's entries, get_many) hand the small entries of a batch
 * to two threads, the caller's and one helper, which inflate (DEFLATE entries) and hash
 * (raw or DEFLATE, up to CK_LANE_HASH bytes) them with no Python object touched and the
 * GIL released. Each job's output buffer was allocated by the caller; `ok` says whether
 * the entry came out wholly right (the stream intact and exactly its length, the digest
 * equal to `want` when one was given and hashed here). Anything else is left to the
 * caller's one-by-one path, which says what is wrong. */
#ifndef CK_STORE_BATCH_H
#define CK_STORE_BATCH_H

#include <string.h>
#include <pythread.h>
#ifndef _WIN32
#include <sched.h>
#endif

#include "store_blake3.h"
#include "store_inflate.h"

/* Larger logical lengths are hashed by the caller (the blake3 package's SIMD kernels). */
#define CK_LANE_HASH 4096
/* Smaller batches run on the caller's thread alone: starting a helper costs tens of
   microseconds, and on a busy machine the caller may have to wait for a helper that was
   preempted in the middle of a job, which only a large batch amortises. */
#define CK_HELPER_MIN_JOBS 512

typedef struct {
    const unsigned char *src;   /* the stored bytes */
    size_t n;
    unsigned char *dst;         /* the logical bytes go here (NULL: raw, hashed in place) */
    size_t logical;
    const unsigned char *want;  /* the digest to check, or NULL */
    int deflated;
    int hashed;                 /* out: `want` was checked here */
    int first;                  /* out: the first logical byte, -1 when empty */
    int ok;                     /* out */
} ck_job;

static void ck_job_run(ck_job *j, ck_inflater *dec)
{
    const unsigned char *data = j->src;
    unsigned char got[32];
    j->ok = 0;
    j->hashed = 0;
    j->first = -1;
    if (j->deflated) {
        ck_inflated r;
        if (ck_inflate_with(dec, j->src, j->n, j->dst, j->logical, &r) != 0 || r.zerr
                || !r.eof || r.left || r.produced != j->logical)
            return;
        data = j->dst;
    } else if (j->dst != NULL) {
        memcpy(j->dst, j->src, j->n);
        data = j->dst;
    }
    if (j->logical)
        j->first = data[0];
    if (j->want != NULL && j->logical <= CK_LANE_HASH) {
        ck_b3_hash(data, j->logical, got);
        if (memcmp(got, j->want, 32) != 0)
            return;
        j->hashed = 1;
    }
    j->ok = 1;
}

/* A batch's jobs, shared by the caller and the helper lane: each lane claims the next job
   until none is left, so a helper that is slow to be scheduled (a busy machine) only
   means the caller does more of them; the caller never waits for a helper that has not
   started, only for a job a helper is in the middle of. Freed by whichever holder
   lets go last (the helper may start after the caller has returned). */
typedef struct {
    ck_job *jobs;
    Py_ssize_t count;
    Py_ssize_t next;      /* the next job to claim */
    Py_ssize_t finished;  /* jobs done */
    int holders;
} ck_shared_jobs;

#if defined(__GNUC__) && !defined(_WIN32)
#define CK_BATCH_THREADS 1
#define CK_CLAIM(b) __atomic_fetch_add(&(b)->next, 1, __ATOMIC_ACQ_REL)
#define CK_DONE(b) __atomic_fetch_add(&(b)->finished, 1, __ATOMIC_ACQ_REL)
#else  /* no atomics here: the caller's thread runs every job */
#define CK_BATCH_THREADS 0
#define CK_CLAIM(b) ((b)->next++)
#define CK_DONE(b) ((b)->finished++)
#endif

static void ck_claim_jobs(ck_shared_jobs *b)
{
    ck_inflater dec;
    Py_ssize_t i;
    memset(&dec, 0, sizeof dec);
    while ((i = CK_CLAIM(b)) < b->count) {
        ck_job_run(&b->jobs[i], &dec);
        CK_DONE(b);
    }
    ck_inflater_end(&dec);
}

#if CK_BATCH_THREADS
static void ck_let_go(ck_shared_jobs *b)
{
    if (__atomic_sub_fetch(&b->holders, 1, __ATOMIC_ACQ_REL) == 0)
        PyMem_RawFree(b);
}

static void ck_helper(void *arg)
{
    ck_shared_jobs *b = (ck_shared_jobs *)arg;
    ck_claim_jobs(b);
    ck_let_go(b);
}
#endif

/* Run every job; called without the GIL. Without a helper (none could be started, or no
   atomics on this compiler) every job runs on the caller's thread: the same result. */
static void ck_batch(ck_job *jobs, Py_ssize_t count)
{
    ck_shared_jobs local = {jobs, count, 0, 0, 1};
    ck_shared_jobs *b = NULL;
#if CK_BATCH_THREADS
    if (count >= CK_HELPER_MIN_JOBS)
        b = (ck_shared_jobs *)PyMem_RawMalloc(sizeof *b);
#endif
    if (b == NULL) {
        ck_claim_jobs(&local);
        return;
    }
#if CK_BATCH_THREADS
    b->jobs = jobs;
    b->count = count;
    b->next = 0;
    b->finished = 0;
    b->holders = 2;
    if (PyThread_start_new_thread(ck_helper, b) == PYTHREAD_INVALID_THREAD_ID)
        b->holders = 1;
    ck_claim_jobs(b);
    while (__atomic_load_n(&b->finished, __ATOMIC_ACQUIRE) < count)
        sched_yield();  /* a job the helper is in the middle of: microseconds */
    ck_let_go(b);
#endif
}

#endif
