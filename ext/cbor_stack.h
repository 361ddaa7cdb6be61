/* The calling thread's C stack, for the encoder's recursion guard.
 *
 * The encoder recurses once per nesting level. MAX_ENCODE_DEPTH keeps that within a
 * default 8 MiB stack, but a thread may have a much smaller stack (threading.stack_size)
 * and a sanitizer build has much larger frames: below ck_stack_floor() the encoder stops
 * with an error instead of running off the end of the stack.
 *
 * The stack grows down on every platform built for. */
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

/* Room kept free below the guard for what runs after the last check: a leaf item's
 * encoding, a default hook's Python code, the error's construction. An eighth of the
 * stack, within 64 KiB .. 1 MiB. */
static uintptr_t ck_stack_margin(uintptr_t size) {
    uintptr_t m = size / 8;
    if (m < ((uintptr_t)64 << 10)) m = (uintptr_t)64 << 10;
    if (m > ((uintptr_t)1 << 20)) m = (uintptr_t)1 << 20;
    return m;
}

/* The lowest address the encoder may recurse down to on this thread, or 0 when the
 * platform does not say (then only MAX_ENCODE_DEPTH bounds the recursion). */
static uintptr_t ck_stack_floor(void) {
    uintptr_t low = 0, size = 0;
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
    if (pthread_attr_getstack(&attr, &addr, &sz) == 0) {
        low = (uintptr_t)addr;
        size = (uintptr_t)sz;
    }
    pthread_attr_destroy(&attr);
#elif defined(__APPLE__)
    uintptr_t high = (uintptr_t)pthread_get_stackaddr_np(pthread_self());
    size = (uintptr_t)pthread_get_stacksize_np(pthread_self());
    low = high - size;
#elif defined(_WIN32) && defined(_WIN32_WINNT) && _WIN32_WINNT >= 0x0602
    ULONG_PTR lo = 0, hi = 0;
    GetCurrentThreadStackLimits(&lo, &hi);
    low = (uintptr_t)lo;
    size = (uintptr_t)(hi - lo);
#endif
    if (size == 0) return 0;
    return low + ck_stack_margin(size);
}

/* An address in the caller's frame (the frame itself: a sanitizer may move address-taken
 * locals to a heap-allocated fake stack). */
static inline uintptr_t ck_stack_here(void) {
#if defined(__GNUC__) || defined(__clang__)
    return (uintptr_t)__builtin_frame_address(0);
#else
    volatile char here = 0;
    return (uintptr_t)&here;
#endif
}

#endif
