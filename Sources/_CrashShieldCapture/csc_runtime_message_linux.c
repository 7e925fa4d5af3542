/*
 * csc_runtime_message_linux.c — the Swift runtime's message of a fatal error on Linux. The
 * runtime (swift::reportOnCrash, used where there is no CrashReporterClient) keeps the text of
 * each fatal error ("Fatal error: Index out of range", file and line) in an atomic pointer it
 * exports through swift_getFatalErrorMessageBuffer(), just before it traps. The pointer's address
 * is found once at install; the handler copies the text it points to with fault-free reads.
 */
#if defined(__linux__)
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "csc_platform.h"

#include <dlfcn.h>
#include <stdatomic.h>

typedef void *(*csc_fatal_message_buffer_fn)(void);

/* The runtime's `std::atomic<const char *>`, read as a pointer-sized word. */
static _Atomic(const uintptr_t *) g_message_slot;

void csc_runtime_message_prepare(void) {
    if (atomic_load(&g_message_slot) != NULL) return;
    void *symbol = dlsym(RTLD_DEFAULT, "swift_getFatalErrorMessageBuffer");
    if (symbol == NULL) return; /* no Swift runtime loaded, or one older than the export */
    csc_fatal_message_buffer_fn buffer = (csc_fatal_message_buffer_fn)(uintptr_t)symbol;
    atomic_store(&g_message_slot, (const uintptr_t *)buffer());
}

bool csc_runtime_message_copy(char *text, size_t capacity) {
    const uintptr_t *slot = atomic_load(&g_message_slot);
    uintptr_t message = 0;
    if (capacity == 0 || slot == NULL || !csc_safe_read((uintptr_t)slot, &message, sizeof message) || message == 0) return false;
    return csc_safe_copy_string(message, text, capacity);
}
#endif
