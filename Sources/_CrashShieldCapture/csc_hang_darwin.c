/*
 * csc_hang_darwin.c — sampling the watched thread and reading memory on Darwin (iOS, macOS).
 *
 * Sampling: the watchdog suspends the watched thread (thread_suspend on its Mach port), reads its
 * registers (thread_get_state: ARM_THREAD_STATE64 / x86_THREAD_STATE64), walks its frame-pointer
 * chain (mandatory in both ABIs) through csc_safe_read (vm_read_overwrite), and resumes it. Then
 * the other threads, one at a time, the same way: task_threads lists them (the kernel maps the
 * port array into this task; every port is given back with mach_port_deallocate and the array
 * with vm_deallocate), the watched thread and the watchdog itself (mach_thread_self, its reference
 * given back too) are skipped, each thread's id (thread_info THREAD_IDENTIFIER_INFO: the id
 * pthread_threadid_np gives) and name (THREAD_EXTENDED_INFO's pth_name) are read before it is
 * suspended, and a thread that cannot be suspended is listed without a stack. While a thread is
 * suspended only Mach calls run here (no lock it could hold, no allocation: dladdr comes later, in
 * csc_hang.c, once every thread runs again). No signal is involved, so the app's blocking calls
 * are not interrupted.
 *
 * Memory: task_info(TASK_VM_INFO): resident_size, resident_size_peak and phys_footprint (what
 * the system's memory limit on iOS is measured against).
 *
 * NOT COMPILED OR RUN HERE: no Apple SDK exists on the build machines; written against
 * mach/thread_act.h (thread_suspend, thread_resume, thread_get_state, thread_info), mach/task.h
 * (task_threads), mach/thread_info.h (THREAD_IDENTIFIER_INFO, THREAD_EXTENDED_INFO),
 * mach/mach_port.h (mach_port_deallocate), mach/vm_map.h (vm_deallocate), mach/arm/thread_status.h
 * and mach/i386/thread_status.h (the state flavors and arm_thread_state64_get_pc/fp/lr),
 * mach/task_info.h (task_vm_info_data_t, TASK_VM_INFO_COUNT) and pthread.h
 * (pthread_threadid_np, pthread_setname_np). scripts/check-apple-libsystem.sh compiles and links it.
 */
#if defined(__APPLE__)
#include "csc_hang_platform.h"
#include "csc_platform.h"

#include <mach/mach.h>
#include <pthread.h>
#include <string.h>

static thread_act_t g_watched_thread = MACH_PORT_NULL;

uint64_t csc_hang_platform_watch_this_thread(void) {
    g_watched_thread = mach_thread_self(); /* one send right, kept for the process's life */
    uint64_t id = 0;
    pthread_threadid_np(NULL, &id);
    return id;
}

void csc_hang_platform_name_thread(void) { pthread_setname_np("CrashShield hang"); }

void csc_hang_platform_thread_name(char *name, size_t capacity) {
    if (capacity == 0) return;
    if (pthread_getname_np(pthread_self(), name, capacity) != 0) name[0] = 0;
}

void csc_hang_platform_set_thread_name(const char *name) { pthread_setname_np(name); }

bool csc_hang_platform_prepare(void) {
    csc_safe_read_prepare();
    return g_watched_thread != MACH_PORT_NULL;
}

void csc_hang_platform_fault_recover(int sig) { (void)sig; /* no walk runs on the watched thread */ }

/* Suspends `thread`, walks its stack into `frames` (innermost first), resumes it; the count
 * (0: it could not be suspended or its registers read). */
static uint32_t csc_walk_thread(thread_act_t thread, uint64_t *frames, uint32_t capacity) {
    if (thread == MACH_PORT_NULL || capacity < 2) return 0;
    if (thread_suspend(thread) != KERN_SUCCESS) return 0;
    uint32_t count = 0;
    uintptr_t pc = 0, fp = 0, lr = 0;
#if defined(__arm64__) || defined(__aarch64__)
    arm_thread_state64_t state;
    mach_msg_type_number_t state_count = ARM_THREAD_STATE64_COUNT;
    if (thread_get_state(thread, ARM_THREAD_STATE64, (thread_state_t)&state, &state_count) == KERN_SUCCESS) {
        pc = csc_code_address((uintptr_t)arm_thread_state64_get_pc(state));
        fp = (uintptr_t)arm_thread_state64_get_fp(state);
        lr = csc_code_address((uintptr_t)arm_thread_state64_get_lr(state));
    }
#elif defined(__x86_64__)
    x86_thread_state64_t state;
    mach_msg_type_number_t state_count = x86_THREAD_STATE64_COUNT;
    if (thread_get_state(thread, x86_THREAD_STATE64, (thread_state_t)&state, &state_count) == KERN_SUCCESS) {
        pc = (uintptr_t)state.__rip;
        fp = (uintptr_t)state.__rbp;
    }
#endif
    if (pc != 0) {
        frames[count++] = pc;
        uintptr_t first_return = 0;
        uintptr_t pair[2];
        if (fp != 0 && csc_safe_read(fp, pair, sizeof pair)) first_return = csc_code_address(pair[1]);
        /* A leaf on arm64 may keep its caller only in the link register. */
        if (lr != 0 && lr != first_return) frames[count++] = lr;
        while (count < capacity && fp != 0 && (fp & (sizeof(uintptr_t) - 1)) == 0) {
            if (!csc_safe_read(fp, pair, sizeof pair)) break;
            uintptr_t return_address = csc_code_address(pair[1]);
            if (return_address == 0) break;
            frames[count++] = return_address;
            if (pair[0] <= fp) break;
            fp = pair[0];
        }
    }
    thread_resume(thread);
    return count;
}

uint32_t csc_hang_platform_sample(uint64_t *frames, uint32_t capacity, uint32_t wait_ms) {
    (void)wait_ms;
    return csc_walk_thread(g_watched_thread, frames, capacity);
}

/* The thread's name (THREAD_EXTENDED_INFO's pth_name), "" when it has none or cannot be read. */
static void csc_mach_thread_name(thread_act_t thread, char *name, size_t capacity) {
    if (capacity == 0) return;
    name[0] = 0;
    thread_extended_info_data_t extended;
    mach_msg_type_number_t count = THREAD_EXTENDED_INFO_COUNT;
    if (thread_info(thread, THREAD_EXTENDED_INFO, (thread_info_t)&extended, &count) != KERN_SUCCESS) return;
    size_t i = 0;
    for (; i + 1 < capacity && i < sizeof extended.pth_name && extended.pth_name[i]; i++) name[i] = extended.pth_name[i];
    name[i] = 0;
}

void csc_hang_platform_watched_name(char *name, size_t capacity) { csc_mach_thread_name(g_watched_thread, name, capacity); }

void csc_hang_platform_sample_others(csc_hang_sample *sample, uint32_t answer_ms) {
    (void)answer_ms; /* thread_suspend answers at once */
    sample->threads_listed = false;
    sample->threads_found = sample->thread_count = sample->threads_unanswered = sample->threads_blocking = sample->threads_beyond_limit = 0;
    thread_act_array_t threads = NULL;
    mach_msg_type_number_t count = 0;
    if (task_threads(mach_task_self(), &threads, &count) != KERN_SUCCESS) return;
    sample->threads_listed = true;
    thread_act_t self = mach_thread_self(); /* the watchdog: never suspended (a new user reference, given back below) */
    uint64_t frames[CSC_HANG_MAX_FRAMES];
    for (mach_msg_type_number_t i = 0; i < count; i++) {
        thread_act_t thread = threads[i];
        /* One name per port in a task: the watched thread's and the watchdog's own ports compare equal. */
        if (thread == g_watched_thread || thread == self) continue;
        sample->threads_found++;
        if (sample->thread_count >= CSC_HANG_MAX_THREADS) {
            sample->threads_beyond_limit++;
            continue;
        }
        csc_hang_thread *entry = &sample->threads[sample->thread_count++];
        memset(entry, 0, sizeof *entry);
        thread_identifier_info_data_t identifier;
        mach_msg_type_number_t identifier_count = THREAD_IDENTIFIER_INFO_COUNT;
        if (thread_info(thread, THREAD_IDENTIFIER_INFO, (thread_info_t)&identifier, &identifier_count) == KERN_SUCCESS)
            entry->thread_id = identifier.thread_id;
        csc_mach_thread_name(thread, entry->name, sizeof entry->name);
        uint32_t walked = csc_walk_thread(thread, frames, CSC_HANG_MAX_FRAMES);
        entry->outcome = walked > 0 ? CSC_HANG_THREAD_SAMPLED : CSC_HANG_THREAD_NO_ANSWER;
        if (walked == 0) sample->threads_unanswered++;
        for (uint32_t f = 0; f < walked; f++) {
            entry->frames[f].address = frames[f];
            entry->frames[f].image = -1;
        }
        entry->frame_count = walked;
    }
    for (mach_msg_type_number_t i = 0; i < count; i++) mach_port_deallocate(mach_task_self(), threads[i]);
    vm_deallocate(mach_task_self(), (vm_address_t)threads, count * sizeof threads[0]);
    mach_port_deallocate(mach_task_self(), self);
}

bool csc_hang_platform_memory(uint64_t *resident, uint64_t *peak, uint64_t *footprint) {
    task_vm_info_data_t info;
    mach_msg_type_number_t count = TASK_VM_INFO_COUNT;
    if (task_info(mach_task_self(), TASK_VM_INFO, (task_info_t)&info, &count) != KERN_SUCCESS) return false;
    *resident = (uint64_t)info.resident_size;
    *peak = (uint64_t)info.resident_size_peak;
    *footprint = (uint64_t)info.phys_footprint;
    return true;
}
#endif /* __APPLE__ */
