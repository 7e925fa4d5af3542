/*
 * cs_images.c — see cs_images.h. Linux uses dl_iterate_phdr(); Apple falls back to dladdr()
 * (not verified on the Linux build machines).
 */
#include "cs_images.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__linux__)
#include <link.h>

#include "cs_image_range.h"

#define CS_MAX_IMAGES 512

static cs_image_info g_images[CS_MAX_IMAGES];
static char g_main_path[1024];
static int g_image_count;
static char g_swift_runtime_dir[512];
static pthread_rwlock_t g_images_lock = PTHREAD_RWLOCK_INITIALIZER;

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

static int cs_collect_image(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    (void)data;
    if (g_image_count >= CS_MAX_IMAGES) return 1;
    uintptr_t low, high;
    if (!cs_image_load_range(info, &low, &high)) return 0;
    const char *name = info->dlpi_name;
    if (name == NULL || name[0] == 0) name = g_main_path;
    cs_image_info *image = &g_images[g_image_count++];
    image->base = low;
    image->end = high;
    image->name = name;
    image->is_system = name != g_main_path && cs_path_is_system(name);
    return 0;
}

void cs_images_refresh(void) {
    pthread_rwlock_wrlock(&g_images_lock);
    if (g_main_path[0] == 0) {
        ssize_t n = readlink("/proc/self/exe", g_main_path, sizeof g_main_path - 1);
        g_main_path[n > 0 ? n : 0] = 0;
        void *swift_retain = dlsym(RTLD_DEFAULT, "swift_retain");
        Dl_info info;
        if (swift_retain && dladdr(swift_retain, &info) && info.dli_fname && strcmp(info.dli_fname, g_main_path) != 0) {
            const char *slash = strrchr(info.dli_fname, '/');
            size_t length = slash ? (size_t)(slash - info.dli_fname + 1) : 0;
            if (length > 0 && length < sizeof g_swift_runtime_dir) {
                memcpy(g_swift_runtime_dir, info.dli_fname, length);
                g_swift_runtime_dir[length] = 0;
            }
        }
    }
    g_image_count = 0;
    dl_iterate_phdr(cs_collect_image, NULL);
    pthread_rwlock_unlock(&g_images_lock);
}

static bool cs_images_find(uintptr_t address, cs_image_info *out) {
    bool found = false;
    pthread_rwlock_rdlock(&g_images_lock);
    for (int i = 0; i < g_image_count; i++) {
        if (address >= g_images[i].base && address < g_images[i].end) {
            *out = g_images[i];
            found = true;
            break;
        }
    }
    pthread_rwlock_unlock(&g_images_lock);
    return found;
}

bool cs_images_lookup(uintptr_t address, cs_image_info *out) {
    if (cs_images_find(address, out)) return true;
    cs_images_refresh(); /* an image loaded after the last refresh */
    return cs_images_find(address, out);
}

#else /* Apple and others: dladdr per lookup. */

void cs_images_refresh(void) {}

bool cs_images_lookup(uintptr_t address, cs_image_info *out) {
    Dl_info info;
    if (!dladdr((const void *)address, &info) || info.dli_fname == NULL) return false;
    out->base = (uintptr_t)info.dli_fbase;
    out->end = address + 1;
    out->name = info.dli_fname;
    out->is_system = strncmp(info.dli_fname, "/System/", 8) == 0 || strncmp(info.dli_fname, "/usr/lib/", 9) == 0;
    return true;
}
#endif
