/*
 * csc_hang_darwin.c — sampling the watched thread and reading memory on Darwin (iOS, macOS).
 *
 * Sampling: the watchdog suspends the watched thread (thread_suspend on its Mach port), reads its
 * registers (thread_get_state: ARM_THREAD_STATE64 / x86_THREAD_STATE64), walks its frame-pointer
 * chain (mandatory in both ABIs) through csc_safe_read (vm_read_overwrite), and resumes it. While
 * the thread is suspended only Mach traps run here (no lock it could hold, no allocation). No
 * signal is involved, so the app's blocking calls are not interrupted.
 *
 * Memory: task_info(TASK_VM_INFO): resident_size, resident_size_peak and phys_footprint (what
 * the system's memory limit on iOS is measured against).
 *
 * NOT COMPILED OR RUN HERE: no Apple SDK exists on the build machines; written against
 * mach/thread_act.h (thread_suspend, thread_resume, thread_get_state), mach/arm/thread_status.h
 * and mach/i386/thread_status.h (the state flavors and arm_thread_state64_get_pc/fp/lr),
 * mach/task_info.h (task_vm_info_data_t, TASK_VM_INFO_COUNT) and pthread.h
 * (pthread_threadid_np, pthread_setname_np). scripts/check-apple-libsystem.sh compiles and links it.
 */
#if defined(__APPLE__)
#include "csc_hang_platform.h"
#include "csc_platform.h"

#include <mach/mach.h>
#include <pthread.h>

static thread_act_t g_watched_thread = MACH_PORT_NULL;

uint64_t csc_hang_platform_watch_this_thread(void) {
    g_watched_thread = mach_thread_self(); /* one send right, kept for the process's life */
    uint64_t id = 0;
    pthread_threadid_np(NULL, &id);
    return id;
}

void csc_hang_platform_name_thread(void) { pthread_setname_np("CrashShield hang"); }

bool csc_hang_platform_prepare(void) {
    csc_safe_read_prepare();
    return g_watched_thread != MACH_PORT_NULL;
}

void csc_hang_platform_fault_recover(int sig) { (void)sig; /* no walk runs on the watched thread */ }

uint32_t csc_hang_platform_sample(uint64_t *frames, uint32_t capacity, uint32_t wait_ms) {
    (void)wait_ms;
    if (g_watched_thread == MACH_PORT_NULL || capacity < 2) return 0;
    if (thread_suspend(g_watched_thread) != KERN_SUCCESS) return 0;
    uint32_t count = 0;
    uintptr_t pc = 0, fp = 0, lr = 0;
#if defined(__arm64__) || defined(__aarch64__)
    arm_thread_state64_t state;
    mach_msg_type_number_t state_count = ARM_THREAD_STATE64_COUNT;
    if (thread_get_state(g_watched_thread, ARM_THREAD_STATE64, (thread_state_t)&state, &state_count) == KERN_SUCCESS) {
        pc = csc_code_address((uintptr_t)arm_thread_state64_get_pc(state));
        fp = (uintptr_t)arm_thread_state64_get_fp(state);
        lr = csc_code_address((uintptr_t)arm_thread_state64_get_lr(state));
    }
#elif defined(__x86_64__)
    x86_thread_state64_t state;
    mach_msg_type_number_t state_count = x86_THREAD_STATE64_COUNT;
    if (thread_get_state(g_watched_thread, x86_THREAD_STATE64, (thread_state_t)&state, &state_count) == KERN_SUCCESS) {
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
    thread_resume(g_watched_thread);
    return count;
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
