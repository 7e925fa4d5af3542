/*
 * cs_thread_darwin.c — the thread helpers of cs_incidents.h for Apple platforms, written against
 * <pthread.h> (apple-oss-distributions/libpthread include/pthread/pthread.h: pthread_threadid_np,
 * pthread_main_np, pthread_setname_np(const char *), pthread_getname_np). Compiled only there;
 * not compiled or run on the Linux build machines.
 */
#if defined(__APPLE__)
#include "cs_incidents.h"

#include <pthread.h>

uint64_t cs_current_thread_id(void) {
    uint64_t tid = 0;
    pthread_threadid_np(NULL, &tid); /* NULL: the calling thread */
    return tid;
}

bool cs_is_main_thread(void) {
    return pthread_main_np() != 0;
}

bool cs_thread_set_name(const char *name) {
    return pthread_setname_np(name) == 0; /* Apple's form names the calling thread only */
}

void cs_thread_copy_name(char *name, size_t capacity) {
    if (capacity == 0) return;
    if (pthread_getname_np(pthread_self(), name, capacity) != 0) name[0] = 0;
}
#endif
