/*
 * cs_image_paths.c — see cs_image_paths.h. Compiled on every platform (freestanding C only).
 */
#include "cs_image_paths.h"

static size_t cs_length(const char *text) {
    size_t n = 0;
    while (text[n]) n++;
    return n;
}

/* `path` starts with `root` immediately followed by `directory`. */
static bool cs_under(const char *path, const char *root, const char *directory) {
    size_t i = 0;
    for (; root[i]; i++)
        if (path[i] != root[i]) return false;
    for (size_t j = 0; directory[j]; j++)
        if (path[i + j] != directory[j]) return false;
    return true;
}

bool cs_apple_path_is_system(const char *path, const char *runtime_root) {
    if (path == NULL || path[0] == 0) return false;
    const char *root = runtime_root ? runtime_root : "";
    return cs_under(path, root, "/System/") || cs_under(path, root, "/usr/lib/");
}

bool cs_apple_runtime_root(const char *libsystem_path, char *root, size_t capacity) {
    static const char suffix[] = "/usr/lib/libSystem.B.dylib";
    const size_t suffix_length = sizeof suffix - 1;
    if (capacity > 0) root[0] = 0;
    if (libsystem_path == NULL || capacity == 0) return false;
    size_t length = cs_length(libsystem_path);
    if (length < suffix_length) return false;
    size_t root_length = length - suffix_length;
    for (size_t i = 0; i < suffix_length; i++)
        if (libsystem_path[root_length + i] != suffix[i]) return false;
    if (root_length + 1 > capacity) return false;
    for (size_t i = 0; i < root_length; i++) root[i] = libsystem_path[i];
    root[root_length] = 0;
    return true;
}
