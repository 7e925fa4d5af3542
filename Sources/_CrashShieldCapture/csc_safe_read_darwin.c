/*
 * csc_safe_read_darwin.c — csc_safe_read() for Apple platforms: vm_read_overwrite() on our own
 * task, a Mach call that returns an error (KERN_INVALID_ADDRESS, KERN_PROTECTION_FAILURE) for
 * unreadable memory instead of faulting, and takes no lock in this process. Written against
 * <mach/mach.h> (xnu osfmk/mach/vm_map.defs: vm_read_overwrite(target_task, address, size, data,
 * out outsize); mach_task_self() from <mach/mach_init.h>). Compiled only there; not compiled or
 * run on the Linux build machines.
 */
#if defined(__APPLE__)
#include "csc_internal.h"

#include <mach/mach.h>

void csc_safe_read_prepare(void) {}

bool csc_safe_read(uintptr_t address, void *out, size_t length) {
    if (address == 0 || address + length < address) return false;
    vm_size_t copied = 0;
    kern_return_t result = vm_read_overwrite(mach_task_self(), (vm_address_t)address, (vm_size_t)length,
                                             (vm_address_t)out, &copied);
    return result == KERN_SUCCESS && copied == (vm_size_t)length;
}
#endif
