/*
 * CSBackend_Apple.m — the runtime backend for Apple's Objective-C runtime.
 *
 * NOT COMPILED AGAINST APPLE'S SDK, NOT RUN: everything below is inside `#if defined(__APPLE__)`,
 * so the Linux build sees an empty file; scripts/check-arc.sh's last stage forces the guard open
 * and runs clang's ARC and MRC front ends over it against GNUstep's declarations of the same
 * runtime API (a syntax and ownership check, not a build).
 * It is kept to the documented public runtime API (<objc/runtime.h>, <dlfcn.h>, <mach-o/dyld.h>,
 * <mach-o/getsect.h>, <dispatch/dispatch.h>) and as small as possible. Apple's runtime flushes its method caches on
 * method_setImplementation(), so no dispatch-table refresh is needed.
 *
 * Ownership: on Apple SwiftPM compiles this file with ARC; it is written for ARC and MRC alike
 * (Backend/CSObjC.h): no retain/release/autorelease, receivers the runtime hands to our IMPs are
 * CS_UNRETAINED (borrowed, as in MRC), classes cross into integers only for identity compares,
 * and the one object kept for good (the forwarding stub) is a strong static.
 */
#import "CSBackend.h"

#if defined(__APPLE__)
#include <dlfcn.h>
#include <mach-o/dyld.h>
#include <mach-o/getsect.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static Method cs_own_method(Class owner, SEL sel) {
    unsigned int count = 0;
    Method *methods = class_copyMethodList(owner, &count);
    Method found = NULL;
    for (unsigned int i = 0; i < count && !found; i++)
        if (method_getName(methods[i]) == sel) found = methods[i];
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
    return method ? method_setImplementation(method, replacement) : NULL;
}

BOOL cs_backend_add_method(Class cls, SEL sel, IMP imp, const char *types) {
    if (cls == Nil || sel == NULL || imp == NULL || types == NULL || types[0] == '\0') return NO;
    return class_addMethod(cls, sel, imp, types) ? YES : NO;
}

IMP cs_backend_override_method(Class cls, SEL sel, IMP imp, const char *types) {
    Method own = cs_own_method(cls, sel);
    if (own != NULL) return method_setImplementation(own, imp);
    Method inherited = class_getInstanceMethod(cls, sel);
    if (inherited == NULL) return NULL;
    IMP previous = method_getImplementation(inherited);
    if (!cs_backend_add_method(cls, sel, imp, types ? types : method_getTypeEncoding(inherited))) return NULL;
    return previous;
}

const char *cs_backend_selector_types(SEL sel) {
    (void)sel;
    return NULL; /* Apple selectors carry no types */
}

#pragma mark - Unrecognized messages (NOT VERIFIED)

/* Stage-2 forwarding: -/+[NSObject forwardingTargetForSelector:] answers a stub object whose
 * class resolves every selector to a function returning nil/0, or, for the retarget class, the
 * client's target. Apple selectors carry no types, so the return convention is never known from
 * the selector: the stub covers object and integer returns (floating-point and struct returns are
 * not zeroed; arm64 passes a struct buffer in x8, so the receiver is never misread). The
 * report's caller is the forwarding machinery, so incidents are fingerprinted from the captured
 * stack. A direct call of forwardingTargetForSelector: for a selector the receiver does not
 * implement sees the stub or target too: on Apple this method is the forwarding path. */
static cs_forward_decider g_forward_decider;            /* CS_ATOMIC_* */
static cs_forward_reporter g_forward_reporter;          /* CS_ATOMIC_* */
static uintptr_t g_retarget_class;                      /* CS_ATOMIC_*; 0 when no retarget client */
static cs_forward_retarget_decider g_retarget_decider;  /* CS_ATOMIC_* */
static cs_forward_target_fn g_retarget_target;          /* CS_ATOMIC_* */
static cs_forward_reporter g_retarget_reporter;         /* CS_ATOMIC_* */
/* The IMPs our hooks chain to (CS_ATOMIC_*: read by the hooks on any thread). They stay valid
 * after an unhook, so a call already inside a hook finishes through them. */
static IMP g_original_instance_ftarget;
static IMP g_original_class_ftarget;
/* Whether our hook is in NSObject's instance / class method; written under the engine lock. */
static BOOL g_instance_hooked;
static BOOL g_class_hooked;
static id g_stub_object; /* strong: made once, kept for good (its class cannot be disposed safely) */

/* Marks are only needed where selectors carry types (GNUstep); kept for the shared interface. */
cs_object_call_mark cs_backend_object_call_begin(id receiver, SEL sel) {
    (void)receiver;
    (void)sel;
    cs_object_call_mark none = {nil, NULL};
    return none;
}

void cs_backend_object_call_end(cs_object_call_mark previous) {
    (void)previous;
}

static id cs_apple_zero_imp(CS_UNRETAINED id self, SEL _cmd) {
    (void)self;
    (void)_cmd;
    return nil;
}

/* +resolveInstanceMethod: of the stub class: every selector becomes cs_apple_zero_imp. */
static BOOL cs_apple_stub_resolve(CS_UNRETAINED id self, SEL _cmd, SEL sel) {
    (void)_cmd;
    class_addMethod((Class)self, sel, (IMP)cs_apple_zero_imp, "@@:");
    return YES;
}

static id cs_apple_ftarget(CS_UNRETAINED id self, SEL _cmd, SEL sel, IMP original) {
    id target = ((id(*)(id, SEL, SEL))original)(self, _cmd, sel);
    if (target != nil) return target;
    uintptr_t retarget_class = CS_ATOMIC_LOAD(&g_retarget_class);
    if (retarget_class != 0 && (uintptr_t)object_getClass(self) == retarget_class) {
        cs_forward_retarget_decider decide = CS_ATOMIC_LOAD(&g_retarget_decider);
        /* The stub object answers object and integer results only; Apple gives no more to go on. */
        cs_forward_decision decision = decide ? decide(self, sel, YES) : CS_FORWARD_DECLINE;
        id answer = nil;
        if (decision == CS_FORWARD_RETARGET) {
            cs_forward_target_fn target_for = CS_ATOMIC_LOAD(&g_retarget_target);
            answer = target_for ? target_for(self, sel) : nil;
        } else if (decision == CS_FORWARD_STUB) {
            answer = g_stub_object;
        }
        cs_forward_reporter report = CS_ATOMIC_LOAD(&g_retarget_reporter);
        if (answer != nil && report) report(self, sel, NULL);
        return answer;
    }
    cs_forward_decider decide = CS_ATOMIC_LOAD(&g_forward_decider);
    if (decide == NULL || decide(self, sel) != CS_FORWARD_STUB) return nil;
    cs_forward_reporter report = CS_ATOMIC_LOAD(&g_forward_reporter);
    if (report) report(self, sel, NULL);
    return g_stub_object;
}

static id cs_apple_instance_ftarget(CS_UNRETAINED id self, SEL _cmd, SEL sel) {
    return cs_apple_ftarget(self, _cmd, sel, CS_ATOMIC_LOAD(&g_original_instance_ftarget));
}

static id cs_apple_class_ftarget(CS_UNRETAINED id self, SEL _cmd, SEL sel) {
    return cs_apple_ftarget(self, _cmd, sel, CS_ATOMIC_LOAD(&g_original_class_ftarget));
}

/* Puts `hook` in place of `owner`'s own forwardingTargetForSelector:, chaining to the IMP it
 * replaces (method_setImplementation answers it, so a hook that raced in is chained too). */
static BOOL cs_apple_hook_side(Class owner, IMP hook, IMP *original) {
    SEL sel = sel_registerName("forwardingTargetForSelector:");
    IMP current = cs_backend_own_implementation(owner, sel);
    if (current == NULL) return NO;
    CS_ATOMIC_STORE(original, current);
    IMP replaced = cs_backend_replace_implementation(owner, sel, hook);
    if (replaced != NULL && replaced != current) CS_ATOMIC_STORE(original, replaced);
    return YES;
}

/* Makes the stub class once (it stays), then hooks NSObject's instance and class
 * forwardingTargetForSelector: where not hooked already. Without a decider the hooks answer
 * exactly what the originals answer. */
static const char *cs_apple_hook_forwarding(void) {
    if (g_stub_object == nil) {
        Class stub = objc_allocateClassPair(objc_lookUpClass("NSObject"), "CSForwardingStub", 0);
        if (stub == Nil) return "the forwarding stub class could not be made";
        /* +resolveInstanceMethod: returns BOOL, whose encoding differs by architecture ('B' where
         * BOOL is bool, arm64; 'c' where it is signed char, x86_64 macOS): from the compiler. */
        static char resolver_types[16];
        snprintf(resolver_types, sizeof resolver_types, "%s@::", @encode(BOOL));
        class_addMethod(object_getClass((id)stub), sel_registerName("resolveInstanceMethod:"),
                        (IMP)cs_apple_stub_resolve, resolver_types);
        objc_registerClassPair(stub);
        g_stub_object = [[stub alloc] init];
    }
    Class root = objc_lookUpClass("NSObject");
    if (!g_instance_hooked)
        g_instance_hooked = cs_apple_hook_side(root, (IMP)cs_apple_instance_ftarget, &g_original_instance_ftarget);
    if (!g_class_hooked)
        g_class_hooked = cs_apple_hook_side(object_getClass((id)root), (IMP)cs_apple_class_ftarget,
                                            &g_original_class_ftarget);
    if (!g_instance_hooked || !g_class_hooked) return "NSObject does not define forwardingTargetForSelector:";
    return NULL;
}

/* Gives NSObject's forwardingTargetForSelector: back once neither client uses the hooks, as the
 * GNU backend gives __objc_msg_forward2 back. A side whose method no longer holds our hook (a
 * later hook chains to ours) keeps it: ours then declines everything, like the original. */
static void cs_apple_unhook_forwarding_if_unused(void) {
    if (CS_ATOMIC_LOAD(&g_forward_decider) != NULL || CS_ATOMIC_LOAD(&g_retarget_class) != 0) return;
    SEL sel = sel_registerName("forwardingTargetForSelector:");
    Class root = objc_lookUpClass("NSObject");
    Class meta = object_getClass((id)root);
    if (g_instance_hooked && cs_backend_own_implementation(root, sel) == (IMP)cs_apple_instance_ftarget) {
        cs_backend_replace_implementation(root, sel, CS_ATOMIC_LOAD(&g_original_instance_ftarget));
        g_instance_hooked = NO;
    }
    if (g_class_hooked && cs_backend_own_implementation(meta, sel) == (IMP)cs_apple_class_ftarget) {
        cs_backend_replace_implementation(meta, sel, CS_ATOMIC_LOAD(&g_original_class_ftarget));
        g_class_hooked = NO;
    }
}

const char *cs_backend_install_forward_handler(cs_forward_decider decide, cs_forward_reporter report) {
    const char *failure = cs_apple_hook_forwarding();
    if (failure) return failure;
    CS_ATOMIC_STORE(&g_forward_reporter, report);
    CS_ATOMIC_STORE(&g_forward_decider, decide);
    return NULL;
}

void cs_backend_uninstall_forward_handler(void) {
    CS_ATOMIC_STORE(&g_forward_decider, (cs_forward_decider)NULL);
    cs_apple_unhook_forwarding_if_unused();
}

const char *cs_backend_install_forward_retarget(Class cls, cs_forward_retarget_decider decide,
                                                cs_forward_target_fn target, cs_forward_reporter report) {
    const char *failure = cs_apple_hook_forwarding();
    if (failure) return failure;
    CS_ATOMIC_STORE(&g_retarget_reporter, report);
    CS_ATOMIC_STORE(&g_retarget_target, target);
    CS_ATOMIC_STORE(&g_retarget_decider, decide);
    CS_ATOMIC_STORE(&g_retarget_class, (uintptr_t)cls);
    return NULL;
}

void cs_backend_uninstall_forward_retarget(void) {
    CS_ATOMIC_STORE(&g_retarget_class, (uintptr_t)0);
    CS_ATOMIC_STORE(&g_retarget_decider, (cs_forward_retarget_decider)NULL);
    cs_apple_unhook_forwarding_if_unused();
}

void cs_backend_defer_dispatch_refresh(BOOL defer) {
    (void)defer; /* method_setImplementation() flushes the caches itself */
}

void cs_backend_replace_implementations(cs_replacement *items, size_t count) {
    for (size_t i = 0; i < count; i++)
        items[i].previous = cs_backend_replace_implementation(items[i].owner, items[i].sel, items[i].replacement);
}

/* Owner discovery never walks the class list here (it would realize every class): the counter
 * stays zero. */
size_t cs_backend_class_list_copies(void) {
    return 0;
}

#define CS_APPLE_MAX_ROOT_IMAGES 8

/* Matches one side's own methods against the queries whose root is above `cls` (bit r of
 * `roots_above` for roots[r]) and that ask about this side. Realizes `cls` (class_copyMethodList):
 * called only for classes below a hooked root. */
static void cs_apple_visit_side(Class target, BOOL class_side, const cs_owner_query *queries, size_t count,
                                const Class *roots, size_t root_count, uint64_t roots_above, cs_owner_visitor visit,
                                void *context) {
    unsigned int method_count = 0;
    Method *methods = class_copyMethodList(target, &method_count);
    for (unsigned int m = 0; m < method_count; m++) {
        SEL name = method_getName(methods[m]);
        for (size_t q = 0; q < count; q++) {
            if (queries[q].class_side != class_side || queries[q].sel != name) continue;
            for (size_t r = 0; r < root_count; r++)
                if ((roots_above & (UINT64_C(1) << r)) && roots[r] == queries[q].root) {
                    visit(context, q, target, method_getImplementation(methods[m]));
                    break;
                }
        }
    }
    free(methods);
}

/* Visits `cls`'s owners. The superclass walk reads links only (class_getSuperclass does not
 * realize a class); a class below no root is left as it was. */
static void cs_apple_visit_class(Class cls, const cs_owner_query *queries, size_t count, const Class *roots,
                                 size_t root_count, cs_owner_visitor visit, void *context) {
    uint64_t roots_above = 0;
    for (Class c = cls; c != Nil; c = class_getSuperclass(c))
        for (size_t r = 0; r < root_count; r++)
            if (c == roots[r]) roots_above |= UINT64_C(1) << r;
    if (roots_above == 0) return;
    BOOL wants_instance = NO, wants_class = NO;
    for (size_t q = 0; q < count; q++) {
        BOOL below = NO;
        for (size_t r = 0; r < root_count && !below; r++)
            below = (roots_above & (UINT64_C(1) << r)) && roots[r] == queries[q].root;
        if (!below) continue;
        if (queries[q].class_side) wants_class = YES;
        else wants_instance = YES;
    }
    if (wants_instance) cs_apple_visit_side(cls, NO, queries, count, roots, root_count, roots_above, visit, context);
    if (wants_class)
        cs_apple_visit_side(object_getClass((id)cls), YES, queries, count, roots, root_count, roots_above, visit,
                            context);
}

/* The class pointers of an image's __objc_classlist section (in whichever data segment the
 * linker put it), or NULL. Reading them realizes nothing. */
static const uintptr_t *cs_apple_class_list(const struct mach_header *header, size_t *count) {
    static const char *const segments[] = {"__DATA_CONST", "__DATA", "__DATA_DIRTY"};
    for (size_t s = 0; s < sizeof segments / sizeof segments[0]; s++) {
        unsigned long size = 0;
#if defined(__LP64__)
        const uint8_t *data = getsectiondata((const struct mach_header_64 *)(const void *)header, segments[s],
                                             "__objc_classlist", &size);
#else
        const uint8_t *data = getsectiondata(header, segments[s], "__objc_classlist", &size);
#endif
        if (data != NULL && size >= sizeof(uintptr_t)) {
            *count = (size_t)size / sizeof(uintptr_t);
            return (const uintptr_t *)(const void *)data;
        }
    }
    *count = 0;
    return NULL;
}

static BOOL cs_apple_path_is_system(const char *path);

static BOOL cs_apple_has_prefix(const char *name, const char *const *prefixes, size_t prefix_count) {
    for (size_t p = 0; p < prefix_count; p++)
        if (prefixes[p] != NULL && strncmp(name, prefixes[p], strlen(prefixes[p])) == 0) return YES;
    return NO;
}

void cs_backend_visit_owners(const cs_owner_query *queries, size_t count, const char *const *app_prefixes,
                             size_t app_prefix_count, cs_owner_visitor visit, void *context) {
    if (count == 0) return;
    CS_UNRETAINED Class roots[64];
    size_t root_count = 0;
    const struct mach_header *images[CS_APPLE_MAX_ROOT_IMAGES];
    size_t image_count = 0;
    for (size_t q = 0; q < count; q++) {
        size_t r = 0;
        while (r < root_count && roots[r] != queries[q].root) r++;
        if (r < root_count) continue;
        if (root_count == 64) {
            cs_backend_visit_owners(queries + q, count - q, app_prefixes, app_prefix_count, visit, context);
            count = q;
            break;
        }
        roots[root_count++] = queries[q].root;
        Dl_info info;
        if (dladdr(CS_POINTER(queries[q].root), &info) == 0 || info.dli_fbase == NULL) continue;
        size_t i = 0;
        while (i < image_count && images[i] != (const struct mach_header *)info.dli_fbase) i++;
        if (i == image_count && image_count < CS_APPLE_MAX_ROOT_IMAGES)
            images[image_count++] = (const struct mach_header *)info.dli_fbase;
    }
    for (size_t i = 0; i < image_count; i++) {
        size_t class_count = 0;
        const uintptr_t *classes = cs_apple_class_list(images[i], &class_count);
        for (size_t c = 0; classes != NULL && c < class_count; c++)
            cs_apple_visit_class((__bridge Class)(void *)classes[c], queries, count, roots, root_count, visit, context);
    }
    if (app_prefix_count == 0) return;
    uint32_t loaded = _dyld_image_count();
    for (uint32_t i = 0; i < loaded; i++) {
        const char *path = _dyld_get_image_name(i);
        if (path == NULL || cs_apple_path_is_system(path)) continue;
        unsigned int name_count = 0;
        const char **names = objc_copyClassNamesForImage(path, &name_count);
        for (unsigned int n = 0; names != NULL && n < name_count; n++) {
            if (!cs_apple_has_prefix(names[n], app_prefixes, app_prefix_count)) continue;
            Class cls = objc_getClass(names[n]); /* realizes this opted-in class only */
            if (cls != Nil) cs_apple_visit_class(cls, queries, count, roots, root_count, visit, context);
        }
        free(names);
    }
}

void cs_backend_visit_method_copies(const cs_owner_query *queries, size_t count, cs_owner_visitor visit,
                                    void *context) {
    cs_backend_visit_owners(queries, count, NULL, 0, visit, context);
}

/* System images by path, never by class name: an image is the system's when it lies under
 * /System/ or /usr/lib/ of a system root. The roots are "" (the OS itself) and the root of the
 * runtime the app runs on, found once: the part of Foundation's image path before
 * "/System/Library/Frameworks/" (empty on a device or a Mac; the simulator runtime's root in the
 * simulator, whatever Xcode names it), plus SIMULATOR_ROOT, IPHONE_SIMULATOR_ROOT and
 * DYLD_ROOT_PATH when the environment sets them. Copied once, so a later setenv changes nothing. */
enum { kMaxSystemRoots = 4 };
static char *g_system_roots[kMaxSystemRoots];
static size_t g_system_root_count;
static pthread_once_t g_system_roots_once = PTHREAD_ONCE_INIT;

static void cs_apple_add_system_root(const char *root, size_t length) {
    if (length == 0 || g_system_root_count == kMaxSystemRoots) return;
    for (size_t i = 0; i < g_system_root_count; i++)
        if (strlen(g_system_roots[i]) == length && strncmp(g_system_roots[i], root, length) == 0) return;
    char *copy = strndup(root, length);
    if (copy != NULL) g_system_roots[g_system_root_count++] = copy;
}

static void cs_apple_find_system_roots(void) {
    Dl_info info;
    if (dladdr((const void *)&NSStringFromSelector, &info) != 0 && info.dli_fname != NULL) {
        const char *frameworks = strstr(info.dli_fname, "/System/Library/Frameworks/");
        if (frameworks != NULL) cs_apple_add_system_root(info.dli_fname, (size_t)(frameworks - info.dli_fname));
    }
    const char *variables[] = {"SIMULATOR_ROOT", "IPHONE_SIMULATOR_ROOT", "DYLD_ROOT_PATH"};
    for (size_t v = 0; v < sizeof variables / sizeof variables[0]; v++) {
        const char *value = getenv(variables[v]);
        size_t length = value ? strlen(value) : 0;
        while (length > 1 && value[length - 1] == '/') length--;
        if (length > 1) cs_apple_add_system_root(value, length);
    }
}

static BOOL cs_apple_under_system_folder(const char *path) {
    return strncmp(path, "/System/", 8) == 0 || strncmp(path, "/usr/lib/", 9) == 0;
}

static BOOL cs_apple_path_is_system(const char *path) {
    if (path == NULL) return NO;
    if (cs_apple_under_system_folder(path)) return YES;
    pthread_once(&g_system_roots_once, cs_apple_find_system_roots);
    for (size_t r = 0; r < g_system_root_count; r++) {
        size_t length = strlen(g_system_roots[r]);
        if (strncmp(path, g_system_roots[r], length) == 0 && cs_apple_under_system_folder(path + length)) return YES;
    }
    return NO;
}

/* The answer is cached per image base; called only under the engine lock (install), so the
 * cache takes no lock of its own. */
BOOL cs_backend_implementation_is_system(IMP implementation) {
    static const void *cached_base[16];
    static BOOL cached_answer[16];
    static unsigned cached_count;
    Dl_info info;
    if (dladdr((const void *)implementation, &info) == 0) return NO;
    for (unsigned i = 0; i < cached_count && i < 16; i++)
        if (cached_base[i] == info.dli_fbase) return cached_answer[i];
    BOOL answer = cs_apple_path_is_system(info.dli_fname);
    if (cached_count < 16) {
        cached_base[cached_count] = info.dli_fbase;
        cached_answer[cached_count] = answer;
        cached_count++;
    }
    return answer;
}
void cs_backend_end_uncaught_exception(const char *name, const char *reason) {
    (void)name;
    (void)reason;
}
#endif
