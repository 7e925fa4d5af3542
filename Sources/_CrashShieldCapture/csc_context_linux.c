/*
 * csc_context_linux.c — registers from Linux's ucontext_t (glibc <sys/ucontext.h>): x86_64
 * gregs[REG_*], aarch64 regs[0..30], sp, pc. Async-signal-safe: reads the context only.
 */
#if defined(__linux__)
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* REG_RIP and friends */
#endif
#include "csc_platform.h"

#include <ucontext.h>

uintptr_t csc_context_pc(const void *context) {
    const ucontext_t *uc = context;
#if defined(__x86_64__)
    return (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
    return (uintptr_t)uc->uc_mcontext.pc;
#else
    (void)uc;
    return 0;
#endif
}

uintptr_t csc_context_fp(const void *context) {
    const ucontext_t *uc = context;
#if defined(__x86_64__)
    return (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];
#elif defined(__aarch64__)
    return (uintptr_t)uc->uc_mcontext.regs[29];
#else
    (void)uc;
    return 0;
#endif
}

uintptr_t csc_context_sp(const void *context) {
    const ucontext_t *uc = context;
#if defined(__x86_64__)
    return (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
#elif defined(__aarch64__)
    return (uintptr_t)uc->uc_mcontext.sp;
#else
    (void)uc;
    return 0;
#endif
}

uintptr_t csc_context_lr(const void *context) {
    const ucontext_t *uc = context;
#if defined(__aarch64__)
    return (uintptr_t)uc->uc_mcontext.regs[30];
#else
    (void)uc;
    return 0;
#endif
}

void csc_write_registers(csc_out *out, const void *context) {
    const ucontext_t *uc = context;
    csc_out_raw(out, "{");
#if defined(__x86_64__)
    static const struct { const char *name; int index; } regs[] = {
        {"rip", REG_RIP}, {"rsp", REG_RSP}, {"rbp", REG_RBP}, {"rax", REG_RAX}, {"rbx", REG_RBX},
        {"rcx", REG_RCX}, {"rdx", REG_RDX}, {"rsi", REG_RSI}, {"rdi", REG_RDI}, {"r8", REG_R8},
        {"r9", REG_R9}, {"r10", REG_R10}, {"r11", REG_R11}, {"r12", REG_R12}, {"r13", REG_R13},
        {"r14", REG_R14}, {"r15", REG_R15}, {"eflags", REG_EFL}, {"trapno", REG_TRAPNO}, {"err", REG_ERR},
    };
    for (size_t i = 0; i < sizeof regs / sizeof regs[0]; i++) {
        csc_out_key(out, regs[i].name, i == 0);
        csc_out_hex(out, (uint64_t)uc->uc_mcontext.gregs[regs[i].index]);
    }
#elif defined(__aarch64__)
    static const char *const names[31] = {"x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10",
                                          "x11", "x12", "x13", "x14", "x15", "x16", "x17", "x18", "x19", "x20",
                                          "x21", "x22", "x23", "x24", "x25", "x26", "x27", "x28", "fp", "lr"};
    csc_out_key(out, "pc", true);
    csc_out_hex(out, uc->uc_mcontext.pc);
    csc_out_key(out, "sp", false);
    csc_out_hex(out, uc->uc_mcontext.sp);
    for (int i = 0; i < 31; i++) {
        csc_out_key(out, names[i], false);
        csc_out_hex(out, uc->uc_mcontext.regs[i]);
    }
#else
    (void)uc;
#endif
    csc_out_raw(out, "}");
}
#endif /* __linux__ */
