/*
 * cs_images.c — the image cache of cs_images.h, shared by every platform. The loader-specific
 * walk and the system/app classification are in cs_images_elf.c and cs_images_dyld.c.
 */
#include "cs_images.h"

#include <pthread.h>

#define CS_MAX_IMAGES 2048 /* an iOS app loads several hundred images, most from the shared cache */

static cs_image_info g_images[CS_MAX_IMAGES];
static int g_image_count;
static pthread_rwlock_t g_images_lock = PTHREAD_RWLOCK_INITIALIZER;

static bool cs_images_append(const cs_image_info *image) {
    if (g_image_count >= CS_MAX_IMAGES) return false;
    g_images[g_image_count++] = *image;
    return true;
}

void cs_images_refresh(void) {
    cs_images_platform_start();
    pthread_rwlock_wrlock(&g_images_lock);
    g_image_count = 0;
    cs_images_platform_collect(cs_images_append);
    pthread_rwlock_unlock(&g_images_lock);
}

static bool cs_images_find(uintptr_t address, cs_image_info *out) {
    bool found = false;
    pthread_rwlock_rdlock(&g_images_lock);
    for (int i = 0; i < g_image_count; i++) {
        if (address >= g_images[i].base && address < g_images[i].end) {
            *out = g_images[i];
            found = true;
            break;
        }
    }
    pthread_rwlock_unlock(&g_images_lock);
    return found;
}

bool cs_images_lookup(uintptr_t address, cs_image_info *out) {
    if (cs_images_find(address, out)) return true;
    cs_images_refresh(); /* an image loaded after the last refresh */
    return cs_images_find(address, out);
}
