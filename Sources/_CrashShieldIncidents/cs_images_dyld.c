/*
 * cs_images_dyld.c — fills the image cache (cs_images.c) on Apple platforms from the dyld
 * registry (cs_dyld_images.h) and classifies each image by its path (cs_image_paths.h): under
 * /System/ or /usr/lib/ of the runtime root, which in the simulator is the simulator runtime's
 * root (from the loaded libSystem's path, and SIMULATOR_ROOT when set). Compiled only for Apple
 * targets; not compiled or run on the Linux build machines.
 */
#if defined(__APPLE__)
#include "cs_images.h"
#include "cs_dyld_images.h"
#include "cs_image_paths.h"
#include "cs_macho.h"

#include <stdlib.h>
#include <string.h>

/* Runtime roots: "" on a device or a Mac, the simulator runtime's root in the simulator. Written
 * by the collect that first sees libSystem (under the cache's write lock), then only read. */
static char g_runtime_root[1024];
static char g_simulator_root[1024];
static bool g_runtime_root_known;
static bool g_simulator_root_read;

void cs_images_platform_start(void) {
    cs_dyld_images_start(); /* outside the cache's lock: registration calls into dyld */
}

static bool cs_path_is_system(const char *path) {
    return cs_apple_path_is_system(path, g_runtime_root)
        || (g_simulator_root[0] && cs_apple_path_is_system(path, g_simulator_root));
}

static void cs_read_simulator_root(void) {
    const char *simulator = getenv("SIMULATOR_ROOT");
    size_t length = simulator ? strlen(simulator) : 0;
    while (length > 0 && simulator[length - 1] == '/') length--; /* the rule appends "/System/" */
    if (length > 0 && length < sizeof g_simulator_root) {
        memcpy(g_simulator_root, simulator, length);
        g_simulator_root[length] = 0;
    }
}

static void cs_find_runtime_root(const cs_dyld_image *image, void *context) {
    (void)context;
    if (!g_runtime_root_known) g_runtime_root_known = cs_apple_runtime_root(image->path, g_runtime_root, sizeof g_runtime_root);
}

static void cs_collect_image(const cs_dyld_image *image, void *context) {
    cs_image_sink sink = (cs_image_sink)context;
    cs_macho_layout layout;
    if (!cs_macho_read_layout(image->header, SIZE_MAX, image->slide, &layout)) return;
    /* The header starts __TEXT; offsets from it are what symbolication of a Mach-O uses. */
    cs_image_info info = {
        .base = (uintptr_t)image->header,
        .end = layout.text_high,
        .name = image->path,
        .is_system = cs_path_is_system(image->path),
    };
    (void)sink(&info); /* a full cache keeps the images it has */
}

void cs_images_platform_collect(cs_image_sink sink) {
    if (!g_simulator_root_read) {
        cs_read_simulator_root();
        g_simulator_root_read = true;
    }
    if (!g_runtime_root_known) cs_dyld_images_visit(cs_find_runtime_root, NULL);
    cs_dyld_images_visit(cs_collect_image, (void *)sink);
}
#endif
