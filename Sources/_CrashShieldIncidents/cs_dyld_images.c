/*
 * cs_dyld_images.c — see cs_dyld_images.h. Compiled only for Apple targets; written against
 * <mach-o/dyld.h> (apple-oss-distributions/dyld include/mach-o/dyld.h: the add-image callback
 * is called for every existing image during its registration, then "as each new image is loaded
 * and bound (but initializers not yet run)"; the remove-image callback "after any terminators in
 * an image are run and before the image is un-memory-mapped") and <dlfcn.h> (dladdr, which that
 * header calls thread safe). Not compiled or run on the Linux build machines.
 */
#if defined(__APPLE__)
#include "cs_dyld_images.h"

#include <dlfcn.h>
#include <mach-o/dyld.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

/* One slot per add callback (an image loaded again takes a new slot), preallocated: untouched
 * pages of these static arrays cost no memory. Past the limit an image is not listed; a path that
 * no longer fits is kept as "". */
#define CS_DYLD_SLOTS 4096
#define CS_DYLD_PATH_BYTES (CS_DYLD_SLOTS * 256)
#define CS_DYLD_LISTENERS 4

typedef struct {
    cs_dyld_image image;
    bool removed; /* after its remove callback: its memory may be unmapped, never read */
} cs_dyld_slot;

static struct {
    pthread_mutex_t lock;
    uint32_t count;
    uint32_t paths_used;
    cs_dyld_slot slots[CS_DYLD_SLOTS];
    char paths[CS_DYLD_PATH_BYTES];
} g_registry = {.lock = PTHREAD_MUTEX_INITIALIZER, .paths_used = 1};

static _Atomic(void (*)(void)) g_listeners[CS_DYLD_LISTENERS];
static _Atomic int g_state; /* 0: not registered; 1: registering; 2: registered */
/* True on the registering thread during the replay: one notification follows it, not one per image. */
static _Thread_local bool t_replaying;

static void cs_dyld_notify(void) {
    for (int i = 0; i < CS_DYLD_LISTENERS; i++) {
        void (*listener)(void) = atomic_load(&g_listeners[i]);
        if (listener) listener();
    }
}

static void cs_dyld_added(const struct mach_header *header, intptr_t slide) {
    Dl_info info; /* before our lock: dladdr may wait for dyld's */
    const char *path = dladdr(header, &info) && info.dli_fname ? info.dli_fname : "";
    size_t length = strlen(path);
    pthread_mutex_lock(&g_registry.lock);
    if (g_registry.count < CS_DYLD_SLOTS) {
        cs_dyld_slot *slot = &g_registry.slots[g_registry.count++];
        slot->image.header = header;
        slot->image.slide = slide;
        slot->image.path = g_registry.paths; /* "" */
        slot->removed = false;
        if (length > 0 && g_registry.paths_used + length + 1 <= sizeof g_registry.paths) {
            char *copy = g_registry.paths + g_registry.paths_used;
            memcpy(copy, path, length + 1);
            slot->image.path = copy;
            g_registry.paths_used += (uint32_t)(length + 1);
        }
    }
    pthread_mutex_unlock(&g_registry.lock);
    if (!t_replaying) cs_dyld_notify();
}

static void cs_dyld_removed(const struct mach_header *header, intptr_t slide) {
    (void)slide;
    pthread_mutex_lock(&g_registry.lock);
    for (uint32_t i = 0; i < g_registry.count; i++)
        if (g_registry.slots[i].image.header == header) g_registry.slots[i].removed = true;
    pthread_mutex_unlock(&g_registry.lock);
    cs_dyld_notify();
}

void cs_dyld_images_start(void) {
    int expected = 0;
    if (!atomic_compare_exchange_strong(&g_state, &expected, 1)) return;
    t_replaying = true;
    _dyld_register_func_for_add_image(cs_dyld_added);
    t_replaying = false;
    _dyld_register_func_for_remove_image(cs_dyld_removed);
    atomic_store(&g_state, 2);
    cs_dyld_notify();
}

bool cs_dyld_images_listen(void (*on_change)(void)) {
    for (int i = 0; i < CS_DYLD_LISTENERS; i++) {
        void (*expected)(void) = NULL;
        if (atomic_compare_exchange_strong(&g_listeners[i], &expected, on_change) || expected == on_change) return true;
    }
    return false;
}

void cs_dyld_images_visit(void (*visit)(const cs_dyld_image *image, void *context), void *context) {
    pthread_mutex_lock(&g_registry.lock);
    for (uint32_t i = 0; i < g_registry.count; i++)
        if (!g_registry.slots[i].removed) visit(&g_registry.slots[i].image, context);
    pthread_mutex_unlock(&g_registry.lock);
}
#endif
