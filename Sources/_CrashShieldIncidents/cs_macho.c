/*
 * cs_macho.c — see cs_macho.h. Compiled on every platform (pure C, no system header beyond the
 * freestanding ones), so the Linux tests exercise it and clang can check it for Apple targets
 * without an SDK.
 *
 * Layouts and constants are those of <mach-o/loader.h> (apple-oss-distributions/cctools
 * include/mach-o/loader.h; the same file ships in the SDK and in xnu's EXTERNAL_HEADERS):
 *   struct mach_header        28 bytes: magic, cputype, cpusubtype, filetype, ncmds @16, sizeofcmds @20, flags
 *   struct mach_header_64     32 bytes: the same, then reserved
 *   struct load_command        8 bytes: cmd @0, cmdsize @4
 *   struct segment_command    56 bytes: segname[16] @8, vmaddr @24, vmsize @28 (uint32_t), ..., initprot @44
 *   struct segment_command_64 72 bytes: segname[16] @8, vmaddr @24, vmsize @32 (uint64_t), ..., initprot @60
 *   struct uuid_command       24 bytes: uuid[16] @8
 * and VM_PROT_EXECUTE from <mach/vm_prot.h>. On Apple the static assertions below compare every
 * one of them with the SDK's headers, so a wrong number cannot compile there (the SDK-less check
 * that scripts/check-apple-targets.sh runs on Linux has no such headers and skips them).
 */
#include "cs_macho.h"

#define CS_MH_MAGIC 0xfeedfaceu    /* MH_MAGIC: 32-bit header, native byte order */
#define CS_MH_MAGIC_64 0xfeedfacfu /* MH_MAGIC_64 */
#define CS_LC_SEGMENT 0x1u         /* LC_SEGMENT */
#define CS_LC_SEGMENT_64 0x19u     /* LC_SEGMENT_64 */
#define CS_LC_UUID 0x1bu           /* LC_UUID */
#define CS_VM_PROT_EXECUTE 0x4u    /* VM_PROT_EXECUTE */

#define CS_MACH_HEADER_SIZE 28u
#define CS_MACH_HEADER_64_SIZE 32u
#define CS_HEADER_NCMDS 16u
#define CS_HEADER_SIZEOFCMDS 20u
#define CS_SEGMENT_SIZE 56u
#define CS_SEGMENT_64_SIZE 72u
#define CS_SEGMENT_NAME 8u
#define CS_SEGMENT_VMADDR 24u
#define CS_SEGMENT_VMSIZE 28u
#define CS_SEGMENT_INITPROT 44u
#define CS_SEGMENT_64_VMSIZE 32u
#define CS_SEGMENT_64_INITPROT 60u
#define CS_UUID_COMMAND_SIZE 24u
#define CS_UUID_BYTES 8u

#if defined(__APPLE__) && __has_include(<mach-o/loader.h>) /* absent only in the SDK-less Linux check */
#include <mach-o/loader.h>
#include <mach/vm_prot.h>
_Static_assert(CS_MH_MAGIC == MH_MAGIC && CS_MH_MAGIC_64 == MH_MAGIC_64, "mach header magic");
_Static_assert(CS_LC_SEGMENT == LC_SEGMENT && CS_LC_SEGMENT_64 == LC_SEGMENT_64 && CS_LC_UUID == LC_UUID, "load command ids");
_Static_assert(CS_VM_PROT_EXECUTE == VM_PROT_EXECUTE, "VM_PROT_EXECUTE");
_Static_assert(CS_MACH_HEADER_SIZE == sizeof(struct mach_header), "mach_header size");
_Static_assert(CS_MACH_HEADER_64_SIZE == sizeof(struct mach_header_64), "mach_header_64 size");
_Static_assert(CS_HEADER_NCMDS == offsetof(struct mach_header_64, ncmds), "ncmds");
_Static_assert(CS_HEADER_SIZEOFCMDS == offsetof(struct mach_header_64, sizeofcmds), "sizeofcmds");
_Static_assert(CS_HEADER_NCMDS == offsetof(struct mach_header, ncmds), "ncmds (32)");
_Static_assert(CS_HEADER_SIZEOFCMDS == offsetof(struct mach_header, sizeofcmds), "sizeofcmds (32)");
_Static_assert(CS_SEGMENT_SIZE == sizeof(struct segment_command), "segment_command size");
_Static_assert(CS_SEGMENT_NAME == offsetof(struct segment_command, segname), "segname (32)");
_Static_assert(CS_SEGMENT_VMADDR == offsetof(struct segment_command, vmaddr), "vmaddr (32)");
_Static_assert(CS_SEGMENT_VMSIZE == offsetof(struct segment_command, vmsize), "vmsize (32)");
_Static_assert(CS_SEGMENT_INITPROT == offsetof(struct segment_command, initprot), "initprot (32)");
_Static_assert(CS_SEGMENT_64_SIZE == sizeof(struct segment_command_64), "segment_command_64 size");
_Static_assert(CS_SEGMENT_NAME == offsetof(struct segment_command_64, segname), "segname");
_Static_assert(CS_SEGMENT_VMADDR == offsetof(struct segment_command_64, vmaddr), "vmaddr");
_Static_assert(CS_SEGMENT_64_VMSIZE == offsetof(struct segment_command_64, vmsize), "vmsize");
_Static_assert(CS_SEGMENT_64_INITPROT == offsetof(struct segment_command_64, initprot), "initprot");
_Static_assert(CS_UUID_COMMAND_SIZE == sizeof(struct uuid_command), "uuid_command size");
_Static_assert(CS_UUID_BYTES == offsetof(struct uuid_command, uuid), "uuid offset");
#endif

/* Loads in native byte order from any alignment (the header dyld maps is aligned; a test's
 * buffer need not be). */
static uint32_t cs_load32(const uint8_t *bytes) {
    uint32_t value;
    __builtin_memcpy(&value, bytes, sizeof value);
    return value;
}

static uint64_t cs_load64(const uint8_t *bytes) {
    uint64_t value;
    __builtin_memcpy(&value, bytes, sizeof value);
    return value;
}

static bool cs_segment_named(const uint8_t *command, const char *name) {
    const uint8_t *segname = command + CS_SEGMENT_NAME;
    for (unsigned i = 0; i < 16; i++) {
        if (segname[i] != (uint8_t)name[i]) return false;
        if (name[i] == 0) return true;
    }
    return true; /* all 16 bytes used, no NUL: equal when `name` is 16 characters long */
}

bool cs_macho_read_layout(const void *header, size_t readable, intptr_t slide, cs_macho_layout *layout) {
    const uint8_t *base = header;
    *layout = (cs_macho_layout){0};
    if (base == NULL || readable < CS_MACH_HEADER_SIZE) return false;
    uint32_t magic = cs_load32(base);
    bool wide = magic == CS_MH_MAGIC_64;
    if (!wide && magic != CS_MH_MAGIC) return false; /* another file type, or the other byte order */
    size_t header_size = wide ? CS_MACH_HEADER_64_SIZE : CS_MACH_HEADER_SIZE;
    if (readable < header_size) return false;
    uint32_t ncmds = cs_load32(base + CS_HEADER_NCMDS);
    size_t commands_end = header_size + (size_t)cs_load32(base + CS_HEADER_SIZEOFCMDS);
    if (commands_end > readable) commands_end = readable;

    size_t offset = header_size;
    for (uint32_t i = 0; i < ncmds && offset + 8 <= commands_end; i++) {
        const uint8_t *command = base + offset;
        uint32_t cmd = cs_load32(command), cmdsize = cs_load32(command + 4);
        if (cmdsize < 8 || cmdsize > commands_end - offset) break;
        if ((cmd == CS_LC_SEGMENT_64 && wide && cmdsize >= CS_SEGMENT_64_SIZE)
            || (cmd == CS_LC_SEGMENT && !wide && cmdsize >= CS_SEGMENT_SIZE)) {
            uint64_t vmaddr = wide ? cs_load64(command + CS_SEGMENT_VMADDR) : cs_load32(command + CS_SEGMENT_VMADDR);
            uint64_t vmsize = wide ? cs_load64(command + CS_SEGMENT_64_VMSIZE) : cs_load32(command + CS_SEGMENT_VMSIZE);
            uint32_t initprot = cs_load32(command + (wide ? CS_SEGMENT_64_INITPROT : CS_SEGMENT_INITPROT));
            uintptr_t low = (uintptr_t)vmaddr + (uintptr_t)slide, high = low + (uintptr_t)vmsize;
            if (cs_segment_named(command, "__TEXT") && !layout->has_text) {
                layout->text_low = low;
                layout->text_high = high;
                layout->text_vmaddr = vmaddr;
                layout->has_text = true;
            }
            if ((initprot & CS_VM_PROT_EXECUTE) && vmsize > 0) {
                if (!layout->has_exec || low < layout->exec_low) layout->exec_low = low;
                if (!layout->has_exec || high > layout->exec_high) layout->exec_high = high;
                layout->has_exec = true;
            }
        } else if (cmd == CS_LC_UUID && cmdsize >= CS_UUID_COMMAND_SIZE) {
            for (unsigned b = 0; b < 16; b++) layout->uuid[b] = command[CS_UUID_BYTES + b];
            layout->has_uuid = true;
        }
        offset += cmdsize;
    }
    return layout->has_text;
}
