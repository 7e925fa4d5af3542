/*
 * csc_crash_kinds.c — deliberate crashes for `shield crash <kind>` and the tests. Each function
 * is kept out of line so a report's crashed-thread stack names it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "csc_internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define CSC_NOINLINE __attribute__((noinline, used))

CSC_NOINLINE void csc_crash_segv(void) {
    volatile int *null_pointer = (volatile int *)(uintptr_t)0;
    *null_pointer = 42;
    __asm__ volatile("" ::: "memory"); /* keep a frame after the faulting store */
}

CSC_NOINLINE void csc_crash_bus(void) {
    /* A mapping of a file that is shorter than the mapping: touching past its end is SIGBUS. */
    char path[] = "/tmp/crashshield-busXXXXXX";
    int fd = mkstemp(path);
    if (fd >= 0) {
        unlink(path);
        volatile char *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (page != MAP_FAILED) page[0] = 1;
    }
    __asm__ volatile("" ::: "memory");
    abort(); /* unreachable unless the mapping failed */
}

CSC_NOINLINE void csc_crash_ill(void) {
    __builtin_trap();
}

CSC_NOINLINE void csc_crash_fpe(void) {
    volatile int numerator = 1, denominator = 0;
    volatile int result = numerator / denominator;
    (void)result;
    __asm__ volatile("" ::: "memory");
}

CSC_NOINLINE void csc_crash_abort(void) {
    abort();
}

CSC_NOINLINE void csc_crash_trap(void) {
#if defined(__x86_64__) || defined(__i386__)
    __asm__ volatile("int3");
#elif defined(__aarch64__)
    __asm__ volatile("brk #0xf000");
#else
    raise(SIGTRAP);
#endif
    __asm__ volatile("" ::: "memory");
}

static CSC_NOINLINE int csc_recurse(int depth) {
    volatile char frame[512];
    frame[0] = (char)depth;
    frame[511] = (char)depth;
    return csc_recurse(depth + 1) + frame[0] + frame[511];
}

CSC_NOINLINE void csc_crash_stack_overflow(void) {
    (void)csc_recurse(0);
}

static void csc_block_forever(void) {
    for (;;) pause();
}

static void *csc_thread_segv_main(void *unused) {
    (void)unused;
    csc_thread_prepare();
    csc_crash_segv();
    return NULL;
}

static void *csc_thread_overflow_main(void *unused) {
    (void)unused;
    csc_thread_prepare();
    csc_crash_stack_overflow();
    return NULL;
}

void csc_crash_thread_segv(void) {
    pthread_t thread;
    pthread_create(&thread, NULL, csc_thread_segv_main, NULL);
    csc_block_forever();
}

void csc_crash_thread_stack_overflow(void) {
    pthread_t thread;
    pthread_create(&thread, NULL, csc_thread_overflow_main, NULL);
    csc_block_forever();
}

static _Atomic int g_ready;

static void *csc_racer_main(void *unused) {
    (void)unused;
    csc_thread_prepare();
    atomic_fetch_add(&g_ready, 1);
    while (atomic_load(&g_ready) < 2) {} /* both threads fault within nanoseconds of each other */
    csc_crash_segv();
    return NULL;
}

void csc_crash_two_threads(void) {
    pthread_t first, second;
    pthread_create(&first, NULL, csc_racer_main, NULL);
    pthread_create(&second, NULL, csc_racer_main, NULL);
    csc_block_forever();
}
