/*
 * cs_runtime.h — the plain C entry point to CrashShield's Objective-C guards.
 *
 * Objective-C apps (and tests written in Objective-C) can start the guards with this header
 * alone; Swift apps use the CrashShield module, which calls the same functions. The header is
 * pure C so that Swift can import it on every platform.
 *
 * Threading: every function here is thread-safe. cs_guards_start() installs hooks once per
 * process; policies can be changed at any time and take effect on the next hooked call.
 */
#ifndef CS_RUNTIME_H
#define CS_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cs_incidents.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Lifecycle of one guard, as `status` reports it. */
typedef enum {
    CS_GUARD_NOT_INSTALLED = 0, /**< not started, uninstalled, or not selected */
    CS_GUARD_ACTIVE = 1,        /**< hooks installed and the canary passed */
    CS_GUARD_CANARY_FAILED = 2, /**< hooks removed again: the canary did not see what it expected */
    CS_GUARD_INSTALL_FAILED = 3,/**< a class or selector it needs does not exist on this runtime */
} cs_guard_state;

typedef struct {
    const char *name;        /**< stable guard name, e.g. "container" */
    cs_guard_state state;
    cs_policy policy;        /**< effective policy (CS_POLICY_OFF unless state is ACTIVE) */
    const char *detail;      /**< static text: why the canary or install failed, or, for an active
                                  guard, that owners were left unhooked (skipped_hooks); NULL when fine */
    uint32_t hooked_methods; /**< implementations replaced (one per owning class and selector) */
    uint32_t skipped_hooks;  /**< in-scope owners left unhooked: more owners than hook slots
                                  (cs_guard_skipped_hook_at() names them) */
} cs_guard_status;

/** An owner whose implementation a guard would hook but could not: the selector's hook slots
 *  were all taken. The guard stays active for every owner it did hook. */
typedef struct {
    const char *class_name;  /**< the owning class (for a class method, the class, not its metaclass) */
    const char *selector;
    bool class_method;
} cs_guard_skipped_hook;

typedef struct {
    const char *guard_name;
    cs_policy policy;
} cs_guard_policy_entry;

/** Start configuration. Zero-initialised means: every guard, policy neutralize, no class filters. */
typedef struct {
    const cs_guard_policy_entry *policies; /**< per-guard policies; unlisted guards: neutralize */
    size_t policy_count;
    /** Class-name prefixes. A misuse whose receiver's class (or any superclass) matches a deny
     *  prefix is left alone; when allow prefixes are given, one of them must match. They decide
     *  which misuses are guarded, never whether a guard passes its canary. */
    const char *const *allow_class_prefixes;
    size_t allow_count;
    const char *const *deny_class_prefixes;
    size_t deny_count;
    /** Scope of the hooks: only implementations that live in the system's images (GNUstep Base and
     *  libobjc; on Apple Foundation, CoreFoundation and the other system images) are hooked. An
     *  app or third-party class that implements a hooked selector itself keeps its own contract
     *  and is left alone, unless its name starts with one of these prefixes (opt-in). Default:
     *  none. Matched against the class that defines the implementation. */
    const char *const *hooked_app_class_prefixes;
    size_t hooked_app_class_count;
} cs_guards_config;

typedef enum {
    CS_START_OK = 0,
    CS_START_ALREADY_STARTED = 1,
    CS_START_RUNTIME_UNAVAILABLE = 2, /**< no Objective-C runtime in this process */
} cs_start_result;

/** Installs every guard in registry order, runs each canary, applies the policies.
 *  `config` may be NULL. Idempotent: a second call changes nothing and says so. */
cs_start_result cs_guards_start(const cs_guards_config *config);

/** Where the last successful cs_guards_start() spent its time, in nanoseconds (monotonic clock):
 *  its first autorelease pool (in a process that has not used Objective-C yet, this is where the
 *  runtime initialises NSObject and NSAutoreleasePool, once per process), finding the hooked
 *  methods' owners, installing every guard's hooks (dispatch-table writes included), running the
 *  canaries. Zero before any start. For the benchmark's breakdown. */
typedef struct {
    uint64_t runtime_ns;
    uint64_t discovery_ns;
    uint64_t hooks_ns;
    /** The part of hooks_ns spent writing dispatch tables (GNUstep: the entries of each owner and
     *  of the subclasses that inherit the method, a walk of the owner's subclasses; 0 on Apple). */
    uint64_t table_writes_ns;
    uint64_t canaries_ns;
} cs_guards_start_timing;

cs_guards_start_timing cs_guards_last_start_timing(void);

/** What cs_guards_start() would return now, changing nothing: a caller that configures other
 *  state before starting (the Swift module) checks here first. */
cs_start_result cs_guards_start_check(void);

/** Number of guards in the registry, and their status by index (registry order). */
size_t cs_guard_count(void);
cs_guard_status cs_guard_status_at(size_t index);

/** The `position`-th owner the guard at `index` left unhooked (see cs_guard_status.skipped_hooks).
 *  Returns false when there is no such entry. */
bool cs_guard_skipped_hook_at(size_t index, size_t position, cs_guard_skipped_hook *out);

/** Hook slots per hooked selector: owners of one selector beyond this many are skipped. */
size_t cs_guard_slot_count(void);

/** Switches one guard's policy. Returns false for an unknown name or a guard that is not active. */
bool cs_guard_set_policy(const char *guard_name, cs_policy policy);

/** Replaces the class filters (copies the strings). */
void cs_guards_set_class_filters(const char *const *allow, size_t allow_count, const char *const *deny,
                                 size_t deny_count);

/** Stops every guard: each policy becomes CS_POLICY_OFF, then every original implementation is
 *  restored, so new calls behave as without the guards (a call already inside a hook finishes
 *  through the original). What the guards left in objects the app holds keeps working as without
 *  them: KVO registrations made while guarded are handed back in their plain form (the observer
 *  registered directly, same key path, options and context); notification observers keep their
 *  registrations and lose their marks; timers keep their schedule and retain their targets; kept
 *  zombies stay zombies (cs_zombie_flush() frees them). A later cs_guards_start() installs again.
 *  Used by CrashShieldSDK.stop() and by the tests. */
void cs_guards_uninstall(void);

/** Name of the guard whose code contains `address` (an address in this process), or NULL: any
 *  function of the guard's file, its Objective-C helper classes included (ELF code sections;
 *  elsewhere only the hook slots). Used by the fail-safe: a fatal report with frames inside a
 *  guard switches that guard off. */
const char *cs_guard_name_for_address(uintptr_t address);

/** The code cs_guard_name_for_address() attributes to the guard at `index` (registry order):
 *  its name and [*start, *end). Fixed for the life of the process (link-time sections, or the
 *  hook slots), so the crash handler can hold a copy. False when the guard has none. */
bool cs_guard_code_range_at(size_t index, const char **name, uintptr_t *start, uintptr_t *end);

/* ---- side tables (stand-in for associated objects, which GCC libobjc lacks) --------------- */

/** Associates `value` (retained) with (`object`, `key`); NULL value removes. */
void cs_sidetable_set(void *object, const void *key, void *value);
/** Returns the associated value, retained and autoreleased by the caller's pool; NULL if none. */
void *cs_sidetable_get(void *object, const void *key);
/** The associated value, neither retained nor autoreleased: only for values that no other
 *  thread can remove meanwhile (e.g. a value removed only when `object` deallocates). */
void *cs_sidetable_peek(void *object, const void *key);
/** True when a value is associated with (`object`, `key`); retains and autoreleases nothing. */
bool cs_sidetable_contains(void *object, const void *key);
/** Removes (and releases) every value associated with `object`. Returns how many were removed. */
size_t cs_sidetable_remove_all(void *object);
/** Number of (object, key) pairs currently stored. */
size_t cs_sidetable_count(void);


/* ---- lifecycle guards: zombies and main-thread-only calls -------------------------------- */

/** Zombie configuration. Zombies are opt-in: an instance is kept as a zombie only when its class
 *  (exactly, by name) is in `class_names` or its class name starts with one of `prefixes`, and
 *  neither the class nor a superclass is in `deny` (exact names or prefixes). 0 for a budget
 *  means the default (2 MiB, 10000 zombies). Copies the strings; takes effect at once. */
typedef struct {
    const char *const *class_names;
    size_t class_count;
    const char *const *prefixes;
    size_t prefix_count;
    const char *const *deny;
    size_t deny_count;
    size_t max_bytes;
    size_t max_count;
} cs_zombie_config;

void cs_zombie_configure(const cs_zombie_config *config);
/** Frees every kept zombie properly (an app calls it when it goes to the background). */
void cs_zombie_flush(void);
/** Zombies kept now, their bytes, and the highest byte total seen since the last reset. */
size_t cs_zombie_count(void);
size_t cs_zombie_bytes(void);
size_t cs_zombie_peak_bytes(void);
void cs_zombie_reset_peak(void);

/** The (class, selector) pairs that must run on the main thread. Read when the main-thread guard
 *  is installed; once installed, a new configuration hooks its new pairs at once. Only methods returning void with at
 *  most one pointer- or integer-sized argument can be re-dispatched; others are skipped (the
 *  guard's status counts only what it hooked). Copies the strings. */
void cs_mainthread_configure(const char *const *class_names, const char *const *selectors, size_t count);

/** The classes whose instances a repeating timer holds weakly: a repeating timer
 *  created with scheduledTimerWithTimeInterval:/timerWithTimeInterval:...target:selector:userInfo:
 *  repeats: whose target is an instance of one of them (or of a subclass) gets a proxy target,
 *  so the target can deallocate; every other timer keeps NSTimer's strong reference. Names are
 *  public class names, looked up at start (and at once when the guards run); names of classes
 *  that do not exist are ignored. `class_names == NULL` restores the platform default (Apple:
 *  UIViewController, UIView, NSViewController, NSView; elsewhere: none); a list with
 *  `count == 0` means none. Copies the strings. Affects timers created afterwards. */
void cs_timer_configure_weak_targets(const char *const *class_names, size_t count);

#ifdef __cplusplus
}
#endif
#endif
