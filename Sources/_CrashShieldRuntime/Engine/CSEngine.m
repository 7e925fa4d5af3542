/*
 * CSEngine.m — install, canary, policy, class filters and status for every registered guard.
 *
 * Invariants:
 * - Hooks are installed at most once per process (until cs_guards_uninstall()).
 *   start/uninstall/set_policy serialise on one mutex; hooked calls never take it.
 * - A slot's original IMP is stored before the slot is installed, so a call racing with
 *   installation always finds a valid original.
 * - A guard's policy is CS_POLICY_OFF unless its state is CS_GUARD_ACTIVE.
 * - Scope: a slot goes only on an implementation from the system's images
 *   (cs_backend_implementation_is_system) or of a class the app opted in by name prefix. An app
 *   class that implements a hooked selector itself keeps its own contract.
 * - start finds the owners once for every guard's selectors (cs_backend_visit_owners: the
 *   system's classes and the opted-in ones, not the app's others), installs every guard's hooks
 *   (policies still off), then runs the canaries in registry order: no canary can initialise a
 *   class (GNUstep copies methods at +initialize) between discovery and the hooks.
 * - More in-scope owners than slots never fail a guard: the extra owners are skipped and listed.
 * - Class filters decide which misuses are guarded, never whether a guard passes its canary: they
 *   do not apply on the thread running a canary (t_running_canary), and only there.
 * - A canary changes no other thread's outcome: while it runs, the guard's policy is
 *   CS_GUARD_POLICY_CANARY, which neutralises on the canary's thread and is off elsewhere.
 */
#import "CSEngine.h"
#import "../Backend/CSBackend.h"
#include <pthread.h>
#include <string.h>
#include <time.h>

#pragma mark - Globals

typedef struct {
    char **allow;
    size_t allow_count;
    char **deny;
    size_t deny_count;
} cs_class_filters;

static pthread_mutex_t g_engine_lock = PTHREAD_MUTEX_INITIALIZER;
static BOOL g_started;
/* Replaced wholesale on change; older sets are kept (never freed) because a hook on another
 * thread may still be reading one. Filters change rarely, so the leak is bounded in practice. */
static cs_class_filters *g_filters; /* CS_ATOMIC_* access */
#if defined(CSC_TEST_SEAMS)
static const char *g_injected_canary_failure;
/* cs_guard_set_canary_probe_for_testing: called once, inside the named guard's canary window. */
static const char *g_canary_probe_guard;
static void (*g_canary_probe)(void);
#endif
/* Opt-in prefixes for app classes' own implementations; read and replaced under the engine lock. */
static char **g_hooked_app_prefixes;
static size_t g_hooked_app_prefix_count;

/* Every (query, owner) that discovery found; query = index into the start's query list. */
typedef struct {
    size_t query;
    CS_UNRETAINED Class owner;
    IMP implementation;
} cs_found_owner;

typedef struct {
    cs_found_owner *owners;
    size_t count;
    size_t capacity;
} cs_discovery;

static const char *const kSkippedDetail = "more owners than hook slots: some were left unhooked (see skipped hooks)";

#pragma mark - Private

static CSGuard *cs_guard_named(const char *name) {
    if (name == NULL) return NULL;
    for (size_t i = 0; i < CSGuardRegistryCount; i++)
        if (strcmp(CSGuardRegistry[i]->name, name) == 0) return CSGuardRegistry[i];
    return NULL;
}

static BOOL cs_has_prefix(const char *name, char *const *prefixes, size_t count) {
    for (size_t i = 0; i < count; i++)
        if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0) return YES;
    return NO;
}

/* YES on a thread while it runs a guard's canary (cs_run_canary). The class filters decide which
 * of the app's misuses are guarded, never whether a guard works: the canary's own misuses (on
 * Foundation classes and the guards' scratch classes) are unlisted for them. Thread-local, so
 * other threads calling guarded methods during a start, and filters changed meanwhile, see the
 * filters exactly as configured. */
static __thread BOOL t_running_canary;

BOOL cs_canary_running(void) {
    return t_running_canary;
}

cs_class_listing cs_guard_class_listing(Class cls) {
    cs_class_filters *filters = CS_ATOMIC_LOAD(&g_filters);
    if (filters == NULL || (filters->allow_count == 0 && filters->deny_count == 0)) return CS_CLASS_UNLISTED;
    if (t_running_canary) return CS_CLASS_UNLISTED;
    cs_class_listing listing = CS_CLASS_UNLISTED;
    for (Class c = cls; c != Nil; c = class_getSuperclass(c)) {
        const char *name = class_getName(c);
        if (cs_has_prefix(name, filters->deny, filters->deny_count)) return CS_CLASS_DENY_LISTED;
        if (listing == CS_CLASS_UNLISTED && cs_has_prefix(name, filters->allow, filters->allow_count))
            listing = CS_CLASS_ALLOW_LISTED;
    }
    if (listing == CS_CLASS_UNLISTED && filters->allow_count > 0) return CS_CLASS_NOT_ALLOW_LISTED;
    return listing;
}

static BOOL cs_class_allowed(Class cls) {
    cs_class_listing listing = cs_guard_class_listing(cls);
    return listing == CS_CLASS_UNLISTED || listing == CS_CLASS_ALLOW_LISTED;
}

static char **cs_copy_strings(const char *const *strings, size_t count) {
    if (count == 0) return NULL;
    char **copy = calloc(count, sizeof(char *));
    for (size_t i = 0; i < count; i++) copy[i] = strdup(strings[i] ? strings[i] : "");
    return copy;
}

static BOOL cs_is_replacement(const CSHookSlots *slots, IMP imp, unsigned *slot) {
    for (unsigned s = 0; s < CS_SLOT_COUNT; s++)
        if (slots->replacement[s] == imp) {
            if (slot) *slot = s;
            return YES;
        }
    return NO;
}

static void cs_found_owner_append(void *context, size_t query, Class owner, IMP implementation) {
    cs_discovery *discovery = context;
    if (discovery->count == discovery->capacity) {
        size_t capacity = discovery->capacity ? 2 * discovery->capacity : 256;
        cs_found_owner *grown = realloc(discovery->owners, capacity * sizeof *grown);
        if (grown == NULL) return;
        discovery->owners = grown;
        discovery->capacity = capacity;
    }
    discovery->owners[discovery->count++] = (cs_found_owner){query, owner, implementation};
}

/* The class named `name` (a hook spec's root, a string of the registry), looked up once: roots
 * are never unloaded, and a lookup by name costs more the more classes the process has. Under
 * the engine lock. */
static Class cs_root_class(const char *name) {
    enum { kMaxRoots = 32 };
    static const char *names[kMaxRoots];
    static CS_UNRETAINED Class classes[kMaxRoots];
    static size_t count;
    for (size_t i = 0; i < count; i++)
        if (names[i] == name) return classes[i];
    Class cls = objc_lookUpClass(name);
    if (cls != Nil && count < kMaxRoots) {
        names[count] = name;
        classes[count++] = cls;
    }
    return cls;
}

/* Fills the query that asks for `spec`'s owners; NO when its root class does not exist. */
static BOOL cs_spec_query(const CSHookSpec *spec, cs_owner_query *query) {
    Class root = cs_root_class(spec->root_class);
    if (root == Nil) return NO;
    *query = (cs_owner_query){root, cs_backend_selector(spec->selector), spec->class_side};
    return YES;
}

/* Undoes cs_hook, newest first. GNUstep copies methods between classes at +initialize ("class
 * behaviours"): a class initialised while we were hooked may hold a copy of one of our slot
 * functions as its own method. Such copies get the original that slot stood for, so nothing of
 * ours stays behind. One walk over the classes finds the copies for all the guard's selectors. */
static void cs_unhook(CSGuard *g) {
    if (g->uninstall) g->uninstall();
    cs_owner_query *queries = calloc(g->hook_count ? g->hook_count : 1, sizeof *queries);
    size_t *query_spec = calloc(g->hook_count ? g->hook_count : 1, sizeof *query_spec);
    size_t query_count = 0;
    for (size_t h = g->hook_count; h-- > 0;) {
        const CSHookSpec *spec = &g->hooks[h];
        CSHookSlots *slots = spec->slots;
        if (slots->used == 0) continue;
        SEL sel = cs_backend_selector(spec->selector);
        cs_replacement restore[CS_SLOT_COUNT];
        for (unsigned i = slots->used; i-- > 0;)
            restore[slots->used - 1 - i] = (cs_replacement){slots->owner[i], sel, slots->original[i], NULL};
        cs_backend_replace_implementations(restore, slots->used);
        if (cs_spec_query(spec, &queries[query_count])) query_spec[query_count++] = h;
    }
    cs_discovery copies = {0};
    cs_backend_visit_method_copies(queries, query_count, cs_found_owner_append, &copies);
    for (size_t i = 0; i < copies.count; i++) {
        const CSHookSpec *spec = &g->hooks[query_spec[copies.owners[i].query]];
        unsigned slot;
        if (cs_is_replacement(spec->slots, copies.owners[i].implementation, &slot) && slot < spec->slots->used)
            cs_backend_replace_implementation(copies.owners[i].owner, cs_backend_selector(spec->selector),
                                              spec->slots->original[slot]);
    }
    free(copies.owners);
    free(query_spec);
    free(queries);
    for (size_t h = 0; h < g->hook_count; h++) g->hooks[h].slots->used = 0;
    g->hooked_methods = 0;
}

typedef enum { CS_SCOPE_OUT = 0, CS_SCOPE_SYSTEM = 1, CS_SCOPE_OPTED_IN = 2 } cs_owner_scope;

static cs_owner_scope cs_scope_of(Class owner, IMP implementation) {
    if (cs_backend_implementation_is_system(implementation)) return CS_SCOPE_SYSTEM;
    if (g_hooked_app_prefix_count > 0 && cs_has_prefix(class_getName(owner), g_hooked_app_prefixes, g_hooked_app_prefix_count))
        return CS_SCOPE_OPTED_IN;
    return CS_SCOPE_OUT;
}

static void cs_note_skipped(CSGuard *g, const CSHookSpec *spec, Class owner) {
    cs_guard_skipped_hook *grown = realloc(g->skipped, (g->skipped_count + 1) * sizeof *grown);
    if (grown == NULL) return;
    g->skipped = grown;
    g->skipped[g->skipped_count++] = (cs_guard_skipped_hook){class_getName(owner), spec->selector, spec->class_side};
}

/* Hooks every in-scope owner of each of the guard's specs, system owners first, as far as the
 * slots go; the owners beyond are listed in g->skipped. `discovery` holds the owners of query
 * spec_query[h] for spec h (root_only specs have no query: the root is looked up here).
 * Returns NULL on success, else a static reason. */
static const char *cs_hook(CSGuard *g, const cs_discovery *discovery, const size_t *spec_query) {
    free(g->skipped);
    g->skipped = NULL;
    g->skipped_count = 0;
    for (size_t h = 0; h < g->hook_count; h++) {
        const CSHookSpec *spec = &g->hooks[h];
        Class root = cs_root_class(spec->root_class);
        if (root == Nil) return "a class the guard hooks does not exist on this runtime";
        SEL sel = cs_backend_selector(spec->selector);
        cs_found_owner root_owner;
        const cs_found_owner *candidates;
        size_t candidate_count;
        if (spec->root_only) {
            Class owner = spec->class_side ? object_getClass((id)root) : root;
            /* Never class_getMethodImplementation(): on GCC libobjc it reads the dispatch table,
             * which can answer with an inherited IMP for a class not yet messaged. */
            root_owner = (cs_found_owner){0, owner, cs_backend_own_implementation(owner, sel)};
            candidates = &root_owner;
            candidate_count = root_owner.implementation ? 1 : 0;
        } else {
            candidates = discovery->owners;
            candidate_count = discovery->count;
        }
        BOOL any = NO;
        CSHookSlots *slots = spec->slots;
        cs_replacement items[CS_SLOT_COUNT];
        unsigned item_slot[CS_SLOT_COUNT];
        size_t item_count = 0;
        /* Two passes: the system's owners take the slots first, opted-in app classes get the rest. */
        for (cs_owner_scope pass = CS_SCOPE_SYSTEM; pass <= CS_SCOPE_OPTED_IN; pass++) {
            for (size_t i = 0; i < candidate_count; i++) {
                const cs_found_owner *found = &candidates[i];
                if (!spec->root_only && found->query != spec_query[h]) continue;
                any = YES;
                if (cs_scope_of(found->owner, found->implementation) != pass) continue;
                /* A copy of one of our own slots (see cs_unhook) already routes through the hook. */
                if (cs_is_replacement(slots, found->implementation, NULL)) continue;
                if (slots->used == CS_SLOT_COUNT) {
                    cs_note_skipped(g, spec, found->owner);
                    continue;
                }
                unsigned slot = slots->used;
                slots->original[slot] = found->implementation;
                slots->owner[slot] = found->owner;
                slots->used = slot + 1;
                item_slot[item_count] = slot;
                items[item_count++] = (cs_replacement){found->owner, sel, slots->replacement[slot], NULL};
            }
        }
        if (!any) return "no class implements a selector the guard hooks";
        cs_backend_replace_implementations(items, item_count);
        for (size_t i = 0; i < item_count; i++) {
            /* Another hook raced in since discovery: chain to it. */
            if (items[i].previous != NULL && items[i].previous != slots->original[item_slot[i]])
                slots->original[item_slot[i]] = items[i].previous;
            if (items[i].previous != NULL) g->hooked_methods++;
        }
    }
    if (g->skipped_count > 0) g->detail = kSkippedDetail;
    if (g->install) return g->install(&g->hooked_methods);
    return NULL;
}

/** The step the running canary is in (CS_CANARY_MISUSE / CS_CANARY_LEGAL), for a step that throws. */
static __thread const char *t_canary_step;

void cs_canary_step(const char *threw_reason) {
    t_canary_step = threw_reason;
}

typedef struct {
    const char *(*canary)(void);
    const char *failure;
} cs_canary_run;

static void cs_canary_body(void *context) {
    cs_canary_run *run = context;
    run->failure = run->canary();
}

/** Runs a canary; an exception out of it fails the canary with the reason of the step that threw. */
static const char *cs_run_canary(const char *(*canary)(void)) {
    cs_canary_run run = {.canary = canary, .failure = NULL};
    t_canary_step = NULL;
    t_running_canary = YES;
    id exception = cs_objc_try(cs_canary_body, &run);
    t_running_canary = NO;
    const char *step = t_canary_step;
    t_canary_step = NULL;
    if (exception != nil) return step ? step : "canary threw outside its steps";
    return run.failure;
}


/* Phase 1 of start: the guard's hooks, its policy still off. Returns NO when it failed. */
static BOOL cs_install_hooks(CSGuard *g, const cs_discovery *discovery, const size_t *spec_query) {
    g->detail = NULL;
    const char *failure = cs_hook(g, discovery, spec_query);
    if (failure) {
        cs_unhook(g);
        free(g->skipped);
        g->skipped = NULL;
        g->skipped_count = 0;
        g->state = CS_GUARD_INSTALL_FAILED;
        g->detail = failure;
        return NO;
    }
    return YES;
}

/* Phase 2 of start: the canary, then the configured policy. */
static void cs_verify_guard(CSGuard *g, cs_policy policy) {
    CS_ATOMIC_STORE(&g->policy, CS_GUARD_POLICY_CANARY);
    cs_incidents_canary_begin();
#if defined(CSC_TEST_SEAMS)
    if (g_canary_probe && g_canary_probe_guard == g->name) {
        void (*probe)(void) = g_canary_probe;
        g_canary_probe = NULL;
        g_canary_probe_guard = NULL;
        t_running_canary = YES;
        probe();
        t_running_canary = NO;
    }
#endif
    const char *canary_failure = g->canary ? cs_run_canary(g->canary) : NULL;
    cs_incidents_canary_end();
#if defined(CSC_TEST_SEAMS)
    if (canary_failure == NULL && g_injected_canary_failure && strcmp(g_injected_canary_failure, g->name) == 0) {
        canary_failure = "canary failure injected by a test";
        g_injected_canary_failure = NULL;
    }
#endif
    if (canary_failure) {
        CS_ATOMIC_STORE(&g->policy, (int)CS_POLICY_OFF);
        cs_unhook(g);
        free(g->skipped);
        g->skipped = NULL;
        g->skipped_count = 0;
        g->state = CS_GUARD_CANARY_FAILED;
        g->detail = canary_failure;
        return;
    }
    g->state = CS_GUARD_ACTIVE;
    CS_ATOMIC_STORE(&g->policy, (int)policy);
}

/* One owner discovery for every guard's (non-root) specs. spec_query[k] is the query
 * of the k-th spec of the registry, counted over all guards in order; SIZE_MAX when none. */
static cs_discovery cs_discover_owners(size_t *spec_query, size_t spec_total) {
    cs_owner_query *queries = calloc(spec_total ? spec_total : 1, sizeof *queries);
    size_t query_count = 0, k = 0;
    for (size_t i = 0; i < CSGuardRegistryCount; i++) {
        CSGuard *g = CSGuardRegistry[i];
        for (size_t h = 0; h < g->hook_count; h++, k++) {
            spec_query[k] = SIZE_MAX;
            if (!g->hooks[h].root_only && cs_spec_query(&g->hooks[h], &queries[query_count]))
                spec_query[k] = query_count++;
        }
    }
    cs_discovery discovery = {0};
    cs_backend_visit_owners(queries, query_count, (const char *const *)g_hooked_app_prefixes, g_hooked_app_prefix_count,
                            cs_found_owner_append, &discovery);
    free(queries);
    return discovery;
}

#pragma mark - Hook API

BOOL cs_guard_misuse(CSGuard *g, CS_UNRETAINED id receiver, SEL cmd, const void *caller, const char *reason,
                     uint8_t argc, uint64_t a0, uint64_t a1) {
    if (cs_guard_policy(g) == CS_POLICY_OFF) return NO;
    BOOL is_class = cs_backend_is_class_object(receiver);
    Class cls = is_class ? (Class)receiver : object_getClass(receiver);
    if (!cs_class_allowed(cls)) return NO;
    return cs_guard_record(g, receiver, cmd, caller, reason, argc, a0, a1);
}

BOOL cs_guard_record(CSGuard *g, CS_UNRETAINED id receiver, SEL cmd, const void *caller, const char *reason,
                     uint8_t argc, uint64_t a0, uint64_t a1) {
    cs_policy policy = cs_guard_policy(g);
    if (policy == CS_POLICY_OFF) return NO;
    BOOL is_class = cs_backend_is_class_object(receiver);
    Class cls = is_class ? (Class)receiver : object_getClass(receiver);
    cs_incident_site site = {
        .guard_name = g->name,
        .policy = policy,
        .class_name = class_getName(cls),
        .selector_name = sel_getName(cmd),
        .is_class_method = is_class,
        .reason = reason,
        .args = {a0, a1},
        .arg_count = argc,
        .caller = caller,
    };
    cs_incident_record(&site);
    return policy == CS_POLICY_NEUTRALIZE;
}

BOOL cs_canary_reaches_hook(Class cls, SEL sel, const CSHookSlots *slots) {
    Method method = cls != Nil ? class_getInstanceMethod(cls, sel) : NULL;
    IMP imp = method ? method_getImplementation(method) : NULL;
    unsigned slot;
    return imp != NULL && cs_is_replacement(slots, imp, &slot) && slot < slots->used;
}

uint64_t cs_canary_hits(void) {
    return cs_incidents_canary_hits();
}

#pragma mark - Public API

/** Why a start would be rejected now; the caller holds g_engine_lock. */
static cs_start_result cs_start_rejection(void) {
    if (g_started) return CS_START_ALREADY_STARTED;
    if (CS_CLASS(NSObject) == Nil) return CS_START_RUNTIME_UNAVAILABLE;
    return CS_START_OK;
}

cs_start_result cs_guards_start_check(void) {
    pthread_mutex_lock(&g_engine_lock);
    cs_start_result result = cs_start_rejection();
    pthread_mutex_unlock(&g_engine_lock);
    return result;
}

static cs_guards_start_timing g_last_start_timing; /* under g_engine_lock */

static uint64_t cs_monotonic_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}

cs_guards_start_timing cs_guards_last_start_timing(void) {
    pthread_mutex_lock(&g_engine_lock);
    cs_guards_start_timing timing = g_last_start_timing;
    pthread_mutex_unlock(&g_engine_lock);
    return timing;
}

cs_start_result cs_guards_start(const cs_guards_config *config) {
    pthread_mutex_lock(&g_engine_lock);
    cs_start_result rejection = cs_start_rejection();
    if (rejection != CS_START_OK) {
        pthread_mutex_unlock(&g_engine_lock);
        return rejection;
    }
    if (config) {
        cs_guards_set_class_filters(config->allow_class_prefixes, config->allow_count, config->deny_class_prefixes,
                                    config->deny_count);
    }
    for (size_t i = 0; i < g_hooked_app_prefix_count; i++) free(g_hooked_app_prefixes[i]);
    free(g_hooked_app_prefixes);
    g_hooked_app_prefix_count = config && config->hooked_app_class_prefixes ? config->hooked_app_class_count : 0;
    g_hooked_app_prefixes = cs_copy_strings(config ? config->hooked_app_class_prefixes : NULL, g_hooked_app_prefix_count);
    uint64_t entered = cs_monotonic_ns();
    @autoreleasepool {
        size_t spec_total = 0;
        for (size_t i = 0; i < CSGuardRegistryCount; i++) spec_total += CSGuardRegistry[i]->hook_count;
        size_t *spec_query = calloc(spec_total ? spec_total : 1, sizeof *spec_query);
        uint64_t began = cs_monotonic_ns();
        cs_discovery discovery = cs_discover_owners(spec_query, spec_total);
        uint64_t discovered = cs_monotonic_ns();
        BOOL hooked[CSGuardRegistryCount];
        /* Every policy is off until the canaries: any dispatch-table rebuilds (the backend's
         * fallback when it cannot patch tables in place) can wait and run once. */
        cs_backend_defer_dispatch_refresh(YES);
        for (size_t i = 0, k = 0; i < CSGuardRegistryCount; k += CSGuardRegistry[i]->hook_count, i++)
            hooked[i] = cs_install_hooks(CSGuardRegistry[i], &discovery, spec_query + k);
        uint64_t writes_began = cs_monotonic_ns();
        cs_backend_defer_dispatch_refresh(NO);
        uint64_t table_writes = cs_monotonic_ns() - writes_began;
        free(discovery.owners);
        free(spec_query);
        uint64_t hooks_installed = cs_monotonic_ns();
        for (size_t i = 0; i < CSGuardRegistryCount; i++) {
            CSGuard *g = CSGuardRegistry[i];
            if (!hooked[i]) continue;
            cs_policy policy = CS_POLICY_NEUTRALIZE;
            for (size_t p = 0; config && p < config->policy_count; p++)
                if (config->policies[p].guard_name && strcmp(config->policies[p].guard_name, g->name) == 0)
                    policy = config->policies[p].policy;
            /* A guard configured off is installed anyway, so it can be switched on later with
             * one atomic store. */
            cs_verify_guard(g, policy);
        }
        g_last_start_timing = (cs_guards_start_timing){began - entered, discovered - began, hooks_installed - discovered,
                                                       table_writes, cs_monotonic_ns() - hooks_installed};
    }
    g_started = YES;
    pthread_mutex_unlock(&g_engine_lock);
    return CS_START_OK;
}

size_t cs_guard_count(void) {
    return CSGuardRegistryCount;
}

cs_guard_status cs_guard_status_at(size_t index) {
    cs_guard_status status = {0};
    if (index >= CSGuardRegistryCount) return status;
    pthread_mutex_lock(&g_engine_lock);
    CSGuard *g = CSGuardRegistry[index];
    status.name = g->name;
    status.state = g->state;
    status.policy = (cs_policy)CS_ATOMIC_LOAD(&g->policy);
    status.detail = g->detail;
    status.hooked_methods = g->hooked_methods;
    status.skipped_hooks = g->skipped_count;
    pthread_mutex_unlock(&g_engine_lock);
    return status;
}

size_t cs_guard_slot_count(void) {
    return CS_SLOT_COUNT;
}

bool cs_guard_skipped_hook_at(size_t index, size_t position, cs_guard_skipped_hook *out) {
    if (index >= CSGuardRegistryCount || out == NULL) return false;
    pthread_mutex_lock(&g_engine_lock);
    CSGuard *g = CSGuardRegistry[index];
    bool found = position < g->skipped_count;
    if (found) *out = g->skipped[position];
    pthread_mutex_unlock(&g_engine_lock);
    return found;
}

bool cs_guard_set_policy(const char *guard_name, cs_policy policy) {
    CSGuard *g = cs_guard_named(guard_name);
    if (g == NULL || policy > CS_POLICY_OFF) return false;
    pthread_mutex_lock(&g_engine_lock);
    bool ok = g->state == CS_GUARD_ACTIVE;
    if (ok) CS_ATOMIC_STORE(&g->policy, (int)policy);
    pthread_mutex_unlock(&g_engine_lock);
    return ok;
}

void cs_guards_set_class_filters(const char *const *allow, size_t allow_count, const char *const *deny,
                                 size_t deny_count) {
    cs_class_filters *filters = calloc(1, sizeof *filters);
    filters->allow = cs_copy_strings(allow, allow_count);
    filters->allow_count = allow ? allow_count : 0;
    filters->deny = cs_copy_strings(deny, deny_count);
    filters->deny_count = deny ? deny_count : 0;
    CS_ATOMIC_STORE(&g_filters, filters);
}

void cs_guards_uninstall(void) {
    pthread_mutex_lock(&g_engine_lock);
    for (size_t i = CSGuardRegistryCount; i-- > 0;) {
        CSGuard *g = CSGuardRegistry[i];
        CS_ATOMIC_STORE(&g->policy, (int)CS_POLICY_OFF);
        cs_unhook(g);
        free(g->skipped);
        g->skipped = NULL;
        g->skipped_count = 0;
        g->state = CS_GUARD_NOT_INSTALLED;
        g->detail = NULL;
    }
    g_started = NO;
    pthread_mutex_unlock(&g_engine_lock);
}

/** The code cs_guard_name_for_address() attributes to `g`: [*low, *high). False when there is none. */
static bool cs_guard_code_range(const CSGuard *g, uintptr_t *low_out, uintptr_t *high_out) {
    if (g->code_start < g->code_end) {
        *low_out = (uintptr_t)g->code_start;
        *high_out = (uintptr_t)g->code_end;
        return true;
    }
    /* No code section (Mach-O): each guard's hooks live in one translation unit, so its slot
     * functions (each with the guard body inlined) span one stretch of text, [first slot,
     * last slot + one body). Guards without a hook table are not found this way. */
    static const uintptr_t kBodySlack = 4096;
    uintptr_t low = UINTPTR_MAX, high = 0;
    for (size_t h = 0; h < g->hook_count; h++) {
        for (unsigned s = 0; s < CS_SLOT_COUNT; s++) {
            uintptr_t slot = (uintptr_t)g->hooks[h].slots->replacement[s];
            if (slot < low) low = slot;
            if (slot > high) high = slot;
        }
    }
    if (low > high) return false;
    *low_out = low;
    *high_out = high + kBodySlack;
    return true;
}

const char *cs_guard_name_for_address(uintptr_t address) {
    for (size_t i = 0; i < CSGuardRegistryCount; i++) {
        uintptr_t low, high;
        if (cs_guard_code_range(CSGuardRegistry[i], &low, &high) && address >= low && address < high) return CSGuardRegistry[i]->name;
    }
    return NULL;
}

bool cs_guard_code_range_at(size_t index, const char **name, uintptr_t *start, uintptr_t *end) {
    if (index >= CSGuardRegistryCount) return false;
    *name = CSGuardRegistry[index]->name;
    return cs_guard_code_range(CSGuardRegistry[index], start, end);
}

#if defined(CSC_TEST_SEAMS)
void cs_guard_inject_canary_failure_for_testing(const char *guard_name) {
    pthread_mutex_lock(&g_engine_lock);
    CSGuard *g = cs_guard_named(guard_name);
    g_injected_canary_failure = g ? g->name : NULL;
    pthread_mutex_unlock(&g_engine_lock);
}

void cs_guard_set_canary_probe_for_testing(const char *guard_name, void (*probe)(void)) {
    pthread_mutex_lock(&g_engine_lock);
    CSGuard *g = cs_guard_named(guard_name);
    g_canary_probe_guard = g ? g->name : NULL;
    g_canary_probe = g ? probe : NULL;
    pthread_mutex_unlock(&g_engine_lock);
}
#endif
