/*
 * csc_unwind_linux.c — the DWARF walk of the crashed thread on Linux (libgcc's _Unwind_Backtrace)
 * and its recovery point. The frame-pointer walk that backs it up is shared (csc_capture.c).
 */
#if defined(__linux__)
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "csc_platform.h"

#include <dlfcn.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <unwind.h>

/* Set at install: the DWARF unwinder may run in the handler. libgcc's _Unwind_Backtrace finds
 * unwind tables without the loader lock and without allocating only through glibc's
 * _dl_find_object (glibc 2.35+); older systems fall back to dl_iterate_phdr, which takes the
 * loader lock (rule 2). Without it the handler walks frame pointers only. */
static bool g_dwarf_unwind_is_safe;

/* libgcc's unwinder reads memory directly (rule 6 cannot hold inside it): the instruction bytes
 * at a PC without unwind tables (its signal-frame check) and whatever a corrupt CFA points to.
 * So the DWARF walk runs only from a PC whose instruction could be fetched (see
 * csc_collect_frames in csc_capture.c), and under a recovery point: while it runs,
 * g_unwind_guard_tid holds the owner's thread id, and a SIGSEGV/SIGBUS on that thread (which
 * re-enters the handler: SA_NODEFER) jumps back to g_unwind_recovery instead of counting as a
 * crash of the handler. The walk is then "failed": the report keeps what was gathered and the
 * frame-pointer walk (through csc_safe_read) takes over. Only the report owner unwinds, so one
 * recovery point suffices. Jumping out of libgcc is safe on the _dl_find_object path: it holds no
 * lock and allocates nothing there. */
static sigjmp_buf g_unwind_recovery;
static _Atomic csc_thread_id g_unwind_guard_tid;

typedef struct {
    uintptr_t pc;
    bool found;
    int skipped;
    uintptr_t *frames;
    _Atomic int *count;
} csc_unwind_state;

static _Unwind_Reason_Code csc_unwind_step(struct _Unwind_Context *context, void *argument) {
    csc_unwind_state *state = argument;
    int before = 0;
    uintptr_t ip = (uintptr_t)_Unwind_GetIPInfo(context, &before);
    if (!state->found) {
        /* Skip the handler's own frames and the signal trampoline until the interrupted PC. */
        if (ip != state->pc) return ++state->skipped > 64 ? _URC_END_OF_STACK : _URC_NO_REASON;
        state->found = true;
    }
    int count = atomic_load_explicit(state->count, memory_order_relaxed);
    if (count >= CSC_MAX_FRAMES || ip == 0) return _URC_END_OF_STACK;
    state->frames[count] = ip;
    atomic_store_explicit(state->count, count + 1, memory_order_relaxed);
    return _URC_NO_REASON;
}

static _Unwind_Reason_Code csc_warm_step(struct _Unwind_Context *context, void *argument) {
    (void)context;
    return ++*(int *)argument > 2 ? _URC_END_OF_STACK : _URC_NO_REASON;
}

void csc_unwind_prepare(void) {
    g_dwarf_unwind_is_safe = dlsym(RTLD_DEFAULT, "_dl_find_object") != NULL;
    if (g_dwarf_unwind_is_safe) {
        int warm = 0;
        _Unwind_Backtrace(csc_warm_step, &warm); /* binds the unwinder's lazy symbols outside a crash */
    }
}

bool csc_unwind_dwarf_available(void) { return g_dwarf_unwind_is_safe; }

bool csc_unwind_dwarf(uintptr_t pc, csc_thread_id self, uintptr_t *frames, _Atomic int *count, bool *faulted) {
    /* Static: must survive a siglongjmp back into this function. */
    static csc_unwind_state state;
    state = (csc_unwind_state){pc, false, 0, frames, count};
    *faulted = false;
    if (sigsetjmp(g_unwind_recovery, 1) == 0) {
        atomic_store(&g_unwind_guard_tid, self);
        _Unwind_Backtrace(csc_unwind_step, &state);
        atomic_store(&g_unwind_guard_tid, 0);
    } else {
        *faulted = true;
    }
    return state.found;
}

void csc_unwind_fault_recover(int sig, csc_thread_id self) {
    if ((sig == SIGSEGV || sig == SIGBUS) && atomic_load(&g_unwind_guard_tid) == self) {
        atomic_store(&g_unwind_guard_tid, 0);
        siglongjmp(g_unwind_recovery, 1);
    }
}

uintptr_t csc_code_address(uintptr_t value) { return value; }
#endif /* __linux__ */
