/*
 * cs_image_paths.h — Apple's "is this a system image" rule, decided by the image's path alone
 * (never by a class or symbol name). Platform-neutral C, so Linux tests check the rule with
 * device, Mac and simulator paths; cs_images_dyld.c applies it on Apple.
 */
#ifndef CS_IMAGE_PATHS_H
#define CS_IMAGE_PATHS_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/** True when `path` lies under `<runtime_root>/System/` or `<runtime_root>/usr/lib/`. The root is
 *  "" on a device or a Mac; in the simulator it is the simulator runtime's root, under which the
 *  simulated OS keeps its own /System and /usr/lib. NULL or "" paths are never system images. */
bool cs_apple_path_is_system(const char *path, const char *runtime_root);

/** The runtime root implied by the path of the loaded libSystem ("<root>/usr/lib/libSystem.B.dylib"):
 *  copies "<root>" (possibly "") into `root`. False, writing "", when the path does not end in
 *  "/usr/lib/libSystem.B.dylib" or the root does not fit. */
bool cs_apple_runtime_root(const char *libsystem_path, char *root, size_t capacity);

#ifdef __cplusplus
}
#endif
#endif
