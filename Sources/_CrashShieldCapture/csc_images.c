/*
 * csc_images.c — the image list the handler writes into a report (path, load bias, address
 * range, GNU build id), and a fault-free memory read. Both are prepared at install so the
 * handler only reads frozen tables.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "csc_internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#if defined(__linux__)
#include <elf.h>
#include <link.h>

#include "cs_image_range.h"
#endif

/* Two tables: a refresh fills the one that is not current, then publishes it. A crash handler
 * pins the table it reads (g_pinned), and a refresh that would refill the pinned table is skipped
 * (the process is crashing; an opt-in recovery unpins), so two refreshes during one report cannot
 * rewrite the table under the handler.
 *
 * Why pinning is exact (all atomics sequentially consistent): the pinner stores g_pinned = i and
 * then sees g_current == i. A refresh already running then fills the other table (it read
 * g_current == i under the lock, and only it can publish); every later refresh reads g_pinned
 * after the store and skips table i. */
static csc_image_table g_tables[2];
static _Atomic int g_current = -1;
static _Atomic int g_pinned = -1;
static pthread_mutex_t g_refresh_lock = PTHREAD_MUTEX_INITIALIZER;

const csc_image_table *csc_images_current(void) {
    int index = atomic_load(&g_current);
    return index < 0 ? NULL : &g_tables[index];
}

const csc_image_table *csc_images_pin(void) {
    for (;;) {
        int index = atomic_load(&g_current);
        if (index < 0) return NULL;
        atomic_store(&g_pinned, index);
        if (atomic_load(&g_current) == index) return &g_tables[index];
    }
}

void csc_images_unpin(void) { atomic_store(&g_pinned, -1); }

int csc_image_index(const csc_image_table *table, uintptr_t address) {
    if (table == NULL) return -1;
    for (int i = 0; i < table->count; i++)
        if (address >= table->images[i].low && address < table->images[i].high) return i;
    return -1;
}

bool csc_address_is_code(const csc_image_table *table, uintptr_t address) {
    int index = csc_image_index(table, address);
    if (index < 0) return false;
    const csc_image *image = &table->images[index];
    return !image->executable_known || (address >= image->exec_low && address < image->exec_high);
}

#if defined(__linux__)
/** Appends `in` whole to the table's path bytes and points the image at it; an empty path when
 *  it does not fit (a cut path would name another file). Offset 0 always holds "". */
static void csc_store_path(csc_image_table *table, csc_image *image, const char *in) {
    image->path_offset = 0;
    size_t length = in ? strlen(in) : 0;
    if (length == 0 || table->paths_used + length + 1 > sizeof table->paths) return;
    memcpy(table->paths + table->paths_used, in, length + 1);
    image->path_offset = table->paths_used;
    table->paths_used += (uint32_t)(length + 1);
}

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

/* The main program's path (the loader gives it no name), read once; guarded by g_refresh_lock. */
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
        csc_store_path(table, image, info->dlpi_name);
    } else {
        if (g_program_path[0] == 0) {
            ssize_t n = readlink("/proc/self/exe", g_program_path, CSC_PATH_MAX - 1);
            g_program_path[n > 0 ? n : 0] = 0;
        }
        csc_store_path(table, image, g_program_path);
    }
    csc_read_code_range(info, image);
    csc_read_build_id(info, image);
    return 0;
}
#endif

void csc_refresh_images(void) {
    pthread_mutex_lock(&g_refresh_lock);
    int current = atomic_load(&g_current);
    int next = current == 0 ? 1 : 0;
    if (atomic_load(&g_pinned) == next) { /* a crash handler is reading it */
        pthread_mutex_unlock(&g_refresh_lock);
        return;
    }
    csc_image_table *table = &g_tables[next];
    table->count = 0;
    table->paths[0] = 0;
    table->paths_used = 1;
#if defined(__linux__)
    dl_iterate_phdr(csc_collect, table);
#endif
    atomic_store(&g_current, next);
    pthread_mutex_unlock(&g_refresh_lock);
}

/* Fault-free reads (csc_safe_read) live in csc_memory_linux.c / csc_memory_darwin.c. */

bool csc_loaded_image(const char *path, uintptr_t *bias, char *build_id_hex, size_t capacity) {
    static const char hex[] = "0123456789abcdef";
    csc_refresh_images();
    const csc_image_table *table = csc_images_current();
    for (int i = 0; table && i < table->count; i++) {
        const csc_image *image = &table->images[i];
        if (strcmp(csc_image_path(table, image), path) != 0) continue;
        *bias = image->bias;
        if (capacity > 0) {
            size_t n = 0;
            for (int b = 0; b < image->build_id_length && n + 2 < capacity; b++) {
                build_id_hex[n++] = hex[image->build_id[b] >> 4];
                build_id_hex[n++] = hex[image->build_id[b] & 15];
            }
            build_id_hex[n] = 0;
        }
        return true;
    }
    return false;
}

bool csc_symbol_name(uintptr_t address, char *name, size_t capacity) {
    Dl_info info;
    if (capacity == 0 || !dladdr((const void *)address, &info) || info.dli_sname == NULL) return false;
    size_t i = 0;
    for (; info.dli_sname[i] && i + 1 < capacity; i++) name[i] = info.dli_sname[i];
    name[i] = 0;
    return true;
}
