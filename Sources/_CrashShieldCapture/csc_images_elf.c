/*
 * csc_images_elf.c — fills the report's image tables (csc_images.c) from an ELF loader's list:
 * dl_iterate_phdr for the images, their PT_LOAD spans, the executable (PF_X) span and the GNU
 * build id from the PT_NOTE segments the loader maps. Compiled only for ELF targets.
 */
#if defined(__ELF__)
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "csc_internal.h"
#include "csc_images_platform.h"

#include <elf.h>
#include <link.h>
#include <string.h>
#include <unistd.h>

#include "cs_debug_id.h"
#include "cs_image_range.h"

void csc_images_platform_start(void) {}

/** The span of the image's executable PT_LOAD segments. */
static void csc_read_code_range(struct dl_phdr_info *info, csc_image *image) {
    uintptr_t lowest = UINTPTR_MAX, highest = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *segment = &info->dlpi_phdr[i];
        if (segment->p_type != PT_LOAD || !(segment->p_flags & PF_X)) continue;
        uintptr_t start = info->dlpi_addr + segment->p_vaddr;
        if (start < lowest) lowest = start;
        if (start + segment->p_memsz > highest) highest = start + segment->p_memsz;
    }
    image->executable_known = highest != 0;
    image->exec_low = highest ? lowest : 0;
    image->exec_high = highest;
}

/** GNU build id from the image's PT_NOTE segments, which the loader maps into memory. */
static void csc_read_build_id(struct dl_phdr_info *info, csc_image *image) {
    image->build_id_length = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *segment = &info->dlpi_phdr[i];
        if (segment->p_type != PT_NOTE) continue;
        uintptr_t note = info->dlpi_addr + segment->p_vaddr;
        uintptr_t end = note + segment->p_memsz;
        while (note + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *header = (const ElfW(Nhdr) *)note;
            uintptr_t name = note + sizeof(ElfW(Nhdr));
            uintptr_t desc = name + ((header->n_namesz + 3u) & ~3u);
            uintptr_t next = desc + ((header->n_descsz + 3u) & ~3u);
            if (next > end) break;
            if (header->n_type == NT_GNU_BUILD_ID && header->n_namesz == 4 && memcmp((const void *)name, "GNU", 4) == 0) {
                size_t length = header->n_descsz < CSC_BUILD_ID_MAX ? header->n_descsz : CSC_BUILD_ID_MAX;
                memcpy(image->build_id, (const void *)desc, length);
                image->build_id_length = (uint8_t)length;
                return;
            }
            note = next;
        }
    }
}

/* The main program's path (the loader gives it no name), read once; guarded by the refresh lock. */
static char g_program_path[CSC_PATH_MAX];

static int csc_collect(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    csc_image_table *table = data;
    if (table->count >= CSC_MAX_IMAGES) return 1;
    uintptr_t low, high;
    if (!cs_image_load_range(info, &low, &high)) return 0;
    csc_image *image = &table->images[table->count++];
    image->bias = info->dlpi_addr;
    image->low = low;
    image->high = high;
    if (info->dlpi_name && info->dlpi_name[0]) {
        csc_image_table_store_path(table, image, info->dlpi_name);
    } else {
        if (g_program_path[0] == 0) {
            ssize_t n = readlink("/proc/self/exe", g_program_path, CSC_PATH_MAX - 1);
            g_program_path[n > 0 ? n : 0] = 0;
        }
        csc_image_table_store_path(table, image, g_program_path);
    }
    csc_read_code_range(info, image);
    csc_read_build_id(info, image);
    return 0;
}

void csc_images_platform_collect(csc_image_table *table) {
    dl_iterate_phdr(csc_collect, table);
}

bool csc_image_debug_id(const csc_image *image, char text[CS_DEBUG_ID_TEXT_SIZE]) {
    return cs_debug_id_from_elf_build_id(image->build_id, image->build_id_length, text);
}
#endif
