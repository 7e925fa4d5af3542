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

BOOL cs_backend_class_defines(Class cls, SEL sel) {
    return cs_own_method(cls, sel) != NULL;
}

IMP cs_backend_replace_implementation(Class owner, SEL sel, IMP replacement) {
    Method method = cs_own_method(owner, sel);
    return method ? method_setImplementation(method, replacement) : NULL;
}

size_t cs_backend_find_owners(Class root, SEL sel, BOOL class_side, Class *out, size_t capacity) {
    unsigned int total = 0;
    Class *classes = objc_copyClassList(&total);
    size_t found = 0;
    for (unsigned int i = 0; i < total; i++) {
        Class cls = classes[i];
        BOOL kind = NO;
        for (Class c = cls; c != Nil && !kind; c = class_getSuperclass(c)) kind = (c == root);
        if (!kind) continue;
        Class target = class_side ? object_getClass((id)cls) : cls;
        if (cs_own_method(target, sel) == NULL) continue;
        if (found < capacity) out[found] = target;
        found++;
    }
    free(classes);
    return found;
}
#endif
