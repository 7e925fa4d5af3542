/*
 * csc_unwind_darwin.c — unwinding on Darwin (iOS, macOS): the frame-pointer walk (shared,
 * csc_collect_frames in csc_capture.c) is the only walk. Apple's arm64 and x86_64 ABIs make the
 * frame pointer mandatory (every function keeps the {saved fp, return address} record), and the
 * walk reads each record through vm_read_overwrite (csc_memory_darwin.c), so a corrupt chain
 * ends the walk instead of faulting. The DWARF/compact-unwind walk of libunwind is not used in
 * the handler: it finds unwind sections through dyld, which may take locks. NOT COMPILED OR RUN
 * HERE: no Apple SDK exists on the build machines.
 *
 * Return addresses on arm64e are signed (pointer authentication): the signature bits above the
 * address are stripped before an address is written or looked up. With ptrauth (arm64e builds)
 * through <ptrauth.h>'s ptrauth_strip(…, ptrauth_key_return_address); in plain arm64 builds
 * with XPACLRI (HINT #7), which strips the link register in place where the CPU has pointer
 * authentication and is a no-op (a hint) on CPUs without it — an arm64 app's frames can hold
 * signed addresses written by arm64e system libraries.
 */
#if defined(__APPLE__)
#include "csc_platform.h"

#if __has_feature(ptrauth_calls)
#include <ptrauth.h>
#endif

void csc_unwind_prepare(void) {}

bool csc_unwind_dwarf_available(void) { return false; }

bool csc_unwind_dwarf(uintptr_t pc, csc_thread_id self, uintptr_t *frames, _Atomic int *count, bool *faulted) {
    (void)pc;
    (void)self;
    (void)frames;
    (void)count;
    *faulted = false;
    return false;
}

void csc_unwind_fault_recover(int sig, csc_thread_id self) {
    (void)sig;
    (void)self;
}

uintptr_t csc_code_address(uintptr_t value) {
#if __has_feature(ptrauth_calls)
    return (uintptr_t)ptrauth_strip((void *)value, ptrauth_key_return_address);
#elif defined(__arm64__)
    register uintptr_t link __asm__("x30") = value;
    __asm__ volatile("hint #7" : "+r"(link)); /* XPACLRI */
    return link;
#else
    return value;
#endif
}
#endif /* __APPLE__ */
