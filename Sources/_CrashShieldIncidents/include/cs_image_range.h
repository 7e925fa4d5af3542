/*
 * cs_image_range.h — the address range of a loaded ELF image, shared by the incident pipeline's
 * image cache (cs_images_elf.c) and the crash report's image list (_CrashShieldCapture/csc_images_elf.c).
 * Async-signal-safe (reads the loader's program headers only), though both callers run it at
 * refresh time, outside any signal handler.
 */
#ifndef CS_IMAGE_RANGE_H
#define CS_IMAGE_RANGE_H

/* ELF only (Mach-O images: cs_macho.h). struct dl_phdr_info is complete only with _GNU_SOURCE
 * (both C targets define it); the Swift importer, which reads this public header without it, sees
 * nothing. */
#if defined(__ELF__) && defined(_GNU_SOURCE)
#include <link.h>
#include <stdbool.h>
#include <stdint.h>

/** Sets [*low, *high) to the span of the image's PT_LOAD segments (load bias applied). Returns
 *  false, leaving both untouched, when the image has no loadable segment. */
static inline bool cs_image_load_range(const struct dl_phdr_info *info, uintptr_t *low, uintptr_t *high) {
    uintptr_t lowest = UINTPTR_MAX, highest = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *segment = &info->dlpi_phdr[i];
        if (segment->p_type != PT_LOAD) continue;
        uintptr_t start = info->dlpi_addr + segment->p_vaddr;
        uintptr_t stop = start + segment->p_memsz;
        if (start < lowest) lowest = start;
        if (stop > highest) highest = stop;
    }
    if (highest == 0) return false;
    *low = lowest;
    *high = highest;
    return true;
}
#endif
#endif
