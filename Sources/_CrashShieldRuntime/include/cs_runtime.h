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
    const char *detail;      /**< static text: why the canary or install failed; NULL when fine */
    uint32_t hooked_methods; /**< implementations replaced (one per owning class and selector) */
} cs_guard_status;

typedef struct {
    const char *guard_name;
    cs_policy policy;
} cs_guard_policy_entry;

/** Start configuration. Zero-initialised means: every guard, policy neutralize, no class filters. */
typedef struct {
    const cs_guard_policy_entry *policies; /**< per-guard policies; unlisted guards: neutralize */
    size_t policy_count;
    /** Class-name prefixes. A misuse whose receiver's class (or any superclass) matches a deny
     *  prefix is left alone; when allow prefixes are given, one of them must match. */
    const char *const *allow_class_prefixes;
    size_t allow_count;
    const char *const *deny_class_prefixes;
    size_t deny_count;
} cs_guards_config;

typedef enum {
    CS_START_OK = 0,
    CS_START_ALREADY_STARTED = 1,
    CS_START_RUNTIME_UNAVAILABLE = 2, /**< no Objective-C runtime in this process */
} cs_start_result;

/** Installs every guard in registry order, runs each canary, applies the policies.
 *  `config` may be NULL. Idempotent: a second call changes nothing and says so. */
cs_start_result cs_guards_start(const cs_guards_config *config);

/** Number of guards in the registry, and their status by index (registry order). */
size_t cs_guard_count(void);
cs_guard_status cs_guard_status_at(size_t index);

/** Switches one guard's policy. Returns false for an unknown name or a guard that is not active. */
bool cs_guard_set_policy(const char *guard_name, cs_policy policy);

/** Replaces the class filters (copies the strings). */
void cs_guards_set_class_filters(const char *const *allow, size_t allow_count, const char *const *deny,
                                 size_t deny_count);

/** Restores every original implementation. For tests: the process goes back to unguarded. */
void cs_guards_uninstall_for_testing(void);

/** Name of the guard whose hook code contains `address` (an address in this process), or NULL.
 *  Used by the fail-safe: a fatal report with frames inside a guard switches that guard off. */
const char *cs_guard_name_for_address(uintptr_t address);

/** Test-only fault injection: the named guard's next canary reports a failure. */
void cs_guard_inject_canary_failure_for_testing(const char *guard_name);

/* ---- side tables (stand-in for associated objects, which GCC libobjc lacks) --------------- */

/** Associates `value` (retained) with (`object`, `key`); NULL value removes. */
void cs_sidetable_set(void *object, const void *key, void *value);
/** Returns the associated value, retained and autoreleased by the caller's pool; NULL if none. */
void *cs_sidetable_get(void *object, const void *key);
/** Removes (and releases) every value associated with `object`. Returns how many were removed. */
size_t cs_sidetable_remove_all(void *object);
/** Number of (object, key) pairs currently stored. */
size_t cs_sidetable_count(void);

#ifdef __cplusplus
}
#endif
#endif
