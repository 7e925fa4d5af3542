/*
 * cs_images_dyld.c — fills the image cache (cs_images.c) from dyld's list of loaded images and
 * classifies each by its path (cs_image_paths.h). Compiled only for Apple targets; written
 * against <mach-o/dyld.h> (apple-oss-distributions/dyld include/mach-o/dyld.h) and <dlfcn.h>,
 * and not compiled or run on the Linux build machines.
 *
 * dyld documents its index API as racing with loads and unloads on other threads ("This is not a
 * thread safe operation"), so an index past the end gives a NULL header or name, which is
 * skipped; an image that appears later is found by the refresh cs_images_lookup() does on a miss.
 */
#if defined(__APPLE__)
#include "cs_images.h"
#include "cs_image_paths.h"
#include "cs_macho.h"

#include <mach-o/dyld.h>
#include <stdlib.h>
#include <string.h>

/* Runtime roots: "" on a device or a Mac, the simulator runtime's root in the simulator (from
 * the loaded libSystem's path, and SIMULATOR_ROOT when the simulator sets it). Read at the first
 * collect, under the cache's write lock, then only read. */
static char g_runtime_root[1024];
static char g_simulator_root[1024];
static bool g_roots_read;

static void cs_read_runtime_roots(void) {
    uint32_t count = _dyld_image_count();
    for (uint32_t i = 0; i < count; i++) {
        const char *name = _dyld_get_image_name(i);
        if (name && cs_apple_runtime_root(name, g_runtime_root, sizeof g_runtime_root)) break;
    }
    const char *simulator = getenv("SIMULATOR_ROOT");
    size_t length = simulator ? strlen(simulator) : 0;
    while (length > 0 && simulator[length - 1] == '/') length--; /* the rule appends "/System/" */
    if (length > 0 && length < sizeof g_simulator_root) {
        memcpy(g_simulator_root, simulator, length);
        g_simulator_root[length] = 0;
    }
}

static bool cs_path_is_system(const char *path) {
    return cs_apple_path_is_system(path, g_runtime_root)
        || (g_simulator_root[0] && cs_apple_path_is_system(path, g_simulator_root));
}

void cs_images_platform_collect(cs_image_sink sink) {
    if (!g_roots_read) {
        cs_read_runtime_roots();
        g_roots_read = true;
    }
    uint32_t count = _dyld_image_count();
    for (uint32_t i = 0; i < count; i++) {
        const struct mach_header *header = _dyld_get_image_header(i);
        const char *name = _dyld_get_image_name(i);
        if (header == NULL || name == NULL) continue; /* unloaded during the walk */
        cs_macho_layout layout;
        if (!cs_macho_read_layout(header, SIZE_MAX, _dyld_get_image_vmaddr_slide(i), &layout)) continue;
        /* The header starts __TEXT; offsets from it are what symbolication of a Mach-O uses. */
        cs_image_info image = {
            .base = (uintptr_t)header,
            .end = layout.text_high,
            .name = name,
            .is_system = cs_path_is_system(name),
        };
        if (!sink(&image)) return;
    }
}
#endif
