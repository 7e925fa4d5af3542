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

/* ---- dealloc hook and lifecycle helpers (CSDeallocHook.m) --------------------------------- */

/**
 * Called from -[NSObject dealloc] for every object that reaches it (after the subclasses'
 * -dealloc bodies), before the memory is freed. Contract for a callback: no autoreleased objects,
 * no lock held while releasing anything (a release may run another -dealloc on this thread), no
 * formatting. Nested deallocs caused by a callback run the callbacks too, up to a small depth.
 */
typedef void (*cs_dealloc_observer)(id object);
/** Decides, after the observers ran, whether to keep the object's memory (a zombie). Returns YES
 *  when it took the object over: the original -dealloc is then not called. */
typedef BOOL (*cs_dealloc_keeper)(id object);

/** Adds an observer to the fixed list (8 entries). Returns NO when the list is full. Idempotent. */
BOOL cs_dealloc_add_observer(cs_dealloc_observer observer);
void cs_dealloc_remove_observer(cs_dealloc_observer observer);
/** Sets (or with NULL clears) the single keeper. */
void cs_dealloc_set_keeper(cs_dealloc_keeper keeper);
/** Installs the hook on -[NSObject dealloc] (root only) on the first acquire; the last release
 *  restores the previous implementation. Returns NO when NSObject has no own -dealloc. */
BOOL cs_dealloc_hook_acquire(void);
void cs_dealloc_hook_release(void);
/** The -[NSObject dealloc] implementation the hook replaced (frees the object), or NULL. */
IMP cs_dealloc_original(void);

/** `[super dealloc]` in the SDK's own helper classes (ARC inserts it by itself). */
#if __has_feature(objc_arc)
#define CS_SUPER_DEALLOC() ((void)0)
#else
#define CS_SUPER_DEALLOC() [super dealloc]
#endif

/** True on the process's main thread. */
BOOL cs_backend_is_main_thread(void);
/** Runs `fn(context)` asynchronously on the main queue (libdispatch when loaded, else the main
 *  run loop). Returns NO when neither is available. */
BOOL cs_backend_main_async(void (*fn)(void *), void *context);
/** Sends `sel` with one object argument through normal dispatch (forwarding included). */
void cs_backend_send1(id target, SEL sel, id argument);
#endif
