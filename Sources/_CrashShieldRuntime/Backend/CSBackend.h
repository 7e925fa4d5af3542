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
#include <stdbool.h>

/**
 * Replaces, in place, the implementation of `sel` that `owner` itself defines, and returns the
 * previous IMP (which may be another SDK's hook: callers chain to it). The selector seen by
 * everyone else does not change. On GCC libobjc the new IMP is written into the dispatch tables of
 * `owner` and of the subclasses that inherit the method (in place, a table too small for the
 * selector grown first; rebuilt only when in-place writes are not usable, see
 * cs_backend_dispatch_write_status), so those subclasses see it at once.
 * Returns NULL (and changes nothing) when `owner` does not define `sel` itself.
 */
IMP cs_backend_replace_implementation(Class owner, SEL sel, IMP replacement);

/** The implementation that `owner` itself defines for `sel` (not an inherited or cached one),
 *  or NULL. Read from the class's own method list, never from a dispatch table. */
IMP cs_backend_own_implementation(Class owner, SEL sel);

/**
 * Finds every class in the process that is `root` or a subclass of it and defines `sel` itself
 * (cs_backend_visit_method_copies). With `class_side`, the class methods are searched and the
 * metaclasses are returned. Returns the number found; at most `capacity` are written to `out`.
 */
size_t cs_backend_find_owners(Class root, SEL sel, BOOL class_side, Class *out, size_t capacity);

/** One question for cs_backend_visit_owners(): which classes at or below `root` define `sel`
 *  themselves (with `class_side`, which metaclasses define the class method). */
typedef struct {
    CS_UNRETAINED Class root;
    SEL sel;
    BOOL class_side;
} cs_owner_query;

/** Called once per (query, owner): `owner` is the class or metaclass, `implementation` its own
 *  IMP for the query's selector. Must not change the class list or any method list. */
typedef void (*cs_owner_visitor)(void *context, size_t query, Class owner, IMP implementation);

/**
 * Owner discovery for the hooks: answers every query over the classes the system's images define
 * (those whose implementations cs_backend_implementation_is_system accepts) and the classes whose
 * name starts with one of `app_prefixes` (the app's opt-in), never over the rest of the app's
 * classes, so its cost does not grow with them. Each candidate's own method list is read at most
 * once per side, and only for candidates below some query's root.
 * GNUstep: the system classes are named by the images' dynamic symbols (GCC exports
 * `__objc_class_name_<Name>` for each class an image implements), read once per process; with
 * prefixes, the class list is also walked once, comparing names. Classes made at run time
 * (GNUstep's KVO subclasses) are not candidates.
 * Apple (NOT VERIFIED): the class pointers of the `__objc_classlist` sections of the images that
 * define the queries' roots, and superclass links, neither of which realizes a class; only
 * candidates below a root (system classes) have their method lists read. With prefixes,
 * objc_copyClassNamesForImage() over the app's images and objc_getClass() for matching names.
 * Never objc_copyClassList, objc_getClassList or NSClassFromString.
 */
void cs_backend_visit_owners(const cs_owner_query *queries, size_t count, const char *const *app_prefixes,
                             size_t app_prefix_count, cs_owner_visitor visit, void *context);

/**
 * The same queries over every class of the process, for finding copies of a hook: GNUstep copies
 * methods between classes at +initialize (class behaviours), so a class initialised while hooked
 * may hold a slot function as its own method. One walk over a copy of the class list. Apple (NOT
 * VERIFIED): nothing copies methods, so this is cs_backend_visit_owners() without prefixes.
 */
void cs_backend_visit_method_copies(const cs_owner_query *queries, size_t count, cs_owner_visitor visit,
                                    void *context);

/** How many times the whole class list has been walked for owners in this process (tests: a
 *  start without opted-in prefixes walks it zero times, whatever the number of classes). */
size_t cs_backend_class_list_copies(void);

/**
 * True when `implementation` lies in one of the system's images, decided by address, never by
 * class name. GNUstep: the images holding GNUstep Base (NSObject), libobjc and, when loaded,
 * GNUstep GUI (NSApplication). Apple (NOT VERIFIED): Foundation, CoreFoundation, libobjc and
 * every other image under the system's (or the simulator runtime's) /System and /usr/lib.
 */
BOOL cs_backend_implementation_is_system(IMP implementation);

/** One in-place replacement for cs_backend_replace_implementations(). */
typedef struct {
    CS_UNRETAINED Class owner;
    SEL sel;
    IMP replacement;
    IMP previous; /**< out: what the owner had (NULL: it does not define `sel`, nothing changed) */
} cs_replacement;

/**
 * cs_backend_replace_implementation() for many methods at once. A call racing with the batch
 * reaches either the old or the new IMP of each method, and never a freed dispatch table: on GCC
 * libobjc each replacement's table entries (owner and inheriting subclasses) are written in place
 * under the runtime lock; only when that is not possible are the affected classes' tables rebuilt
 * once after the batch, which is unsafe while other threads message those classes.
 */
void cs_backend_replace_implementations(cs_replacement *items, size_t count);

/**
 * With YES, the dispatch-table rebuilds that cs_backend_replace_implementation(s) and
 * cs_backend_override_method() owe are collected instead of done; NO does them, each class once
 * (a rebuild covers the subclasses, so one rebuild of NSObject serves every hook below it).
 * Meanwhile a message may still reach a replaced implementation's predecessor. Applies to the
 * calling thread only. For the engine's start, under its lock, while every policy is off. Only
 * the rebuild fallback owes rebuilds: where tables are patched in place (GCC libobjc with its
 * table entry points) nothing is collected. No-op on Apple.
 */
void cs_backend_defer_dispatch_refresh(BOOL defer);

/** True when `cls` (a class or metaclass) defines `sel` itself, not only by inheritance. */
BOOL cs_backend_class_defines(Class cls, SEL sel);

/** The selector with this name, registered if needed. */
SEL cs_backend_selector(const char *name);

/** True when the receiver is a class object (a `+` message). */
BOOL cs_backend_is_class_object(CS_UNRETAINED id receiver);

/**
 * Adds the method `sel` (`imp`, type encoding `types`) to `cls`, which may be a metaclass of a
 * class compiled by GCC or made at run time. NO, nothing changed, when `cls` already defines
 * `sel` itself or an argument is Nil, NULL or empty. A class that inherited `sel` answers with
 * `imp` from then on, as do its subclasses that do not define `sel`. A call racing with the add
 * reaches the inherited IMP (or the missing-method path) or `imp`, and never a freed dispatch
 * table: on GCC libobjc the method list is published first and the table entries are then
 * written in place under the runtime lock (class_addMethod would rebuild every table below
 * `cls`), a table too small for a selector registered after it was built being grown in place
 * first; class_addMethod only when in-place writes are not usable (see
 * cs_backend_dispatch_write_status) or a table cannot grow, and on Apple.
 */
BOOL cs_backend_add_method(Class cls, SEL sel, IMP imp, const char *types);

#if !defined(__APPLE__)
/** How the GNUstep backend writes dispatch tables (GCC libobjc). */
typedef struct {
    /** NULL while replacements and adds write the tables in place; otherwise why every write
     *  rebuilds the tables instead (unsafe while other threads message the classes), a stable
     *  code: "runtime-entry-points-missing" (libobjc lacks sarray_at_put_safe, its runtime lock or
     *  the uninstalled-table marker), "class-layout-mismatch" (NSObject does not read back as GCC's
     *  struct objc_class), "selector-encoding-unknown" (not 64-bit little-endian),
     *  "dispatch-table-layout-mismatch" or "dispatch-table-entries-mismatch" (the table
     *  self-check: NSObject's table and a copy of it do not read as GCC's struct sarray, or
     *  NSObject's methods do not read back from it as class_getMethodImplementation answers), or
     *  "dispatch-tables-not-built" (NSObject's table is not installed yet: decided at a later
     *  write). */
    const char *fallback;
    /** True when a write past a table's capacity grows the table in place (x86-64, objc_malloc
     *  found, in-place writes in use); false: such a write rebuilds instead. */
    bool grows_tables;
} cs_dispatch_write_status;

/** The current cs_dispatch_write_status; runs the decision (once) if no write has yet. */
cs_dispatch_write_status cs_backend_dispatch_write_status(void);

/** True when `cls`'s dispatch table is installed and has an entry for `sel` without growing
 *  (false as well when in-place writes are not in use). */
bool cs_backend_dispatch_table_holds(Class cls, SEL sel);
#endif

/**
 * Gives `cls` its own implementation of the instance method `sel`: replaces it in place when `cls`
 * defines it, else adds it (`types` NULL: the inherited method's types). Returns the IMP `cls`
 * answered with before (its own or the inherited one), or NULL (nothing changed) when `cls` does
 * not respond to `sel` at all. Undo by calling it again with the returned IMP.
 */
IMP cs_backend_override_method(Class cls, SEL sel, IMP imp, const char *types);

/** The call-site type encoding carried by `sel`, or NULL when it has none (an untyped selector
 *  on GNUstep; always NULL on Apple, whose selectors carry no types). */
const char *cs_backend_selector_types(SEL sel);

/** True when `cls` comes from a system image (Foundation, the runtime...), false for the app's
 *  own images. A class made at run time (KVO subclasses) is judged by its nearest superclass
 *  that has an image. Not for hot paths: callers cache the answer per class. */
BOOL cs_backend_class_is_system(Class cls);

/* ---- unrecognized messages (selector and NSNull guards) ------------------------------------- */

typedef enum {
    CS_FORWARD_DECLINE = 0,  /**< leave the message to the runtime's own forwarding (and exception) */
    CS_FORWARD_STUB = 1,     /**< answer it with a stub that returns zero, nil or a zeroed struct */
    CS_FORWARD_RETARGET = 2, /**< send it on to another object (retarget clients only) */
} cs_forward_decision;

/** Asked for a message that no class in the receiver's chain implements (receiver never nil),
 *  on the sending thread, before the runtime's own forwarding, and only when the backend knows
 *  how the caller expects the result (see below). Must not message the receiver. The receiver
 *  parameters of these callbacks are CS_UNRETAINED (write them so in the implementations too:
 *  the function-pointer type does not enforce it): the receiver may be a zombie or deallocating. */
typedef cs_forward_decision (*cs_forward_decider)(CS_UNRETAINED id receiver, SEL sel);

/** Called by the stub when it answers a message, with the call site's return address. */
typedef void (*cs_forward_reporter)(CS_UNRETAINED id receiver, SEL sel, const void *caller);

/**
 * Routes unrecognized messages through `decide` and, when it says STUB, answers them with a stub
 * that calls `report` and returns zero. Chains to whatever forwarding hook was there before
 * (GNUstep's own) for everything it declines. Returns NULL on success, else a static reason.
 * Nothing is added to any class: respondsToSelector:, methodSignatureForSelector:,
 * instancesRespondToSelector: and forwardingTargetForSelector: answer as before.
 *
 * The stub must return the way the caller reads the result, so a message is answered only when
 * that convention is known; otherwise `decide` is not asked and the runtime throws as before.
 * Known: the call-site type encoding of a typed selector, or a call marked with
 * cs_backend_object_call_begin (an object result in a register). Unknown: an untyped selector
 * (NSSelectorFromString, @selector) called any other way, since a caller that expects a struct
 * in memory passes the result buffer where the receiver would be.
 *
 * GNUstep (verified): the runtime's __objc_msg_forward2 hook; x86_64 registers rax/rdx/xmm0/xmm1
 * zeroed, x87 0.0 for long double, a zeroed buffer for structs returned in memory (> 16 bytes).
 * Not covered (declined, so the runtime throws as before): `_Complex long double`, small structs
 * holding a long double, vector results, and every architecture other than x86_64.
 * Apple (NOT VERIFIED): NSObject's forwardingTargetForSelector: answers a stub object.
 */
const char *cs_backend_install_forward_handler(cs_forward_decider decide, cs_forward_reporter report);
/** Stops routing messages to the handler; the previous forwarding hook is restored. */
void cs_backend_uninstall_forward_handler(void);

/** A mark for the next unrecognized message on this thread (see cs_backend_object_call_begin). */
typedef struct {
    CS_UNRETAINED id receiver;
    SEL sel;
} cs_object_call_mark;

/** Declares that the caller, on this thread, is about to send `sel` to `receiver` expecting an
 *  object in a register (NSObject's performSelector: family): an unrecognized lookup of exactly
 *  that pair may then be answered even when `sel` is untyped. Returns the previous mark, to be
 *  handed back to cs_backend_object_call_end when the call returns (marks nest). */
cs_object_call_mark cs_backend_object_call_begin(CS_UNRETAINED id receiver, SEL sel);
void cs_backend_object_call_end(cs_object_call_mark previous);

/** For the retarget class: the object that answers `sel` instead of `receiver`, or nil. Called
 *  at lookup and again at the call; must not message the receiver. */
typedef id (*cs_forward_target_fn)(CS_UNRETAINED id receiver, SEL sel);

/** The retarget client's decision at lookup. `zero_answerable` says whether a STUB answer would
 *  be given (the call's return convention is known), so a client that only records (report-only)
 *  records exactly what it would otherwise neutralise. Must not message the receiver. */
typedef cs_forward_decision (*cs_forward_retarget_decider)(CS_UNRETAINED id receiver, SEL sel, BOOL zero_answerable);

/**
 * Takes over unrecognized messages to instances of exactly `cls`: at lookup `decide` answers
 * DECLINE (the runtime's own forwarding), STUB (zero, as above, reported through `report`) or
 * RETARGET (the same message, same arguments, sent to `target(receiver, sel)`, reported through
 * `report` with the call site). The forward handler above is never asked about `cls`. The same
 * conventions apply: a stub needs a known return convention, and a retarget is declined when the
 * caller's known convention (result in memory or not) differs from the target method's.
 * Returns NULL on success, else a static reason (then nothing was installed).
 * GNUstep (verified, x86_64): a stub saves the argument registers, asks `target`, and jumps to
 * the target's implementation with the receiver replaced; results in memory (sret) are handled
 * from the target method's types. No method is added to `cls`.
 * Apple (NOT VERIFIED): NSObject's forwardingTargetForSelector: hook answers for `cls` too, so a
 * direct call of -[cls forwardingTargetForSelector:] sees the target there.
 */
const char *cs_backend_install_forward_retarget(Class cls, cs_forward_retarget_decider decide,
                                                cs_forward_target_fn target, cs_forward_reporter report);
void cs_backend_uninstall_forward_retarget(void);
/* ---- dealloc hook and lifecycle helpers (CSDeallocHook.m) --------------------------------- */

/**
 * Called from -[NSObject dealloc] for every object that reaches it (after the subclasses'
 * -dealloc bodies), before the memory is freed. Contract for a callback: no autoreleased objects,
 * no lock held while releasing anything (a release may run another -dealloc on this thread), no
 * formatting. Nested deallocs caused by a callback run the callbacks too, up to a small depth.
 * `object` is CS_UNRETAINED in the observers and the keeper as well (ARC must not retain an object
 * in -dealloc; a function-pointer type does not carry the qualifier, so each definition states it).
 */
typedef void (*cs_dealloc_observer)(CS_UNRETAINED id object);
/** Decides, after the observers ran, whether to keep the object's memory (a zombie). Returns YES
 *  when it took the object over: the original -dealloc is then not called. */
typedef BOOL (*cs_dealloc_keeper)(CS_UNRETAINED id object);

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

/** True on the process's main thread. */
BOOL cs_backend_is_main_thread(void);
/** Runs `fn(context)` asynchronously on the main queue (libdispatch when loaded, else the main
 *  run loop). Returns NO when neither is available. */
BOOL cs_backend_main_async(void (*fn)(void *), void *context);
/** Sends `sel` with one object argument through normal dispatch (forwarding included). */
void cs_backend_send1(id target, SEL sel, id argument);
/** Called by uncaught-exception capture once the report is written and the previous handler
 *  returned: ends the process with SIGABRT as Apple's runtime does after the handler (GNUstep:
 *  writes the runtime's usual "Uncaught exception" line to stderr, then abort(), instead of
 *  GNUstep's exit(1); Apple: returns, and the runtime aborts). */
void cs_backend_end_uncaught_exception(const char *name, const char *reason);
#endif
