/*
 * csc_images_dyld.c — fills the report's image tables (csc_images.c) on Apple platforms from
 * the dyld registry (_CrashShieldIncidents' cs_dyld_images.h: every image dyld reports through
 * its add-image callback, from the registration at install on, minus the removed ones), reading
 * each image's __TEXT range, executable span and LC_UUID from its load commands (cs_macho.h).
 * Compiled only for Apple targets; not compiled or run on the Linux build machines.
 *
 * Three layers, so the crash handler never meets dyld or a lock: dyld callbacks fill the
 * registry (its own mutex) and notify csc_images_rebuild, which fills the non-current table under
 * the refresh lock from the registry alone (no dyld call: a thread inside dlopen holds dyld's lock
 * while its callback waits for the refresh lock) and publishes it; the handler pins the published
 * table and reads only it (csc_images.c states that rule).
 */
#if defined(__APPLE__)
#include "csc_internal.h"
#include "csc_images_platform.h"

#include <string.h>

#include "cs_dyld_images.h"
#include "cs_macho.h"

void csc_images_platform_start(void) {
    cs_dyld_images_listen(csc_images_rebuild); /* each added or removed image rebuilds the table */
    cs_dyld_images_start();
}

static void csc_collect_image(const cs_dyld_image *entry, void *context) {
    csc_image_table *table = context;
    if (table->count >= CSC_MAX_IMAGES) return;
    cs_macho_layout layout;
    if (!cs_macho_read_layout(entry->header, SIZE_MAX, entry->slide, &layout)) return;
    csc_image *image = &table->images[table->count++];
    image->bias = (uintptr_t)entry->slide; /* file vmaddr = address - slide */
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
    csc_image_table_store_path(table, image, entry->path);
}

void csc_images_platform_collect(csc_image_table *table) {
    cs_dyld_images_visit(csc_collect_image, table);
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
