/* A guard for the store's mapped packs and indexes against their file shrinking.
 *
 * The store reads packs and indexes through shared mappings. If another process
 * truncates such a file, a read of a mapped page past its new end raises SIGBUS, and the
 * process dies. The guard catches SIGBUS for addresses inside the mappings registered
 * with it: it maps a page of zeros over the faulting page (so the read completes with
 * zeros), marks that mapping as shrunk, and returns. The readers look at the mark after
 * every read and report the file as truncated (a CorruptObjectError, an fsck finding),
 * so the zeros are never taken for data. A fault at any other address, or a SIGBUS sent
 * with kill(), goes to whatever handler was installed before.
 *
 * Registration happens with the GIL held (one registrar at a time); the handler only
 * reads the table. A slot's end is written before its start, and the start cleared
 * first on release, so the handler never sees a half-written range. The table has room
 * for more mappings than a process may hold (vm.max_map_count is 65530 by default).
 */
#ifndef CANONKIT_STORE_GUARD_H
#define CANONKIT_STORE_GUARD_H

#ifdef _WIN32  /* no SIGBUS: a mapped file cannot be truncated while mapped there */
static Py_ssize_t ck_guard_register(const void *p, Py_ssize_t n) { (void)p; (void)n; return -1; }
static void ck_guard_release(Py_ssize_t slot) { (void)slot; }
static int ck_guard_shrunk(Py_ssize_t slot) { (void)slot; return 0; }
#else

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define CK_GUARD_SLOTS 65536

typedef struct {
    uintptr_t start;  /* 0: free */
    uintptr_t end;
    int shrunk;
} ck_guard_slot;

static ck_guard_slot ck_guard_table[CK_GUARD_SLOTS];
static size_t ck_guard_high = 0;   /* slots in use are below this */
static struct sigaction ck_guard_previous;
static uintptr_t ck_guard_page = 0;

static void ck_guard_pass_on(int sig, siginfo_t *info, void *context)
{
    if (ck_guard_previous.sa_flags & SA_SIGINFO) {
        if (ck_guard_previous.sa_sigaction != NULL) {
            ck_guard_previous.sa_sigaction(sig, info, context);
            return;
        }
    } else if (ck_guard_previous.sa_handler != SIG_DFL
               && ck_guard_previous.sa_handler != SIG_IGN) {
        ck_guard_previous.sa_handler(sig);
        return;
    }
    /* the default action: reinstate it and let the signal happen again (a fault
       re-executes the faulting instruction; a sent signal is raised once more) */
    signal(sig, SIG_DFL);
    if (info == NULL || info->si_code <= 0)
        raise(sig);
}

static void ck_guard_on_sigbus(int sig, siginfo_t *info, void *context)
{
    int saved = errno;
    if (info != NULL && info->si_code > 0) {  /* a fault, not kill() or raise() */
        uintptr_t addr = (uintptr_t)info->si_addr;
        size_t high = __atomic_load_n(&ck_guard_high, __ATOMIC_ACQUIRE);
        for (size_t i = 0; i < high; i++) {
            uintptr_t start = __atomic_load_n(&ck_guard_table[i].start, __ATOMIC_ACQUIRE);
            uintptr_t end = __atomic_load_n(&ck_guard_table[i].end, __ATOMIC_ACQUIRE);
            if (start != 0 && addr >= start && addr < end) {
                uintptr_t page = addr & ~(ck_guard_page - 1);
                void *got = mmap((void *)page, (size_t)ck_guard_page, PROT_READ,
                                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
                if (got != MAP_FAILED) {
                    __atomic_store_n(&ck_guard_table[i].shrunk, 1, __ATOMIC_RELEASE);
                    errno = saved;
                    return;
                }
            }
        }
    }
    errno = saved;
    ck_guard_pass_on(sig, info, context);
}

/* Make sure the handler is installed and first in line (something may have installed
   its own since, e.g. faulthandler.enable()); it then passes on to that one.
   Returns 0, or -1 with errno set. */
static int ck_guard_install(void)
{
    struct sigaction current, mine;
    if (ck_guard_page == 0) {
        long page = sysconf(_SC_PAGESIZE);
        ck_guard_page = (uintptr_t)(page > 0 ? page : 4096);
    }
    if (sigaction(SIGBUS, NULL, &current) != 0)
        return -1;
    if ((current.sa_flags & SA_SIGINFO) && current.sa_sigaction == ck_guard_on_sigbus)
        return 0;
    memset(&mine, 0, sizeof(mine));
    mine.sa_sigaction = ck_guard_on_sigbus;
    mine.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
    sigemptyset(&mine.sa_mask);
    ck_guard_previous = current;
    return sigaction(SIGBUS, &mine, NULL);
}

/* Register [p, p + n); returns the slot, or -1 when the handler cannot be installed or
   the table is full (the reader then runs unguarded, as an unmapped buffer would). */
static Py_ssize_t ck_guard_register(const void *p, Py_ssize_t n)
{
    size_t i;
    if (n <= 0 || ck_guard_install() != 0)
        return -1;
    for (i = 0; i < CK_GUARD_SLOTS; i++) {
        if (__atomic_load_n(&ck_guard_table[i].start, __ATOMIC_ACQUIRE) == 0)
            break;
    }
    if (i == CK_GUARD_SLOTS)
        return -1;
    ck_guard_table[i].shrunk = 0;
    __atomic_store_n(&ck_guard_table[i].end, (uintptr_t)p + (uintptr_t)n, __ATOMIC_RELEASE);
    __atomic_store_n(&ck_guard_table[i].start, (uintptr_t)p, __ATOMIC_RELEASE);
    if (i + 1 > ck_guard_high)
        __atomic_store_n(&ck_guard_high, i + 1, __ATOMIC_RELEASE);
    return (Py_ssize_t)i;
}

static void ck_guard_release(Py_ssize_t slot)
{
    if (slot >= 0 && slot < CK_GUARD_SLOTS)
        __atomic_store_n(&ck_guard_table[slot].start, 0, __ATOMIC_RELEASE);
}

static int ck_guard_shrunk(Py_ssize_t slot)
{
    if (slot < 0 || slot >= CK_GUARD_SLOTS)
        return 0;
    return __atomic_load_n(&ck_guard_table[slot].shrunk, __ATOMIC_ACQUIRE);
}

#endif  /* _WIN32 */
#endif
