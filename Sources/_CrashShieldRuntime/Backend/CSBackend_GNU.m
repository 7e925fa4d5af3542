/*
 * CSBackend_GNU.m — the runtime backend for GNUstep Base on GCC libobjc (verified on Linux).
 *
 * Why a dispatch-table refresh: GCC libobjc keeps a copy-on-write dispatch table per class, and
 * method_setImplementation() patches only the owner's. A subclass that already copied that
 * bucket keeps calling the old IMP (research/gnustep-probe.md §0a), so every replacement is
 * followed by a rebuild of the owner's and its subclasses' tables.
 */
#import "CSBackend.h"

#if !defined(__APPLE__)
#include <dlfcn.h>
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
