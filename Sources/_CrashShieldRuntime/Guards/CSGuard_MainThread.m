/*
 * CSGuard_MainThread.m — configured (class, selector) pairs that must run on the
 * main thread. Called from another thread, the call is re-dispatched asynchronously to the main
 * queue (libdispatch's, drained by the main thread; in a process without libdispatch, such as a
 * plain Objective-C program, the main run loop) and an incident is recorded. The replay never
 * runs inside the call that queued it, even on a main thread that has no run loop yet (the
 * canary's case when an app starts the guards first in main()).
 *
 * Contracts:
 * - The list is read at install; a later cs_mainthread_configure() hooks its new pairs at once.
 * - Only instance methods returning void with no argument or one pointer- or integer-sized
 *   argument are hooked (the call must be replayable later with the same argument); others are
 *   skipped. An object argument and the receiver are retained until the replay ran.
 * - A class that only inherits the selector gets its own method (cs_backend_add_method) whose
 *   original is the inherited implementation; other classes are unaffected.
 * - Apple's default list (UIView setNeedsLayout, ...) belongs to the Apple build; on Linux the
 *   default list is empty.
 * - Canary: the guard always hooks one pair of its own (CSMainThreadCanary -cs_canary_touch) and
 *   calls it with a thread-local "off the main thread" override, so it checks the hook on this
 *   runtime without a second thread or a running main queue. The re-dispatched canary call runs
 *   whenever the main queue is next drained (it only counts); until then it holds one small
 *   object.
 */
#import "../Engine/CSEngine.h"
#import "../Backend/CSBackend.h"
#include <pthread.h>
#include <string.h>

CS_GUARD_CODE_SECTION(mainthread) /* every function below: see CS_GUARD_METHOD */

extern CSGuard CSGuardMainThread;
#define G (&CSGuardMainThread)

static pthread_mutex_t g_config_lock = PTHREAD_MUTEX_INITIALIZER;
static char **g_class_names;
static char **g_selectors;
static size_t g_pair_count;

/* A call waiting for the main queue, in malloc'd memory: the receiver and an object argument are
 * owned by it (+1 through CS_RETAINED_POINTER) until the replay ran. */
typedef struct {
    IMP original;
    void *receiver;
    SEL selector;
    uintptr_t argument; /* an object (+1) when argument_is_object, else the integer or pointer */
    BOOL argument_is_object;
} cs_main_replay;

static BOOL g_argument_is_object[CS_SLOT_COUNT]; /* written before the slot is installed */
static SEL g_slot_selector[CS_SLOT_COUNT];

static BOOL g_installed; /* under g_config_lock */
static void cs_main_hook_pairs_locked(void);

/* Set only by the canary, on its own thread, around one call: this thread counts as not main. */
static __thread BOOL t_canary_off_main;

static void cs_main_replay_run(void *context) {
    cs_main_replay *replay = context;
    ((void (*)(id, SEL, uintptr_t))replay->original)(CS_OBJECT(replay->receiver), replay->selector, replay->argument);
    if (replay->argument_is_object && replay->argument) CS_RELEASE_POINTER((void *)replay->argument);
    CS_RELEASE_POINTER(replay->receiver);
    free(replay);
}

static CSHookSlots *cs_main_slots(void);

static inline void cs_main_call(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller, uintptr_t argument) {
    if (CS_LIKELY(cs_backend_is_main_thread() && !t_canary_off_main) || !cs_guard_is_on(G) ||
        !cs_guard_misuse(G, self, _cmd, caller, "called off the main thread: re-dispatched to the main queue", 0, 0,
                         0)) {
        ((void (*)(id, SEL, uintptr_t))original)(self, _cmd, argument);
        return;
    }
    BOOL is_object = NO;
    CSHookSlots *slots = cs_main_slots();
    for (unsigned i = 0; i < CS_SLOT_COUNT; i++)
        if (slots->original[i] == original && g_slot_selector[i] == _cmd) {
            is_object = g_argument_is_object[i];
            break;
        }
    cs_main_replay *replay = malloc(sizeof *replay);
    replay->original = original;
    replay->receiver = CS_RETAINED_POINTER(self);
    replay->selector = _cmd;
    replay->argument = is_object && argument ? (uintptr_t)CS_RETAINED_POINTER(CS_OBJECT((void *)argument)) : argument;
    replay->argument_is_object = is_object;
    cs_backend_main_async(cs_main_replay_run, replay);
}
CS_DEFINE_HOOK_1(cs_main_call, void, uintptr_t)

static CSHookSlots *cs_main_slots(void) {
    return &cs_main_call_slots;
}

void cs_mainthread_configure(const char *const *class_names, const char *const *selectors, size_t count) {
    char **classes = count ? calloc(count, sizeof(char *)) : NULL;
    char **sels = count ? calloc(count, sizeof(char *)) : NULL;
    for (size_t i = 0; i < count; i++) {
        classes[i] = strdup(class_names[i] ? class_names[i] : "");
        sels[i] = strdup(selectors[i] ? selectors[i] : "");
    }
    pthread_mutex_lock(&g_config_lock);
    char **old_classes = g_class_names, **old_sels = g_selectors;
    size_t old_count = g_pair_count;
    g_class_names = classes;
    g_selectors = sels;
    g_pair_count = count;
    /* Takes effect at once when the guard is installed (pairs already hooked stay hooked). */
    if (g_installed) cs_main_hook_pairs_locked();
    pthread_mutex_unlock(&g_config_lock);
    for (size_t i = 0; i < old_count; i++) {
        free(old_classes[i]);
        free(old_sels[i]);
    }
    free(old_classes);
    free(old_sels);
}

/* Type-encoding character after qualifiers (const, in, out, ...). */
static char cs_main_type(const char *encoding) {
    while (encoding && *encoding && strchr("rnNoORV", *encoding)) encoding++;
    return encoding ? *encoding : 0;
}

/* Hooks (cls, sel) unless it is hooked already, not replayable (see the contracts) or no slot is
 * left; `counted` adds it to the guard's hooked methods (the canary's own pair is not). Caller
 * holds g_config_lock. */
static void cs_main_hook_locked(Class cls, SEL sel, BOOL counted) {
    CSHookSlots *slots = cs_main_slots();
    Method method = cls ? class_getInstanceMethod(cls, sel) : NULL;
    if (method == NULL || slots->used >= CS_SLOT_COUNT) return;
    for (unsigned i = 0; i < slots->used; i++)
        if (slots->owner[i] == cls && sel_isEqual(g_slot_selector[i], sel)) return;
    unsigned args = method_getNumberOfArguments(method);
    char returns[16] = {0};
    method_getReturnType(method, returns, sizeof returns);
    if (cs_main_type(returns) != 'v' || args > 3) return;
    BOOL is_object = NO;
    if (args == 3) {
        char arg[32] = {0};
        method_getArgumentType(method, 2, arg, sizeof arg);
        char t = cs_main_type(arg);
        if (t == '@') is_object = YES;
        else if (!strchr("#:*^cCsSiIlLqQB", t)) return;
    }
    unsigned i = slots->used;
    IMP current = class_getMethodImplementation(cls, sel);
    slots->original[i] = current;
    slots->owner[i] = cls;
    g_argument_is_object[i] = is_object;
    g_slot_selector[i] = sel;
    slots->used = i + 1;
    if (cs_backend_class_defines(cls, sel)) {
        IMP previous = cs_backend_replace_implementation(cls, sel, slots->replacement[i]);
        if (previous != NULL && previous != current) slots->original[i] = previous;
    } else {
        cs_backend_add_method(cls, sel, slots->replacement[i], method_getTypeEncoding(method));
    }
    if (counted) CSGuardMainThread.hooked_methods++;
}

/* Hooks every configured pair that is not hooked yet. Caller holds g_config_lock. */
static void cs_main_hook_pairs_locked(void) {
    for (size_t p = 0; p < g_pair_count; p++)
        cs_main_hook_locked(objc_lookUpClass(g_class_names[p]), cs_backend_selector(g_selectors[p]), YES);
}

@interface CSMainThreadCanary : NSObject {
  @public
    int touches;          /* CS_ATOMIC_*: every run, wherever it ran */
    int touches_off_main; /* runs on the canary's thread while it counted as off the main thread */
}
- (void)cs_canary_touch;
@end
@implementation CSMainThreadCanary
- (void)cs_canary_touch CS_GUARD_METHOD(mainthread) {
    __atomic_fetch_add(&touches, 1, __ATOMIC_RELAXED);
    if (t_canary_off_main) touches_off_main++;
}
@end

static const char *cs_main_canary(void) {
    CSMainThreadCanary *canary = [[CS_CLASS(CSMainThreadCanary) alloc] init];
    const char *failure = NULL;
    uint64_t before = cs_canary_hits();
    t_canary_off_main = YES;
    [canary cs_canary_touch];
    t_canary_off_main = NO;
    /* Not `touches`: a main thread draining its queue may already have run the replay. */
    if (canary->touches_off_main != 0 || cs_canary_hits() == before)
        failure = "a call off the main thread was not re-dispatched to the main queue";
    if (failure == NULL && cs_backend_is_main_thread()) { /* the replay cannot run meanwhile */
        before = cs_canary_hits();
        int touches = CS_ATOMIC_LOAD(&canary->touches);
        [canary cs_canary_touch];
        if (CS_ATOMIC_LOAD(&canary->touches) != touches + 1 || cs_canary_hits() != before)
            failure = "a call on the main thread did not run at once, untouched";
    }
    CS_RELEASE(canary); /* the pending replay holds its own reference */
    return failure;
}

static const char *cs_main_install(uint32_t *hooked) {
    (void)hooked; /* counted directly: pairs configured later are hooked later */
    pthread_mutex_lock(&g_config_lock);
    g_installed = YES;
    cs_main_hook_locked(CS_CLASS(CSMainThreadCanary), @selector(cs_canary_touch), NO);
    cs_main_hook_pairs_locked();
    pthread_mutex_unlock(&g_config_lock);
    return NULL;
}

static void cs_main_uninstall(void) {
    pthread_mutex_lock(&g_config_lock);
    CSHookSlots *slots = cs_main_slots();
    for (unsigned i = 0; i < slots->used; i++)
        cs_backend_replace_implementation(slots->owner[i], g_slot_selector[i], slots->original[i]);
    slots->used = 0;
    g_installed = NO;
    pthread_mutex_unlock(&g_config_lock);
}

CS_GUARD_DEFINE_CUSTOM(CSGuardMainThread, mainthread, cs_main_install, cs_main_uninstall, cs_main_canary);
