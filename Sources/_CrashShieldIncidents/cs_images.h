/*
 * cs_images.h — a cached list of the loaded images, so that classifying a return address as
 * "system" or "app" costs a range check instead of a dladdr() call. Internal to this target.
 *
 * cs_images.c holds the cache (shared); one file per loader fills it: cs_images_elf.c
 * (dl_iterate_phdr, Linux) and cs_images_dyld.c (dyld, Apple), each compiled only there.
 */
#ifndef CS_IMAGES_H
#define CS_IMAGES_H
#include <stdbool.h>
#include <stdint.h>

typedef struct {
    uintptr_t base;     /**< load address: lowest segment (ELF), the Mach-O header (Apple) */
    uintptr_t end;      /**< one past the image's highest byte (ELF) / its __TEXT segment (Apple) */
    const char *name;   /**< path as the loader reports it; stable while the image stays loaded */
    bool is_system;     /**< shipped by the system: libc, libobjc, Foundation, the Swift runtime */
} cs_image_info;

/** Rebuilds the cache from the loader's list. Safe to call at any time (not from a signal handler). */
void cs_images_refresh(void);

/** Finds the image containing `address`; refreshes the cache once when nothing matches. */
bool cs_images_lookup(uintptr_t address, cs_image_info *out);

/* ---- per loader ---------------------------------------------------------------------------- */

/** Receives one image; false when the cache is full (the walk then stops). */
typedef bool (*cs_image_sink)(const cs_image_info *image);

/** Prepares the loader side before a collect (Apple: registers with dyld once, without waiting
 *  for another thread's registration). Called with no lock of the cache held. */
void cs_images_platform_start(void);

/** Reports every loaded image to `sink`, classifying each (is_system). Called under the cache's
 *  write lock, never from a signal handler. */
void cs_images_platform_collect(cs_image_sink sink);
#endif
