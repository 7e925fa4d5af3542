/*
 * capture-malloc-probe — proves the crash handler never allocates.
 *
 * This executable defines malloc and friends, so every allocation in the process (libc's own
 * included) comes through here. Right before crashing, main() arms the probe; any allocation
 * after that point can only come from the crash handler, and prints MALLOC-IN-HANDLER on
 * standard output (with write(2)). `--self-test` arms the probe and allocates on purpose, to show
 * the interposition works.
 *
 * usage: capture-malloc-probe <report-dir> [--self-test]
 */
#define _GNU_SOURCE
#include <csc_capture.h>
#include <csc_test_support.h>

#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *pointer, size_t size);
extern void __libc_free(void *pointer);
extern void *__libc_memalign(size_t alignment, size_t size);

static _Atomic int g_armed;

static void probe_hit(void) {
    if (atomic_load(&g_armed)) {
        static const char marker[] = "MALLOC-IN-HANDLER\n";
        (void)!write(1, marker, sizeof marker - 1);
    }
}

void *malloc(size_t size) { probe_hit(); return __libc_malloc(size); }
void *calloc(size_t count, size_t size) { probe_hit(); return __libc_calloc(count, size); }
void *realloc(void *pointer, size_t size) { probe_hit(); return __libc_realloc(pointer, size); }
void free(void *pointer) { if (pointer) probe_hit(); __libc_free(pointer); }
void *memalign(size_t alignment, size_t size) { probe_hit(); return __libc_memalign(alignment, size); }
void *aligned_alloc(size_t alignment, size_t size) { probe_hit(); return __libc_memalign(alignment, size); }
int posix_memalign(void **out, size_t alignment, size_t size) {
    probe_hit();
    *out = __libc_memalign(alignment, size);
    return *out ? 0 : 12;
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    csc_config config;
    memset(&config, 0, sizeof config);
    config.directory = argv[1];
    config.launch_id = "malloc-probe";
    if (csc_install(&config) != CSC_INSTALL_OK) return 1;
    if (argc > 2 && strcmp(argv[2], "--self-test") == 0) {
        atomic_store(&g_armed, 1);
        void *volatile pointer = malloc(16);
        free(pointer);
        return 0;
    }
    atomic_store(&g_armed, 1);
    csc_crash_segv();
    return 0;
}
