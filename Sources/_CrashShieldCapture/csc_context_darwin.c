/*
 * csc_context_darwin.c — registers from Darwin's signal context (iOS, macOS). NOT COMPILED OR RUN
 * HERE: no Apple SDK exists on the build machines; written against Apple's headers:
 *   - bsd/sys/_types/_ucontext.h: ucontext_t's uc_mcontext is a POINTER (_STRUCT_MCONTEXT *), not
 *     an embedded struct as on Linux;
 *   - bsd/{arm,i386}/_mcontext.h: _STRUCT_MCONTEXT64 { __es (exception state), __ss (thread
 *     state), __ns / __fs (vector / float state) };
 *   - osfmk/mach/arm/_structs.h: __darwin_arm_thread_state64 { __x[29], __fp, __lr, __sp, __pc,
 *     __cpsr } and __darwin_arm_exception_state64 { __far, __esr, __exception }. On arm64e
 *     (pointer authentication) fp/lr/sp/pc are opaque (__opaque_*) and signed: they are read
 *     only through the header's accessors, on a copy whose signatures
 *     __darwin_arm_thread_state64_ptrauth_strip() removed (authenticating a corrupt LR inside the
 *     handler could itself fault);
 *   - osfmk/mach/i386/_structs.h: __darwin_x86_thread_state64 { __rax ... __r15, __rip,
 *     __rflags, __cs, __fs, __gs } and __darwin_x86_exception_state64 { __trapno, __cpu, __err,
 *     __faultvaddr }.
 * Async-signal-safe: reads the context only.
 */
#if defined(__APPLE__)
#include "csc_platform.h"

#include <signal.h>
#include <sys/ucontext.h>

static const struct __darwin_mcontext64 *csc_mcontext(const void *context) {
    const ucontext_t *uc = context;
    return uc ? (const struct __darwin_mcontext64 *)uc->uc_mcontext : NULL;
}

#if defined(__arm64__)
/** The thread state with pointer-authentication signatures stripped (no-op without arm64e). */
static struct __darwin_arm_thread_state64 csc_thread_state(const struct __darwin_mcontext64 *mc) {
    struct __darwin_arm_thread_state64 state = mc->__ss;
    __darwin_arm_thread_state64_ptrauth_strip(state);
    return state;
}
#endif

uintptr_t csc_context_pc(const void *context) {
    const struct __darwin_mcontext64 *mc = csc_mcontext(context);
    if (mc == NULL) return 0;
#if defined(__arm64__)
    struct __darwin_arm_thread_state64 state = csc_thread_state(mc);
    return (uintptr_t)__darwin_arm_thread_state64_get_pc(state);
#elif defined(__x86_64__)
    return (uintptr_t)mc->__ss.__rip;
#else
    return 0;
#endif
}

uintptr_t csc_context_fp(const void *context) {
    const struct __darwin_mcontext64 *mc = csc_mcontext(context);
    if (mc == NULL) return 0;
#if defined(__arm64__)
    struct __darwin_arm_thread_state64 state = csc_thread_state(mc);
    return (uintptr_t)__darwin_arm_thread_state64_get_fp(state);
#elif defined(__x86_64__)
    return (uintptr_t)mc->__ss.__rbp;
#else
    return 0;
#endif
}

uintptr_t csc_context_sp(const void *context) {
    const struct __darwin_mcontext64 *mc = csc_mcontext(context);
    if (mc == NULL) return 0;
#if defined(__arm64__)
    struct __darwin_arm_thread_state64 state = csc_thread_state(mc);
    return (uintptr_t)__darwin_arm_thread_state64_get_sp(state);
#elif defined(__x86_64__)
    return (uintptr_t)mc->__ss.__rsp;
#else
    return 0;
#endif
}

uintptr_t csc_context_lr(const void *context) {
    const struct __darwin_mcontext64 *mc = csc_mcontext(context);
    if (mc == NULL) return 0;
#if defined(__arm64__)
    struct __darwin_arm_thread_state64 state = csc_thread_state(mc);
    return (uintptr_t)__darwin_arm_thread_state64_get_lr(state);
#else
    return 0;
#endif
}

void csc_write_registers(csc_out *out, const void *context) {
    const struct __darwin_mcontext64 *mc = csc_mcontext(context);
    csc_out_raw(out, "{");
    if (mc != NULL) {
#if defined(__arm64__)
        /* The same names as the Linux aarch64 report (x0..x28, fp, lr, sp, pc), plus cpsr and
         * the exception state's fault address and syndrome. */
        static const char *const names[29] = {"x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9",
                                              "x10", "x11", "x12", "x13", "x14", "x15", "x16", "x17", "x18",
                                              "x19", "x20", "x21", "x22", "x23", "x24", "x25", "x26", "x27", "x28"};
        struct __darwin_arm_thread_state64 state = csc_thread_state(mc);
        csc_out_key(out, "pc", true);
        csc_out_hex(out, (uint64_t)__darwin_arm_thread_state64_get_pc(state));
        csc_out_key(out, "sp", false);
        csc_out_hex(out, (uint64_t)__darwin_arm_thread_state64_get_sp(state));
        for (int i = 0; i < 29; i++) {
            csc_out_key(out, names[i], false);
            csc_out_hex(out, state.__x[i]);
        }
        csc_out_key(out, "fp", false);
        csc_out_hex(out, (uint64_t)__darwin_arm_thread_state64_get_fp(state));
        csc_out_key(out, "lr", false);
        csc_out_hex(out, (uint64_t)__darwin_arm_thread_state64_get_lr(state));
        csc_out_key(out, "cpsr", false);
        csc_out_hex(out, state.__cpsr);
        csc_out_key(out, "far", false);
        csc_out_hex(out, mc->__es.__far);
        csc_out_key(out, "esr", false);
        csc_out_hex(out, mc->__es.__esr);
#elif defined(__x86_64__)
        /* The same names as the Linux x86_64 report; eflags/trapno/err from the Darwin fields. */
        const struct __darwin_x86_thread_state64 *ss = &mc->__ss;
        const struct { const char *name; uint64_t value; } regs[] = {
            {"rip", ss->__rip}, {"rsp", ss->__rsp}, {"rbp", ss->__rbp}, {"rax", ss->__rax}, {"rbx", ss->__rbx},
            {"rcx", ss->__rcx}, {"rdx", ss->__rdx}, {"rsi", ss->__rsi}, {"rdi", ss->__rdi}, {"r8", ss->__r8},
            {"r9", ss->__r9}, {"r10", ss->__r10}, {"r11", ss->__r11}, {"r12", ss->__r12}, {"r13", ss->__r13},
            {"r14", ss->__r14}, {"r15", ss->__r15}, {"eflags", ss->__rflags}, {"trapno", mc->__es.__trapno},
            {"err", mc->__es.__err}, {"faultvaddr", mc->__es.__faultvaddr},
        };
        for (size_t i = 0; i < sizeof regs / sizeof regs[0]; i++) {
            csc_out_key(out, regs[i].name, i == 0);
            csc_out_hex(out, regs[i].value);
        }
#endif
    }
    csc_out_raw(out, "}");
}
#endif /* __APPLE__ */
