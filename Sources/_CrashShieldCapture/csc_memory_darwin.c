/*
 * csc_memory_darwin.c — fault-free memory reads on Darwin (iOS, macOS): vm_read_overwrite on this
 * task, the Darwin counterpart of Linux's process_vm_readv (csc_memory_linux.c). The kernel copies
 * the bytes and answers KERN_INVALID_ADDRESS / KERN_PROTECTION_FAILURE for memory that is not
 * readable, instead of a fault. NOT COMPILED OR RUN HERE: no Apple SDK exists on the build
 * machines; written against mach/vm_map.h:
 *   kern_return_t vm_read_overwrite(vm_map_read_t target_task, vm_address_t address,
 *                                   vm_size_t size, vm_address_t data, vm_size_t *outsize);
 * and mach/mach_init.h's mach_task_self(). A Mach trap: async-signal-safe, no lock, no allocation.
 */
#if defined(__APPLE__)
#include "csc_internal.h"

#include <mach/mach.h>

void csc_safe_read_prepare(void) {}

bool csc_safe_read(uintptr_t address, void *out, size_t length) {
    if (address == 0 || address + length < address) return false;
    vm_size_t copied = 0;
    kern_return_t result = vm_read_overwrite(mach_task_self(), (vm_address_t)address, (vm_size_t)length,
                                             (vm_address_t)(uintptr_t)out, &copied);
    return result == KERN_SUCCESS && copied == (vm_size_t)length;
}
#endif /* __APPLE__ */
