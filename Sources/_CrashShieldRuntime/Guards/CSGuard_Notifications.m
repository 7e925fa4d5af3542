/*
 * CSGuard_Notifications.m — an observer added with addObserver:selector:name:object:
 * that deallocates without removing itself is removed from its center automatically.
 *
 * GNUstep 1.28 keeps an unretained observer pointer and messages it after it was freed
 * (no automatic removal). The hook marks each (observer, center) pair with a token in the
 * side table (key: the center). The dealloc hook releases an object's side-table values, so the
 * token's -dealloc runs while the observer is being deallocated and removes it from the center.
 * Objects never added as observers have no token and pay only the side table's lock-free check.
 *
 * The token retains the center: a custom center with a marked observer lives at least as long
 * as that observer (the default center lives forever anyway).
 *
 * The token also lists the observer's registrations in its center, (name, object) as added, so a
 * partial removal (removeObserver:name:object:) ends exactly the registrations the center ends:
 * a registration (rn, ro) goes when (name == nil || rn equals name) && (object == nil || ro ==
 * object): a registration for any name (rn nil) survives a removal by name, one for any sender
 * survives a removal by sender (the documented rule; GNUstep 1.28 behaves so). When none is
 * left the mark goes, as after -removeObserver:; an observer that dies with a registration left
 * would be messaged after it was freed, so it is reported and removed. Registrations the guard
 * did not see (made before install) are not listed: as without the guard.
 */
#import "../Engine/CSEngine.h"
#import "../Backend/CSBackend.h"
#include <pthread.h>

CS_GUARD_CODE_SECTION(notification) /* every function below: see CS_GUARD_METHOD */

extern CSGuard CSGuardNotifications;
#define G (&CSGuardNotifications)

/* Gives up a strong local's reference at this point, in both modes (the canary's release is the
 * step under test). Local to this file: the lead may hoist it into CSObjC.h. */
#if __has_feature(objc_arc)
#define CS_RELEASE_NOW(variable) ((void)((variable) = nil))
#else
#define CS_RELEASE_NOW(variable) ((void)([(variable) release], (variable) = nil))
#endif


/** Removes `observer` from `center` when released by the observer's dealloc. Every live token
 *  is also on g_tokens, so uninstall can take the marks back. */
typedef struct {
    void *name;        /* an NSString copy, +1 (CS_RETAINED_POINTER); NULL: any name */
    uintptr_t object;  /* the sender as added, compared by address like the center does; 0: any */
} cs_notif_registration;

@interface CSNotificationToken : NSObject {
  @public
    CS_UNRETAINED id observer; /* the token lives exactly as long as the observer's mark */
    __strong NSNotificationCenter *center; /* retained */
    cs_notif_registration *registrations; /* under g_tokens_lock */
    size_t count, capacity;
    /* g_tokens, under g_tokens_lock: a registry, not owners (the side table owns each token) */
    CS_UNRETAINED CSNotificationToken *prev, *next;
}
@end

static pthread_mutex_t g_tokens_lock = PTHREAD_MUTEX_INITIALIZER;
static CS_UNRETAINED CSNotificationToken *g_tokens;
static BOOL g_hook_acquired; /* under the engine lock */

@implementation CSNotificationToken
- (void)dealloc CS_GUARD_METHOD(notification) {
    pthread_mutex_lock(&g_tokens_lock);
    if (prev) prev->next = next;
    else if (g_tokens == self) g_tokens = next;
    if (next) next->prev = prev;
    cs_notif_registration *left = registrations;
    size_t left_count = count;
    registrations = NULL;
    count = capacity = 0;
    pthread_mutex_unlock(&g_tokens_lock);
    /* With `observer` still set, this runs from the observer's dealloc: it never removed itself
     * (uninstall and full removals clear `observer` first; partial removals that end the last
     * registration drop the token). */
    if (observer && center && left_count > 0 &&
        cs_guard_misuse(G, observer, cs_backend_selector("dealloc"), NULL,
                        "observer deallocated while registered for notifications: removed from the center", 0, 0, 0)) {
        /* A pool of its own: this runs inside the observer's dealloc, possibly during a drain. */
        @autoreleasepool {
            [center removeObserver:observer];
        }
    }
    for (size_t i = 0; i < left_count; i++)
        if (left[i].name) CS_RELEASE_POINTER(left[i].name);
    free(left);
    CS_RELEASE(center);
    CS_SUPER_DEALLOC();
}
@end

/* Takes over `name` (+1, or NULL). Caller holds g_tokens_lock. */
static void cs_notif_list_add_locked(CSNotificationToken *token, void *name, uintptr_t object) {
    if (token->count == token->capacity) {
        token->capacity = token->capacity ? token->capacity * 2 : 2;
        token->registrations = realloc(token->registrations, token->capacity * sizeof(cs_notif_registration));
    }
    token->registrations[token->count++] = (cs_notif_registration){name, object};
}

static inline void cs_notif_add(IMP original, id self, SEL _cmd, const void *caller, id observer, SEL selector,
                                NSString *name, id object) {
    (void)caller;
    ((void (*)(id, SEL, id, SEL, NSString *, id))original)(self, _cmd, observer, selector, name, object);
    /* Reached only when the center accepted the observer (GNUstep throws for nil observers,
     * nil selectors and selectors the observer does not answer). */
    if (observer == nil) return;
    /* A registration made while off is still listed when the observer is marked already, so a
     * later partial removal never takes its mark away while it is registered. */
    CSNotificationToken *token = CS_OBJECT(cs_sidetable_peek(CS_POINTER(observer), CS_POINTER(self)));
    if (token == nil && !CS_LIKELY(cs_guard_is_on(G))) return;
    NSString *copied = [name copy];
    void *listed = copied ? CS_RETAINED_POINTER(copied) : NULL; /* the list's reference */
    CS_RELEASE(copied);
    if (token == nil) {
        token = [[CS_CLASS(CSNotificationToken) alloc] init];
        token->observer = observer;
        token->center = CS_RETAIN(self);
        pthread_mutex_lock(&g_tokens_lock);
        cs_notif_list_add_locked(token, listed, (uintptr_t)object);
        token->next = g_tokens;
        if (g_tokens) g_tokens->prev = token;
        g_tokens = token;
        pthread_mutex_unlock(&g_tokens_lock);
        cs_sidetable_set(CS_POINTER(observer), CS_POINTER(self), CS_POINTER(token));
        CS_RELEASE(token);
    } else {
        pthread_mutex_lock(&g_tokens_lock);
        cs_notif_list_add_locked(token, listed, (uintptr_t)object);
        pthread_mutex_unlock(&g_tokens_lock);
    }
}
CS_DEFINE_HOOK_4(cs_notif_add, void, id, SEL, NSString *, id)

/* -removeObserver: ends every registration of the observer in this center: its mark goes too.
 * Observers typically send it from their own -dealloc: `observer` is never retained here. */
static inline void cs_notif_remove(IMP original, id self, SEL _cmd, const void *caller, CS_UNRETAINED id observer) {
    (void)caller;
    ((void (*)(id, SEL, id))original)(self, _cmd, observer);
    if (observer == nil) return;
    CS_UNRETAINED CSNotificationToken *token = CS_OBJECT(cs_sidetable_peek(CS_POINTER(observer), CS_POINTER(self)));
    if (token == nil) return;
    token->observer = nil; /* the token's -dealloc then neither reports nor removes */
    cs_sidetable_set(CS_POINTER(observer), CS_POINTER(self), NULL);
}
CS_DEFINE_HOOK_1(cs_notif_remove, void, id)

/* A partial removal ends the listed registrations the center ends (rule in the header); when
 * none is left the mark goes. A full removal (nil name and object) is -removeObserver:. */
static inline void cs_notif_remove_partial(IMP original, id self, SEL _cmd, const void *caller,
                                           CS_UNRETAINED id observer, NSString *name, id object) {
    (void)caller;
    ((void (*)(id, SEL, id, NSString *, id))original)(self, _cmd, observer, name, object);
    if (observer == nil) return;
    CS_UNRETAINED CSNotificationToken *token = CS_OBJECT(cs_sidetable_peek(CS_POINTER(observer), CS_POINTER(self)));
    if (token == nil) return;
    void *ended[8]; /* names taken off the list, +1 each */
    size_t ended_count = 0;
    BOOL none_left;
    do {
        ended_count = 0;
        pthread_mutex_lock(&g_tokens_lock);
        for (size_t i = 0; i < token->count && ended_count < 8;) {
            cs_notif_registration *r = &token->registrations[i];
            BOOL name_matches = name == nil || (r->name != NULL && [(NSString *)CS_OBJECT(r->name) isEqualToString:name]);
            BOOL object_matches = object == nil || r->object == (uintptr_t)object;
            if (name_matches && object_matches) {
                ended[ended_count++] = r->name;
                *r = token->registrations[--token->count];
            } else {
                i++;
            }
        }
        none_left = token->count == 0;
        pthread_mutex_unlock(&g_tokens_lock);
        for (size_t i = 0; i < ended_count; i++) /* outside the lock */
            if (ended[i]) CS_RELEASE_POINTER(ended[i]);
    } while (ended_count == 8 && !none_left);
    if (none_left) {
        token->observer = nil;
        cs_sidetable_set(CS_POINTER(observer), CS_POINTER(self), NULL);
    }
}
CS_DEFINE_HOOK_3(cs_notif_remove_partial, void, id, NSString *, id)

static const CSHookSpec kNotificationHooks[] = {
    CS_HOOK("NSNotificationCenter", "addObserver:selector:name:object:", cs_notif_add),
    CS_HOOK("NSNotificationCenter", "removeObserver:", cs_notif_remove),
    CS_HOOK("NSNotificationCenter", "removeObserver:name:object:", cs_notif_remove_partial),
};

@interface CSNotificationCanaryObserver : NSObject {
  @public
    int hits;
}
- (void)cs_ping:(NSNotification *)note;
@end
@implementation CSNotificationCanaryObserver
- (void)cs_ping:(NSNotification *)note CS_GUARD_METHOD(notification) {
    (void)note;
    hits++;
}
@end

static const char *cs_notifications_canary(void) {
    NSNotificationCenter *center = [[CS_CLASS(NSNotificationCenter) alloc] init];
    NSString *name = CS_STR("CSNotificationCanary");
    CSNotificationCanaryObserver *kept = [[CS_CLASS(CSNotificationCanaryObserver) alloc] init];
    [center addObserver:kept selector:@selector(cs_ping:) name:name object:nil];
    @autoreleasepool {
        CSNotificationCanaryObserver *dying = [[CS_CLASS(CSNotificationCanaryObserver) alloc] init];
        [center addObserver:dying selector:@selector(cs_ping:) name:name object:nil];
        /* Misuse: the observer dies registered. The removal is recorded from the dealloc hook. */
        CS_CANARY_MISUSE((CS_RELEASE_NOW(dying), YES), "observer deallocated while registered was not removed");
    }
    CS_CANARY_LEGAL(([center postNotificationName:name object:nil], kept->hits == 1),
                    "a live observer did not receive its notification");
    [center removeObserver:kept];
    CS_RELEASE(kept);
    CS_RELEASE(center);
    return NULL;
}

static const char *cs_notifications_install(uint32_t *hooked) {
    (void)hooked;
    if (!cs_dealloc_hook_acquire()) return "-[NSObject dealloc] could not be hooked";
    g_hook_acquired = YES;
    return NULL;
}

/* Takes every mark back (without removing anyone from a center), then the dealloc hook. */
static void cs_notifications_uninstall(void) {
    for (;;) {
        pthread_mutex_lock(&g_tokens_lock);
        CS_UNRETAINED CSNotificationToken *token = g_tokens;
        CS_UNRETAINED id observer = nil;
        CS_UNRETAINED NSNotificationCenter *center = nil; /* the token's, alive while the mark is */
        if (token) {
            observer = token->observer;
            center = token->center;
            token->observer = nil;
            g_tokens = token->next;
            if (g_tokens) g_tokens->prev = nil;
            token->next = nil;
        }
        pthread_mutex_unlock(&g_tokens_lock);
        if (token == nil) break;
        if (observer) cs_sidetable_set(CS_POINTER(observer), CS_POINTER(center), NULL);
    }
    if (g_hook_acquired) cs_dealloc_hook_release();
    g_hook_acquired = NO;
}

CS_GUARD_DEFINE_HOOKED(CSGuardNotifications, notification, kNotificationHooks, cs_notifications_install,
                       cs_notifications_uninstall, cs_notifications_canary);
