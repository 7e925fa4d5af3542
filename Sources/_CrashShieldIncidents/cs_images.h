/*
 * cs_images.h — a cached list of the loaded images, so that classifying a return address as
 * "system" or "app" costs a range check instead of a dladdr() call. Internal to this target.
 */
#ifndef CS_IMAGES_H
#define CS_IMAGES_H
#include <stdbool.h>
#include <stdint.h>

typedef struct {
    uintptr_t base;     /**< load address (start of the lowest segment) */
    uintptr_t end;      /**< one past the highest mapped executable byte */
    const char *name;   /**< path as the loader reports it; stable while the image stays loaded */
    bool is_system;     /**< shipped by the system: libc, libobjc, Foundation, the Swift runtime */
} cs_image_info;

/** Rebuilds the cache from the loader's list. Safe to call at any time (not from a signal handler). */
void cs_images_refresh(void);

/** Finds the image containing `address`; refreshes the cache once when nothing matches. */
bool cs_images_lookup(uintptr_t address, cs_image_info *out);
#endif
