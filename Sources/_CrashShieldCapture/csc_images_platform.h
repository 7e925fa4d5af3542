/*
 * csc_images_platform.h — between the shared image tables (csc_images.c) and the one file per
 * loader that fills them: csc_images_elf.c (dl_iterate_phdr, ELF build ids; ELF targets) and
 * csc_images_dyld.c (dyld callbacks, Mach-O LC_UUID; Apple). Internal to this target.
 */
#ifndef CSC_IMAGES_PLATFORM_H
#define CSC_IMAGES_PLATFORM_H
#include "csc_internal.h"

/** Prepares the loader side before the first collect; idempotent, cheap after the first call.
 *  Called outside every lock of csc_images.c (Apple: registers with dyld, whose callbacks may run
 *  on other threads at once and end in csc_images_rebuild). */
void csc_images_platform_start(void);

/** Appends every loaded image to `table` (count and path bytes already reset). Called under the
 *  refresh lock. On Apple it must not call dyld (dladdr included): a thread inside dlopen holds
 *  dyld's lock while its add-image callback waits for the refresh lock. (dl_iterate_phdr calls
 *  nothing of ours back, so the ELF walk may run under it.) */
void csc_images_platform_collect(csc_image_table *table);

/** Rebuilds the table that is not current and publishes it (csc_refresh_images without the
 *  platform start): what a loader callback calls. */
void csc_images_rebuild(void);

/** Appends `path` whole to the table's path bytes and points the image at it; an empty path when
 *  it does not fit (a cut path would name another file). Offset 0 always holds "". */
void csc_image_table_store_path(csc_image_table *table, csc_image *image, const char *path);
#endif
