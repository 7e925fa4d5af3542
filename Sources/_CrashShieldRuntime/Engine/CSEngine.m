/*
 * CSEngine.m — install, canary, policy, class filters and status for every registered guard.
 *
 * Invariants:
 * - Hooks are installed at most once per process (until cs_guards_uninstall_for_testing()).
 *   start/uninstall/set_policy serialise on one mutex; hooked calls never take it.
 * - A slot's original IMP is stored before the slot is installed, so a call racing with
 *   installation always finds a valid original.
 * - A guard's policy is CS_POLICY_OFF unless its state is CS_GUARD_ACTIVE.
 */
#import "CSEngine.h"
#import "../Backend/CSBackend.h"
#include <pthread.h>
#include <string.h>

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
static const char *g_injected_canary_failure;

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

cs_class_listing cs_guard_class_listing(Class cls) {
    cs_class_filters *filters = CS_ATOMIC_LOAD(&g_filters);
    if (filters == NULL || (filters->allow_count == 0 && filters->deny_count == 0)) return CS_CLASS_UNLISTED;
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

/* Undoes cs_hook, newest first. GNUstep copies methods between classes at +initialize ("class
 * behaviours"): a class initialised while we were hooked may hold a copy of one of our slot
 * functions as its own method. Such copies get the original that slot stood for, so nothing of
 * ours stays behind. */
static void cs_unhook(CSGuard *g) {
    if (g->uninstall) g->uninstall();
    for (size_t h = g->hook_count; h-- > 0;) {
        const CSHookSpec *spec = &g->hooks[h];
        CSHookSlots *slots = spec->slots;
        SEL sel = cs_backend_selector(spec->selector);
        for (unsigned i = slots->used; i-- > 0;)
            cs_backend_replace_implementation(slots->owner[i], sel, slots->original[i]);
        Class root = objc_lookUpClass(spec->root_class);
        if (root != Nil && slots->used > 0) {
            Class owners[4 * CS_SLOT_COUNT];
            size_t found = cs_backend_find_owners(root, sel, spec->class_side, owners, 4 * CS_SLOT_COUNT);
            for (size_t i = 0; i < found && i < 4 * CS_SLOT_COUNT; i++) {
                unsigned slot;
                if (cs_is_replacement(slots, cs_backend_own_implementation(owners[i], sel), &slot) && slot < slots->used)
                    cs_backend_replace_implementation(owners[i], sel, slots->original[slot]);
            }
        }
        slots->used = 0;
    }
    g->hooked_methods = 0;
}

/* Returns NULL on success, else a static reason. */
static const char *cs_hook(CSGuard *g) {
    for (size_t h = 0; h < g->hook_count; h++) {
        const CSHookSpec *spec = &g->hooks[h];
        Class root = objc_lookUpClass(spec->root_class);
        if (root == Nil) return "a class the guard hooks does not exist on this runtime";
        SEL sel = cs_backend_selector(spec->selector);
        Class owners[CS_SLOT_COUNT];
        size_t found;
        if (spec->root_only) {
            owners[0] = spec->class_side ? object_getClass((id)root) : root;
            found = cs_backend_class_defines(owners[0], sel) ? 1 : 0;
        } else {
            found = cs_backend_find_owners(root, sel, spec->class_side, owners, CS_SLOT_COUNT);
        }
        if (found == 0) return "no class implements a selector the guard hooks";
        if (found > CS_SLOT_COUNT) return "more classes implement a hooked selector than there are slots";
        CSHookSlots *slots = spec->slots;
        for (size_t i = 0; i < found; i++) {
            Class owner = owners[i];
            /* Never class_getMethodImplementation(): on GCC libobjc it reads the dispatch table,
             * which can answer with an inherited IMP for a class not yet messaged. */
            IMP current = cs_backend_own_implementation(owner, sel);
            /* A copy of one of our own slots (see cs_unhook) already routes through the hook. */
            if (cs_is_replacement(slots, current, NULL)) continue;
            unsigned slot = slots->used;
            slots->original[slot] = current;
            slots->owner[slot] = owner;
            slots->used = slot + 1;
            IMP previous = cs_backend_replace_implementation(owner, sel, slots->replacement[slot]);
            if (previous != NULL && previous != current) slots->original[slot] = previous;
            g->hooked_methods++;
        }
    }
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
    id exception = cs_objc_try(cs_canary_body, &run);
    const char *step = t_canary_step;
    t_canary_step = NULL;
    if (exception != nil) return step ? step : "canary threw outside its steps";
    return run.failure;
}

static void cs_install_guard(CSGuard *g, cs_policy policy) {
    g->detail = NULL;
    const char *failure = cs_hook(g);
    if (failure) {
        cs_unhook(g);
        g->state = CS_GUARD_INSTALL_FAILED;
        g->detail = failure;
        return;
    }
    CS_ATOMIC_STORE(&g->policy, (int)CS_POLICY_NEUTRALIZE);
    cs_incidents_canary_begin();
    const char *canary_failure = g->canary ? cs_run_canary(g->canary) : NULL;
    cs_incidents_canary_end();
    if (canary_failure == NULL && g_injected_canary_failure && strcmp(g_injected_canary_failure, g->name) == 0) {
        canary_failure = "canary failure injected by a test";
        g_injected_canary_failure = NULL;
    }
    if (canary_failure) {
        CS_ATOMIC_STORE(&g->policy, (int)CS_POLICY_OFF);
        cs_unhook(g);
        g->state = CS_GUARD_CANARY_FAILED;
        g->detail = canary_failure;
        return;
    }
    g->state = CS_GUARD_ACTIVE;
    CS_ATOMIC_STORE(&g->policy, (int)policy);
}

#pragma mark - Hook API

BOOL cs_guard_misuse(CSGuard *g, id receiver, SEL cmd, const void *caller, const char *reason, uint8_t argc,
                     uint64_t a0, uint64_t a1) {
    if (CS_ATOMIC_LOAD_RELAXED(&g->policy) == CS_POLICY_OFF) return NO;
    BOOL is_class = cs_backend_is_class_object(receiver);
    Class cls = is_class ? (Class)receiver : object_getClass(receiver);
    if (!cs_class_allowed(cls)) return NO;
    return cs_guard_record(g, receiver, cmd, caller, reason, argc, a0, a1);
}

BOOL cs_guard_record(CSGuard *g, id receiver, SEL cmd, const void *caller, const char *reason, uint8_t argc,
                     uint64_t a0, uint64_t a1) {
    cs_policy policy = (cs_policy)CS_ATOMIC_LOAD_RELAXED(&g->policy);
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

uint64_t cs_canary_hits(void) {
    return cs_incidents_canary_hits();
}

#pragma mark - Public API

cs_start_result cs_guards_start(const cs_guards_config *config) {
    pthread_mutex_lock(&g_engine_lock);
    if (g_started) {
        pthread_mutex_unlock(&g_engine_lock);
        return CS_START_ALREADY_STARTED;
    }
    if (objc_lookUpClass("NSObject") == Nil) {
        pthread_mutex_unlock(&g_engine_lock);
        return CS_START_RUNTIME_UNAVAILABLE;
    }
    if (config) {
        cs_guards_set_class_filters(config->allow_class_prefixes, config->allow_count, config->deny_class_prefixes,
                                    config->deny_count);
    }
    @autoreleasepool {
        for (size_t i = 0; i < CSGuardRegistryCount; i++) {
            CSGuard *g = CSGuardRegistry[i];
            cs_policy policy = CS_POLICY_NEUTRALIZE;
            for (size_t p = 0; config && p < config->policy_count; p++)
                if (config->policies[p].guard_name && strcmp(config->policies[p].guard_name, g->name) == 0)
                    policy = config->policies[p].policy;
            /* A guard configured off is installed anyway, so it can be switched on later with
             * one atomic store. */
            cs_install_guard(g, policy);
        }
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
    pthread_mutex_unlock(&g_engine_lock);
    return status;
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

void cs_guards_uninstall_for_testing(void) {
    pthread_mutex_lock(&g_engine_lock);
    for (size_t i = CSGuardRegistryCount; i-- > 0;) {
        CSGuard *g = CSGuardRegistry[i];
        CS_ATOMIC_STORE(&g->policy, (int)CS_POLICY_OFF);
        cs_unhook(g);
        g->state = CS_GUARD_NOT_INSTALLED;
        g->detail = NULL;
    }
    g_started = NO;
    pthread_mutex_unlock(&g_engine_lock);
}

const char *cs_guard_name_for_address(uintptr_t address) {
    for (size_t i = 0; i < CSGuardRegistryCount; i++) {
        CSGuard *g = CSGuardRegistry[i];
        if (g->code_start < g->code_end) {
            if (address >= (uintptr_t)g->code_start && address < (uintptr_t)g->code_end) return g->name;
            continue;
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
        if (address >= low && address < high + kBodySlack) return g->name;
    }
    return NULL;
}

void cs_guard_inject_canary_failure_for_testing(const char *guard_name) {
    pthread_mutex_lock(&g_engine_lock);
    CSGuard *g = cs_guard_named(guard_name);
    g_injected_canary_failure = g ? g->name : NULL;
    pthread_mutex_unlock(&g_engine_lock);
}
