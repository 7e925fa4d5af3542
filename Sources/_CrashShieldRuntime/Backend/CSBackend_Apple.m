/*
 * CSBackend_Apple.m — the runtime backend for Apple's Objective-C runtime.
 *
 * NOT VERIFIED: the Linux build machines cannot compile or run this file. It is kept to the
 * documented public runtime API and as small as possible. Apple's runtime flushes its method
 * caches on method_setImplementation(), so no dispatch-table refresh is needed.
 */
#import "CSBackend.h"

#if defined(__APPLE__)
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

IMP cs_backend_override_method(Class cls, SEL sel, IMP imp, const char *types) {
    Method own = cs_own_method(cls, sel);
    if (own != NULL) return method_setImplementation(own, imp);
    Method inherited = class_getInstanceMethod(cls, sel);
    if (inherited == NULL) return NULL;
    IMP previous = method_getImplementation(inherited);
    if (!class_addMethod(cls, sel, imp, types ? types : method_getTypeEncoding(inherited))) return NULL;
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
static cs_forward_decider g_forward_decider;
static cs_forward_reporter g_forward_reporter;
static Class g_retarget_class;
static cs_forward_retarget_decider g_retarget_decider;
static cs_forward_target_fn g_retarget_target;
static cs_forward_reporter g_retarget_reporter;
static IMP g_original_instance_ftarget;
static IMP g_original_class_ftarget;
static id g_stub_object;

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

static id cs_apple_zero_imp(id self, SEL _cmd) {
    (void)self;
    (void)_cmd;
    return nil;
}

static BOOL cs_apple_stub_resolve(id self, SEL _cmd, SEL sel) {
    (void)_cmd;
    class_addMethod((Class)self, sel, (IMP)cs_apple_zero_imp, "@@:");
    return YES;
}

static id cs_apple_ftarget(id self, SEL _cmd, SEL sel, IMP original) {
    id target = ((id(*)(id, SEL, SEL))original)(self, _cmd, sel);
    if (target != nil) return target;
    if (g_retarget_class != Nil && object_getClass(self) == g_retarget_class) {
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

static id cs_apple_instance_ftarget(id self, SEL _cmd, SEL sel) {
    return cs_apple_ftarget(self, _cmd, sel, g_original_instance_ftarget);
}

static id cs_apple_class_ftarget(id self, SEL _cmd, SEL sel) {
    return cs_apple_ftarget(self, _cmd, sel, g_original_class_ftarget);
}

/* Installs the stub class and the forwardingTargetForSelector: hooks once; they stay (without a
 * decider they answer exactly what the originals answer). */
static const char *cs_apple_hook_forwarding(void) {
    if (g_stub_object == nil) {
        Class stub = objc_allocateClassPair(objc_lookUpClass("NSObject"), "CSForwardingStub", 0);
        if (stub == Nil) return "the forwarding stub class could not be made";
        class_addMethod(object_getClass((id)stub), sel_registerName("resolveInstanceMethod:"),
                        (IMP)cs_apple_stub_resolve, "c@::");
        objc_registerClassPair(stub);
        g_stub_object = [[stub alloc] init];
    }
    if (g_original_instance_ftarget == NULL) {
        Class root = objc_lookUpClass("NSObject");
        SEL sel = sel_registerName("forwardingTargetForSelector:");
        g_original_instance_ftarget = class_getMethodImplementation(root, sel);
        g_original_class_ftarget = class_getMethodImplementation(object_getClass((id)root), sel);
        cs_backend_replace_implementation(root, sel, (IMP)cs_apple_instance_ftarget);
        cs_backend_replace_implementation(object_getClass((id)root), sel, (IMP)cs_apple_class_ftarget);
    }
    return NULL;
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
}

const char *cs_backend_install_forward_retarget(Class cls, cs_forward_retarget_decider decide,
                                                cs_forward_target_fn target, cs_forward_reporter report) {
    const char *failure = cs_apple_hook_forwarding();
    if (failure) return failure;
    CS_ATOMIC_STORE(&g_retarget_reporter, report);
    CS_ATOMIC_STORE(&g_retarget_target, target);
    CS_ATOMIC_STORE(&g_retarget_decider, decide);
    g_retarget_class = cls;
    return NULL;
}

void cs_backend_uninstall_forward_retarget(void) {
    CS_ATOMIC_STORE(&g_retarget_decider, (cs_forward_retarget_decider)NULL);
}

void cs_backend_defer_dispatch_refresh(BOOL defer) {
    (void)defer; /* method_setImplementation() flushes the caches itself */
}

void cs_backend_replace_implementations(cs_replacement *items, size_t count) {
    for (size_t i = 0; i < count; i++)
        items[i].previous = cs_backend_replace_implementation(items[i].owner, items[i].sel, items[i].replacement);
}

static size_t g_class_list_copies; /* CS_ATOMIC_* */

size_t cs_backend_class_list_copies(void) {
    return CS_ATOMIC_LOAD(&g_class_list_copies);
}

/* objc_copyClassList realizes every class; it runs once per start, for all queries together. */
void cs_backend_visit_owners(const cs_owner_query *queries, size_t count, cs_owner_visitor visit, void *context) {
    if (count == 0) return;
    CS_ATOMIC_FETCH_ADD(&g_class_list_copies, (size_t)1);
    unsigned int total = 0;
    CS_UNRETAINED Class *classes = objc_copyClassList(&total);
    for (unsigned int i = 0; i < total; i++) {
        Class cls = classes[i];
        for (int side = 0; side < 2; side++) {
            BOOL class_side = side == 1;
            BOOL wanted = NO;
            for (size_t q = 0; q < count && !wanted; q++) {
                if (queries[q].class_side != class_side) continue;
                for (Class c = cls; c != Nil && !wanted; c = class_getSuperclass(c)) wanted = (c == queries[q].root);
            }
            if (!wanted) continue;
            Class target = class_side ? object_getClass((id)cls) : cls;
            unsigned int method_count = 0;
            Method *methods = class_copyMethodList(target, &method_count);
            for (unsigned int m = 0; m < method_count; m++) {
                SEL name = method_getName(methods[m]);
                for (size_t q = 0; q < count; q++) {
                    if (queries[q].class_side != class_side || queries[q].sel != name) continue;
                    BOOL below = NO;
                    for (Class c = cls; c != Nil && !below; c = class_getSuperclass(c)) below = (c == queries[q].root);
                    if (below) visit(context, q, target, method_getImplementation(methods[m]));
                }
            }
            free(methods);
        }
    }
    free(classes);
}

/* System images by path: the OS's /System and /usr/lib, and the same folders under the simulator
 * runtime's root (DYLD_ROOT_PATH / SIMULATOR_ROOT), where a simulator app's Foundation lives.
 * The answer is cached per image base; called only under the engine lock (install), so the
 * cache takes no lock of its own. */
#include <dlfcn.h>
#include <stdlib.h>

static BOOL cs_apple_path_is_system(const char *path) {
    if (path == NULL) return NO;
    if (strncmp(path, "/System/", 8) == 0 || strncmp(path, "/usr/lib/", 9) == 0) return YES;
    const char *roots[] = {getenv("DYLD_ROOT_PATH"), getenv("SIMULATOR_ROOT")};
    for (size_t r = 0; r < sizeof roots / sizeof roots[0]; r++) {
        size_t length = roots[r] ? strlen(roots[r]) : 0;
        if (length == 0 || strncmp(path, roots[r], length) != 0) continue;
        const char *rest = path + length;
        if (strncmp(rest, "/System/", 8) == 0 || strncmp(rest, "/usr/lib/", 9) == 0) return YES;
    }
    return NO;
}

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
#endif
