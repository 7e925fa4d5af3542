/*
 * cs_debug_id.h — an image's debug identifier as Sentry (and Breakpad) expect it: 36 characters,
 * lowercase hex in 8-4-4-4-12 groups. Platform-neutral and async-signal-safe (no allocation, no
 * calls), so a crash handler can format it while writing a report.
 */
#ifndef CS_DEBUG_ID_H
#define CS_DEBUG_ID_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Characters of a debug id plus its NUL. */
#define CS_DEBUG_ID_TEXT_SIZE 37

/** Mach-O: the LC_UUID bytes in their stored order, hyphenated ("84a04d24-0e60-3810-..."). */
void cs_debug_id_from_uuid(const uint8_t uuid[16], char text[CS_DEBUG_ID_TEXT_SIZE]);

/** ELF: the GNU build id cut or zero-padded to 16 bytes and read as a GUID stored in the target's
 *  byte order, so on a little-endian target the first three fields (4, 2 and 2 bytes) are
 *  reversed (build id 68220ae2c65d65c1b6aaa12f... gives e20a2268-5dc6-c165-b6aa-a12f...). False,
 *  writing "", when there is no build id. */
bool cs_debug_id_from_elf_build_id(const uint8_t *build_id, size_t length, char text[CS_DEBUG_ID_TEXT_SIZE]);

#ifdef __cplusplus
}
#endif
#endif
