/*
 * plain-objc-app — an Objective-C program that starts the guards the way the README tells an
 * Objective-C app to: cs_guards_start(NULL) first in main(), no Swift code, no libdispatch in the
 * process. LifecycleGuardTests runs it as a child process.
 *
 * It checks, printing one line per step and exiting with the first failing step's number:
 *  1. libdispatch is not loaded (otherwise this program proves nothing);
 *  2. the main-thread guard is active after start (its canary re-dispatched a call instead of
 *     running it at once on a main thread that had no run loop yet);
 *  3. a main-thread-only method called on another thread does not run there; once the main run
 *     loop runs, it runs exactly once, on the main thread, with its argument;
 *  4. exactly one incident was recorded for it.
 * Exit 0 and "OK" when everything held.
 */
#import <Foundation/Foundation.h>
#include <cs_runtime.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#if defined(__linux__)
#include <sys/syscall.h>
#endif
#include <unistd.h>

@interface PlainCanvas : NSObject {
  @public
    int calls; /* written by the call, read on the main thread after it ran there */
    int main_calls;
    long last_value;
}
- (void)redraw:(long)value;
@end
@implementation PlainCanvas
- (void)redraw:(long)value {
    calls++;
#if defined(__linux__)
    if ((pid_t)syscall(SYS_gettid) == getpid()) main_calls++; /* the main thread's id is the pid */
#else
    if (pthread_main_np()) main_calls++; /* Apple (no SYS_gettid there) */
#endif
    last_value = value;
}
@end

static void *call_from_background(void *canvas) {
    @autoreleasepool {
        [(PlainCanvas *)canvas redraw:42];
    }
    return NULL;
}

static int g_incidents;
static void count_incident(const cs_incident *incident, void *context) {
    (void)context;
    if (incident->kind == CS_INCIDENT_FIRST && strcmp(incident->guard_name, "mainthread") == 0)
        __atomic_fetch_add(&g_incidents, 1, __ATOMIC_RELAXED);
}

int main(void) {
    cs_guards_start(NULL);
    setvbuf(stdout, NULL, _IONBF, 0);
    @autoreleasepool {
        if (dlsym(RTLD_DEFAULT, "dispatch_async_f") != NULL) {
            printf("FAIL 1 libdispatch is loaded\n");
            return 1;
        }
        printf("step 1 no libdispatch\n");

        cs_guard_status status = {0};
        for (size_t i = 0; i < cs_guard_count(); i++)
            if (strcmp(cs_guard_status_at(i).name, "mainthread") == 0) status = cs_guard_status_at(i);
        if (status.state != CS_GUARD_ACTIVE) {
            printf("FAIL 2 main-thread guard state=%d detail=%s\n", (int)status.state, status.detail ? status.detail : "");
            return 2;
        }
        printf("step 2 main-thread guard active\n");

        cs_incidents_set_callback(count_incident, NULL);
        const char *classes[] = {"PlainCanvas"};
        const char *selectors[] = {"redraw:"};
        cs_mainthread_configure(classes, selectors, 1);
        PlainCanvas *canvas = [[PlainCanvas alloc] init];
        pthread_t thread;
        pthread_create(&thread, NULL, call_from_background, canvas);
        pthread_join(thread, NULL);
        if (canvas->calls != 0) {
            printf("FAIL 3 the call ran on the background thread\n");
            return 3;
        }
        NSDate *limit = [NSDate dateWithTimeIntervalSinceNow:10];
        while (canvas->calls == 0 && [limit timeIntervalSinceNow] > 0) {
            @autoreleasepool {
                [[NSRunLoop currentRunLoop] runMode:NSDefaultRunLoopMode
                                         beforeDate:[NSDate dateWithTimeIntervalSinceNow:0.05]];
            }
        }
        if (canvas->calls != 1 || canvas->main_calls != 1 || canvas->last_value != 42) {
            printf("FAIL 3 calls=%d main_calls=%d value=%ld\n", canvas->calls, canvas->main_calls, canvas->last_value);
            return 3;
        }
        printf("step 3 re-dispatched call ran once on the main thread\n");

        cs_incidents_flush(5000);
        if (__atomic_load_n(&g_incidents, __ATOMIC_RELAXED) != 1) {
            printf("FAIL 4 incidents=%d\n", g_incidents);
            return 4;
        }
        printf("step 4 one incident\n");
        [canvas release];
    }
    printf("OK\n");
    return 0;
}
