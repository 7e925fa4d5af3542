/*
 * CSGuard_KVO.m — key-value observing registrations tracked per observed object.
 *
 * Structure: one CSKVOProxy per observed object (side table, key &kProxyKey) holds the
 * registrations; each registration is a CSKVOEntry (observer unretained, key path, options,
 * context), and the entry itself is what GNUstep's KVO really registers (with the caller's
 * options, context NULL), so every option (new, old, initial, prior), nested and dependent key
 * paths behave exactly as before: GNUstep computes the change dictionary per entry, and the entry
 * passes it on to its observer with the observer's own context.
 *
 * Lifetimes (no weak references on GCC libobjc; both ends are watched through the side table,
 * whose values the dealloc hook releases while the owner is being deallocated):
 * - Observed object dies: its proxy is released by the side table; the proxy's -dealloc
 *   unregisters every entry from GNUstep before the memory is freed.
 * - Observer dies: each entry left a CSKVOToken on the observer (key: the entry); the token's
 *   -dealloc unregisters that entry, so later changes never message freed memory.
 * Each entry is unregistered exactly once: whoever clears entry->registered (atomic exchange)
 * does it. Objects are released only after the proxy's lock is dropped; the originals are called
 * outside the lock (an initial-option notification runs observer code that may add or remove).
 *
 * Registrations the guard did not make (added before install, or while the policy was off) are
 * invisible to the proxy. A removal that matches no tracked entry is therefore reported and ignored
 * only when no such registration can exist: the object had no observation info when its proxy was
 * created and nothing was added past the guard since (`may_hold_untracked`). Otherwise it goes to
 * the original, which removes the registration or does whatever the platform does with an unknown
 * one (GNUstep ignores it, Apple raises): a legal removal never turns into a leaked registration.
 * Removals look for a tracked entry under every policy, so a registration added while the guard
 * was on can still be removed after it was switched off.
 *
 * GNUstep 1.28 lacks -removeObserver:forKeyPath:context: (declared, not implemented): the guard
 * adds it to NSObject. After uninstall it stays, as an unguarded remove that ignores the context.
 * Where the platform has it (Apple), the guard replaces it and chains to it, and uninstall puts it
 * back.
 * Same observer, same key path, another context: the platforms differ and each keeps its own
 * legal result. GNUstep replaces the registration (the new context and options win, one
 * notification per change, one removal ends it); Apple keeps both. The guard asks the original
 * which it does at install (`g_add_replaces`, a probe with the originals on its own objects) and
 * follows it: on a replacing platform a tracked (observer, key path) has one entry whose context
 * and options the next add replaces, an add made while off drops that entry, and an add made
 * while on first removes an untracked registration of the pair through the original (a no-op
 * when there is none). An identical registration added twice is still reported; on a replacing
 * platform the result is the original's (one registration, the new options).
 *
 * Class objects: GCC libobjc registers GNUstep's KVO methods of NSObject's category also as
 * class methods of the root metaclass, so `[SomeClass addObserver:...]` never reaches the
 * instance hooks. GNUstep's KVO cannot observe a class object: it throws after replacing the
 * class object's isa with an instance class of its own, so the class answers none of its class
 * methods afterwards (a nil key path crashes outright). Where the root metaclass defines these
 * methods itself, the guard replaces them: a registration on a class object is reported and
 * ignored, and so is a removal (no registration can exist). Elsewhere (Apple) class objects reach
 * the instance methods and their behaviour is unchanged.
 * Uninstall (CrashShieldSDK.stop) gives every tracked registration back to the platform in its
 * plain form (the app's observer registered directly, same key path, options and context), so
 * the app's removals after the stop work, and an observer freed without removing itself is then
 * messaged as it would be without the guard.
 * Limitation: an observer and its observed object deallocating at the same moment on two threads
 * race as they would without the guard.
 */
#import "../Engine/CSEngine.h"
#import "../Backend/CSBackend.h"
#include <pthread.h>

CS_GUARD_CODE_SECTION(kvo) /* every function below: see CS_GUARD_METHOD */

extern CSGuard CSGuardKVO;
#define G (&CSGuardKVO)

static char kProxyKey;
static IMP g_original_add;    /* -[NSObject addObserver:forKeyPath:options:context:] before the hook */
static IMP g_original_remove; /* -[NSObject removeObserver:forKeyPath:] before the hook */
static IMP g_original_remove_context; /* the platform's -removeObserver:forKeyPath:context:, or NULL */
static IMP g_nsobject_observe; /* NSObject's own -observeValueForKeyPath:... (raises on GNUstep) */
static BOOL g_add_replaces; /* the platform's add replaces (observer, key path)'s registration */
static IMP g_class_original_add;    /* the root metaclass's own +addObserver:..., or NULL */
static IMP g_class_original_remove; /* the root metaclass's own +removeObserver:forKeyPath:, or NULL */
static pthread_mutex_t g_create_lock = PTHREAD_MUTEX_INITIALIZER;
static BOOL g_hook_acquired;

typedef void (*cs_add_fn)(id, SEL, id, NSString *, NSKeyValueObservingOptions, void *);
typedef void (*cs_remove_fn)(id, SEL, id, NSString *);
typedef void (*cs_remove_context_fn)(id, SEL, id, NSString *, void *);

@class CSKVOProxy;
static BOOL cs_kvo_misuse(CS_UNRETAINED id observed, SEL cmd, const void *caller, const char *reason);

@interface CSKVOEntry : NSObject {
  @public
    CS_UNRETAINED id observer; /* cleared when the observer deallocates */
    CS_UNRETAINED id observed; /* the proxy's owner */
    __strong NSString *key_path; /* copied (retained) */
    NSKeyValueObservingOptions options;
    void *context;           /* CS_ATOMIC_*: replaced in place on a replacing platform */
    int registered;          /* 1 while registered with GNUstep; CS_ATOMIC / exchange */
}
@end

@interface CSKVOToken : NSObject {
  @public
    __strong CSKVOEntry *entry; /* retained */
}
@end

@interface CSKVOProxy : NSObject {
  @public
    CS_UNRETAINED id observed; /* the proxy lives exactly as long as the observed object */
    pthread_mutex_t lock;
    /* malloc'd; each element holds one reference taken with CS_RETAINED_POINTER ("the list's
     * reference"), given up through cs_kvo_retire */
    CS_UNRETAINED CSKVOEntry **entries;
    size_t count, capacity;
    int may_hold_untracked; /* CS_ATOMIC_*: a registration the guard did not make may exist */
    /* g_proxies, under g_create_lock: a registry, not owners (the side table owns each proxy) */
    CS_UNRETAINED CSKVOProxy *prev, *next;
}
@end

static CS_UNRETAINED CSKVOProxy *g_proxies; /* every live proxy, under g_create_lock */

/* Retired entries: GNUstep 1.28's KVO may still be delivering a change to an entry another thread
 * just unregistered (its observer list is read without holding a reference; unguarded, the same
 * race crashes on the observer itself). An entry's last references are therefore released only
 * after kRetired later retirements; by then `registered` is 0 and delivery drops the change. */
enum { kRetired = 1024 };
static void *g_retired[kRetired]; /* CSKVOEntry, +1 each */
static size_t g_retired_next;
static pthread_mutex_t g_retired_lock = PTHREAD_MUTEX_INITIALIZER;

/* Takes over one reference to an entry: `retained_entry` is +1 (the list's reference, or one
 * taken with CS_RETAINED_POINTER). */
static void cs_kvo_retire(void *retained_entry) {
    pthread_mutex_lock(&g_retired_lock);
    void *evicted = g_retired[g_retired_next];
    g_retired[g_retired_next] = retained_entry;
    g_retired_next = (g_retired_next + 1) % kRetired;
    pthread_mutex_unlock(&g_retired_lock);
    if (evicted) CS_RELEASE_POINTER(evicted);
}

static inline BOOL cs_kvo_claim(CSKVOEntry *entry) {
    return __atomic_exchange_n(&entry->registered, 0, __ATOMIC_ACQ_REL) == 1;
}

/* Unregisters `entry` from GNUstep. GNUstep's removal autoreleases internally, sometimes the last
 * reference to an object an original still on the stack uses (an observer removing itself in its
 * initial-option notification runs inside -addObserver:, which reads its registration after the
 * notification returns). So a removal the app asked for (`own_pool` NO) autoreleases into the
 * app's pool, as without the guard. A removal the guard makes from a dealloc path (`own_pool` YES)
 * gets a pool of its own, drained at once: an object autoreleased into a pool that is being
 * drained (or into none) must not happen there: that drain would never end. */
static void cs_kvo_unregister(CSKVOEntry *entry, BOOL own_pool) {
    if (!own_pool) {
        ((cs_remove_fn)g_original_remove)(entry->observed, @selector(removeObserver:forKeyPath:), entry,
                                          entry->key_path);
        return;
    }
    @autoreleasepool {
        ((cs_remove_fn)g_original_remove)(entry->observed, @selector(removeObserver:forKeyPath:), entry,
                                          entry->key_path);
    }
}

@implementation CSKVOEntry
- (void)observeValueForKeyPath:(NSString *)keyPath
                      ofObject:(id)object
                        change:(NSDictionary *)change
                       context:(void *)unused CS_GUARD_METHOD(kvo) {
    (void)unused;
    CS_UNRETAINED id target = observer; /* as registered: the entry never owns its observer */
    if (target == nil || !CS_ATOMIC_LOAD(&registered)) return;
    SEL sel = @selector(observeValueForKeyPath:ofObject:change:context:);
    if (class_getMethodImplementation(object_getClass(target), sel) == g_nsobject_observe &&
        cs_guard_misuse(G, target, sel, NULL, "observer does not implement observeValueForKeyPath: notification dropped",
                        0, 0, 0))
        return;
    [target observeValueForKeyPath:keyPath ofObject:object change:change context:CS_ATOMIC_LOAD(&context)];
}
- (void)dealloc CS_GUARD_METHOD(kvo) {
    CS_RELEASE(key_path);
    CS_SUPER_DEALLOC();
}
@end

/* Removes `entry` from `proxy`'s list; returns YES when it was there (the list's reference is
 * then the caller's to release). */
static BOOL cs_kvo_proxy_take(CSKVOProxy *proxy, CSKVOEntry *entry) {
    BOOL found = NO;
    pthread_mutex_lock(&proxy->lock);
    for (size_t i = 0; i < proxy->count; i++)
        if (proxy->entries[i] == entry) {
            proxy->entries[i] = proxy->entries[--proxy->count];
            found = YES;
            break;
        }
    pthread_mutex_unlock(&proxy->lock);
    return found;
}

@implementation CSKVOProxy
- (id)init CS_GUARD_METHOD(kvo) {
    self = [super init];
    if (self) pthread_mutex_init(&lock, NULL);
    return self;
}
/* Released by the side table while the observed object is being deallocated: unregister what is
 * left before its memory goes. */
- (void)dealloc CS_GUARD_METHOD(kvo) {
    pthread_mutex_lock(&g_create_lock);
    if (prev) prev->next = next;
    else if (g_proxies == self) g_proxies = next;
    if (next) next->prev = prev;
    pthread_mutex_unlock(&g_create_lock);
    pthread_mutex_lock(&lock);
    CS_UNRETAINED CSKVOEntry **left = entries;
    size_t n = count;
    entries = NULL;
    count = capacity = 0;
    pthread_mutex_unlock(&lock);
    BOOL reported = NO;
    for (size_t i = 0; i < n; i++) {
        CS_UNRETAINED CSKVOEntry *e = left[i]; /* the list's reference, retired below */
        if (cs_kvo_claim(e)) {
            if (!reported) {
                cs_kvo_misuse(observed, cs_backend_selector("dealloc"), NULL,
                              "observed object deallocated while observed: registrations removed");
                reported = YES;
            }
            cs_kvo_unregister(e, YES);
            CS_UNRETAINED id watcher = e->observer; /* a side-table key only */
            e->observer = nil;
            if (watcher) cs_sidetable_set(CS_POINTER(watcher), CS_POINTER(e), NULL); /* releases the token */
        }
        cs_kvo_retire(CS_POINTER(e));
    }
    free(left);
    pthread_mutex_destroy(&lock);
    CS_SUPER_DEALLOC();
}
@end

/* YES when `observed` has any KVO registration at all. GNUstep may retain and autorelease the
 * info it returns: a pool of its own keeps that local. */
static BOOL cs_kvo_has_observation_info(CS_UNRETAINED id observed) {
    BOOL has;
    @autoreleasepool {
        has = [observed observationInfo] != NULL;
    }
    return has;
}

/* The proxy of `observed`, created when `create`; not retained, not autoreleased (the side table
 * owns it and the caller holds `observed`): callers keep it in CS_UNRETAINED variables. A proxy created for an object that already has
 * observation info starts with may_hold_untracked set: those registrations predate it. */
static CSKVOProxy *cs_kvo_proxy(CS_UNRETAINED id observed, BOOL create) {
    CS_UNRETAINED CSKVOProxy *proxy = CS_OBJECT(cs_sidetable_peek(CS_POINTER(observed), &kProxyKey));
    if (proxy || !create) return proxy;
    pthread_mutex_lock(&g_create_lock);
    proxy = CS_OBJECT(cs_sidetable_peek(CS_POINTER(observed), &kProxyKey));
    if (proxy == nil) {
        CSKVOProxy *created = [[CS_CLASS(CSKVOProxy) alloc] init];
        created->observed = observed;
        created->may_hold_untracked = cs_kvo_has_observation_info(observed);
        cs_sidetable_set(CS_POINTER(observed), &kProxyKey, CS_POINTER(created)); /* the side table's reference */
        created->next = g_proxies;
        if (g_proxies) g_proxies->prev = created;
        g_proxies = created;
        proxy = created;
        CS_RELEASE(created);
    }
    pthread_mutex_unlock(&g_create_lock);
    return proxy;
}

static BOOL cs_kvo_forget_entry(CSKVOEntry *entry) {
    CS_UNRETAINED CSKVOProxy *proxy = cs_kvo_proxy(entry->observed, NO);
    if (proxy && cs_kvo_proxy_take(proxy, entry)) {
        cs_kvo_retire(CS_POINTER(entry)); /* the list's reference */
        return YES;
    }
    return NO;
}

@implementation CSKVOToken
/* Released by the side table: normally from the observer's dealloc (the observer forgot to
 * remove itself), or when the registration ends (then `registered` is already 0). */
- (void)dealloc CS_GUARD_METHOD(kvo) {
    CSKVOEntry *e = entry;
    if (e && cs_kvo_claim(e)) {
        CS_UNRETAINED id dying = e->observer; /* deallocating: never retained */
        e->observer = nil;
        cs_guard_misuse(G, dying, cs_backend_selector("dealloc"), NULL,
                        "observer deallocated while registered for key-value observing: removed", 0, 0, 0);
        cs_kvo_unregister(e, YES);
        cs_kvo_forget_entry(e);
    }
    /* The retirement ring gets a reference of its own; the token's goes with the token. */
    if (e) cs_kvo_retire(CS_RETAINED_POINTER(e));
    CS_RELEASE(entry);
    CS_SUPER_DEALLOC();
}
@end

/* Records a misuse on an observed object under its public class: GNUstep's KVO swaps the isa of
 * an observed object for a private subclass, and -class hides it. The incident reads the class
 * from the receiver's isa, so a stack stand-in carries the public one. */
static BOOL cs_kvo_misuse(CS_UNRETAINED id observed, SEL cmd, const void *caller, const char *reason) {
    if (cs_backend_is_class_object(observed)) return cs_guard_misuse(G, observed, cmd, caller, reason, 0, 0, 0);
    struct {
        CS_UNRETAINED Class isa;
    } stand_in = {[observed class]};
    return cs_guard_misuse(G, CS_OBJECT(&stand_in), cmd, caller, reason, 0, 0, 0);
}

static inline BOOL cs_kvo_same_path(NSString *a, NSString *b) {
    return a == b || [a isEqualToString:b];
}

#pragma mark - Hooks

/* Removal paths run from -dealloc methods too (an observer removing itself, an object removing its
 * observers): their object parameters are never retained. */
static BOOL cs_kvo_remove_matching(CS_UNRETAINED id observed, CS_UNRETAINED id observer, NSString *keyPath,
                                   BOOL use_context, void *context);

static inline void cs_kvo_add(IMP original, id self, SEL _cmd, const void *caller, id observer, NSString *keyPath,
                              NSKeyValueObservingOptions options, void *context) {
    if (object_getClass(observer) == CS_CLASS(CSKVOEntry)) {
        ((cs_add_fn)original)(self, _cmd, observer, keyPath, options, context);
        return;
    }
    if (!CS_LIKELY(cs_guard_is_on(G))) {
        /* Off: the original behaviour, remembered so a later removal is not taken for a misuse.
         * Where the platform replaces, the new registration replaces a tracked one too. */
        ((cs_add_fn)original)(self, _cmd, observer, keyPath, options, context);
        if (observer && keyPath) {
            CS_ATOMIC_STORE(&cs_kvo_proxy(self, YES)->may_hold_untracked, 1);
            if (g_add_replaces) cs_kvo_remove_matching(self, observer, keyPath, NO, NULL);
        }
        return;
    }
    if (observer == nil &&
        cs_kvo_misuse(self, _cmd, caller, "nil observer: registration ignored"))
        return;
    if ((keyPath == nil || [keyPath length] == 0) &&
        cs_kvo_misuse(self, _cmd, caller, "nil or empty key path: registration ignored"))
        return;
    if (observer == nil || keyPath == nil || [keyPath length] == 0) { /* report-only */
        ((cs_add_fn)original)(self, _cmd, observer, keyPath, options, context);
        if (observer && keyPath) CS_ATOMIC_STORE(&cs_kvo_proxy(self, YES)->may_hold_untracked, 1);
        return;
    }
    CS_UNRETAINED CSKVOProxy *proxy = cs_kvo_proxy(self, YES);
    CSKVOEntry *entry = [[CS_CLASS(CSKVOEntry) alloc] init];
    entry->observer = observer;
    entry->observed = self;
    entry->key_path = [keyPath copy];
    entry->options = options;
    entry->context = context;
    entry->registered = 1;
    BOOL duplicate = NO;
    CSKVOEntry *replaced = nil; /* replacing platform: the tracked registration of the pair, retained */
    pthread_mutex_lock(&proxy->lock);
    for (size_t i = 0; i < proxy->count && !duplicate && !replaced; i++) {
        CS_UNRETAINED CSKVOEntry *e = proxy->entries[i];
        if (e->observer != observer || !cs_kvo_same_path(e->key_path, keyPath)) continue;
        duplicate = e->context == context;
        if (g_add_replaces) {
            replaced = CS_RETAIN(e);
            CS_ATOMIC_STORE(&e->context, context);
            e->options = options;
        }
    }
    if (!duplicate && !replaced) {
        if (proxy->count == proxy->capacity) {
            proxy->capacity = proxy->capacity ? proxy->capacity * 2 : 4;
            proxy->entries = (CS_UNRETAINED CSKVOEntry **)realloc(proxy->entries,
                                                                  proxy->capacity * sizeof(CSKVOEntry *));
        }
        proxy->entries[proxy->count++] = CS_OBJECT(CS_RETAINED_POINTER(entry)); /* the list's reference */
    }
    pthread_mutex_unlock(&proxy->lock);
    if (replaced) {
        /* The original's result under every policy: the entry's registration gets the new options
         * (and an initial notification when asked), the context is the new one. */
        CS_RELEASE(entry);
        if (duplicate) cs_kvo_misuse(self, _cmd, caller, "identical registration added twice: blocked");
        if (CS_ATOMIC_LOAD(&replaced->registered)) ((cs_add_fn)original)(self, _cmd, replaced, keyPath, options, NULL);
        CS_RELEASE(replaced);
        return;
    }
    if (duplicate) {
        CS_RELEASE(entry);
        if (cs_kvo_misuse(self, _cmd, caller, "identical registration added twice: blocked")) return;
        ((cs_add_fn)original)(self, _cmd, observer, keyPath, options, context); /* report-only */
        CS_ATOMIC_STORE(&proxy->may_hold_untracked, 1);
        return;
    }
    CSKVOToken *token = [[CS_CLASS(CSKVOToken) alloc] init];
    token->entry = CS_RETAIN(entry);
    cs_sidetable_set(CS_POINTER(observer), CS_POINTER(entry), CS_POINTER(token));
    CS_RELEASE(token);
    /* Replacing platform: this registration replaces one of the pair made past the guard. */
    if (g_add_replaces && CS_ATOMIC_LOAD(&proxy->may_hold_untracked)) /* into the app's pool: see cs_kvo_unregister */
        ((cs_remove_fn)g_original_remove)(self, @selector(removeObserver:forKeyPath:), observer, keyPath);
    ((cs_add_fn)original)(self, _cmd, entry, keyPath, options, NULL);
    CS_RELEASE(entry); /* alloc's; the list and the token hold their own */
}
CS_DEFINE_HOOK_4(cs_kvo_add, void, id, NSString *, NSKeyValueObservingOptions, void *)

/* Removes the most recent matching registration; returns NO when there is none. */
static BOOL cs_kvo_remove_matching(CS_UNRETAINED id observed, CS_UNRETAINED id observer, NSString *keyPath,
                                   BOOL use_context, void *context) {
    CS_UNRETAINED CSKVOProxy *proxy = cs_kvo_proxy(observed, NO);
    if (proxy == nil || keyPath == nil) return NO;
    CS_UNRETAINED CSKVOEntry *found = nil; /* taken off the list with the list's reference */
    pthread_mutex_lock(&proxy->lock);
    for (size_t i = proxy->count; i-- > 0;) {
        CS_UNRETAINED CSKVOEntry *e = proxy->entries[i];
        if (e->observer == observer && (!use_context || CS_ATOMIC_LOAD(&e->context) == context) &&
            cs_kvo_same_path(e->key_path, keyPath)) {
            found = e;
            /* Keep registration order for the remaining entries. */
            for (size_t j = i; j + 1 < proxy->count; j++) proxy->entries[j] = proxy->entries[j + 1];
            proxy->count--;
            break;
        }
    }
    pthread_mutex_unlock(&proxy->lock);
    if (found == nil) return NO;
    if (cs_kvo_claim(found)) {
        cs_kvo_unregister(found, NO);
        found->observer = nil;
        cs_sidetable_set(CS_POINTER(observer), CS_POINTER(found), NULL); /* releases the token */
    }
    cs_kvo_retire(CS_POINTER(found));
    return YES;
}

/* YES when `observed` may hold a registration the guard did not make (see the header). */
static BOOL cs_kvo_may_hold_untracked(CS_UNRETAINED id observed) {
    CS_UNRETAINED CSKVOProxy *proxy = cs_kvo_proxy(observed, NO);
    if (proxy) return CS_ATOMIC_LOAD(&proxy->may_hold_untracked) != 0;
    return cs_kvo_has_observation_info(observed);
}

/* GNUstep ignores the removal of a registration that does not exist, and its own code relies on it
 * (NSOperation's -removeDependency: after the dependency finished or was cancelled removes an
 * observer it already removed). Such a removal sent by the system's own code is its legal form,
 * not the app's misuse: it goes to the original with no incident. Apple raises, so there every
 * caller is judged. */
static inline BOOL cs_kvo_platform_removal(const void *caller) {
#if defined(__APPLE__)
    (void)caller;
    return NO;
#else
    return cs_address_is_in_system_image((uintptr_t)caller);
#endif
}

static inline void cs_kvo_remove(IMP original, CS_UNRETAINED id self, SEL _cmd, const void *caller,
                                 CS_UNRETAINED id observer, NSString *keyPath) {
    if (object_getClass(observer) == CS_CLASS(CSKVOEntry)) {
        ((cs_remove_fn)original)(self, _cmd, observer, keyPath);
        return;
    }
    if (cs_kvo_remove_matching(self, observer, keyPath, NO, NULL)) return;
    if (CS_LIKELY(cs_guard_is_on(G)) && !cs_kvo_may_hold_untracked(self) && !cs_kvo_platform_removal(caller) &&
        cs_kvo_misuse(self, _cmd, caller, "removal of a registration that does not exist: ignored"))
        return;
    ((cs_remove_fn)original)(self, _cmd, observer, keyPath);
}
CS_DEFINE_HOOK_2(cs_kvo_remove, void, id, NSString *)

/* -removeObserver:forKeyPath:context:, added to NSObject where the platform lacks it (GNUstep
 * 1.28); there an untracked registration is removed without its context, the best GNUstep offers,
 * through GNUstep's own removal (not the hooked one, which would take a tracked entry of another
 * context instead). */
static void cs_kvo_remove_context(CS_UNRETAINED id self, SEL _cmd, CS_UNRETAINED id observer, NSString *keyPath,
                                  void *context) {
    if (cs_kvo_remove_matching(self, observer, keyPath, YES, context)) return;
    if (cs_guard_is_on(G) && !cs_kvo_may_hold_untracked(self) &&
        cs_kvo_misuse(self, _cmd, __builtin_return_address(0),
                      "removal of a registration that does not exist (with this context): ignored"))
        return;
    if (g_original_remove_context)
        ((cs_remove_context_fn)g_original_remove_context)(self, _cmd, observer, keyPath, context);
    else
        ((cs_remove_fn)g_original_remove)(self, @selector(removeObserver:forKeyPath:), observer, keyPath);
}

/* +addObserver:forKeyPath:options:context: of the root metaclass (see the header). */
static void cs_kvo_class_add(id self, SEL _cmd, id observer, NSString *keyPath, NSKeyValueObservingOptions options,
                             void *context) {
    if (cs_guard_is_on(G) &&
        cs_kvo_misuse(self, _cmd, __builtin_return_address(0),
                      "registration on a class object (unsupported, breaks the class): ignored"))
        return;
    ((cs_add_fn)g_class_original_add)(self, _cmd, observer, keyPath, options, context);
}

/* +removeObserver:forKeyPath: of the root metaclass: no registration on a class object can exist. */
static void cs_kvo_class_remove(id self, SEL _cmd, id observer, NSString *keyPath) {
    if (cs_guard_is_on(G) &&
        cs_kvo_misuse(self, _cmd, __builtin_return_address(0), "removal of a registration that does not exist: ignored"))
        return;
    ((cs_remove_fn)g_class_original_remove)(self, _cmd, observer, keyPath);
}

static const CSHookSpec kKVOHooks[] = {
    CS_ROOT_HOOK("NSObject", "addObserver:forKeyPath:options:context:", cs_kvo_add),
    CS_ROOT_HOOK("NSObject", "removeObserver:forKeyPath:", cs_kvo_remove),
};

#pragma mark - Canary and install

@interface CSKVOCanaryModel : NSObject {
    long value;
}
- (long)value;
- (void)setValue:(long)v;
@end
@implementation CSKVOCanaryModel
- (long)value CS_GUARD_METHOD(kvo) {
    return value;
}
- (void)setValue:(long)v CS_GUARD_METHOD(kvo) {
    value = v;
}
@end

@interface CSKVOCanaryObserver : NSObject {
  @public
    int hits;
}
@end
@implementation CSKVOCanaryObserver
- (void)observeValueForKeyPath:(NSString *)keyPath
                      ofObject:(id)object
                        change:(NSDictionary *)change
                       context:(void *)context CS_GUARD_METHOD(kvo) {
    (void)keyPath;
    (void)object;
    (void)change;
    (void)context;
    hits++;
}
@end

static const char *cs_kvo_canary(void) {
    const char *failure = NULL;
    @autoreleasepool {
        CSKVOCanaryModel *model = [[CS_CLASS(CSKVOCanaryModel) alloc] init];
        CSKVOCanaryObserver *observer = [[CS_CLASS(CSKVOCanaryObserver) alloc] init];
        uint64_t before = cs_canary_hits();
        [model removeObserver:observer forKeyPath:CS_STR("value")];
        if (cs_canary_hits() == before) failure = "removal of a registration that does not exist was not intercepted";
        before = cs_canary_hits();
        [model addObserver:observer forKeyPath:CS_STR("value") options:NSKeyValueObservingOptionNew context:NULL];
        [model setValue:3];
        [model removeObserver:observer forKeyPath:CS_STR("value")];
        [model setValue:4];
        if (!failure && (observer->hits != 1 || cs_canary_hits() != before))
            failure = "a legal registration did not behave as before";
        CS_RELEASE(model);
        CS_RELEASE(observer);
    }
    /* Class side: a subclass's metaclass must dispatch to the replacement (dispatch tables
     * refreshed). Never called: unguarded, the call would break the class it is sent to. */
    if (!failure && g_class_original_add &&
        class_getMethodImplementation(object_getClass((id)CS_CLASS(CSKVOCanaryModel)),
                                      @selector(addObserver:forKeyPath:options:context:)) != (IMP)cs_kvo_class_add)
        failure = "a registration on a class object does not reach the guard";
    return failure;
}

/* Does the platform's add replace an observer's registration for the same key path with another
 * context (GNUstep) or keep both (Apple)? Asked of the originals, on the canary's own classes, at
 * the first install of the process (the answer is the platform's); under the engine lock. */
static BOOL cs_kvo_probe_add_replaces(void) {
    static int answer; /* 0 not asked, 1 replaces, 2 keeps both */
    if (answer != 0) return answer == 1;
    BOOL replaces;
    @autoreleasepool {
        CSKVOCanaryModel *model = [[CS_CLASS(CSKVOCanaryModel) alloc] init];
        CSKVOCanaryObserver *observer = [[CS_CLASS(CSKVOCanaryObserver) alloc] init];
        SEL add = @selector(addObserver:forKeyPath:options:context:), remove = @selector(removeObserver:forKeyPath:);
        ((cs_add_fn)g_original_add)(model, add, observer, CS_STR("value"), NSKeyValueObservingOptionNew, (void *)1);
        ((cs_add_fn)g_original_add)(model, add, observer, CS_STR("value"), NSKeyValueObservingOptionNew, (void *)2);
        [model setValue:1];
        int registrations = observer->hits;
        replaces = registrations == 1;
        for (int i = 0; i < registrations; i++) ((cs_remove_fn)g_original_remove)(model, remove, observer, CS_STR("value"));
        CS_RELEASE(model);
        CS_RELEASE(observer);
    }
    answer = replaces ? 1 : 2;
    return replaces;
}

/* Unguarded fallback left in place of the added method (methods cannot be removed). */
static void cs_kvo_remove_context_unguarded(CS_UNRETAINED id self, SEL _cmd, CS_UNRETAINED id observer,
                                            NSString *keyPath, void *context) {
    (void)_cmd;
    (void)context;
    [self removeObserver:observer forKeyPath:keyPath];
}

static const char *cs_kvo_install(uint32_t *hooked) {
    Class root = CS_CLASS(NSObject);
    g_original_add = cs_kvo_add_slots.original[0];
    g_original_remove = cs_kvo_remove_slots.original[0];
    g_nsobject_observe = class_getMethodImplementation(root, @selector(observeValueForKeyPath:ofObject:change:context:));
    g_add_replaces = cs_kvo_probe_add_replaces();
    SEL remove_context = @selector(removeObserver:forKeyPath:context:);
    /* GNUstep's NSObject lacks the method: it is added with the backend, which writes the tables
     * in place (class_addMethod would rebuild every table below NSObject under the app's
     * threads); on later starts it is replaced, in place as well. */
    if (cs_backend_class_defines(root, remove_context)) {
        IMP previous = cs_backend_replace_implementation(root, remove_context, (IMP)cs_kvo_remove_context);
        if (previous == NULL) return "-removeObserver:forKeyPath:context: could not be replaced";
        if (previous != (IMP)cs_kvo_remove_context_unguarded) g_original_remove_context = previous;
    } else if (!cs_backend_add_method(root, remove_context, (IMP)cs_kvo_remove_context, "v@:@@^v")) {
        return "-removeObserver:forKeyPath:context: could not be added";
    }
    (*hooked)++;
#if !defined(__APPLE__)
    /* GCC libobjc: the root metaclass's dispatch table is not rebuilt when NSObject gains a method,
     * so class objects would still find the method missing. NSObject's metaclass is not
     * clang-compiled, so adding to it is safe (on a clang-compiled metaclass it is not). */
    Class meta = object_getClass((id)root);
    if (!cs_backend_class_defines(meta, remove_context))
        cs_backend_add_method(meta, remove_context, (IMP)cs_kvo_remove_context, "v@:@@^v");
    else if (cs_backend_own_implementation(meta, remove_context) == (IMP)cs_kvo_remove_context_unguarded)
        cs_backend_replace_implementation(meta, remove_context, (IMP)cs_kvo_remove_context); /* left by uninstall */
#endif
    Class root_meta = object_getClass((id)root);
    SEL add = @selector(addObserver:forKeyPath:options:context:), remove = @selector(removeObserver:forKeyPath:);
    if (cs_backend_class_defines(root_meta, add)) {
        g_class_original_add = cs_backend_own_implementation(root_meta, add);
        IMP previous = cs_backend_replace_implementation(root_meta, add, (IMP)cs_kvo_class_add);
        if (previous == NULL) return "+addObserver:forKeyPath:options:context: could not be replaced";
        g_class_original_add = previous;
        (*hooked)++;
    }
    if (cs_backend_class_defines(root_meta, remove)) {
        g_class_original_remove = cs_backend_own_implementation(root_meta, remove);
        IMP previous = cs_backend_replace_implementation(root_meta, remove, (IMP)cs_kvo_class_remove);
        if (previous == NULL) return "+removeObserver:forKeyPath: could not be replaced";
        g_class_original_remove = previous;
        (*hooked)++;
    }
    if (!cs_dealloc_hook_acquire()) return "-[NSObject dealloc] could not be hooked";
    g_hook_acquired = YES;
    return NULL;
}

/* Gives every registration the guard tracks back to the platform in its plain form: the entry's
 * registration is replaced by the app's observer itself, with the same key path, options (but no
 * initial notification) and context, so the app's later removal, and everything else, works as
 * without the guard once the hooks are gone. Each proxy is retained while it is worked on. */
static void cs_kvo_hand_back_registrations(void) {
    for (;;) {
        CSKVOProxy *proxy = nil; /* retained (a strong local under ARC) while worked on */
        pthread_mutex_lock(&g_create_lock);
        CS_UNRETAINED CSKVOProxy *candidate = g_proxies;
        while (candidate && candidate->count == 0) candidate = candidate->next;
        if (candidate) proxy = CS_RETAIN(candidate);
        pthread_mutex_unlock(&g_create_lock);
        if (proxy == nil) return;
        pthread_mutex_lock(&proxy->lock);
        CS_UNRETAINED CSKVOEntry **left = proxy->entries;
        size_t n = proxy->count;
        proxy->entries = NULL;
        proxy->count = proxy->capacity = 0;
        pthread_mutex_unlock(&proxy->lock);
        for (size_t i = 0; i < n; i++) {
            CS_UNRETAINED CSKVOEntry *e = left[i]; /* the list's reference, retired below */
            if (cs_kvo_claim(e)) {
                CS_UNRETAINED id watcher = e->observer;
                cs_kvo_unregister(e, YES);
                if (watcher) {
                    ((cs_add_fn)g_original_add)(e->observed, @selector(addObserver:forKeyPath:options:context:), watcher,
                                                e->key_path, e->options & ~(NSKeyValueObservingOptions)NSKeyValueObservingOptionInitial,
                                                CS_ATOMIC_LOAD(&e->context));
                    e->observer = nil;
                    cs_sidetable_set(CS_POINTER(watcher), CS_POINTER(e), NULL); /* releases the token */
                }
            }
            cs_kvo_retire(CS_POINTER(e));
        }
        free(left);
        CS_RELEASE(proxy);
    }
}

static void cs_kvo_uninstall(void) {
    cs_kvo_hand_back_registrations();
    Class root = CS_CLASS(NSObject);
    SEL remove_context = @selector(removeObserver:forKeyPath:context:);
    /* Ask cs_backend_class_defines first: looking up a missing method's IMP makes GNUstep build a
     * forwarding IMP (and autorelease a signature). */
    if (cs_backend_class_defines(root, remove_context) &&
        class_getMethodImplementation(root, remove_context) == (IMP)cs_kvo_remove_context)
        cs_backend_replace_implementation(root, remove_context, g_original_remove_context
                                                                    ? g_original_remove_context
                                                                    : (IMP)cs_kvo_remove_context_unguarded);
    Class root_meta = object_getClass((id)root);
    if (cs_backend_class_defines(root_meta, remove_context) &&
        class_getMethodImplementation(root_meta, remove_context) == (IMP)cs_kvo_remove_context)
        cs_backend_replace_implementation(root_meta, remove_context, g_original_remove_context
                                                                         ? g_original_remove_context
                                                                         : (IMP)cs_kvo_remove_context_unguarded);
    g_original_remove_context = NULL;
    if (g_class_original_add)
        cs_backend_replace_implementation(root_meta, @selector(addObserver:forKeyPath:options:context:),
                                          g_class_original_add);
    if (g_class_original_remove)
        cs_backend_replace_implementation(root_meta, @selector(removeObserver:forKeyPath:), g_class_original_remove);
    g_class_original_add = g_class_original_remove = NULL;
    if (g_hook_acquired) cs_dealloc_hook_release();
    g_hook_acquired = NO;
}

CS_GUARD_DEFINE_HOOKED(CSGuardKVO, kvo, kKVOHooks, cs_kvo_install, cs_kvo_uninstall, cs_kvo_canary);
