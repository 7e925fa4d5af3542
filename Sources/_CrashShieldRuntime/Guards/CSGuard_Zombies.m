/*
 * CSGuard_Zombies.m — opt-in zombies for chosen classes.
 *
 * When an instance of a configured class reaches -[NSObject dealloc] (its subclasses' -dealloc
 * bodies already released its ivars), the dealloc hook's keeper keeps its memory: the object's
 * class becomes CSZombie, a root class made at run time (objc_allocateClassPair(Nil, ...), once,
 * unique name). CSZombie defines only methodSignatureForSelector: and forwardInvocation:, so
 * every message to a zombie goes through GNUstep's ordinary forwarding into forwardInvocation:,
 * which records an incident (original class, selector, and the deallocation stack captured at
 * dealloc time as raw addresses) and zeroes the return value.
 *
 * Invariants:
 * - Zombies live in one FIFO bounded by bytes and count (g_lock). Beyond the budget, and on
 *   flush, the oldest are freed properly: class restored, then the original NSObject -dealloc
 *   IMP (which frees GNUstep's refcount header too; object_dispose would abort). They are freed
 *   after g_lock is dropped.
 * - The keeper allocates one C record per zombie (malloc, no objects, nothing autoreleased) and
 *   never re-enters the dealloc hook.
 * - The per-class verdict is cached lock-free (class pointer | verdict bit); a configuration
 *   change bumps the generation, which empties the cache.
 * - Not covered: messages whose arguments or return value GNUstep cannot forward (no signature
 *   known for a selector the original class does not define: a generic id-returning signature
 *   is used); direct ivar access through a stale pointer (no message, no detection); objects
 *   freed without reaching -[NSObject dealloc]; protection ends when a zombie is freed.
 */
#import "../Engine/CSEngine.h"
#import "../Backend/CSBackend.h"
#include <execinfo.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

CS_GUARD_CODE_SECTION(zombie) /* every function below: see CS_GUARD_METHOD */

extern CSGuard CSGuardZombies;
#define G (&CSGuardZombies)

/* Gives up a strong local's reference at this point, in both modes (the canary's release is the
 * step under test). Local to this file: the lead may hoist it into CSObjC.h. */
#if __has_feature(objc_arc)
#define CS_RELEASE_NOW(variable) ((void)((variable) = nil))
#else
#define CS_RELEASE_NOW(variable) ((void)([(variable) release], (variable) = nil))
#endif

enum { kZombieFrames = 16, kBuckets = 4096, kVerdictCache = 1024 };
static const size_t kDefaultMaxBytes = 2u * 1024u * 1024u;
static const size_t kDefaultMaxCount = 10000;

/* A C record: it owns nothing in ARC's sense. `object` is the zombie's memory, kept by this record
 * (the object's count already reached zero) until cs_zombie_free_list frees it. */
typedef struct cs_zombie {
    CS_UNRETAINED id object;
    CS_UNRETAINED Class original;
    size_t bytes;
    uintptr_t frames[kZombieFrames];
    uint8_t frame_count;
    struct cs_zombie *older, *newer; /* FIFO */
    struct cs_zombie *chain;         /* hash bucket */
} cs_zombie;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static cs_zombie *g_oldest, *g_newest;
static cs_zombie *g_buckets[kBuckets];
static size_t g_count, g_bytes, g_peak_bytes; /* under g_lock; read with CS_ATOMIC_LOAD */
static size_t g_max_bytes = 2u * 1024u * 1024u, g_max_count = 10000;

/* Configuration: replaced wholesale, old ones leaked (rare changes; a keeper may read one). */
typedef struct {
    char **names;
    size_t name_count;
    char **prefixes;
    size_t prefix_count;
    char **deny;
    size_t deny_count;
} cs_zombie_rules;
static cs_zombie_rules *g_rules; /* CS_ATOMIC_* access; NULL: zombify nothing */
static uintptr_t g_verdicts[kVerdictCache];
static Class g_zombie_class;
/* The canary's zombie: kept outside the FIFO, its budget and the app's rules (a budget smaller
 * than one zombie, or rules that deny every class, must not fail the canary), so the app's
 * configuration is never swapped out meanwhile. Under g_lock; NULL outside the canary. */
static cs_zombie *g_canary_zombie;
static Class g_canary_victim_class;
/* Non-zero while the canary runs: lets the keeper past its no-rules fast path. CS_ATOMIC_*. */
static int g_canary_keeping;
static BOOL g_hook_acquired;

static inline size_t cs_zombie_bucket(CS_UNRETAINED id object) {
    uintptr_t h = (uintptr_t)object;
    h ^= h >> 4;
    h *= 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 20) % kBuckets;
}

/* Caller holds g_lock. */
static cs_zombie *cs_zombie_find_locked(CS_UNRETAINED id object) {
    if (g_canary_zombie && g_canary_zombie->object == object) return g_canary_zombie;
    for (cs_zombie *z = g_buckets[cs_zombie_bucket(object)]; z; z = z->chain)
        if (z->object == object) return z;
    return NULL;
}

/* Unlinks the oldest zombie and returns it. Caller holds g_lock. */
static cs_zombie *cs_zombie_pop_oldest_locked(void) {
    cs_zombie *z = g_oldest;
    if (z == NULL) return NULL;
    g_oldest = z->newer;
    if (g_oldest) g_oldest->older = NULL;
    else g_newest = NULL;
    cs_zombie **link = &g_buckets[cs_zombie_bucket(z->object)];
    while (*link && *link != z) link = &(*link)->chain;
    if (*link) *link = z->chain;
    g_count--;
    CS_ATOMIC_STORE(&g_bytes, g_bytes - z->bytes);
    z->newer = NULL;
    return z;
}

/* Frees zombies properly; called without g_lock. */
static void cs_zombie_free_list(cs_zombie *list) {
    if (list == NULL) return; /* nothing to free: NSObject's -dealloc is not even looked up */
    IMP dealloc = cs_dealloc_original();
    SEL sel = cs_backend_selector("dealloc");
    while (list) {
        cs_zombie *next = list->newer;
        object_setClass(list->object, list->original);
        ((void (*)(CS_UNRETAINED id, SEL))dealloc)(list->object, sel);
        free(list);
        list = next;
    }
}

static BOOL cs_name_matches(const char *name, char *const *items, size_t count, BOOL prefix) {
    for (size_t i = 0; i < count; i++)
        if (prefix ? strncmp(name, items[i], strlen(items[i])) == 0 : strcmp(name, items[i]) == 0) return YES;
    return NO;
}

static BOOL cs_zombie_class_wanted(Class cls, cs_zombie_rules *rules) {
    const char *name = class_getName(cls);
    if (!cs_name_matches(name, rules->names, rules->name_count, NO) &&
        !cs_name_matches(name, rules->prefixes, rules->prefix_count, YES))
        return NO;
    for (Class c = cls; c != Nil; c = class_getSuperclass(c))
        if (cs_name_matches(class_getName(c), rules->deny, rules->deny_count, YES)) return NO;
    return YES;
}

static BOOL cs_zombie_verdict(Class cls, cs_zombie_rules *rules) {
    size_t slot = ((uintptr_t)cls >> 4) % kVerdictCache;
    uintptr_t cached = CS_ATOMIC_LOAD_RELAXED(&g_verdicts[slot]);
    if ((cached & ~(uintptr_t)1) == (uintptr_t)cls) return (cached & 1) != 0;
    BOOL wanted = cs_zombie_class_wanted(cls, rules);
    CS_ATOMIC_STORE(&g_verdicts[slot], (uintptr_t)cls | (wanted ? 1u : 0u));
    return wanted;
}

/* The dealloc hook's keeper. `object` is deallocating: never retained (ARC would otherwise). On
 * the thread running the canary only the canary's victim is kept (as g_canary_zombie), whatever
 * the app's rules say; every other thread follows the app's rules meanwhile. */
static BOOL cs_zombie_keep(CS_UNRETAINED id object) {
    cs_zombie_rules *rules = CS_ATOMIC_LOAD(&g_rules);
    if (CS_LIKELY(rules == NULL) && CS_LIKELY(CS_ATOMIC_LOAD_RELAXED(&g_canary_keeping) == 0)) return NO;
    if (!cs_guard_is_on(G)) return NO;
    Class cls = object_getClass(object);
    if (cls == g_zombie_class) return NO;
    BOOL for_canary = cs_canary_running();
    if (for_canary ? cls != g_canary_victim_class : (rules == NULL || !cs_zombie_verdict(cls, rules))) return NO;
    size_t bytes = class_getInstanceSize(cls) + sizeof(void *); /* + GNUstep's refcount header */
    cs_zombie *z = malloc(sizeof *z);
    if (z == NULL) return NO;
    void *raw[kZombieFrames + 2];
    int n = backtrace(raw, kZombieFrames + 2);
    /* Skip this function and the dealloc hook: the stack starts in -dealloc's callers. */
    z->frame_count = 0;
    for (int i = 2; i < n && z->frame_count < kZombieFrames; i++) z->frames[z->frame_count++] = (uintptr_t)raw[i];
    z->object = object;
    z->original = cls;
    z->bytes = bytes + sizeof(cs_zombie);
    z->newer = NULL;
    object_setClass(object, g_zombie_class);
    if (for_canary) {
        z->older = NULL;
        z->chain = NULL;
        pthread_mutex_lock(&g_lock);
        g_canary_zombie = z;
        pthread_mutex_unlock(&g_lock);
        return YES;
    }
    cs_zombie *evicted = NULL, **tail = &evicted;
    pthread_mutex_lock(&g_lock);
    z->older = g_newest;
    if (g_newest) g_newest->newer = z;
    else g_oldest = z;
    g_newest = z;
    size_t bucket = cs_zombie_bucket(object);
    z->chain = g_buckets[bucket];
    g_buckets[bucket] = z;
    g_count++;
    CS_ATOMIC_STORE(&g_bytes, g_bytes + z->bytes);
    while ((g_bytes > g_max_bytes || g_count > g_max_count) && g_oldest) {
        cs_zombie *old = cs_zombie_pop_oldest_locked();
        *tail = old;
        tail = &old->newer;
    }
    if (g_bytes > g_peak_bytes) CS_ATOMIC_STORE(&g_peak_bytes, g_bytes);
    pthread_mutex_unlock(&g_lock);
    cs_zombie_free_list(evicted);
    return YES;
}

#pragma mark - The zombie class

/* The zombie class's methods: `self` is a zombie, whose class has no retain or release of its own,
 * so it is never retained (CS_UNRETAINED; ARC would retain a strong parameter). */
static NSMethodSignature *cs_zombie_signature(CS_UNRETAINED id self, SEL _cmd, SEL selector) {
    (void)_cmd;
    Class original = Nil;
    pthread_mutex_lock(&g_lock);
    cs_zombie *z = cs_zombie_find_locked(self);
    if (z) original = z->original;
    pthread_mutex_unlock(&g_lock);
    NSMethodSignature *signature = nil;
    if (original && class_getInstanceMethod(original, selector))
        signature = [original instanceMethodSignatureForSelector:selector];
    if (signature == nil) signature = [CS_CLASS(NSMethodSignature) signatureWithObjCTypes:"@@:"];
    return signature;
}

static void cs_zombie_forward(CS_UNRETAINED id self, SEL _cmd, NSInvocation *invocation) {
    (void)_cmd;
    SEL selector = [invocation selector];
    cs_zombie copy;
    BOOL found = NO;
    pthread_mutex_lock(&g_lock);
    cs_zombie *z = cs_zombie_find_locked(self);
    if (z) {
        copy = *z;
        found = YES;
    }
    pthread_mutex_unlock(&g_lock);
    cs_policy policy = cs_guard_policy(G);
    if (found && policy != CS_POLICY_OFF) {
        cs_incident_site site = {
            .guard_name = G->name,
            .policy = policy,
            .class_name = class_getName(copy.original),
            .selector_name = sel_getName(selector),
            .is_class_method = false,
            .reason = "message sent to a deallocated instance (kept as a zombie); the stack is where it was deallocated",
            .arg_count = 0,
            .caller = NULL,
            .frames = copy.frames,
            .frame_count = copy.frame_count,
        };
        cs_incident_record(&site);
    }
    NSUInteger length = [[invocation methodSignature] methodReturnLength];
    if (length > 0) {
        uint8_t zeros[256] = {0};
        if (length <= sizeof zeros) [invocation setReturnValue:zeros];
    }
}

static Class cs_zombie_make_class(void) {
    if (g_zombie_class) return g_zombie_class;
    char name[64];
    snprintf(name, sizeof name, "CSZombie_%ld", (long)getpid());
    Class cls = objc_allocateClassPair(Nil, name, 0);
    if (cls == Nil) return Nil;
    class_addMethod(cls, @selector(methodSignatureForSelector:), (IMP)cs_zombie_signature, "@@::");
    class_addMethod(cls, @selector(forwardInvocation:), (IMP)cs_zombie_forward, "v@:@");
    objc_registerClassPair(cls);
    g_zombie_class = cls;
    return cls;
}

#pragma mark - C API

static char **cs_copy_list(const char *const *items, size_t count) {
    char **copy = count ? calloc(count, sizeof(char *)) : NULL;
    for (size_t i = 0; i < count; i++) copy[i] = strdup(items[i] ? items[i] : "");
    return copy;
}

void cs_zombie_configure(const cs_zombie_config *config) {
    cs_zombie_rules *rules = NULL;
    if (config && (config->class_count > 0 || config->prefix_count > 0)) {
        rules = calloc(1, sizeof *rules);
        rules->names = cs_copy_list(config->class_names, config->class_count);
        rules->name_count = config->class_names ? config->class_count : 0;
        rules->prefixes = cs_copy_list(config->prefixes, config->prefix_count);
        rules->prefix_count = config->prefixes ? config->prefix_count : 0;
        rules->deny = cs_copy_list(config->deny, config->deny_count);
        rules->deny_count = config->deny ? config->deny_count : 0;
    }
    cs_zombie *evicted = NULL, **tail = &evicted;
    pthread_mutex_lock(&g_lock);
    g_max_bytes = config && config->max_bytes ? config->max_bytes : kDefaultMaxBytes;
    g_max_count = config && config->max_count ? config->max_count : kDefaultMaxCount;
    for (size_t i = 0; i < kVerdictCache; i++) CS_ATOMIC_STORE(&g_verdicts[i], (uintptr_t)0);
    CS_ATOMIC_STORE(&g_rules, rules);
    while ((g_bytes > g_max_bytes || g_count > g_max_count) && g_oldest) {
        cs_zombie *old = cs_zombie_pop_oldest_locked();
        *tail = old;
        tail = &old->newer;
    }
    pthread_mutex_unlock(&g_lock);
    cs_zombie_free_list(evicted);
}

void cs_zombie_flush(void) {
    cs_zombie *evicted = NULL, **tail = &evicted;
    pthread_mutex_lock(&g_lock);
    while (g_oldest) {
        cs_zombie *old = cs_zombie_pop_oldest_locked();
        *tail = old;
        tail = &old->newer;
    }
    pthread_mutex_unlock(&g_lock);
    cs_zombie_free_list(evicted);
}

size_t cs_zombie_count(void) {
    pthread_mutex_lock(&g_lock);
    size_t count = g_count;
    pthread_mutex_unlock(&g_lock);
    return count;
}

size_t cs_zombie_bytes(void) {
    return CS_ATOMIC_LOAD(&g_bytes);
}

size_t cs_zombie_peak_bytes(void) {
    return CS_ATOMIC_LOAD(&g_peak_bytes);
}

void cs_zombie_reset_peak(void) {
    pthread_mutex_lock(&g_lock);
    CS_ATOMIC_STORE(&g_peak_bytes, g_bytes);
    pthread_mutex_unlock(&g_lock);
}

#pragma mark - Install

/* Canary: a scratch object of a class made for it is zombified (outside the app's rules and
 * budget: see g_canary_zombie), a message to it is answered with 0 and recorded; a plain object
 * is freed normally (nothing recorded). */
@interface CSZombieCanaryVictim : NSObject
- (long)cs_value;
@end
@implementation CSZombieCanaryVictim
- (long)cs_value CS_GUARD_METHOD(zombie) {
    return 42;
}
@end

static const char *cs_zombies_canary(void) {
    g_canary_victim_class = CS_CLASS(CSZombieCanaryVictim);
    CS_ATOMIC_STORE(&g_canary_keeping, 1);
    /* The canary keeps the address past the last release: an unretained pointer (the zombie). */
    CS_UNRETAINED CSZombieCanaryVictim *victim;
    {
        CSZombieCanaryVictim *owner = [[CS_CLASS(CSZombieCanaryVictim) alloc] init];
        victim = owner;
        CS_RELEASE(owner); /* ARC: released at the end of this scope */
    }
    CS_ATOMIC_STORE(&g_canary_keeping, 0);
    pthread_mutex_lock(&g_lock);
    cs_zombie *mine = g_canary_zombie;
    pthread_mutex_unlock(&g_lock);
    /* Not kept: the victim was freed, so it is not touched again. */
    if (mine == NULL || mine->object != victim) return "an opted-in instance was not kept as a zombie";
    const char *failure = NULL;
    if (object_getClass(victim) != g_zombie_class) failure = "an opted-in instance was not kept as a zombie";
    else {
        uint64_t before = cs_canary_hits();
        long value = [victim cs_value];
        if (value != 0 || cs_canary_hits() == before) failure = "a message to a zombie was not intercepted";
    }
    /* Free the canary's zombie at once. */
    pthread_mutex_lock(&g_lock);
    g_canary_zombie = NULL;
    pthread_mutex_unlock(&g_lock);
    mine->newer = NULL;
    cs_zombie_free_list(mine);
    if (failure) return failure;
    NSObject *plain = [[CS_CLASS(NSObject) alloc] init];
    CS_CANARY_LEGAL((CS_RELEASE_NOW(plain), YES), "a plain object's dealloc was intercepted");
    return NULL;
}

static const char *cs_zombies_install(uint32_t *hooked) {
    if (cs_zombie_make_class() == Nil) return "the zombie class could not be created";
    void *warm[2];
    (void)backtrace(warm, 2); /* the first backtrace() may allocate (loads the unwinder) */
    if (!cs_dealloc_hook_acquire()) return "-[NSObject dealloc] could not be hooked";
    g_hook_acquired = YES;
    (*hooked)++; /* -[NSObject dealloc], shared with the other lifecycle guards */
    cs_dealloc_set_keeper(cs_zombie_keep);
    return NULL;
}

/* Kept zombies stay: a dangling pointer the app still holds to one stays harmless after a stop
 * (its messages answer zero; nothing is recorded while the guard is off). They are freed by
 * cs_zombie_flush() or, after a later start, by the budget. */
static void cs_zombies_uninstall(void) {
    cs_dealloc_set_keeper(NULL);
    if (g_hook_acquired) cs_dealloc_hook_release();
    g_hook_acquired = NO;
}

CS_GUARD_DEFINE_CUSTOM(CSGuardZombies, zombie, cs_zombies_install, cs_zombies_uninstall, cs_zombies_canary);
