/*
 * csc_hang_platform.h — what the app-hang watchdog (csc_hang.c) needs from the operating system,
 * one file per platform (csc_hang_linux.c, csc_hang_darwin.c), each compiled only where it
 * applies. None of it runs in the crash handler except csc_hang_platform_fault_recover.
 */
#ifndef CSC_HANG_PLATFORM_H
#define CSC_HANG_PLATFORM_H

#include "csc_hang.h"

/** Remembers the calling thread as the one to sample; returns its id (the report's thread id). */
uint64_t csc_hang_platform_watch_this_thread(void);
/** Whatever sampling needs before the first hang (Linux: the sampling signal's handler).
 *  False when the watched thread's stack cannot be sampled on this system. */
bool csc_hang_platform_prepare(void);
/** Samples the watched thread's stack into `frames` (innermost first, frame 0 its PC), waiting at
 *  most `wait_ms` for it; returns the count (0: not sampled). Called on the watchdog thread. */
uint32_t csc_hang_platform_sample(uint64_t *frames, uint32_t capacity, uint32_t wait_ms);
/** The watched thread's name, NUL-terminated ("" when unknown). Called on the watchdog thread. */
void csc_hang_platform_watched_name(char *name, size_t capacity);
/** Samples the process's other threads one at a time, neither the watched thread nor the caller
 *  (the watchdog): fills sample->threads (thread_id, name, frames[i].address innermost first,
 *  frame_count, outcome) and threads_listed, threads_found, thread_count, threads_unanswered, threads_blocking,
 *  threads_beyond_limit. A thread is given `answer_ms` to start answering. Images are left to
 *  the caller. Called on the watchdog thread, after csc_hang_platform_sample. */
void csc_hang_platform_sample_others(csc_hang_sample *sample, uint32_t answer_ms);
/** See csc_hang_fault_recover. */
void csc_hang_platform_fault_recover(int sig);
/** See csc_memory_sample. */
bool csc_hang_platform_memory(uint64_t *resident, uint64_t *peak, uint64_t *footprint);
/** Names the calling thread (the watchdog). */
void csc_hang_platform_name_thread(void);
/** The calling thread's name into `name` (at most `capacity` bytes with its NUL; "" if unknown). */
void csc_hang_platform_thread_name(char *name, size_t capacity);
/** Gives the calling thread `name`. */
void csc_hang_platform_set_thread_name(const char *name);

#endif
