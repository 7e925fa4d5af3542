/*
 * cs_debug_id.c — see cs_debug_id.h. Compiled on every platform (freestanding C only).
 *
 * Sentry's rules (docs.sentry.io "Debug Identifiers"; Relay's NativeDebugImage examples pair
 * code_id 68220ae2c65d65c1b6aaa12fa6765a6ec2f5f434 with debug_id
 * e20a2268-5dc6-c165-b6aa-a12fa6765a6e): a Mach-O debug id is its UUID as is; an ELF one is a
 * lossy transformation of the build id, read as a GUID in the object's byte order.
 */
#include "cs_debug_id.h"

static void cs_debug_id_format(const uint8_t bytes[16], char text[CS_DEBUG_ID_TEXT_SIZE]) {
    static const char digits[] = "0123456789abcdef";
    unsigned at = 0;
    for (unsigned i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10) text[at++] = '-';
        text[at++] = digits[bytes[i] >> 4];
        text[at++] = digits[bytes[i] & 15];
    }
    text[at] = 0;
}

void cs_debug_id_from_uuid(const uint8_t uuid[16], char text[CS_DEBUG_ID_TEXT_SIZE]) {
    cs_debug_id_format(uuid, text);
}

static void cs_reverse(uint8_t *bytes, unsigned count) {
    for (unsigned i = 0; i < count / 2; i++) {
        uint8_t swap = bytes[i];
        bytes[i] = bytes[count - 1 - i];
        bytes[count - 1 - i] = swap;
    }
}

bool cs_debug_id_from_elf_build_id(const uint8_t *build_id, size_t length, char text[CS_DEBUG_ID_TEXT_SIZE]) {
    text[0] = 0;
    if (build_id == NULL || length == 0) return false;
    uint8_t guid[16] = {0};
    for (size_t i = 0; i < length && i < 16; i++) guid[i] = build_id[i];
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    cs_reverse(guid, 4);
    cs_reverse(guid + 4, 2);
    cs_reverse(guid + 6, 2);
#else
    (void)cs_reverse;
#endif
    cs_debug_id_format(guid, text);
    return true;
}
