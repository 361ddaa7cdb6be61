/* One bounded zlib inflate for the store's small DEFLATE objects (STORE.md §6), in C so
 * that a batch of them costs no Python per object. It decodes as
 * zlib.decompressobj().decompress(data, logical + 1) does (canonkit.store.deflate.inflate):
 * the output goes into `out` (exactly `logical` bytes), then into a one-byte spill, so a
 * stream that produces a byte more than declared is stopped there and never writes past
 * either buffer. The caller checks the zlib header first and takes the result only when
 * the stream is wholly right (no zlib error, ended, nothing after it, exactly `logical`
 * bytes, the right BLAKE3); anything else goes to deflate.inflate, which says what is
 * wrong. */
#ifndef CK_STORE_INFLATE_H
#define CK_STORE_INFLATE_H

#include <string.h>
#include <zlib.h>

typedef struct {
    int zerr;           /* Z_OK, or the zlib error that stopped the stream */
    int eof;            /* the stream ended (Z_STREAM_END) */
    size_t produced;    /* output bytes, at most logical + 1 */
    size_t left;        /* input bytes not consumed */
    char msg[200];      /* zlib's message for zerr ("" if none) */
} ck_inflated;

/* A decoder, reset for each stream (inflateReset keeps its state and window: no
 * allocation per object). One user at a time: the module's own (ck_shared) only with
 * the GIL held, a lane's (ck_batch) only by that lane's thread. */
typedef struct {
    z_stream zs;
    int ready;
} ck_inflater;

static ck_inflater ck_shared;

static void ck_inflater_end(ck_inflater *d)
{
    if (d->ready)
        inflateEnd(&d->zs);
    d->ready = 0;
}

/* Returns 0, or -1 when zlib could not be initialised (out of memory). `n` and
 * `logical` must fit zlib's uInt (the caller falls back to Python otherwise). */
static int ck_inflate_with(ck_inflater *d, const unsigned char *in, size_t n,
                           unsigned char *out, size_t logical, ck_inflated *r)
{
    z_stream *zs = &d->zs;
    unsigned char spill[1];
    int err, spilled = 0;

    memset(r, 0, sizeof *r);
    if (!d->ready) {
        memset(zs, 0, sizeof *zs);
        if (inflateInit(zs) != Z_OK)
            return -1;
        d->ready = 1;
    } else if (inflateReset(zs) != Z_OK) {
        return -1;
    }
    zs->next_in = (Bytef *)in;
    zs->avail_in = (uInt)n;
    zs->next_out = out;
    zs->avail_out = (uInt)logical;
    for (;;) {
        if (zs->avail_out == 0) {
            if (spilled)
                break;  /* logical + 1 bytes: max_length reached */
            spilled = 1;
            zs->next_out = spill;
            zs->avail_out = 1;
        }
        err = inflate(zs, Z_SYNC_FLUSH);
        if (err == Z_STREAM_END) {
            r->eof = 1;
            break;
        }
        if (err == Z_BUF_ERROR)
            break;  /* no progress possible: the input is exhausted */
        if (err != Z_OK) {
            r->zerr = err;
            if (zs->msg != NULL) {
                strncpy(r->msg, zs->msg, sizeof r->msg - 1);
            }
            break;
        }
        if (zs->avail_in == 0 && zs->avail_out != 0)
            break;  /* everything consumed, the output not full: no more will come */
    }
    if (spilled)
        r->produced = logical + (1u - zs->avail_out);
    else
        r->produced = logical - zs->avail_out;
    r->left = zs->avail_in;
    zs->next_in = NULL;  /* nothing of the caller's buffers is kept */
    zs->next_out = NULL;
    return 0;
}

static int ck_inflate(const unsigned char *in, size_t n, unsigned char *out,
                      size_t logical, ck_inflated *r)
{
    return ck_inflate_with(&ck_shared, in, n, out, logical, r);
}

#endif
