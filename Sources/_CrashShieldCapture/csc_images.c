/*
 * csc_images.c — the image list the handler writes into a report (path, load bias, address
 * range, build id), shared by every platform: two frozen tables, pinned by a crash handler,
 * refilled at install and when images are added. What fills them is per loader
 * (csc_images_platform.h); reading memory without faulting is per kernel (csc_memory_*.c).
 *
 * The handler's rule: it reads only a published table, through csc_images_pin(), and never the
 * loader's own structures; no lock is taken on that path, and nothing it reads is written while
 * it holds the pin.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "csc_internal.h"
#include "csc_images_platform.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

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

void csc_image_table_store_path(csc_image_table *table, csc_image *image, const char *in) {
    image->path_offset = 0;
    size_t length = in ? strlen(in) : 0;
    if (length == 0 || table->paths_used + length + 1 > sizeof table->paths) return;
    memcpy(table->paths + table->paths_used, in, length + 1);
    image->path_offset = table->paths_used;
    table->paths_used += (uint32_t)(length + 1);
}

void csc_images_rebuild(void) {
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
    csc_images_platform_collect(table);
    atomic_store(&g_current, next);
    pthread_mutex_unlock(&g_refresh_lock);
}

void csc_refresh_images(void) {
    csc_images_platform_start();
    csc_images_rebuild();
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

#if defined(CSC_TEST_SEAMS)
int csc_test_image_pin(void) {
    csc_refresh_images();
    const csc_image_table *pinned = csc_images_pin();
    if (pinned == NULL || pinned != csc_images_current()) return 1;
    csc_refresh_images(); /* fills and publishes the other table */
    if (csc_images_current() == pinned) return 2;
    csc_refresh_images(); /* would refill the pinned table: skipped */
    if (csc_images_current() == pinned) return 3;
    csc_images_unpin();
    csc_refresh_images();
    if (csc_images_current() != pinned) return 4;
    return 0;
}
#endif
