/*
 * cs_macho.h — what the image lists need from a loaded Mach-O image (its __TEXT range, the span
 * of its executable segments, its LC_UUID), read from the load commands that follow the header
 * in memory. Platform-neutral C over byte offsets, so Linux tests can feed it hand-built images;
 * on Apple, cs_macho.c checks every offset and constant against <mach-o/loader.h>.
 *
 * Async-signal-safe: reads only the bytes it is given, allocates nothing, calls nothing.
 */
#ifndef CS_MACHO_H
#define CS_MACHO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    /** The "__TEXT" segment, slide applied: where the header is mapped and how far the image's
     *  code reaches. In the dyld shared cache an image's segments are not contiguous (__LINKEDIT
     *  is shared by all), so this, not the span of all segments, is the image's address range. */
    uintptr_t text_low, text_high;
    bool has_text;
    /** Span of the segments mapped executable (VM_PROT_EXECUTE in initprot), slide applied. */
    uintptr_t exec_low, exec_high;
    bool has_exec;
    /** LC_UUID: the image's identity (Sentry's Mach-O debug_id, dSYM lookup). */
    uint8_t uuid[16];
    bool has_uuid;
    /** The header's vmaddr: __TEXT's vmaddr (file addresses = runtime addresses - slide). */
    uint64_t text_vmaddr;
} cs_macho_layout;

/** Reads the layout of the Mach-O image whose header is at `header` and whose segments were
 *  moved by `slide` (dyld's vmaddr_slide). `readable` bounds how many bytes from `header` may be
 *  read (SIZE_MAX: trust the header's sizeofcmds, as for an image dyld mapped). Accepts the
 *  native-endian 64-bit (MH_MAGIC_64, LC_SEGMENT_64) and 32-bit (MH_MAGIC, LC_SEGMENT: arm64_32)
 *  forms; a load command whose size is below its structure or runs past sizeofcmds ends the walk
 *  (what was read before it stays). False when the header is not one of those or has no __TEXT. */
bool cs_macho_read_layout(const void *header, size_t readable, intptr_t slide, cs_macho_layout *layout);

#ifdef __cplusplus
}
#endif
#endif
