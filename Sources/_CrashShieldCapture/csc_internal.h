/*
 * csc_internal.h — shared by the capture sources. Everything declared here that the handler
 * calls follows the rules at the top of csc_capture.h.
 */
#ifndef CSC_INTERNAL_H
#define CSC_INTERNAL_H
#include "csc_capture.h"
#include "cs_debug_id.h"
#include "csc_writer.h"

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <limits.h>
#include <sys/types.h>

/* Apple: an app loads several hundred images (most from the dyld shared cache). */
#if defined(__APPLE__)
#define CSC_MAX_IMAGES 2048
#else
#define CSC_MAX_IMAGES 512
#endif
/** Longest path kept whole (the executable, the report directory, one image): the platform's
 *  limit, so a frame in an image under a long path can still be symbolicated. */
#define CSC_PATH_MAX PATH_MAX
/** Bytes for all image paths of one table (NUL-terminated, back to back). Untouched pages of
 *  these static tables cost no memory; a table whose paths do not fit leaves the rest empty
 *  (never cut) — 1 KiB per image on average at the image limit. */
#define CSC_IMAGE_PATH_BYTES (CSC_MAX_IMAGES * 1024)
#define CSC_BUILD_ID_MAX 32

typedef struct {
    uintptr_t bias;     /**< load bias (ELF dlpi_addr, Mach-O vmaddr slide): file virtual address = address - bias */
    uintptr_t low;      /**< lowest mapped address of the image (Mach-O: of its __TEXT segment) */
    uintptr_t high;     /**< one past the highest mapped address (Mach-O: of its __TEXT segment) */
    uint8_t build_id[CSC_BUILD_ID_MAX]; /**< ELF: GNU build id; Mach-O: the 16 LC_UUID bytes */
    uint8_t build_id_length;
    bool executable_known;  /**< exec_low/exec_high were read from the program headers / load commands */
    uintptr_t exec_low;     /**< span of the executable segments (PF_X / VM_PROT_EXECUTE) */
    uintptr_t exec_high;
    uint32_t path_offset;   /**< into the table's `paths`: the whole path, or "" */
} csc_image;

typedef struct {
    int count;
    uint32_t paths_used;
    csc_image images[CSC_MAX_IMAGES];
    char paths[CSC_IMAGE_PATH_BYTES];
} csc_image_table;

/** The image's debug id as Sentry expects it (36 characters: Mach-O, its LC_UUID; ELF, derived
 *  from its GNU build id); false, writing "", when it has none. Async-signal-safe. Defined per
 *  loader (csc_images_elf.c, csc_images_dyld.c). */
bool csc_image_debug_id(const csc_image *image, char text[CS_DEBUG_ID_TEXT_SIZE]);

/** The image's path (never NULL). Async-signal-safe. */
static inline const char *csc_image_path(const csc_image_table *table, const csc_image *image) {
    return table->paths + image->path_offset;
}

/** The table the handler reads: frozen, replaced only by swapping which of two tables is current. */
const csc_image_table *csc_images_current(void);
/** The current table, pinned: refreshes leave it alone until csc_images_unpin(). For the crash
 *  handler (one pin at a time). Async-signal-safe. */
const csc_image_table *csc_images_pin(void);
void csc_images_unpin(void);
/** Index of the image containing `address` in `table`, or -1. Async-signal-safe. */
int csc_image_index(const csc_image_table *table, uintptr_t address);
/** True when `address` lies in an executable segment of an image of `table` (code that has
 *  unwind tables or at least is code). Async-signal-safe. */
bool csc_address_is_code(const csc_image_table *table, uintptr_t address);

/** Reads `length` bytes at `address` without faulting. Async-signal-safe. */
/** The name of a POSIX fault code (SEGV_MAPERR, ILL_ILLOPC, ...; "<SIG>_OTHER" when unknown);
 *  shared by the platforms' csc_code_name (csc_capture.c). Async-signal-safe. */
const char *csc_fault_code_name(int sig, int code);
bool csc_safe_read(uintptr_t address, void *out, size_t length);
void csc_safe_read_prepare(void);
/** Copies the NUL-terminated text at `address` into `text` (cut to `capacity` - 1 bytes, always
 *  terminated) with fault-free reads that never cross a 4 KiB boundary past the text. False when
 *  nothing could be read. Async-signal-safe. */
bool csc_safe_copy_string(uintptr_t address, char *text, size_t capacity);

/* ---- async-signal-safe JSON writer: csc_writer.h ---------------------------------------- */

#endif
