/*
 * CSBackend_GNU.m — the runtime backend for GNUstep Base on GCC libobjc (verified on Linux).
 *
 * Why a dispatch-table refresh: GCC libobjc keeps a copy-on-write dispatch table per class, and
 * method_setImplementation() patches only the owner's. A subclass that already copied that
 * bucket keeps calling the old IMP (research/gnustep-probe.md §0a), so every replacement is
 * followed by a rebuild of the owner's and its subclasses' tables.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr, Dl_info */
#endif
#import "CSBackend.h"
#include <dlfcn.h>
#include <cs_incidents.h>

#if !defined(__APPLE__)
#include <string.h>

typedef void (*cs_dtable_update_fn)(Class);

static void cs_dummy_imp(id self, SEL _cmd) {
    (void)self;
    (void)_cmd;
}

static void cs_refresh_dispatch_tables(Class owner) {
    static cs_dtable_update_fn update;
    static int looked_up;
    if (!CS_ATOMIC_LOAD(&looked_up)) {
        update = (cs_dtable_update_fn)dlsym(RTLD_DEFAULT, "__objc_update_dispatch_table_for_class");
        CS_ATOMIC_STORE(&looked_up, 1);
    }
    if (update) {
        update(owner);
        return;
    }
    /* Fallback: class_addMethod always rebuilds the class and its subclasses. Never used on a
     * metaclass here: the callers only refresh classes whose methods they replaced. */
    static unsigned counter;
    char name[64];
    snprintf(name, sizeof name, "__cs_dispatch_refresh_%u", CS_ATOMIC_FETCH_ADD(&counter, 1u));
    class_addMethod(owner, sel_registerName(name), (IMP)cs_dummy_imp, "v@:");
}

static Method cs_own_method(Class owner, SEL sel) {
    unsigned int count = 0;
    Method *methods = class_copyMethodList(owner, &count);
    Method found = NULL;
    const char *wanted = sel_getName(sel);
    for (unsigned int i = 0; i < count && !found; i++)
        if (strcmp(sel_getName(method_getName(methods[i])), wanted) == 0) found = methods[i];
    free(methods);
    return found;
}

IMP cs_backend_own_implementation(Class owner, SEL sel) {
    Method method = cs_own_method(owner, sel);
    return method ? method_getImplementation(method) : NULL;
}

BOOL cs_backend_class_defines(Class cls, SEL sel) {
    return cs_own_method(cls, sel) != NULL;
}

IMP cs_backend_replace_implementation(Class owner, SEL sel, IMP replacement) {
    Method method = cs_own_method(owner, sel);
    if (method == NULL) return NULL;
    IMP previous = method_setImplementation(method, replacement);
    cs_refresh_dispatch_tables(owner);
    return previous;
}

IMP cs_backend_override_method(Class cls, SEL sel, IMP imp, const char *types) {
    Method own = cs_own_method(cls, sel);
    if (own != NULL) {
        IMP previous = method_setImplementation(own, imp);
        cs_refresh_dispatch_tables(cls);
        return previous;
    }
    Method inherited = class_getInstanceMethod(cls, sel);
    if (inherited == NULL) return NULL;
    IMP previous = method_getImplementation(inherited);
    /* class_addMethod rebuilds the dispatch tables of cls and its subclasses. Never used on a
     * metaclass (research/gnustep-probe.md §0b). */
    if (!class_addMethod(cls, sel, imp, types ? types : method_getTypeEncoding(inherited))) return NULL;
    return previous;
}

const char *cs_backend_selector_types(SEL sel) {
    return sel ? sel_getTypeEncoding(sel) : NULL;
}

#pragma mark - Unrecognized messages (__objc_msg_forward2)

/* How GCC libobjc reaches this hook (research/gnustep-probe.md §2): objc_msg_lookup finds no
 * method, +resolveInstanceMethod:/+resolveClassMethod: decline, then __objc_msg_forward2(receiver,
 * sel) is asked for an IMP, which the caller then calls exactly as it would have called the real
 * method. GNUstep installs its own forward2 (NSInvocation-based forwarding); it is kept as the
 * chained previous hook. Nothing here is cached by the runtime: every miss comes back. */

typedef IMP (*cs_forward2_fn)(id, SEL);

static cs_forward2_fn g_previous_forward2;
static cs_forward_decider g_forward_decider;   /* CS_ATOMIC_* */
static cs_forward_reporter g_forward_reporter; /* CS_ATOMIC_* */
static BOOL g_forward_installed;               /* written under the engine lock */

static uintptr_t g_retarget_class;              /* a Class, CS_ATOMIC_*; 0 = no retargeting */
static cs_forward_retarget_decider g_retarget_decider; /* CS_ATOMIC_* */
static cs_forward_target_fn g_retarget_target;  /* CS_ATOMIC_* */
static cs_forward_reporter g_retarget_reporter; /* CS_ATOMIC_* */

/* The object-call mark of this thread (cs_backend_object_call_begin): set around NSObject's
 * performSelector: family, consumed by the one lookup it describes. */
static __thread cs_object_call_mark t_object_call;

cs_object_call_mark cs_backend_object_call_begin(id receiver, SEL sel) {
    cs_object_call_mark previous = t_object_call;
    t_object_call.receiver = receiver;
    t_object_call.sel = sel;
    return previous;
}

void cs_backend_object_call_end(cs_object_call_mark previous) {
    t_object_call = previous;
}

/* True (and the mark consumed) when this lookup is the marked object call. */
static BOOL cs_gnu_take_object_call_mark(id receiver, SEL sel) {
    if (t_object_call.sel == NULL || t_object_call.receiver != receiver || t_object_call.sel != sel) return NO;
    t_object_call.receiver = nil;
    t_object_call.sel = NULL;
    return YES;
}

/* Called by the zero stubs below; hidden so the asm can call it directly. Messages to the
 * retarget class were answered for the retarget client, every other one for the handler. */
__attribute__((visibility("hidden"), used)) void cs_gnu_forward_report(id receiver, SEL sel, const void *caller) {
    uintptr_t retarget_class = CS_ATOMIC_LOAD(&g_retarget_class);
    cs_forward_reporter report = retarget_class != 0 && (uintptr_t)object_getClass(receiver) == retarget_class
                                     ? CS_ATOMIC_LOAD(&g_retarget_reporter)
                                     : CS_ATOMIC_LOAD(&g_forward_reporter);
    if (report) report(receiver, sel, caller);
}

/* Called by the retarget stubs at the moment of the call: reports, stores the receiver to use
 * instead in *target, and returns its implementation of `sel`. A nil target (the client changed
 * its mind since the lookup) gets the runtime's nil-receiver IMP, which returns zero. */
__attribute__((visibility("hidden"), used)) IMP cs_gnu_retarget(id receiver, SEL sel, const void *caller, id *target) {
    cs_forward_target_fn target_for = CS_ATOMIC_LOAD(&g_retarget_target);
    id replacement = target_for ? target_for(receiver, sel) : nil;
    cs_forward_reporter report = CS_ATOMIC_LOAD(&g_retarget_reporter);
    if (replacement != nil && report != NULL) report(receiver, sel, caller);
    *target = replacement;
    return objc_msg_lookup(replacement, sel);
}

#if defined(__x86_64__)
/* Stubs with the signature of whatever method was called. On entry rdi = self, rsi = _cmd and
 * (%rsp) = the call site. They report, then return zero in every register a caller may read for
 * a return value that fits in registers: rax and rdx (integers, pointers, small structs), xmm0
 * and xmm1 (float, double, small structs of floating fields); the x87 variant pushes 0.0 for a
 * long double. The call keeps the stack 16-byte aligned. */
__asm__(".text\n"
        ".p2align 4\n"
        ".globl cs_gnu_zero_stub\n"
        ".hidden cs_gnu_zero_stub\n"
        ".type cs_gnu_zero_stub,@function\n"
        "cs_gnu_zero_stub:\n"
        "    .cfi_startproc\n"
        "    subq $8, %rsp\n"
        "    .cfi_adjust_cfa_offset 8\n"
        "    movq 8(%rsp), %rdx\n"
        "    call cs_gnu_forward_report\n"
        "    addq $8, %rsp\n"
        "    .cfi_adjust_cfa_offset -8\n"
        "    xorl %eax, %eax\n"
        "    xorl %edx, %edx\n"
        "    xorps %xmm0, %xmm0\n"
        "    xorps %xmm1, %xmm1\n"
        "    ret\n"
        "    .cfi_endproc\n"
        ".size cs_gnu_zero_stub, .-cs_gnu_zero_stub\n"
        ".p2align 4\n"
        ".globl cs_gnu_x87_stub\n"
        ".hidden cs_gnu_x87_stub\n"
        ".type cs_gnu_x87_stub,@function\n"
        "cs_gnu_x87_stub:\n"
        "    .cfi_startproc\n"
        "    subq $8, %rsp\n"
        "    .cfi_adjust_cfa_offset 8\n"
        "    movq 8(%rsp), %rdx\n"
        "    call cs_gnu_forward_report\n"
        "    addq $8, %rsp\n"
        "    .cfi_adjust_cfa_offset -8\n"
        "    fldz\n"
        "    ret\n"
        "    .cfi_endproc\n"
        ".size cs_gnu_x87_stub, .-cs_gnu_x87_stub\n");
void cs_gnu_zero_stub(void);
void cs_gnu_x87_stub(void);

/* Retarget stubs: the same message, same arguments, sent to another receiver. Every register
 * that can carry an argument (rdi, rsi, rdx, rcx, r8, r9, rax = vector count for varargs,
 * xmm0-7) is saved, cs_gnu_retarget picks the receiver and its IMP, the registers come back with
 * the receiver replaced, and the stub jumps to the IMP, which returns straight to the call site.
 * Stack arguments are untouched: the frame is gone before the jump. The sret variant is for
 * messages whose result is returned in memory: rdi is the result buffer, self is in rsi. */
#define CS_SAVE_ARGUMENT_REGISTERS                                                                 \
    "    .cfi_startproc\n"                                                                        \
    "    pushq %rbp\n"                                                                             \
    "    .cfi_def_cfa_offset 16\n"                                                                 \
    "    .cfi_offset %rbp, -16\n"                                                                  \
    "    movq %rsp, %rbp\n"                                                                        \
    "    .cfi_def_cfa_register %rbp\n"                                                            \
    "    subq $192, %rsp\n"                                                                        \
    "    movq %rdi, 0(%rsp)\n"                                                                     \
    "    movq %rsi, 8(%rsp)\n"                                                                     \
    "    movq %rdx, 16(%rsp)\n"                                                                    \
    "    movq %rcx, 24(%rsp)\n"                                                                    \
    "    movq %r8, 32(%rsp)\n"                                                                     \
    "    movq %r9, 40(%rsp)\n"                                                                     \
    "    movq %rax, 48(%rsp)\n"                                                                    \
    "    movdqa %xmm0, 64(%rsp)\n"                                                                 \
    "    movdqa %xmm1, 80(%rsp)\n"                                                                 \
    "    movdqa %xmm2, 96(%rsp)\n"                                                                 \
    "    movdqa %xmm3, 112(%rsp)\n"                                                                \
    "    movdqa %xmm4, 128(%rsp)\n"                                                                \
    "    movdqa %xmm5, 144(%rsp)\n"                                                                \
    "    movdqa %xmm6, 160(%rsp)\n"                                                                \
    "    movdqa %xmm7, 176(%rsp)\n"
#define CS_RESTORE_ARGUMENT_REGISTERS_AND_JUMP                                                     \
    "    movq %rax, %r11\n"                                                                        \
    "    movq 0(%rsp), %rdi\n"                                                                     \
    "    movq 8(%rsp), %rsi\n"                                                                     \
    "    movq 16(%rsp), %rdx\n"                                                                    \
    "    movq 24(%rsp), %rcx\n"                                                                    \
    "    movq 32(%rsp), %r8\n"                                                                     \
    "    movq 40(%rsp), %r9\n"                                                                     \
    "    movq 48(%rsp), %rax\n"                                                                    \
    "    movdqa 64(%rsp), %xmm0\n"                                                                 \
    "    movdqa 80(%rsp), %xmm1\n"                                                                 \
    "    movdqa 96(%rsp), %xmm2\n"                                                                 \
    "    movdqa 112(%rsp), %xmm3\n"                                                                \
    "    movdqa 128(%rsp), %xmm4\n"                                                                \
    "    movdqa 144(%rsp), %xmm5\n"                                                                \
    "    movdqa 160(%rsp), %xmm6\n"                                                                \
    "    movdqa 176(%rsp), %xmm7\n"                                                                \
    "    leave\n"                                                                                  \
    "    .cfi_def_cfa %rsp, 8\n"                                                                   \
    "    jmp *%r11\n"                                                                              \
    "    .cfi_endproc\n"

/* Slot 56(%rsp) receives the new receiver; the saved self slot is overwritten with it. */
__asm__(".text\n"
        ".p2align 4\n"
        ".globl cs_gnu_retarget_stub\n"
        ".hidden cs_gnu_retarget_stub\n"
        ".type cs_gnu_retarget_stub,@function\n"
        "cs_gnu_retarget_stub:\n" CS_SAVE_ARGUMENT_REGISTERS
        "    movq 8(%rbp), %rdx\n"
        "    leaq 56(%rsp), %rcx\n"
        "    call cs_gnu_retarget\n"
        "    movq 56(%rsp), %rdi\n"
        "    movq %rdi, 0(%rsp)\n" CS_RESTORE_ARGUMENT_REGISTERS_AND_JUMP
        ".size cs_gnu_retarget_stub, .-cs_gnu_retarget_stub\n"
        ".p2align 4\n"
        ".globl cs_gnu_retarget_sret_stub\n"
        ".hidden cs_gnu_retarget_sret_stub\n"
        ".type cs_gnu_retarget_sret_stub,@function\n"
        "cs_gnu_retarget_sret_stub:\n" CS_SAVE_ARGUMENT_REGISTERS
        "    movq %rsi, %rdi\n"
        "    movq %rdx, %rsi\n"
        "    movq 8(%rbp), %rdx\n"
        "    leaq 56(%rsp), %rcx\n"
        "    call cs_gnu_retarget\n"
        "    movq 56(%rsp), %rsi\n"
        "    movq %rsi, 8(%rsp)\n" CS_RESTORE_ARGUMENT_REGISTERS_AND_JUMP
        ".size cs_gnu_retarget_sret_stub, .-cs_gnu_retarget_sret_stub\n");
void cs_gnu_retarget_stub(void);
void cs_gnu_retarget_sret_stub(void);

/* How the caller of an unrecognized message expects its result. */
typedef enum {
    CS_CALL_UNKNOWN = 0,   /* an untyped selector called directly: a struct buffer may be in rdi */
    CS_CALL_OBJECT = 1,    /* a marked object call (performSelector:): result in rax, self in rdi */
    CS_CALL_TYPED = 2,     /* the call-site types of a typed selector say it */
} cs_call_convention;

static cs_call_convention cs_gnu_convention(id receiver, SEL sel) {
    if (cs_gnu_take_object_call_mark(receiver, sel)) return CS_CALL_OBJECT;
    const char *types = sel_getTypeEncoding(sel);
    return types != NULL && types[0] != 0 ? CS_CALL_TYPED : CS_CALL_UNKNOWN;
}

/* True when a result of this type is returned in memory (the caller passes the buffer in rdi). */
static BOOL cs_gnu_returns_in_memory(const char *type) {
    const char *ret = objc_skip_type_qualifiers(type);
    return (ret[0] == '{' || ret[0] == '(') && objc_sizeof_type(ret) > 16;
}

/* The retarget stub for sending `sel` to `target`, from the target's own method types; NULL when
 * the caller's known convention differs from the target method's (result in memory or not). */
static IMP cs_gnu_retarget_stub_for(id target, SEL sel, cs_call_convention convention) {
    Method method = class_getInstanceMethod(object_getClass(target), sel);
    const char *types = method ? method_getTypeEncoding(method) : NULL;
    if (types == NULL) return NULL;
    BOOL target_in_memory = cs_gnu_returns_in_memory(types);
    if (convention == CS_CALL_OBJECT && target_in_memory) return NULL;
    if (convention == CS_CALL_TYPED && cs_gnu_returns_in_memory(sel_getTypeEncoding(sel)) != target_in_memory)
        return NULL;
    /* CS_CALL_UNKNOWN: the method that answers defines the convention, as it would for a
     * message that the receiver implemented. */
    return target_in_memory ? (IMP)cs_gnu_retarget_sret_stub : (IMP)cs_gnu_retarget_stub;
}

/* A struct returned in memory: the caller passes the buffer in rdi, so self and _cmd move one
 * argument along. The size comes from the call-site types of the selector it was called with
 * (only typed selectors get this stub). */
static void *cs_gnu_sret_stub(void *result, id self, SEL sel) {
    const char *types = sel_getTypeEncoding(sel);
    int size = types ? objc_sizeof_type(objc_skip_type_qualifiers(types)) : 0;
    if (size > 0) memset(result, 0, (size_t)size);
    cs_gnu_forward_report(self, sel, __builtin_return_address(0));
    return result;
}

/* True when an aggregate's encoding ({name=...}, (name=...)) has a long double member. */
static BOOL cs_aggregate_has_long_double(const char *type) {
    const char *p = strchr(type, '=');
    if (p == NULL) return NO;
    for (p++; *p; p++) {
        if (*p == '"') { /* a quoted field name */
            p = strchr(p + 1, '"');
            if (p == NULL) return NO;
        } else if (*p == 'D') {
            return YES;
        }
    }
    return NO;
}

/* The zero stub for a message sent with `sel` under `convention`; NULL = not covered, which
 * includes every call whose convention is unknown: a zero stub guessing "result in registers"
 * for a caller that passed a struct buffer would read the buffer as the receiver. */
static IMP cs_gnu_stub_for(SEL sel, cs_call_convention convention) {
    if (convention == CS_CALL_OBJECT) return (IMP)cs_gnu_zero_stub;
    if (convention != CS_CALL_TYPED) return NULL;
    const char *ret = objc_skip_type_qualifiers(sel_getTypeEncoding(sel));
    switch (ret[0]) {
    case 'D': return (IMP)cs_gnu_x87_stub;
    case 'j': return ret[1] == 'D' ? NULL : (IMP)cs_gnu_zero_stub;
    case '!': return NULL; /* vectors: wider registers than the stub clears */
    case '{':
    case '(':
        if (objc_sizeof_type(ret) > 16) return (IMP)cs_gnu_sret_stub;
        return cs_aggregate_has_long_double(ret) ? NULL : (IMP)cs_gnu_zero_stub;
    default: return (IMP)cs_gnu_zero_stub;
    }
}
#else
typedef int cs_call_convention;
static cs_call_convention cs_gnu_convention(id receiver, SEL sel) {
    (void)cs_gnu_take_object_call_mark(receiver, sel);
    return 0;
}
static IMP cs_gnu_stub_for(SEL sel, cs_call_convention convention) {
    (void)sel;
    (void)convention;
    return NULL; /* stubs exist for x86_64 only */
}
static IMP cs_gnu_retarget_stub_for(id target, SEL sel, cs_call_convention convention) {
    (void)target;
    (void)sel;
    (void)convention;
    return NULL;
}
#endif

/* The forward hook. Nothing here messages the receiver. */
static IMP cs_gnu_forward2(id receiver, SEL sel) {
    if (receiver != nil) {
        cs_call_convention convention = cs_gnu_convention(receiver, sel);
        uintptr_t retarget_class = CS_ATOMIC_LOAD(&g_retarget_class);
        if (retarget_class != 0 && (uintptr_t)object_getClass(receiver) == retarget_class) {
            /* The retarget client's decision is final for its class. */
            IMP zero_stub = cs_gnu_stub_for(sel, convention);
            cs_forward_retarget_decider decide = CS_ATOMIC_LOAD(&g_retarget_decider);
            cs_forward_decision decision = decide ? decide(receiver, sel, zero_stub != NULL) : CS_FORWARD_DECLINE;
            IMP stub = NULL;
            if (decision == CS_FORWARD_RETARGET) {
                cs_forward_target_fn target_for = CS_ATOMIC_LOAD(&g_retarget_target);
                id target = target_for ? target_for(receiver, sel) : nil;
                stub = target ? cs_gnu_retarget_stub_for(target, sel, convention) : NULL;
            } else if (decision == CS_FORWARD_STUB) {
                stub = zero_stub;
            }
            if (stub != NULL) return stub;
        } else {
            IMP stub = cs_gnu_stub_for(sel, convention);
            cs_forward_decider decide = CS_ATOMIC_LOAD(&g_forward_decider);
            if (stub != NULL && decide != NULL && decide(receiver, sel) == CS_FORWARD_STUB) return stub;
        }
    }
    cs_forward2_fn previous = g_previous_forward2;
    return previous ? previous(receiver, sel) : NULL;
}

static void cs_gnu_hook_forward2(void) {
    if (g_forward_installed) return;
    if (__objc_msg_forward2 != cs_gnu_forward2) g_previous_forward2 = __objc_msg_forward2;
    __objc_msg_forward2 = cs_gnu_forward2;
    g_forward_installed = YES;
}

/* Unhooks once neither client uses the hook. Restores only when nobody chained after us;
 * otherwise the hook stays and declines everything. */
static void cs_gnu_unhook_forward2_if_unused(void) {
    if (!g_forward_installed || CS_ATOMIC_LOAD(&g_forward_decider) != NULL || CS_ATOMIC_LOAD(&g_retarget_class) != 0)
        return;
    if (__objc_msg_forward2 == cs_gnu_forward2) {
        __objc_msg_forward2 = g_previous_forward2;
        g_forward_installed = NO;
    }
}

const char *cs_backend_install_forward_handler(cs_forward_decider decide, cs_forward_reporter report) {
#if !defined(__x86_64__)
    return "no unrecognized-selector stubs for this architecture";
#endif
    CS_ATOMIC_STORE(&g_forward_reporter, report);
    CS_ATOMIC_STORE(&g_forward_decider, decide);
    cs_gnu_hook_forward2();
    return NULL;
}

void cs_backend_uninstall_forward_handler(void) {
    CS_ATOMIC_STORE(&g_forward_decider, (cs_forward_decider)NULL);
    cs_gnu_unhook_forward2_if_unused();
}

const char *cs_backend_install_forward_retarget(Class cls, cs_forward_retarget_decider decide,
                                                cs_forward_target_fn target, cs_forward_reporter report) {
#if !defined(__x86_64__)
    return "no retarget stubs for this architecture";
#endif
    CS_ATOMIC_STORE(&g_retarget_reporter, report);
    CS_ATOMIC_STORE(&g_retarget_target, target);
    CS_ATOMIC_STORE(&g_retarget_decider, decide);
    CS_ATOMIC_STORE(&g_retarget_class, (uintptr_t)cls);
    cs_gnu_hook_forward2();
    return NULL;
}

void cs_backend_uninstall_forward_retarget(void) {
    CS_ATOMIC_STORE(&g_retarget_class, (uintptr_t)0);
    cs_gnu_unhook_forward2_if_unused();
}

static BOOL cs_is_kind_of(Class cls, Class root) {
    for (Class c = cls; c != Nil; c = class_getSuperclass(c))
        if (c == root) return YES;
    return NO;
}

size_t cs_backend_find_owners(Class root, SEL sel, BOOL class_side, Class *out, size_t capacity) {
    int total = objc_getClassList(NULL, 0);
    if (total <= 0) return 0;
    Class *classes = calloc((size_t)total + 16, sizeof(Class));
    total = objc_getClassList(classes, total + 16);
    size_t found = 0;
    for (int i = 0; i < total; i++) {
        Class cls = classes[i];
        if (!cs_is_kind_of(cls, root)) continue;
        Class target = class_side ? object_getClass((id)cls) : cls;
        if (cs_own_method(target, sel) == NULL) continue;
        if (found < capacity) out[found] = target;
        found++;
    }
    free(classes);
    return found;
}
#endif

SEL cs_backend_selector(const char *name) {
    return sel_registerName(name);
}

BOOL cs_backend_is_class_object(id receiver) {
    return receiver != nil && class_isMetaClass(object_getClass(receiver));
}

BOOL cs_backend_class_is_system(Class cls) {
    for (Class c = cls; c != Nil; c = class_getSuperclass(c)) {
        Dl_info info;
        if (dladdr((const void *)c, &info) != 0 && info.dli_fname != NULL)
            return cs_address_is_in_system_image((uintptr_t)c) ? YES : NO;
    }
    return YES;
}
