/*
 * cs_images_elf.c — fills the image cache (cs_images.c) from an ELF loader's list
 * (dl_iterate_phdr) and classifies images by the directories a Linux system installs into.
 * Compiled only for ELF targets.
 */
#if defined(__ELF__)
#include "cs_images.h"

#include <dlfcn.h>
#include <link.h>
#include <string.h>
#include <unistd.h>

#include "cs_image_range.h"

/* Both read once, at the first collect (under the cache's write lock), then only read. */
static char g_main_path[1024];
static char g_swift_runtime_dir[512];
static bool g_paths_read;

static bool cs_path_has_prefix(const char *path, const char *prefix) {
    return strncmp(path, prefix, strlen(prefix)) == 0;
}

static bool cs_path_is_system(const char *path) {
    static const char *const prefixes[] = {"/lib/", "/lib64/", "/usr/lib/", "/usr/lib64/", "/usr/local/lib/",
                                           "/usr/libexec/", "/System/", "linux-vdso", "linux-gate"};
    if (path == NULL || path[0] == 0) return false; /* the main executable */
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (cs_path_has_prefix(path, prefixes[i])) return true;
    /* The Swift runtime may live outside /usr (a toolchain directory): classify by its folder. */
    return g_swift_runtime_dir[0] && cs_path_has_prefix(path, g_swift_runtime_dir);
}

typedef struct {
    uintptr_t address;
    char path[sizeof g_swift_runtime_dir];
} cs_image_of_address;

/* Finds the path of the loaded object whose load range holds `address` (dladdr would also look
 * for the nearest symbol, a scan of the whole symbol table: ~0.5M instructions in the Swift
 * runtime). */
static int cs_find_image_of_address(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    cs_image_of_address *query = data;
    uintptr_t base, end;
    if (!cs_image_load_range(info, &base, &end) || query->address < base || query->address >= end) return 0;
    const char *name = info->dlpi_name ? info->dlpi_name : "";
    size_t length = strlen(name);
    if (length < sizeof query->path) memcpy(query->path, name, length + 1);
    return 1;
}

static void cs_read_paths(void) {
    ssize_t n = readlink("/proc/self/exe", g_main_path, sizeof g_main_path - 1);
    g_main_path[n > 0 ? n : 0] = 0;
    cs_image_of_address query = {(uintptr_t)dlsym(RTLD_DEFAULT, "swift_retain"), {0}};
    if (query.address != 0) dl_iterate_phdr(cs_find_image_of_address, &query);
    /* The main executable has no name in the loader's list: the runtime is then linked into it. */
    if (query.path[0] != 0 && strcmp(query.path, g_main_path) != 0) {
        const char *slash = strrchr(query.path, '/');
        size_t length = slash ? (size_t)(slash - query.path + 1) : 0;
        if (length > 0 && length < sizeof g_swift_runtime_dir) {
            memcpy(g_swift_runtime_dir, query.path, length);
            g_swift_runtime_dir[length] = 0;
        }
    }
}

static int cs_collect_image(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    cs_image_sink sink = (cs_image_sink)data;
    cs_image_info image;
    if (!cs_image_load_range(info, &image.base, &image.end)) return 0;
    const char *name = info->dlpi_name;
    if (name == NULL || name[0] == 0) name = g_main_path; /* the loader gives the program no name */
    image.name = name;
    image.is_system = name != g_main_path && cs_path_is_system(name);
    return sink(&image) ? 0 : 1;
}

void cs_images_platform_start(void) {}

void cs_images_platform_collect(cs_image_sink sink) {
    if (!g_paths_read) {
        cs_read_paths();
        g_paths_read = true;
    }
    dl_iterate_phdr(cs_collect_image, (void *)sink);
}
#endif
