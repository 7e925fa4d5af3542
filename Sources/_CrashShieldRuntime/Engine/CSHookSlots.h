/*
 * CSHookSlots.h — one replacement IMP per (owning class, selector), without closures.
 *
 * A cluster selector such as -objectAtIndex: is defined by several concrete classes, each with
 * its own original implementation. GCC libobjc has no imp_implementationWithBlock, so each hooked
 * selector gets CS_SLOT_COUNT plain C functions ("slots"); slot N calls the guard body with the
 * original IMP of the N-th owner. The guard body is written once, as
 *
 *     static inline RET body(IMP original, id self, SEL _cmd, const void *caller, T1 a1, ...)
 *
 * and CS_DEFINE_HOOK_<arity>(body, RET, T1, ...) generates `body_slots` with the slot functions.
 * `caller` is the return address into the code that sent the message: the incident's call site.
 *
 * Ownership (MRC and ARC alike): a hook owns nothing it is passed. `self` is CS_UNRETAINED in the
 * slots, and the bodies write it and their object arguments (in their signatures and in the
 * CS_DEFINE_HOOK type list: `CS_UNRETAINED id`) the same way: under ARC a plain `id` parameter is
 * retained on entry, which a method's own `self` never is, and a hooked method may run on, or be
 * passed, an object in -dealloc (`[registry removeObject:self]` from a -dealloc).
 * A hook whose original returns an object with other than +0 ownership (the init family, which
 * also consumes `self`) declares RET as cs_opaque_object; see there.
 */
#ifndef CS_HOOK_SLOTS_H
#define CS_HOOK_SLOTS_H

#import "../Backend/CSObjC.h"

/* Slots per hooked selector: enough for every system owner (GNUstep: at most 10, for
 * -characterAtIndex:; Apple's clusters have more) plus opted-in app classes. Owners beyond it are
 * skipped and reported, and never make the guard fail. */
#define CS_SLOT_COUNT 32

/**
 * An object result that crosses a hook with whatever ownership its original gives it. A C function
 * returning `id` returns +0 to ARC, which would retain and autorelease an init method's +1 result
 * on its way through; as a plain pointer the result passes untouched, as under MRC. For hooks of
 * the init family (and bodies shared with their +0 class-side factories): the body calls the
 * original as `cs_opaque_object (*)(CS_UNRETAINED id, SEL, ...)` and returns its result.
 */
typedef void *cs_opaque_object;

typedef struct {
    IMP replacement[CS_SLOT_COUNT]; /* the generated slot functions, fixed at compile time */
    IMP original[CS_SLOT_COUNT];    /* written before the slot is installed, read-only after */
    CS_UNRETAINED Class owner[CS_SLOT_COUNT];
    unsigned used;
} CSHookSlots;

/** One hooked selector: every class at or below `root_class` that defines it gets a slot,
 *  or, with `root_only`, only the root's own implementation is replaced (subclasses that
 *  override the selector keep theirs and reach the hook only through `super`). */
typedef struct {
    const char *root_class; /* public class-cluster root, e.g. "NSArray" */
    const char *selector;
    BOOL class_side;        /* a `+` method: owners are metaclasses */
    CSHookSlots *slots;
    BOOL root_only;         /* hook `root_class` alone; it must define the selector itself */
} CSHookSpec;

#define CS_HOOK(root, selector_name, body) {root, selector_name, NO, &body##_slots, NO}
#define CS_CLASS_HOOK(root, selector_name, body) {root, selector_name, YES, &body##_slots, NO}
#define CS_ROOT_HOOK(root, selector_name, body) {root, selector_name, NO, &body##_slots, YES}
#define CS_CLASS_ROOT_HOOK(root, selector_name, body) {root, selector_name, YES, &body##_slots, YES}

#define CS_REPEAT_SLOTS(M, ...)\
    M(0, __VA_ARGS__) M(1, __VA_ARGS__) M(2, __VA_ARGS__) M(3, __VA_ARGS__) M(4, __VA_ARGS__)\
    M(5, __VA_ARGS__) M(6, __VA_ARGS__) M(7, __VA_ARGS__) M(8, __VA_ARGS__) M(9, __VA_ARGS__)\
    M(10, __VA_ARGS__) M(11, __VA_ARGS__) M(12, __VA_ARGS__) M(13, __VA_ARGS__) M(14, __VA_ARGS__)\
    M(15, __VA_ARGS__) M(16, __VA_ARGS__) M(17, __VA_ARGS__) M(18, __VA_ARGS__) M(19, __VA_ARGS__)\
    M(20, __VA_ARGS__) M(21, __VA_ARGS__) M(22, __VA_ARGS__) M(23, __VA_ARGS__) M(24, __VA_ARGS__)\
    M(25, __VA_ARGS__) M(26, __VA_ARGS__) M(27, __VA_ARGS__) M(28, __VA_ARGS__) M(29, __VA_ARGS__)\
    M(30, __VA_ARGS__) M(31, __VA_ARGS__)

#define CS_SLOT_LIST(b)\
    (IMP)b##_slot0, (IMP)b##_slot1, (IMP)b##_slot2, (IMP)b##_slot3, (IMP)b##_slot4, (IMP)b##_slot5,\
    (IMP)b##_slot6, (IMP)b##_slot7, (IMP)b##_slot8, (IMP)b##_slot9, (IMP)b##_slot10, (IMP)b##_slot11,\
    (IMP)b##_slot12, (IMP)b##_slot13, (IMP)b##_slot14, (IMP)b##_slot15, (IMP)b##_slot16, (IMP)b##_slot17,\
    (IMP)b##_slot18, (IMP)b##_slot19, (IMP)b##_slot20, (IMP)b##_slot21, (IMP)b##_slot22, (IMP)b##_slot23,\
    (IMP)b##_slot24, (IMP)b##_slot25, (IMP)b##_slot26, (IMP)b##_slot27, (IMP)b##_slot28, (IMP)b##_slot29,\
    (IMP)b##_slot30, (IMP)b##_slot31

#define CS_ORIG(N, b) b##_slots.original[N]
#define CS_CALLER __builtin_return_address(0)

#define CS_SLOT_0(N, b, R) \
    static R b##_slot##N(CS_UNRETAINED id self, SEL _cmd) { return b(CS_ORIG(N, b), self, _cmd, CS_CALLER); }
#define CS_SLOT_1(N, b, R, T1) \
    static R b##_slot##N(CS_UNRETAINED id self, SEL _cmd, T1 a1) { return b(CS_ORIG(N, b), self, _cmd, CS_CALLER, a1); }
#define CS_SLOT_2(N, b, R, T1, T2)                                                                 \
    static R b##_slot##N(CS_UNRETAINED id self, SEL _cmd, T1 a1, T2 a2) {                          \
        return b(CS_ORIG(N, b), self, _cmd, CS_CALLER, a1, a2);                                    \
    }
#define CS_SLOT_3(N, b, R, T1, T2, T3)                                                             \
    static R b##_slot##N(CS_UNRETAINED id self, SEL _cmd, T1 a1, T2 a2, T3 a3) {                   \
        return b(CS_ORIG(N, b), self, _cmd, CS_CALLER, a1, a2, a3);                                \
    }
#define CS_SLOT_4(N, b, R, T1, T2, T3, T4)                                                         \
    static R b##_slot##N(CS_UNRETAINED id self, SEL _cmd, T1 a1, T2 a2, T3 a3, T4 a4) {            \
        return b(CS_ORIG(N, b), self, _cmd, CS_CALLER, a1, a2, a3, a4);                            \
    }

#define CS_SLOT_5(N, b, R, T1, T2, T3, T4, T5)                                                     \
    static R b##_slot##N(CS_UNRETAINED id self, SEL _cmd, T1 a1, T2 a2, T3 a3, T4 a4, T5 a5) {     \
        return b(CS_ORIG(N, b), self, _cmd, CS_CALLER, a1, a2, a3, a4, a5);                        \
    }

/*
 * Fast slots, for the hottest hooks. `fast(self, a1)` is an always-inline, call-free predicate
 * that answers YES only when the call is certainly legal (or the guard is off); the slot then
 * jumps to the original and, having no call of its own on that path, sets up no frame (the
 * compiler places the prologue on the other path only). Otherwise the slot calls `b##_full##N`
 * with its own return address (the call site, as a plain slot passes it), which runs the whole
 * body and decides again from scratch. The result is kept across an empty asm so that call is
 * never turned into a tail call: a slot whose only calls are tail calls would get its frame on
 * every path. Non-void results only (a void hook's plain slot already shrink-wraps).
 */
#define CS_FAST_SLOT_BODY(N, b, R, fast, params, args, fast_args)                                     \
    __attribute__((noinline)) static R b##_full##N(CS_UNRETAINED id self, SEL _cmd, const void *caller CS_UNPAREN params) { \
        return b(CS_ORIG(N, b), self, _cmd, caller CS_UNPAREN args);                               \
    }                                                                                              \
    static R b##_slot##N(CS_UNRETAINED id self, SEL _cmd CS_UNPAREN params) {                      \
        if (CS_LIKELY(fast(self CS_UNPAREN fast_args)))                                            \
            return ((R(*)(id, SEL CS_UNPAREN params))CS_ORIG(N, b))(self, _cmd CS_UNPAREN args);   \
        R result = b##_full##N(self, _cmd, CS_CALLER CS_UNPAREN args);                             \
        __asm__ volatile("" : "+r"(result));                                                       \
        return result;                                                                             \
    }
#define CS_UNPAREN(...) __VA_ARGS__
#define CS_FAST_SLOT_1(N, b, R, T1, fast) CS_FAST_SLOT_BODY(N, b, R, fast, (, T1 a1), (, a1), (, a1))
/* The predicate sees the first argument only. */
#define CS_FAST_SLOT_2(N, b, R, T1, T2, fast) CS_FAST_SLOT_BODY(N, b, R, fast, (, T1 a1, T2 a2), (, a1, a2), (, a1))
#define CS_FAST_SLOT_3(N, b, R, T1, T2, T3, fast)                                                  \
    CS_FAST_SLOT_BODY(N, b, R, fast, (, T1 a1, T2 a2, T3 a3), (, a1, a2, a3), (, a1))

#define CS_DEFINE_SLOTS(b, SLOT, ...)                                                              \
    static CSHookSlots b##_slots;                                                                  \
    CS_REPEAT_SLOTS(SLOT, b, __VA_ARGS__)                                                          \
    static CSHookSlots b##_slots = {.replacement = {CS_SLOT_LIST(b)}};

#define CS_DEFINE_HOOK_0(b, R) CS_DEFINE_SLOTS(b, CS_SLOT_0, R)
#define CS_DEFINE_HOOK_1(b, R, T1) CS_DEFINE_SLOTS(b, CS_SLOT_1, R, T1)
#define CS_DEFINE_HOOK_2(b, R, T1, T2) CS_DEFINE_SLOTS(b, CS_SLOT_2, R, T1, T2)
#define CS_DEFINE_HOOK_3(b, R, T1, T2, T3) CS_DEFINE_SLOTS(b, CS_SLOT_3, R, T1, T2, T3)
#define CS_DEFINE_HOOK_4(b, R, T1, T2, T3, T4) CS_DEFINE_SLOTS(b, CS_SLOT_4, R, T1, T2, T3, T4)
/** Hooks with a fast predicate `fast(self, a1)` (see the fast slots above). */
#define CS_DEFINE_FAST_HOOK_1(b, R, T1, fast) CS_DEFINE_SLOTS(b, CS_FAST_SLOT_1, R, T1, fast)
#define CS_DEFINE_FAST_HOOK_2(b, R, T1, T2, fast) CS_DEFINE_SLOTS(b, CS_FAST_SLOT_2, R, T1, T2, fast)
#define CS_DEFINE_FAST_HOOK_3(b, R, T1, T2, T3, fast) CS_DEFINE_SLOTS(b, CS_FAST_SLOT_3, R, T1, T2, T3, fast)
#define CS_DEFINE_HOOK_5(b, R, T1, T2, T3, T4, T5) CS_DEFINE_SLOTS(b, CS_SLOT_5, R, T1, T2, T3, T4, T5)

#endif
