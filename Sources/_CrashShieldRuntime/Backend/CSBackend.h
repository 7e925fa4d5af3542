/*
 * CSBackend.h — everything that differs between Apple's Objective-C runtime and GNUstep on GCC
 * libobjc. Guards are written once against this interface; nothing outside Backend/ may use a
 * runtime-specific function.
 *
 * Implementations: CSBackend_GNU.m (verified on Linux), CSBackend_Apple.m (compiled on Apple
 * platforms only; NOT verified on the Linux build machines).
 */
#ifndef CS_BACKEND_H
#define CS_BACKEND_H

#import "CSObjC.h"

/**
 * Replaces, in place, the implementation of `sel` that `owner` itself defines, and returns the
 * previous IMP (which may be another SDK's hook: callers chain to it). The selector seen by
 * everyone else does not change. On GCC libobjc the dispatch tables of `owner` and all its
 * subclasses are rebuilt, so subclasses that inherit the method see the new IMP at once.
 * Returns NULL (and changes nothing) when `owner` does not define `sel` itself.
 */
IMP cs_backend_replace_implementation(Class owner, SEL sel, IMP replacement);

/**
 * Finds, at run time, every class that is `root` or a subclass of it and defines `sel` itself.
 * With `class_side`, the class methods are searched and the metaclasses are returned.
 * Returns the number found; at most `capacity` are written to `out`.
 */
size_t cs_backend_find_owners(Class root, SEL sel, BOOL class_side, Class *out, size_t capacity);

/** True when `cls` (a class or metaclass) defines `sel` itself, not only by inheritance. */
BOOL cs_backend_class_defines(Class cls, SEL sel);

/** The selector with this name, registered if needed. */
SEL cs_backend_selector(const char *name);

/** True when the receiver is a class object (a `+` message). */
BOOL cs_backend_is_class_object(id receiver);
#endif
