/*
 * csc_threads_darwin.c — threads on Darwin (iOS, macOS). NOT COMPILED OR RUN HERE: no Apple SDK
 * exists on the build machines; written against Apple's headers:
 *   - pthread.h (libpthread): pthread_threadid_np(NULL, &id) (the 64-bit system-wide thread id,
 *     never 0), pthread_main_np() (in a forked child the forking thread is the main thread),
 *     pthread_getname_np(pthread_self(), ...) (MAXTHREADNAMESIZE 64 with the NUL), and
 *     pthread_kill; for the calling thread each of these reads its own pthread structure or makes
 *     one system call: no lock, no allocation;
 *   - mach/task.h: task_threads(task, &act_list, &count): the kernel maps the port array into
 *     this task (vm_allocate in the kernel, no malloc); the caller deallocates each thread port
 *     (mach/mach_port.h: mach_port_deallocate) and the array (mach/vm_map.h: vm_deallocate).
 */
#if defined(__APPLE__)
#include "csc_platform.h"

#include <mach/mach.h>
#include <pthread.h>
#include <signal.h>

csc_thread_id csc_thread_self(void) {
    uint64_t id = 0;
    if (pthread_threadid_np(NULL, &id) != 0 || id == 0) id = (uint64_t)(uintptr_t)pthread_self();
    return id;
}

bool csc_thread_is_main(void) { return pthread_main_np() == 1; }

void csc_thread_name(char *name, size_t capacity) {
    if (capacity == 0) return;
    name[0] = 0;
    if (pthread_getname_np(pthread_self(), name, capacity) != 0) name[0] = 0;
    name[capacity - 1] = 0;
}

size_t csc_thread_name_max(void) { return 63; }

void csc_thread_raise(int sig) { pthread_kill(pthread_self(), sig); }

int csc_thread_count(void) {
    thread_act_array_t threads = NULL;
    mach_msg_type_number_t count = 0;
    if (task_threads(mach_task_self(), &threads, &count) != KERN_SUCCESS) return -1;
    for (mach_msg_type_number_t i = 0; i < count; i++) mach_port_deallocate(mach_task_self(), threads[i]);
    vm_deallocate(mach_task_self(), (vm_address_t)threads, count * sizeof threads[0]);
    return (int)count;
}
#endif /* __APPLE__ */
