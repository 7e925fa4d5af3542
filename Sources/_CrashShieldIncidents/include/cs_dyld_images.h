/*
 * cs_dyld_images.h — Apple only: one registry of the images dyld has loaded, filled by dyld's
 * add/remove-image callbacks and shared by the incident pipeline's image cache
 * (cs_images_dyld.c) and the crash report's image tables (_CrashShieldCapture/csc_images_dyld.c).
 * Nothing is declared on other platforms.
 *
 * Why a registry instead of dyld's index API (_dyld_image_count / _dyld_get_image_header):
 * <mach-o/dyld.h> calls iterating that API "not a thread safe operation" (an image unloaded on
 * another thread mid-walk leaves a header that is about to be unmapped), and every dyld call may
 * wait for dyld's lock, which a thread inside dlopen holds while its initializers (+load, C++
 * constructors) run and can reach our code. The registry is our own memory: readers hold only
 * its mutex and make no dyld call under it, so no lock of ours ever waits for dyld's.
 */
#ifndef CS_DYLD_IMAGES_H
#define CS_DYLD_IMAGES_H

#if defined(__APPLE__)
#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct mach_header;

typedef struct {
    const struct mach_header *header; /**< where dyld mapped it (the start of its __TEXT) */
    intptr_t slide;                   /**< dyld's vmaddr_slide */
    const char *path;                 /**< the registry's copy ("" when unknown): valid for the process's life */
} cs_dyld_image;

/** Registers the callbacks with dyld, once. The first caller replays every loaded image into the
 *  registry before returning; a concurrent caller returns at once without waiting (waiting could
 *  deadlock against dyld's lock; see above) and learns of the images through its listener. Not
 *  async-signal-safe; call with no lock held. */
void cs_dyld_images_start(void);

/** Adds `on_change` (idempotent; at most 4 listeners): called after each image added or removed
 *  once registration is complete, and once when the registration's replay ends, on the thread
 *  that caused it, with no lock of the registry held. Returns false when the listeners are full. */
bool cs_dyld_images_listen(void (*on_change)(void));

/** Calls `visit` for each loaded image (removed ones are skipped), in load order, holding the
 *  registry's mutex: `visit` must not call dyld or take a lock that a dyld callback may hold. */
void cs_dyld_images_visit(void (*visit)(const cs_dyld_image *image, void *context), void *context);

#ifdef __cplusplus
}
#endif
#endif
#endif
