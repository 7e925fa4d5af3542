/*
 * csc_runtime_message_darwin.c — the Swift runtime's message of a fatal error on Apple
 * platforms: libswiftCore keeps it in its CrashReporterClient annotations (the
 * `crashreporter_annotations_t` in its `__DATA,__crash_info` section, field `message`), as the
 * system's crash reporter reads it. The section's address is found once at install from the
 * dyld registry; the handler copies the message with fault-free reads.
 * Compiled only for Apple targets; not compiled or run on the Linux build machines.
 */
#if defined(__APPLE__)
#include "csc_platform.h"

#include <mach-o/getsect.h>
#include <mach-o/loader.h>
#include <stdatomic.h>
#include <string.h>

#include "cs_dyld_images.h"

/* The layout CrashReporterClient.h gives (version 5): every field a 64-bit word. */
typedef struct {
    uint64_t version;
    uint64_t message;
    uint64_t signature_string;
    uint64_t backtrace;
    uint64_t message2;
    uint64_t thread;
    uint64_t dialog_mode;
    uint64_t abort_cause;
} csc_crash_annotations;

static _Atomic(const csc_crash_annotations *) g_annotations;

static bool csc_ends_with(const char *text, const char *suffix) {
    size_t length = strlen(text), suffix_length = strlen(suffix);
    return length >= suffix_length && strcmp(text + length - suffix_length, suffix) == 0;
}

static void csc_find_swift_core(const cs_dyld_image *image, void *context) {
    (void)context;
    if (atomic_load(&g_annotations) != NULL || image->path == NULL || !csc_ends_with(image->path, "/libswiftCore.dylib")) return;
    unsigned long size = 0;
    uint8_t *section = getsectiondata((const struct mach_header_64 *)image->header, "__DATA", "__crash_info", &size);
    if (section != NULL && size >= sizeof(csc_crash_annotations)) atomic_store(&g_annotations, (const csc_crash_annotations *)section);
}

void csc_runtime_message_prepare(void) {
    if (atomic_load(&g_annotations) != NULL) return;
    cs_dyld_images_start();
    cs_dyld_images_visit(csc_find_swift_core, NULL);
}

bool csc_runtime_message_copy(char *text, size_t capacity) {
    const csc_crash_annotations *annotations = atomic_load(&g_annotations);
    uint64_t message = 0;
    if (capacity == 0 || annotations == NULL ||
        !csc_safe_read((uintptr_t)&annotations->message, &message, sizeof message) || message == 0)
        return false;
    return csc_safe_copy_string((uintptr_t)message, text, capacity);
}
#endif
