/* The calling thread's C stack, for the CBOR codec's depth guards.
 *
 * Encoding recurses once per nesting level: 300-600 bytes of C stack a level, about three
 * times that under AddressSanitizer. MAX_ENCODE_DEPTH keeps that within a default 8 MiB
 * stack, but a thread may be given far less (threading.stack_size accepts 32 KiB), so every
 * level but the first four compares its own frame with the floor: ck_stack_floor(). Past
 * those four, nothing assumes a size per level, so the guard holds for plain and
 * sanitizer builds alike; the four fit the margin below the floor (at least 16 KiB).
 *
 * Decoding is iterative, but the value it builds is released recursively by the
 * interpreter: CPython 3.13 frees nested lists, dicts, tuples and instances one C frame
 * per level (up to 150 bytes a level here), deferring only past about 10,000 levels (its
 * C recursion limit, which does not depend on the thread's stack); 3.10-3.12 defer past
 * 50 levels. A value nested deeper than the stack can hold would crash the interpreter
 * when it is dropped, so the decoder stops at ck_release_levels(): the same rule on
 * every Python version, not only on those that need it.
 *
 * The stack's bounds are asked of the system once per thread (pthread_getattr_np reads
 * /proc/self/maps for the main thread) and kept in thread-local storage. The stack grows
 * down on every platform built for. */
#ifndef CANONKIT_CBOR_STACK_H
#define CANONKIT_CBOR_STACK_H

#include <stdint.h>

#if defined(__linux__) || defined(__APPLE__) || defined(__FreeBSD__)
#include <pthread.h>
#endif
#if defined(__FreeBSD__)
#include <pthread_np.h>
#endif
#if defined(_WIN32)
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#ifndef NOMINMAX
#define NOMINMAX
#endif
#include <windows.h>
#endif

#if defined(_MSC_VER)
#define CK_THREAD_LOCAL __declspec(thread)
#elif defined(__GNUC__) || defined(__clang__)
#define CK_THREAD_LOCAL __thread
#else
#define CK_THREAD_LOCAL _Thread_local
#endif

/* C stack one level of a decoded value may take while the interpreter releases it: about
 * twice the largest measured (CPython 3.13, x86-64: 32 bytes a list, 64 a dict, 96 a Tag,
 * 144 an instance with a __dict__, as an object_hook may return). */
#define CK_RELEASE_LEVEL_BYTES ((uintptr_t)256)
/* Levels past which every supported CPython defers the release (3.13: C recursion limit). */
#define CK_RELEASE_LEVELS_DEFERRED ((uintptr_t)10000)

/* Room kept free below the guard for what runs after the last check: a leaf item's
 * encoding, a default hook's or object_hook's Python code, the error's construction and
 * the traceback entries of the unwinding. A quarter of the stack, within 16 KiB .. 1 MiB. */
static inline uintptr_t ck_stack_margin(uintptr_t size) {
    uintptr_t m = size / 4;
    if (m < ((uintptr_t)16 << 10)) m = (uintptr_t)16 << 10;
    if (m > ((uintptr_t)1 << 20)) m = (uintptr_t)1 << 20;
    return m;
}

/* The calling thread's usable stack [*low, *high), from the system; 0 when it does not
 * say. */
static inline int ck_stack_measure(uintptr_t *low, uintptr_t *high) {
    uintptr_t lo = 0, size = 0;
#if defined(__linux__) || defined(__FreeBSD__)
    pthread_attr_t attr;
    void *addr = NULL;
    size_t sz = 0;
#if defined(__linux__)
    if (pthread_getattr_np(pthread_self(), &attr) != 0) return 0;
#else
    pthread_attr_init(&attr);
    if (pthread_attr_get_np(pthread_self(), &attr) != 0) {
        pthread_attr_destroy(&attr);
        return 0;
    }
#endif
    /* glibc: [addr, addr + sz) excludes the guard pages; the thread's descriptor and
     * static TLS sit above the frames, inside the range (so the top is not exact, the
     * bottom is) */
    if (pthread_attr_getstack(&attr, &addr, &sz) == 0) {
        lo = (uintptr_t)addr;
        size = (uintptr_t)sz;
    }
    pthread_attr_destroy(&attr);
#elif defined(__APPLE__)
    uintptr_t hi = (uintptr_t)pthread_get_stackaddr_np(pthread_self());
    size = (uintptr_t)pthread_get_stacksize_np(pthread_self());
    lo = hi - size;
#elif defined(_WIN32) && defined(_WIN32_WINNT) && _WIN32_WINNT >= 0x0602
    ULONG_PTR l = 0, h = 0;
    GetCurrentThreadStackLimits(&l, &h);
    lo = (uintptr_t)l;
    size = (uintptr_t)(h - l);
#endif
    if (size == 0) return 0;
    *low = lo;
    *high = lo + size;
    return 1;
}

static CK_THREAD_LOCAL int ck_stack_known;           /* 0: not asked yet; 1: known; -1: unknown */
static CK_THREAD_LOCAL uintptr_t ck_stack_low, ck_stack_high, ck_stack_floor_addr;

/* An address in the caller's frame (the frame itself: a sanitizer may move address-taken
 * locals to a heap-allocated fake stack). */
#if defined(__GNUC__) || defined(__clang__)
#define ck_stack_here() ((uintptr_t)__builtin_frame_address(0))
#else
static inline uintptr_t ck_stack_here(void) {
    volatile char here = 0;
    return (uintptr_t)&here;
}
#endif

/* The lowest address a walk that starts at `here` may recurse down to on this thread, or
 * 0 when that cannot be known (the platform does not say, or `here` is not on the thread's
 * stack — a coroutine library's own stack): then only max_depth bounds the recursion. */
static inline uintptr_t ck_stack_floor(uintptr_t here) {
    if (ck_stack_known == 0) {
        ck_stack_known = -1;
        if (ck_stack_measure(&ck_stack_low, &ck_stack_high)) {
            ck_stack_known = 1;
            ck_stack_floor_addr = ck_stack_low + ck_stack_margin(ck_stack_high - ck_stack_low);
        }
    }
    if (ck_stack_known < 0 || here <= ck_stack_low || here > ck_stack_high) return 0;
    return ck_stack_floor_addr;
}

/* How many nesting levels a value decoded at `here` may have so that this thread's stack
 * can release it (see the top of this file); -1 for no limit. */
static inline intptr_t ck_release_levels(uintptr_t here) {
    uintptr_t floor = ck_stack_floor(here), room;
    if (floor == 0) return -1;
    room = here > floor ? here - floor : 0;
    if (room / CK_RELEASE_LEVEL_BYTES >= CK_RELEASE_LEVELS_DEFERRED) return -1;
    return (intptr_t)(room / CK_RELEASE_LEVEL_BYTES);
}

#endif
