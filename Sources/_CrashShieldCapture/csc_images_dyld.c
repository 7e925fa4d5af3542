/*
 * csc_images_dyld.c — fills the report's image tables (csc_images.c) on Apple platforms from
 * dyld: the images dyld reports through _dyld_register_func_for_add_image (every image already
 * loaded, during the registration at install; then each image as it is added) and
 * _dyld_register_func_for_remove_image, with each image's __TEXT range, executable span and
 * LC_UUID read from its load commands (cs_macho.h). Written against <mach-o/dyld.h>
 * (apple-oss-distributions/dyld include/mach-o/dyld.h) and <dlfcn.h>; compiled only there, and
 * not compiled or run on the Linux build machines.
 *
 * Three layers, so the crash handler never meets dyld or a lock:
 *   dyld callbacks -> the registry below (header, slide, path copy; its own mutex, held for
 *   memory copies only) -> a rebuild of the non-current report table under the refresh lock ->
 *   published table, which the handler pins and reads (csc_images.c states that rule).
 * The only dyld call, dladdr() for an image's path, is made in the add callback before any lock
 * of ours is taken: a rebuild (under the refresh lock) must never wait for dyld's lock, which a
 * thread inside dlopen holds while its callback waits for the refresh lock.
 */
#if defined(__APPLE__)
#include "csc_internal.h"
#include "csc_images_platform.h"

#include <dlfcn.h>
#include <mach-o/dyld.h>
#include <pthread.h>
#include <string.h>

#include "cs_macho.h"

/* Registry slots: one per add callback (an image loaded again takes a new slot), preallocated;
 * untouched pages of these static arrays cost no memory. Past the limit an image is not listed. */
#define CSC_DYLD_SLOTS 4096
#define CSC_DYLD_PATH_BYTES (CSC_DYLD_SLOTS * 256)

typedef struct {
    const struct mach_header *header;
    intptr_t slide;
    uint32_t path_offset; /* into g_registry.paths; 0 is "" */
    bool removed;         /* after its remove callback: its memory may be unmapped, never read */
} csc_dyld_entry;

static struct {
    pthread_mutex_t lock;
    uint32_t count;
    uint32_t paths_used;
    csc_dyld_entry entries[CSC_DYLD_SLOTS];
    char paths[CSC_DYLD_PATH_BYTES];
} g_registry = {.lock = PTHREAD_MUTEX_INITIALIZER, .paths_used = 1};

/* True on the installing thread while _dyld_register_func_for_add_image replays the loaded
 * images: those only fill the registry, and one rebuild follows (not one per image). */
static _Thread_local bool t_registering;
static pthread_once_t g_register_once = PTHREAD_ONCE_INIT;

static void csc_dyld_added(const struct mach_header *header, intptr_t slide) {
    Dl_info info;
    const char *path = dladdr(header, &info) && info.dli_fname ? info.dli_fname : "";
    size_t length = strlen(path);
    pthread_mutex_lock(&g_registry.lock);
    if (g_registry.count < CSC_DYLD_SLOTS) {
        csc_dyld_entry *entry = &g_registry.entries[g_registry.count++];
        entry->header = header;
        entry->slide = slide;
        entry->removed = false;
        entry->path_offset = 0;
        if (length > 0 && g_registry.paths_used + length + 1 <= sizeof g_registry.paths) {
            memcpy(g_registry.paths + g_registry.paths_used, path, length + 1);
            entry->path_offset = g_registry.paths_used;
            g_registry.paths_used += (uint32_t)(length + 1);
        }
    }
    pthread_mutex_unlock(&g_registry.lock);
    if (!t_registering) csc_images_rebuild();
}

static void csc_dyld_removed(const struct mach_header *header, intptr_t slide) {
    (void)slide;
    pthread_mutex_lock(&g_registry.lock);
    for (uint32_t i = 0; i < g_registry.count; i++)
        if (g_registry.entries[i].header == header) g_registry.entries[i].removed = true;
    pthread_mutex_unlock(&g_registry.lock);
    /* dyld calls this before unmapping the image: after the rebuild no published table names
     * it, though a table pinned by a crash handler still may (it lists, never reads, images). */
    csc_images_rebuild();
}

static void csc_dyld_register(void) {
    t_registering = true;
    _dyld_register_func_for_add_image(csc_dyld_added);
    t_registering = false;
    _dyld_register_func_for_remove_image(csc_dyld_removed);
}

void csc_images_platform_start(void) {
    pthread_once(&g_register_once, csc_dyld_register);
}

void csc_images_platform_collect(csc_image_table *table) {
    pthread_mutex_lock(&g_registry.lock);
    for (uint32_t i = 0; i < g_registry.count && table->count < CSC_MAX_IMAGES; i++) {
        const csc_dyld_entry *entry = &g_registry.entries[i];
        if (entry->removed) continue;
        cs_macho_layout layout;
        if (!cs_macho_read_layout(entry->header, SIZE_MAX, entry->slide, &layout)) continue;
        csc_image *image = &table->images[table->count++];
        image->bias = (uintptr_t)entry->slide;
        image->low = layout.text_low;
        image->high = layout.text_high;
        image->executable_known = layout.has_exec;
        image->exec_low = layout.exec_low;
        image->exec_high = layout.exec_high;
        image->build_id_length = 0;
        if (layout.has_uuid) {
            memcpy(image->build_id, layout.uuid, sizeof layout.uuid);
            image->build_id_length = sizeof layout.uuid;
        }
        csc_image_table_store_path(table, image, g_registry.paths + entry->path_offset);
    }
    pthread_mutex_unlock(&g_registry.lock);
}

bool csc_image_debug_id(const csc_image *image, char text[CS_DEBUG_ID_TEXT_SIZE]) {
    if (image->build_id_length != 16) {
        text[0] = 0;
        return false;
    }
    cs_debug_id_from_uuid(image->build_id, text);
    return true;
}
#endif
