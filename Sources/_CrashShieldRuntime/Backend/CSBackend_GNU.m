/*
 * CSBackend_GNU.m — the runtime backend for GNUstep Base on GCC libobjc (verified on Linux).
 *
 * Why the dispatch tables are patched: GCC libobjc keeps a copy-on-write dispatch table per
 * class, and method_setImplementation() patches only the owner's. A subclass that already copied
 * that bucket keeps calling the old IMP, so every replacement is
 * followed by an update of the owner's and its subclasses' tables.
 *
 * Why in place and not rebuilt: a rebuild (__objc_update_dispatch_table_for_class, which
 * class_addMethod also runs) frees the class's table and builds a new one while other threads may
 * be inside objc_msg_lookup on the old one: they read freed memory and the process dies with
 * SIGSEGV (reproduced: a rebuild loop of NSArray/NSObject against two threads messaging an
 * NSArray crashed 8 runs out of 8, with or without objc_thread_add()). So the start path writes
 * the new IMP into each affected table with the runtime's own sarray_at_put_safe, under the
 * runtime lock, which readers were built for: an entry changes from one valid IMP to another and
 * a shared bucket is copied before it is written, never freed.
 *
 * Adding a method (cs_backend_add_method) avoids class_addMethod's rebuild the same way: a
 * one-method list is published at the head of the class's method lists, then the entry is
 * written into the tables of the class and of its subclasses that inherit the selector.
 *
 * Room: a table holds as many entries as there were selectors when it was built. Replacing and
 * adding take one decision (cs_gnu_collect_subtree) before writing: every installed table below the
 * owner must hold the selector's position, and one that does not is grown in place by the backend
 * (cs_gnu_grow_table), because sarray_at_put_safe past the capacity reaches sarray_realloc, which
 * aborts on a shared table and otherwise publishes the capacity before the array and frees the
 * old array under readers (docs/probes/gnustep-add-method/sarray_readers.dis).
 *
 * Layout: all of this reads GCC libobjc's struct objc_class and struct sarray, which are not
 * public. Before the first write the backend confirms them (NSObject through the public
 * accessors; the table self-check cs_gnu_check_tables on NSObject's table and a copy of it). When
 * an entry point is missing or a check fails, every write falls back to libobjc's rebuild, which
 * is unsafe while other threads message the classes, and cs_backend_dispatch_write_status() says
 * why with a stable code.
 *
 * Publication order (the contract every hook relies on): a hook's original IMP (its slot) is
 * written before the hook's IMP is stored into the Method and the dispatch tables, and both of
 * those stores are release stores (CS_ATOMIC_STORE; a release fence before sarray_at_put_safe),
 * so a thread that reaches the hook through any table sees its original, never NULL.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr, Dl_info */
#endif
#import "CSBackend.h"
#include <dlfcn.h>
#include <pthread.h>
#include <cs_incidents.h>

#if !defined(__APPLE__)
#include <string.h>

typedef void (*cs_dtable_update_fn)(Class);

static void cs_dummy_imp(CS_UNRETAINED id self, SEL _cmd) {
    (void)self;
    (void)_cmd;
}

static cs_dtable_update_fn cs_dispatch_update_function(void);

/* Deferred rebuilds (cs_backend_defer_dispatch_refresh): the classes whose tables are due.
 * Per thread: only the thread that runs start defers; a replacement made meanwhile on another
 * thread (e.g. a main-thread guard configuration) is rebuilt at once, as always. */
static __thread BOOL g_refresh_deferred;
static __thread CS_UNRETAINED Class *g_refresh_pending;
static __thread size_t g_refresh_pending_count, g_refresh_pending_capacity;

static BOOL cs_class_is_below(Class cls, Class ancestor) {
    for (Class c = class_getSuperclass(cls); c != Nil; c = class_getSuperclass(c))
        if (c == ancestor) return YES;
    return NO;
}

/* Room for one more item in a growable array of `count` items (capacity doubling from
 * `initial`): the array to use from now on, or NULL when it cannot grow (the old one is kept). */
static void *cs_gnu_reserve(void *items, size_t count, size_t *capacity, size_t item_size, size_t initial) {
    if (count < *capacity) return items;
    size_t grown_capacity = *capacity ? 2 * *capacity : initial;
    void *grown = realloc(items, grown_capacity * item_size);
    if (grown != NULL) *capacity = grown_capacity;
    return grown;
}

/* Rebuilds each class of `classes` once, skipping repeats and classes below another one of them
 * (a rebuild covers every subclass). */
static void cs_refresh_each_once(CS_UNRETAINED const Class *classes, size_t count);

static void cs_refresh_dispatch_tables(Class owner) {
    if (g_refresh_deferred) {
        CS_UNRETAINED Class *room = (CS_UNRETAINED Class *)cs_gnu_reserve(
            g_refresh_pending, g_refresh_pending_count, &g_refresh_pending_capacity, sizeof(Class), 64);
        if (room != NULL) {
            g_refresh_pending = room;
            g_refresh_pending[g_refresh_pending_count++] = owner;
            return;
        }
    }
    cs_dtable_update_fn update = cs_dispatch_update_function();
    if (update) {
        update(owner);
        return;
    }
    /* Fallback: class_addMethod always rebuilds the class and its subclasses. Never used on a
     * metaclass here: the callers only refresh classes whose methods they replaced. */
    static unsigned counter;
    char name[64];
    snprintf(name, sizeof name, "__cs_dispatch_refresh_%u", CS_ATOMIC_FETCH_ADD(&counter, 1u));
    class_addMethod(owner, sel_registerName(name), (IMP)cs_dummy_imp, "v@:");
}

/* GCC libobjc's struct objc_class (objc-private/module-abi-8.h) up to the class tree links. */
typedef struct {
    CS_UNRETAINED Class isa;
    CS_UNRETAINED Class super_class;
    const char *name;
    long version;
    unsigned long info;
    long instance_size;
    void *ivars;
    void *methods;
    void *dtable;
    CS_UNRETAINED Class subclass_list;
    CS_UNRETAINED Class sibling_class;
} cs_gnu_class_layout;

/* GCC libobjc's _CLS_INITIALIZED bit of `info` (objc-private/runtime.h), set on a class and its
 * metaclass just before +initialize is sent. */
static const unsigned long kGNUClassInitialized = 0x4;

/* What in-place patching needs from libobjc (exported, not in its public headers). */
typedef struct {
    void (*put)(void *table, size_t index, void *element); /* sarray_at_put_safe */
    int (*lock)(void *mutex);                              /* objc_mutex_lock (recursive) */
    int (*unlock)(void *mutex);                            /* objc_mutex_unlock */
    void **runtime_mutex;                                  /* &__objc_runtime_mutex */
    void **uninstalled_table;                              /* &__objc_uninstalled_dtable */
    SEL (*register_typed)(const char *, const char *);     /* sel_registerTypedName (adds only) */
    void *(*allocate)(size_t);                             /* objc_malloc (growing a table only) */
} cs_gnu_patch_api;

/* GCC libobjc's struct sarray (objc-private/sarray.h, the two-level variant Debian's libobjc is
 * built with): {struct sbucket **buckets; struct sbucket *empty_bucket; union sversion version;
 * short ref_count; struct sarray *is_copy_of; size_t capacity}. A table holds `capacity` entries
 * (a multiple of 32) in 32-entry buckets; struct sbucket starts with its 32 entries. A lazy copy
 * (a subclass's table) has its own bucket-pointer array but shares its parent's buckets until it
 * writes one. The backend reads these fields through cs_gnu_table_fields, which the table
 * self-check (cs_gnu_check_tables) confirms on live tables before any write. */
typedef struct {
    void *buckets;
    void *empty_bucket;
    void *version; /* union sversion: an int or a pointer */
    short ref_count;
    void *is_copy_of;
    size_t capacity;
} cs_gnu_table_layout;

/* Where the fields the backend uses lie in a dispatch table. Only the test seam
 * (cs_backend_assume_table_layout_for_testing) ever changes them, to play a changed runtime. */
typedef struct {
    size_t buckets, empty_bucket, ref_count, is_copy_of, capacity;
} cs_gnu_table_offsets;

static const cs_gnu_table_offsets cs_gnu_sarray_offsets = {
    offsetof(cs_gnu_table_layout, buckets),    offsetof(cs_gnu_table_layout, empty_bucket),
    offsetof(cs_gnu_table_layout, ref_count),  offsetof(cs_gnu_table_layout, is_copy_of),
    offsetof(cs_gnu_table_layout, capacity),
};
static cs_gnu_table_offsets g_table_fields = cs_gnu_sarray_offsets;

static void *cs_gnu_table_pointer(const void *table, size_t offset) {
    void *value;
    memcpy(&value, (const char *)table + offset, sizeof value);
    return value;
}

static size_t cs_gnu_table_capacity(const void *table) {
    size_t value;
    memcpy(&value, (const char *)table + g_table_fields.capacity, sizeof value);
    return value;
}

/* The table position of a selector: GCC's sel_id on 64-bit little-endian holds the bucket in its
 * low half and the entry within the 32-entry bucket in its high half (probes:
 * docs/probes/gnustep-add-method). SIZE_MAX where that encoding is not known, so nothing fits. */
static size_t cs_gnu_table_position(SEL sel) {
#if defined(__LP64__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    size_t raw = (size_t) * (void *const *)(const void *)sel;
    return (raw & 0xffffffffu) * 32u + (raw >> 32);
#else
    (void)sel;
    return SIZE_MAX;
#endif
}

/* The entry at `position` of `table`, read as objc_msg_lookup reads it; NULL outside the table or
 * where a bucket pointer is NULL (which a real table never has). */
static void *cs_gnu_table_entry(const void *table, size_t position) {
    if (position >= cs_gnu_table_capacity(table)) return NULL;
    void *const *buckets = (void *const *)cs_gnu_table_pointer(table, g_table_fields.buckets);
    if (buckets == NULL) return NULL;
    void *const *bucket = (void *const *)buckets[position / 32u];
    return bucket != NULL ? bucket[position % 32u] : NULL;
}

/* GCC libobjc's struct objc_method and struct objc_method_list (objc-private/module-abi-8.h):
 * one list of one method, as class_addMethod builds it. */
typedef struct {
    SEL name; /* registered with its types, as __objc_register_selectors_from_list leaves it */
    const char *types;
    IMP imp;
} cs_gnu_method;

typedef struct cs_gnu_method_list {
    struct cs_gnu_method_list *next;
    int count;
    cs_gnu_method methods[1];
} cs_gnu_method_list;

static cs_gnu_class_layout *cs_gnu_layout(Class cls) {
    return (cs_gnu_class_layout *)CS_POINTER(cls);
}

/* A value read from a table field that should hold a heap pointer: aligned and above the first
 * 64 KiB (checked before the self-check follows it). */
static BOOL cs_gnu_plausible_pointer(const void *pointer) {
    return (uintptr_t)pointer >= 0x10000u && (uintptr_t)pointer % sizeof(void *) == 0;
}

/* The table self-check: NSObject's dispatch table and a table lazily copied from it, read through
 * cs_gnu_table_fields, must look like GCC libobjc's struct sarray (NSObject's is no copy, holds a
 * whole number of buckets and a sane reference count; the copy names NSObject's as its original
 * and shares its empty bucket, whose 32 entries are NULL), and the entries of methods NSObject
 * implements (at least 4 of 8 well-known ones) must read back exactly as
 * class_getMethodImplementation() answers them. Pointers are
 * followed only once the fields before them made sense. Returns NULL when all holds, else the
 * stable code of the first check that failed; "dispatch-tables-not-built" while NSObject's table
 * or every copy of it is not installed yet (decided later). Runtime lock held. */
static const char *cs_gnu_check_tables(const cs_gnu_patch_api *api) {
    Class root = CS_CLASS(NSObject);
    const void *table = root ? cs_gnu_layout(root)->dtable : NULL;
    if (table == NULL || table == *api->uninstalled_table) return "dispatch-tables-not-built";
    if (cs_gnu_table_position(sel_registerName("self")) == SIZE_MAX) return "selector-encoding-unknown";
    size_t capacity = cs_gnu_table_capacity(table);
    short ref_count;
    memcpy(&ref_count, (const char *)table + g_table_fields.ref_count, sizeof ref_count);
    void *buckets = cs_gnu_table_pointer(table, g_table_fields.buckets);
    void *empty = cs_gnu_table_pointer(table, g_table_fields.empty_bucket);
    if (cs_gnu_table_pointer(table, g_table_fields.is_copy_of) != NULL || capacity == 0 || capacity % 32u != 0 ||
        capacity > ((size_t)1 << 24) || ref_count < 1 || !cs_gnu_plausible_pointer(buckets) ||
        !cs_gnu_plausible_pointer(empty) || buckets == empty)
        return "dispatch-table-layout-mismatch";
    const void *copy = NULL;
    for (Class sub = cs_gnu_layout(root)->subclass_list; sub != Nil && copy == NULL;
         sub = cs_gnu_layout(sub)->sibling_class) {
        const void *candidate = cs_gnu_layout(sub)->dtable;
        if (candidate != NULL && candidate != *api->uninstalled_table &&
            cs_gnu_table_pointer(candidate, g_table_fields.is_copy_of) == table)
            copy = candidate;
    }
    if (copy == NULL) return "dispatch-tables-not-built";
    if (cs_gnu_table_pointer(copy, g_table_fields.empty_bucket) != empty ||
        cs_gnu_table_pointer(copy, g_table_fields.buckets) == buckets || cs_gnu_table_capacity(copy) < capacity ||
        cs_gnu_table_capacity(copy) % 32u != 0)
        return "dispatch-table-layout-mismatch";
    for (size_t e = 0; e < 32; e++)
        if (((void *const *)empty)[e] != NULL) return "dispatch-table-layout-mismatch";
    static const char *const known[] = {"self", "class", "hash", "isEqual:", "description", "respondsToSelector:",
                                        "retain", "release"};
    size_t compared = 0;
    for (size_t k = 0; k < sizeof known / sizeof known[0]; k++) {
        SEL sel = sel_registerName(known[k]);
        if (class_getInstanceMethod(root, sel) == NULL) continue; /* not NSObject's on this Foundation */
        IMP expected = class_getMethodImplementation(root, sel);
        if (expected == NULL || cs_gnu_table_entry(table, cs_gnu_table_position(sel)) != (void *)expected)
            return "dispatch-table-entries-mismatch";
        compared++;
    }
    return compared >= 4 ? NULL : "dispatch-table-entries-mismatch";
}

/* In-place writes: 0 not decided, 1 in use, 2 not usable (g_table_writes_fallback says why). */
static int g_table_writes_state;             /* CS_ATOMIC_* */
static const char *g_table_writes_fallback;  /* CS_ATOMIC_*: a stable code, or NULL */
static cs_gnu_patch_api g_patch_api;         /* written once, before state 1 is published */

/* The entry points, once found, GCC's struct objc_class confirmed on NSObject through the public
 * accessors, and the table self-check passed; NULL otherwise, and every write rebuilds instead
 * (g_table_writes_fallback records why). Decided once, at the first write after NSObject's table
 * is installed; before that NULL (no other thread has messaged anything then). */
static const cs_gnu_patch_api *cs_gnu_patch_api_get(void) {
    int state = CS_ATOMIC_LOAD(&g_table_writes_state);
    if (state == 1) return &g_patch_api;
    if (state == 2) return NULL;
    cs_gnu_patch_api found = {
        (void (*)(void *, size_t, void *))dlsym(RTLD_DEFAULT, "sarray_at_put_safe"),
        (int (*)(void *))dlsym(RTLD_DEFAULT, "objc_mutex_lock"),
        (int (*)(void *))dlsym(RTLD_DEFAULT, "objc_mutex_unlock"),
        (void **)dlsym(RTLD_DEFAULT, "__objc_runtime_mutex"),
        (void **)dlsym(RTLD_DEFAULT, "__objc_uninstalled_dtable"),
        (SEL(*)(const char *, const char *))dlsym(RTLD_DEFAULT, "sel_registerTypedName"),
        (void *(*)(size_t))dlsym(RTLD_DEFAULT, "objc_malloc"),
    };
    const char *fallback = NULL;
    Class root = CS_CLASS(NSObject);
    const cs_gnu_class_layout *layout = root ? cs_gnu_layout(root) : NULL;
    if (!(found.put && found.lock && found.unlock && found.runtime_mutex && found.uninstalled_table))
        fallback = "runtime-entry-points-missing";
    else if (!(layout != NULL && layout->super_class == class_getSuperclass(root) &&
               layout->name == class_getName(root) && layout->version == class_getVersion(root) &&
               (size_t)layout->instance_size == class_getInstanceSize(root)))
        fallback = "class-layout-mismatch";
    if (fallback == NULL) {
        found.lock(*found.runtime_mutex);
        fallback = cs_gnu_check_tables(&found);
        found.unlock(*found.runtime_mutex);
        if (fallback != NULL && strcmp(fallback, "dispatch-tables-not-built") == 0) {
            CS_ATOMIC_STORE(&g_table_writes_fallback, fallback); /* not decided: asked again next time */
            return NULL;
        }
    }
    if (fallback == NULL) g_patch_api = found;
    CS_ATOMIC_STORE(&g_table_writes_fallback, fallback);
    CS_ATOMIC_STORE(&g_table_writes_state, fallback == NULL ? 1 : 2);
    return fallback == NULL ? &g_patch_api : NULL;
}

/* Entries a grown table gets beyond the position that made it grow: 32 buckets (1024 entries),
 * so the selectors registered after it fit without growing again. */
#define CS_GNU_GROWTH_SLACK_BUCKETS 32u

/* Grows `table` in place to hold `position`, safely for readers that are inside objc_msg_lookup
 * on it (sarray_at_put_safe's sarray_realloc is not: it stores the larger capacity before the new
 * bucket-pointer array, so a reader may index past the old array, frees the old array at once,
 * and aborts on a table other tables were lazily copied from). Here a new, larger bucket-pointer
 * array (the old pointers, then the empty bucket) is published with a release store, and only then
 * the larger capacity. libobjc's readers (objc_msg_lookup, objc_msg_lookup_super,
 * class_getMethodImplementation) load the capacity, compare, then load the array, and x86-64
 * keeps loads in order, so a reader that sees the new capacity sees the new array; a reader that
 * sees the old capacity answers "not in the table" for the new positions, as before. The old array
 * is never freed (a reader may still hold it): one pointer per 32 entries, once per growth. The new
 * one is objc_malloc'd, so libobjc's sarray_free releases it like its own. Only on x86-64 (other
 * architectures may reorder the readers' loads); NO there, or without objc_malloc.
 * Runtime lock held. */
static BOOL cs_gnu_grow_table(const cs_gnu_patch_api *api, void *table, size_t position) {
#if defined(__x86_64__)
    if (api->allocate == NULL) return NO;
    size_t old_count = cs_gnu_table_capacity(table) / 32u;
    size_t new_count = position / 32u + 1u + CS_GNU_GROWTH_SLACK_BUCKETS;
    void *const *old_buckets = (void *const *)cs_gnu_table_pointer(table, g_table_fields.buckets);
    void *empty = cs_gnu_table_pointer(table, g_table_fields.empty_bucket);
    void **grown = (void **)api->allocate(new_count * sizeof(void *));
    if (grown == NULL) return NO;
    memcpy(grown, old_buckets, old_count * sizeof(void *));
    for (size_t b = old_count; b < new_count; b++) grown[b] = empty;
    __atomic_store_n((void **)(void *)((char *)table + g_table_fields.buckets), (void *)grown, __ATOMIC_RELEASE);
    __atomic_store_n((size_t *)(void *)((char *)table + g_table_fields.capacity), new_count * 32u, __ATOMIC_RELEASE);
    return YES;
#else
    (void)api;
    (void)table;
    (void)position;
    return NO;
#endif
}

/* True when `cls` has a method named `sel` of its own. Reads GCC libobjc's method lists in
 * place (no copy, no lock of its own: the callers hold the runtime lock, and a list is published
 * at the head with a release store) and compares selector ids, as sel_isEqual does; only used
 * where in-place table writes are, i.e. once the class layout was checked. */
static BOOL cs_gnu_defines(Class cls, SEL sel) {
#if defined(__LP64__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    const void *wanted = *(void *const *)(const void *)sel;
    const cs_gnu_method_list *list = __atomic_load_n((cs_gnu_method_list *const *)&cs_gnu_layout(cls)->methods,
                                                     __ATOMIC_ACQUIRE);
    for (; list != NULL; list = list->next)
        for (int i = 0; i < list->count; i++)
            if (list->methods[i].name != NULL && *(void *const *)(const void *)list->methods[i].name == wanted)
                return YES;
    return NO;
#else
    unsigned int count = 0;
    Method *methods = class_copyMethodList(cls, &count);
    BOOL found = NO;
    for (unsigned int i = 0; i < count && !found; i++) found = sel_isEqual(method_getName(methods[i]), sel);
    free(methods);
    return found;
#endif
}

/* One in-place table write: `imp` for `sel` into the table of an owner and of the subclasses
 * that get it from the owner. Replacing and adding share it; they differ only in which
 * subclasses the write continues into (cs_gnu_write_reaches). */
typedef struct {
    SEL sel;
    size_t position; /* cs_gnu_table_position(sel) */
    IMP previous;    /* a replacement: the IMP it replaces */
    IMP imp;
    BOOL is_add;
} cs_gnu_table_write;

/* Whether the write continues into subclass `sub` (and below it). Never into a subclass with a
 * method of its own (it keeps it, and so do its subclasses). An add continues into every other
 * one. A replacement continues only while `sub` still dispatches `sel` to `previous`, or already
 * to `imp`: a lazily copied table shares its parent's bucket until it writes one, so the parent's
 * write shows through, while a grandchild holding its own copy of that bucket still has
 * `previous` (stopping there left such grandchildren stale; it showed once the KVO guard's first
 * start stopped rebuilding every table). */
static BOOL cs_gnu_write_reaches(const cs_gnu_table_write *write, Class sub) {
    if (!write->is_add) {
        IMP current = class_getMethodImplementation(sub, write->sel);
        if (current != write->previous && current != write->imp) return NO;
    }
    return !cs_gnu_defines(sub, write->sel);
}

/* The classes of an owner's subtree that a write can concern, in pre-order, found in one walk
 * (cs_gnu_collect_subtree) and then written without walking the class tree again
 * (cs_gnu_write_collected): every class with an installed table, and every class without one
 * that is inside +initialize (libobjc may have prepared its table). The walk passes over a class
 * without a table, and all its subclasses, after reading two fields: an app's never-messaged
 * classes, which can be most of NSObject's subclasses, cost one visit per write batch, not two.
 * Per thread; reused between batches. */
typedef struct {
    CS_UNRETAINED Class cls;
    size_t parent;   /* index of the nearest collected superclass; SIZE_MAX for the owner */
    uint64_t active; /* while writing: the writes that reached this class */
    BOOL installed;
} cs_gnu_subtree_entry;
static __thread cs_gnu_subtree_entry *g_subtree;
static __thread size_t g_subtree_count, g_subtree_capacity;

static BOOL cs_gnu_subtree_append(Class cls, size_t parent, BOOL installed) {
    cs_gnu_subtree_entry *room = cs_gnu_reserve(g_subtree, g_subtree_count, &g_subtree_capacity, sizeof *room, 256);
    if (room == NULL) return NO;
    g_subtree = room;
    g_subtree[g_subtree_count++] = (cs_gnu_subtree_entry){cls, parent, 0, installed};
    return YES;
}

/* Collects the subtree of `cls` (below the entry `parent`) and makes room: every installed table
 * must hold `position`, and one short of it is grown in place (cs_gnu_grow_table). Every installed
 * table of the subtree, a superset of those the writes reach (deciding which those are asks the
 * tables themselves; growing one more costs only memory). A write past a table's capacity would
 * otherwise reach sarray_realloc (see cs_gnu_grow_table). NO when a table is short and cannot
 * grow, or the list cannot grow: nothing is written then (tables grown so far only gained empty
 * entries) and the caller falls back to a rebuild. A class whose table is not installed has no
 * installed table below it (libobjc installs a superclass's table first); it is kept only when it
 * is inside +initialize (libobjc marks a class initialised before it sends +initialize), for
 * cs_gnu_write_collected. Runtime lock held. */
static BOOL cs_gnu_collect_class(const cs_gnu_patch_api *api, Class cls, size_t parent, size_t position) {
    cs_gnu_class_layout *layout = cs_gnu_layout(cls);
    void *table = layout->dtable;
    if (table == *api->uninstalled_table)
        return (layout->info & kGNUClassInitialized) ? cs_gnu_subtree_append(cls, parent, NO) : YES;
    if (position == SIZE_MAX) return NO;
    if (position >= cs_gnu_table_capacity(table) && !cs_gnu_grow_table(api, table, position)) return NO;
    if (!cs_gnu_subtree_append(cls, parent, YES)) return NO;
    size_t self = g_subtree_count - 1;
    for (Class sub = layout->subclass_list; sub != Nil; sub = cs_gnu_layout(sub)->sibling_class)
        if (!cs_gnu_collect_class(api, sub, self, position)) return NO;
    return YES;
}

static BOOL cs_gnu_collect_subtree(const cs_gnu_patch_api *api, Class owner, size_t position) {
    g_subtree_count = 0;
    return cs_gnu_collect_class(api, owner, SIZE_MAX, position);
}

/* Writes the entries of `writes` (at most 64, all active at the owner) into the collected tables
 * that each reaches (cs_gnu_write_reaches: a write that stops at a class stops for its subclasses too), in
 * pre-order. A collected class without an installed table is left to libobjc's update when a
 * write reaches it: the update only redoes the table it prepared (the initializing thread holds
 * the runtime lock for the whole +initialize, so that is only ever this thread) from the method
 * lists, which already hold the new IMPs. Runtime lock held. */
static void cs_gnu_write_collected(const cs_gnu_table_write *writes, size_t count) {
    const cs_gnu_patch_api *api = cs_gnu_patch_api_get();
    uint64_t all = count == 64 ? UINT64_MAX : (UINT64_C(1) << count) - 1;
    for (size_t i = 0; i < g_subtree_count; i++) {
        cs_gnu_subtree_entry *entry = &g_subtree[i];
        BOOL is_owner = i == 0;
        uint64_t active = is_owner ? all : g_subtree[entry->parent].active;
        entry->active = 0;
        if (active == 0) continue;
        if (!entry->installed) {
            cs_dtable_update_fn update = cs_dispatch_update_function();
            if (update) update(entry->cls);
            continue;
        }
        void *table = cs_gnu_layout(entry->cls)->dtable;
        for (unsigned w = 0; w < 64 && (active >> w) != 0; w++) {
            if (!(active & (UINT64_C(1) << w))) continue;
            if (!is_owner && !cs_gnu_write_reaches(&writes[w], entry->cls)) {
                active &= ~(UINT64_C(1) << w);
                continue;
            }
            __atomic_thread_fence(__ATOMIC_RELEASE); /* the hook's slot before the hook (publication order) */
            /* GCC libobjc's SEL starts with its table index (sel_id), the index its tables use. */
            api->put(table, (size_t) * (void *const *)(const void *)writes[w].sel, (void *)writes[w].imp);
        }
        entry->active = active;
    }
}

/* Replacements whose table writes wait for the end of a deferral (cs_backend_defer_dispatch_refresh),
 * so that one walk of an owner's subclasses serves all its replaced methods. Per thread. */
typedef struct {
    CS_UNRETAINED Class owner;
    cs_gnu_table_write write;
} cs_gnu_pending_write;
static __thread cs_gnu_pending_write *g_pending_writes;
static __thread size_t g_pending_write_count, g_pending_write_capacity;

/* Patches the tables for `count` (≤ 64) replaced methods of `owner` in place, in one walk; NO (no
 * entry written) when in-place writes are not usable or a table could not be given room, so the
 * caller rebuilds instead. */
static BOOL cs_gnu_patch_owner_tables(Class owner, const cs_gnu_table_write *writes, size_t count) {
    const cs_gnu_patch_api *api = cs_gnu_patch_api_get();
    if (api == NULL || count == 0 || count > 64) return NO;
    size_t position = 0;
    for (size_t w = 0; w < count; w++) {
        if (writes[w].position == SIZE_MAX) return NO;
        if (writes[w].position > position) position = writes[w].position;
    }
    api->lock(*api->runtime_mutex);
    BOOL room = cs_gnu_collect_subtree(api, owner, position); /* a table holding the largest holds them all */
    if (room) cs_gnu_write_collected(writes, count);
    api->unlock(*api->runtime_mutex);
    return room;
}

/* Queues `write` for cs_gnu_flush_pending_writes when this thread defers; NO when it does not
 * (or the queue cannot grow): write now. */
static BOOL cs_gnu_queue_write(Class owner, const cs_gnu_table_write *write) {
    if (!g_refresh_deferred || write->position == SIZE_MAX) return NO;
    cs_gnu_pending_write *room =
        cs_gnu_reserve(g_pending_writes, g_pending_write_count, &g_pending_write_capacity, sizeof *room, 256);
    if (room == NULL) return NO;
    g_pending_writes = room;
    g_pending_writes[g_pending_write_count++] = (cs_gnu_pending_write){owner, *write};
    return YES;
}

static BOOL cs_gnu_patch_tables(Class owner, SEL sel, IMP previous, IMP replacement) {
    cs_gnu_table_write write = {sel, cs_gnu_table_position(sel), previous, replacement, NO};
    if (cs_gnu_patch_api_get() != NULL && cs_gnu_queue_write(owner, &write)) return YES;
    return cs_gnu_patch_owner_tables(owner, &write, 1);
}

/* Does the queued writes, in queue order per owner: one walk per owner (and per 64 writes);
 * owners whose tables could not be given room are rebuilt, and so is every owner when the
 * bookkeeping cannot be allocated (the method lists hold the new IMPs already). */
static void cs_gnu_flush_pending_writes(void) {
    size_t count = g_pending_write_count;
    cs_gnu_pending_write *pending = g_pending_writes;
    g_pending_writes = NULL;
    g_pending_write_count = g_pending_write_capacity = 0;
    BOOL *done = calloc(count ? count : 1, sizeof *done);
    cs_gnu_table_write group[64];
    for (size_t i = 0; i < count; i++) {
        if (done == NULL) {
            cs_refresh_dispatch_tables(pending[i].owner);
            continue;
        }
        if (done[i]) continue;
        size_t n = 0;
        for (size_t j = i; j < count && n < 64; j++) {
            if (done[j] || pending[j].owner != pending[i].owner) continue;
            group[n++] = pending[j].write;
            done[j] = YES;
        }
        if (!cs_gnu_patch_owner_tables(pending[i].owner, group, n)) cs_refresh_dispatch_tables(pending[i].owner);
    }
    free(done);
    free(pending);
}

/* class_addMethod without its table rebuild: the one-method list is filled in, then published at
 * the head of the class's method lists with a release store (readers walking the lists see the
 * old head or a complete new one), then the tables are written in place. */
typedef enum { CS_GNU_ADDED, CS_GNU_ALREADY_DEFINED, CS_GNU_NO_ROOM } cs_gnu_add_result;

static cs_gnu_add_result cs_gnu_add_in_place(const cs_gnu_patch_api *api, Class cls, SEL sel, IMP imp,
                                             const char *types) {
    cs_gnu_method_list *list = (cs_gnu_method_list *)calloc(1, sizeof *list);
    char *types_copy = strdup(types);
    if (list == NULL || types_copy == NULL) {
        free(list);
        free(types_copy);
        return CS_GNU_NO_ROOM;
    }
    list->count = 1;
    list->methods[0].types = types_copy;
    list->methods[0].imp = imp;
    cs_gnu_table_write write = {sel, cs_gnu_table_position(sel), NULL, imp, YES};
    /* While this thread defers, the table writes wait for the flush (one walk per owner); a
     * table that cannot be given room then is rebuilt from the method lists, which hold `imp`. */
    BOOL deferred = g_refresh_deferred && write.position != SIZE_MAX;
    BOOL refresh = NO;
    api->lock(*api->runtime_mutex);
    cs_gnu_add_result result = cs_gnu_defines(cls, sel)                                ? CS_GNU_ALREADY_DEFINED
                               : deferred || cs_gnu_collect_subtree(api, cls, write.position) ? CS_GNU_ADDED
                                                                                        : CS_GNU_NO_ROOM;
    if (result == CS_GNU_ADDED) {
        list->methods[0].name = api->register_typed(sel_getName(sel), types_copy);
        cs_gnu_class_layout *layout = cs_gnu_layout(cls);
        list->next = (cs_gnu_method_list *)layout->methods;
        __atomic_store_n(&layout->methods, (void *)list, __ATOMIC_RELEASE);
        if (!deferred || !cs_gnu_queue_write(cls, &write)) {
            if (!deferred || cs_gnu_collect_subtree(api, cls, write.position)) cs_gnu_write_collected(&write, 1);
            else refresh = YES;
        }
    }
    api->unlock(*api->runtime_mutex);
    if (refresh) cs_refresh_dispatch_tables(cls);
    if (result != CS_GNU_ADDED) {
        free(list);
        free(types_copy);
    }
    return result; /* a published list is never freed: readers may hold it */
}

BOOL cs_backend_add_method(Class cls, SEL sel, IMP imp, const char *types) {
    if (cls == Nil || sel == NULL || imp == NULL || types == NULL || types[0] == '\0') return NO;
    const cs_gnu_patch_api *api = cs_gnu_patch_api_get();
    cs_gnu_add_result result =
        api && api->register_typed ? cs_gnu_add_in_place(api, cls, sel, imp, types) : CS_GNU_NO_ROOM;
    if (result == CS_GNU_ADDED) return YES;
    if (result == CS_GNU_ALREADY_DEFINED) return NO;
    /* In-place writes not usable (cs_backend_dispatch_write_status says why), or a table that
     * could not grow: libobjc's add, whose rebuild is not safe while other threads message these
     * classes. */
    return class_addMethod(cls, sel, imp, types) ? YES : NO;
}

cs_dispatch_write_status cs_backend_dispatch_write_status(void) {
    const cs_gnu_patch_api *api = cs_gnu_patch_api_get();
    cs_dispatch_write_status status = {CS_ATOMIC_LOAD(&g_table_writes_fallback), false};
#if defined(__x86_64__)
    status.grows_tables = api != NULL && api->allocate != NULL;
#endif
    return status;
}

bool cs_backend_dispatch_table_holds(Class cls, SEL sel) {
    const cs_gnu_patch_api *api = cs_gnu_patch_api_get();
    if (api == NULL || cls == Nil || sel == NULL) return false;
    api->lock(*api->runtime_mutex);
    void *table = cs_gnu_layout(cls)->dtable;
    bool holds = table != *api->uninstalled_table && cs_gnu_table_position(sel) < cs_gnu_table_capacity(table);
    api->unlock(*api->runtime_mutex);
    return holds;
}

#if defined(CSC_TEST_SEAMS)
void cs_backend_assume_table_layout_for_testing(int variant) {
    cs_gnu_table_offsets fields = cs_gnu_sarray_offsets;
    if (variant == 1) { /* a field inserted before capacity: capacity read where is_copy_of is */
        fields.capacity = cs_gnu_sarray_offsets.is_copy_of;
    } else if (variant == 2) { /* buckets and empty_bucket swapped */
        fields.buckets = cs_gnu_sarray_offsets.empty_bucket;
        fields.empty_bucket = cs_gnu_sarray_offsets.buckets;
    }
    g_table_fields = fields;
    CS_ATOMIC_STORE(&g_table_writes_fallback, (const char *)NULL);
    CS_ATOMIC_STORE(&g_table_writes_state, 0);
}
#endif

/* GCC libobjc's selector id: the first field of its struct objc_selector, one per name (typed
 * or not), what sel_isEqual compares. */
static const void *cs_gnu_selector_id(SEL sel) {
    return *(void *const *)(const void *)sel;
}

/* Reading a class's own method lists in place (cs_gnu_method_list from its `methods` field) under
 * the runtime lock, as class_copyMethodList does, without its copy. Confirmed once: the lists of
 * NSObject and its metaclass must hold exactly the Methods class_copyMethodList answers, in its
 * order; otherwise (or without the lock's entry points) every lookup copies. */
typedef struct {
    int (*lock)(void *mutex);
    int (*unlock)(void *mutex);
    void **mutex;
} cs_gnu_runtime_lock;
static cs_gnu_runtime_lock g_method_walk_lock;
static BOOL g_method_walk_ok;
static pthread_once_t g_method_walk_once = PTHREAD_ONCE_INIT;

/* `cls`'s first own Method whose selector has `selector_id`, in list order; NULL when none (then
 * `count`, if given, receives how many own Methods there are). Runtime lock held. */
static Method cs_gnu_walk_own_methods(Class cls, const void *selector_id, size_t *count) {
    size_t seen = 0;
    for (const cs_gnu_method_list *list = cs_gnu_layout(cls)->methods; list != NULL; list = list->next) {
        for (int i = 0; i < list->count; i++, seen++) {
            if (selector_id != NULL && list->methods[i].name != NULL &&
                cs_gnu_selector_id(list->methods[i].name) == selector_id)
                return (Method)(void *)&list->methods[i];
        }
    }
    if (count) *count = seen;
    return NULL;
}

static BOOL cs_gnu_method_lists_match(Class cls) {
    unsigned int copied_count = 0;
    Method *copied = class_copyMethodList(cls, &copied_count);
    size_t walked = 0;
    (void)cs_gnu_walk_own_methods(cls, NULL, &walked);
    BOOL match = walked == copied_count;
    size_t position = 0;
    for (const cs_gnu_method_list *list = cs_gnu_layout(cls)->methods; match && list != NULL; list = list->next)
        for (int i = 0; match && i < list->count; i++, position++)
            match = position < copied_count && copied[position] == (Method)(void *)&list->methods[i];
    free(copied);
    return match;
}

static void cs_gnu_method_walk_check(void) {
    cs_gnu_runtime_lock lock = {
        (int (*)(void *))dlsym(RTLD_DEFAULT, "objc_mutex_lock"),
        (int (*)(void *))dlsym(RTLD_DEFAULT, "objc_mutex_unlock"),
        (void **)dlsym(RTLD_DEFAULT, "__objc_runtime_mutex"),
    };
    Class root = CS_CLASS(NSObject);
    if (lock.lock == NULL || lock.unlock == NULL || lock.mutex == NULL || root == Nil) return;
    lock.lock(*lock.mutex);
    BOOL ok = cs_gnu_method_lists_match(root) && cs_gnu_method_lists_match(object_getClass((id)root));
    lock.unlock(*lock.mutex);
    g_method_walk_lock = lock;
    g_method_walk_ok = ok;
}

/* The own-method lookup through a copy of the class's method list (class_copyMethodList). */
static Method cs_copied_own_method(Class cls, SEL sel) {
    unsigned int count = 0;
    Method *methods = class_copyMethodList(cls, &count);
    Method found = NULL;
    /* sel_isEqual compares GCC libobjc's selector ids, one per name (typed or not), without the
     * runtime lock that sel_getName takes. */
    for (unsigned int i = 0; i < count && !found; i++)
        if (sel_isEqual(method_getName(methods[i]), sel)) found = methods[i];
    free(methods);
    return found;
}

static Method cs_own_method(Class owner, SEL sel) {
    pthread_once(&g_method_walk_once, cs_gnu_method_walk_check);
    if (g_method_walk_ok) {
        g_method_walk_lock.lock(*g_method_walk_lock.mutex);
        Method found = cs_gnu_walk_own_methods(owner, cs_gnu_selector_id(sel), NULL);
        g_method_walk_lock.unlock(*g_method_walk_lock.mutex);
        return found;
    }
    return cs_copied_own_method(owner, sel);
}

#if defined(CSC_TEST_SEAMS)
size_t cs_backend_own_method_mismatches_for_testing(size_t *checked, bool *in_place) {
    pthread_once(&g_method_walk_once, cs_gnu_method_walk_check);
    *in_place = g_method_walk_ok;
    *checked = 0;
    size_t mismatches = 0;
    SEL absent = sel_registerName("crashShieldSelectorNoClassDefines:");
    int total = objc_getClassList(NULL, 0);
    CS_UNRETAINED Class *all = total > 0 ? (CS_UNRETAINED Class *)calloc((size_t)total + 16, sizeof(Class)) : NULL;
    if (all) total = objc_getClassList(all, total + 16);
    for (int c = 0; all && c < total; c++) {
        CS_UNRETAINED Class sides[2] = {all[c], object_getClass((id)all[c])};
        for (int side = 0; side < 2; side++) {
            unsigned int count = 0;
            Method *methods = class_copyMethodList(sides[side], &count);
            for (unsigned int m = 0; m <= count; m++) {
                SEL sel = m < count ? method_getName(methods[m]) : absent;
                (*checked)++;
                if (cs_own_method(sides[side], sel) != cs_copied_own_method(sides[side], sel)) mismatches++;
            }
            free(methods);
        }
    }
    free((void *)all);
    return mismatches;
}
#endif

IMP cs_backend_own_implementation(Class owner, SEL sel) {
    Method method = cs_own_method(owner, sel);
    return method ? method_getImplementation(method) : NULL;
}

BOOL cs_backend_class_defines(Class cls, SEL sel) {
    return cs_own_method(cls, sel) != NULL;
}

/* GCC libobjc's struct objc_method (objc-private/module-abi-8.h): name, types, implementation. */
typedef struct {
    SEL name;
    const char *types;
    IMP imp;
} cs_gnu_method_layout;

/* Why not method_setImplementation(): GCC libobjc's walks every method of every class
 * (__objc_update_classes_with_methods) to patch the dispatch tables that hold this Method, about
 * 7 µs per call with ~540 classes and growing with the class count; only the owner's table can
 * hold it, and the refresh that follows rebuilds that one anyway. So the IMP is stored in place,
 * after checking that the Method reads back through the public accessors exactly as that layout
 * says; anything else falls back to method_setImplementation(). Needs the refresh function. */
static IMP cs_set_implementation_without_walk(Method method, IMP replacement, BOOL can_refresh) {
    cs_gnu_method_layout *raw = (cs_gnu_method_layout *)(void *)method;
    IMP current = method_getImplementation(method);
    if (!can_refresh || raw->name != method_getName(method) || raw->types != method_getTypeEncoding(method) ||
        raw->imp != current)
        return method_setImplementation(method, replacement);
    CS_ATOMIC_STORE(&raw->imp, replacement);
    return current;
}

static cs_dtable_update_fn cs_dispatch_update_function(void) {
    static cs_dtable_update_fn update;
    static int looked_up;
    if (!CS_ATOMIC_LOAD(&looked_up)) {
        CS_ATOMIC_STORE(&update, (cs_dtable_update_fn)dlsym(RTLD_DEFAULT, "__objc_update_dispatch_table_for_class"));
        CS_ATOMIC_STORE(&looked_up, 1);
    }
    return CS_ATOMIC_LOAD(&update);
}

IMP cs_backend_replace_implementation(Class owner, SEL sel, IMP replacement) {
    cs_replacement item = {owner, sel, replacement, NULL};
    cs_backend_replace_implementations(&item, 1);
    return item.previous;
}

static void cs_refresh_each_once(CS_UNRETAINED const Class *classes, size_t count) {
    for (size_t i = 0; i < count; i++) {
        BOOL covered = NO;
        for (size_t j = 0; j < count && !covered; j++)
            covered = (j < i && classes[j] == classes[i]) || cs_class_is_below(classes[i], classes[j]);
        if (!covered) cs_refresh_dispatch_tables(classes[i]);
    }
}

void cs_backend_defer_dispatch_refresh(BOOL defer) {
    if (!defer) {
        g_refresh_deferred = NO;
        cs_gnu_flush_pending_writes();
    }
    g_refresh_deferred = defer;
    if (defer) return;
    cs_refresh_each_once(g_refresh_pending, g_refresh_pending_count);
    free(g_refresh_pending);
    g_refresh_pending = NULL;
    g_refresh_pending_count = g_refresh_pending_capacity = 0;
}

void cs_backend_replace_implementations(cs_replacement *items, size_t count) {
    BOOL can_refresh = cs_dispatch_update_function() != NULL;
    CS_UNRETAINED Class stack_changed[64];
    CS_UNRETAINED Class *changed = count <= 64 ? stack_changed : (CS_UNRETAINED Class *)calloc(count, sizeof(Class));
    size_t changed_count = 0;
    for (size_t i = 0; i < count; i++) {
        Method method = cs_own_method(items[i].owner, items[i].sel);
        items[i].previous = method ? cs_set_implementation_without_walk(method, items[i].replacement, can_refresh) : NULL;
        if (method == NULL) continue;
        if (!cs_gnu_patch_tables(items[i].owner, items[i].sel, items[i].previous, items[i].replacement))
            changed[changed_count++] = items[i].owner;
    }
    cs_refresh_each_once(changed, changed_count);
    if (changed != stack_changed) free(changed);
}

IMP cs_backend_override_method(Class cls, SEL sel, IMP imp, const char *types) {
    Method own = cs_own_method(cls, sel);
    if (own != NULL) {
        IMP previous = cs_set_implementation_without_walk(own, imp, cs_dispatch_update_function() != NULL);
        if (!cs_gnu_patch_tables(cls, sel, previous, imp)) cs_refresh_dispatch_tables(cls);
        return previous;
    }
    Method inherited = class_getInstanceMethod(cls, sel);
    if (inherited == NULL) return NULL;
    IMP previous = method_getImplementation(inherited);
    if (!cs_backend_add_method(cls, sel, imp, types ? types : method_getTypeEncoding(inherited))) return NULL;
    return previous;
}

const char *cs_backend_selector_types(SEL sel) {
    return sel ? sel_getTypeEncoding(sel) : NULL;
}

#pragma mark - Unrecognized messages (__objc_msg_forward2)

/* How GCC libobjc reaches this hook: objc_msg_lookup finds no
 * method, +resolveInstanceMethod:/+resolveClassMethod: decline, then __objc_msg_forward2(receiver,
 * sel) is asked for an IMP, which the caller then calls exactly as it would have called the real
 * method. GNUstep installs its own forward2 (NSInvocation-based forwarding); it is kept as the
 * chained previous hook. Nothing here is cached by the runtime: every miss comes back. */

typedef IMP (*cs_forward2_fn)(CS_UNRETAINED id, SEL);

static cs_forward2_fn g_previous_forward2;
static cs_forward_decider g_forward_decider;   /* CS_ATOMIC_* */
static cs_forward_reporter g_forward_reporter; /* CS_ATOMIC_* */
static BOOL g_forward_installed;               /* written under the engine lock */

static uintptr_t g_retarget_class;              /* a Class, CS_ATOMIC_*; 0 = no retargeting */
static cs_forward_retarget_decider g_retarget_decider; /* CS_ATOMIC_* */
static cs_forward_target_fn g_retarget_target;  /* CS_ATOMIC_* */
static cs_forward_reporter g_retarget_reporter; /* CS_ATOMIC_* */

/* The object-call mark of this thread (cs_backend_object_call_begin): set around NSObject's
 * performSelector: family, consumed by the one lookup it describes. */
static __thread cs_object_call_mark t_object_call;

cs_object_call_mark cs_backend_object_call_begin(CS_UNRETAINED id receiver, SEL sel) {
    cs_object_call_mark previous = t_object_call;
    t_object_call.receiver = receiver;
    t_object_call.sel = sel;
    return previous;
}

void cs_backend_object_call_end(cs_object_call_mark previous) {
    t_object_call = previous;
}

/* True (and the mark consumed) when this lookup is the marked object call. */
static BOOL cs_gnu_take_object_call_mark(CS_UNRETAINED id receiver, SEL sel) {
    if (t_object_call.sel == NULL || t_object_call.receiver != receiver || t_object_call.sel != sel) return NO;
    t_object_call.receiver = nil;
    t_object_call.sel = NULL;
    return YES;
}

/* Called by the zero stubs below; hidden so the asm can call it directly. Messages to the
 * retarget class were answered for the retarget client, every other one for the handler. */
__attribute__((visibility("hidden"), used)) void cs_gnu_forward_report(CS_UNRETAINED id receiver, SEL sel,
                                                                       const void *caller) {
    uintptr_t retarget_class = CS_ATOMIC_LOAD(&g_retarget_class);
    cs_forward_reporter report = retarget_class != 0 && (uintptr_t)object_getClass(receiver) == retarget_class
                                     ? CS_ATOMIC_LOAD(&g_retarget_reporter)
                                     : CS_ATOMIC_LOAD(&g_forward_reporter);
    if (report) report(receiver, sel, caller);
}

/* Called by the retarget stubs at the moment of the call: reports, stores the receiver to use
 * instead in *target, and returns its implementation of `sel`. A nil target (the client changed
 * its mind since the lookup) gets the runtime's nil-receiver IMP, which returns zero. */
__attribute__((visibility("hidden"), used)) IMP cs_gnu_retarget(CS_UNRETAINED id receiver, SEL sel, const void *caller,
                                                                 CS_UNRETAINED id *target) {
    cs_forward_target_fn target_for = CS_ATOMIC_LOAD(&g_retarget_target);
    id replacement = target_for ? target_for(receiver, sel) : nil;
    cs_forward_reporter report = CS_ATOMIC_LOAD(&g_retarget_reporter);
    if (replacement != nil && report != NULL) report(receiver, sel, caller);
    *target = replacement;
    return objc_msg_lookup(replacement, sel);
}

#if defined(__x86_64__)
/* Stubs with the signature of whatever method was called. On entry rdi = self, rsi = _cmd and
 * (%rsp) = the call site. They report, then return zero in every register a caller may read for
 * a return value that fits in registers: rax and rdx (integers, pointers, small structs), xmm0
 * and xmm1 (float, double, small structs of floating fields); the x87 variant pushes 0.0 for a
 * long double. The call keeps the stack 16-byte aligned. */
__asm__(".text\n"
        ".p2align 4\n"
        ".globl cs_gnu_zero_stub\n"
        ".hidden cs_gnu_zero_stub\n"
        ".type cs_gnu_zero_stub,@function\n"
        "cs_gnu_zero_stub:\n"
        "    .cfi_startproc\n"
        "    subq $8, %rsp\n"
        "    .cfi_adjust_cfa_offset 8\n"
        "    movq 8(%rsp), %rdx\n"
        "    call cs_gnu_forward_report\n"
        "    addq $8, %rsp\n"
        "    .cfi_adjust_cfa_offset -8\n"
        "    xorl %eax, %eax\n"
        "    xorl %edx, %edx\n"
        "    xorps %xmm0, %xmm0\n"
        "    xorps %xmm1, %xmm1\n"
        "    ret\n"
        "    .cfi_endproc\n"
        ".size cs_gnu_zero_stub, .-cs_gnu_zero_stub\n"
        ".p2align 4\n"
        ".globl cs_gnu_x87_stub\n"
        ".hidden cs_gnu_x87_stub\n"
        ".type cs_gnu_x87_stub,@function\n"
        "cs_gnu_x87_stub:\n"
        "    .cfi_startproc\n"
        "    subq $8, %rsp\n"
        "    .cfi_adjust_cfa_offset 8\n"
        "    movq 8(%rsp), %rdx\n"
        "    call cs_gnu_forward_report\n"
        "    addq $8, %rsp\n"
        "    .cfi_adjust_cfa_offset -8\n"
        "    fldz\n"
        "    ret\n"
        "    .cfi_endproc\n"
        ".size cs_gnu_x87_stub, .-cs_gnu_x87_stub\n");
void cs_gnu_zero_stub(void);
void cs_gnu_x87_stub(void);

/* Retarget stubs: the same message, same arguments, sent to another receiver. Every register
 * that can carry an argument (rdi, rsi, rdx, rcx, r8, r9, rax = vector count for varargs,
 * xmm0-7) is saved, cs_gnu_retarget picks the receiver and its IMP, the registers come back with
 * the receiver replaced, and the stub jumps to the IMP, which returns straight to the call site.
 * Stack arguments are untouched: the frame is gone before the jump. The sret variant is for
 * messages whose result is returned in memory: rdi is the result buffer, self is in rsi. */
#define CS_SAVE_ARGUMENT_REGISTERS                                                                 \
    "    .cfi_startproc\n"                                                                        \
    "    pushq %rbp\n"                                                                             \
    "    .cfi_def_cfa_offset 16\n"                                                                 \
    "    .cfi_offset %rbp, -16\n"                                                                  \
    "    movq %rsp, %rbp\n"                                                                        \
    "    .cfi_def_cfa_register %rbp\n"                                                            \
    "    subq $192, %rsp\n"                                                                        \
    "    movq %rdi, 0(%rsp)\n"                                                                     \
    "    movq %rsi, 8(%rsp)\n"                                                                     \
    "    movq %rdx, 16(%rsp)\n"                                                                    \
    "    movq %rcx, 24(%rsp)\n"                                                                    \
    "    movq %r8, 32(%rsp)\n"                                                                     \
    "    movq %r9, 40(%rsp)\n"                                                                     \
    "    movq %rax, 48(%rsp)\n"                                                                    \
    "    movdqa %xmm0, 64(%rsp)\n"                                                                 \
    "    movdqa %xmm1, 80(%rsp)\n"                                                                 \
    "    movdqa %xmm2, 96(%rsp)\n"                                                                 \
    "    movdqa %xmm3, 112(%rsp)\n"                                                                \
    "    movdqa %xmm4, 128(%rsp)\n"                                                                \
    "    movdqa %xmm5, 144(%rsp)\n"                                                                \
    "    movdqa %xmm6, 160(%rsp)\n"                                                                \
    "    movdqa %xmm7, 176(%rsp)\n"
#define CS_RESTORE_ARGUMENT_REGISTERS_AND_JUMP                                                     \
    "    movq %rax, %r11\n"                                                                        \
    "    movq 0(%rsp), %rdi\n"                                                                     \
    "    movq 8(%rsp), %rsi\n"                                                                     \
    "    movq 16(%rsp), %rdx\n"                                                                    \
    "    movq 24(%rsp), %rcx\n"                                                                    \
    "    movq 32(%rsp), %r8\n"                                                                     \
    "    movq 40(%rsp), %r9\n"                                                                     \
    "    movq 48(%rsp), %rax\n"                                                                    \
    "    movdqa 64(%rsp), %xmm0\n"                                                                 \
    "    movdqa 80(%rsp), %xmm1\n"                                                                 \
    "    movdqa 96(%rsp), %xmm2\n"                                                                 \
    "    movdqa 112(%rsp), %xmm3\n"                                                                \
    "    movdqa 128(%rsp), %xmm4\n"                                                                \
    "    movdqa 144(%rsp), %xmm5\n"                                                                \
    "    movdqa 160(%rsp), %xmm6\n"                                                                \
    "    movdqa 176(%rsp), %xmm7\n"                                                                \
    "    leave\n"                                                                                  \
    "    .cfi_def_cfa %rsp, 8\n"                                                                   \
    "    jmp *%r11\n"                                                                              \
    "    .cfi_endproc\n"

/* Slot 56(%rsp) receives the new receiver; the saved self slot is overwritten with it. */
__asm__(".text\n"
        ".p2align 4\n"
        ".globl cs_gnu_retarget_stub\n"
        ".hidden cs_gnu_retarget_stub\n"
        ".type cs_gnu_retarget_stub,@function\n"
        "cs_gnu_retarget_stub:\n" CS_SAVE_ARGUMENT_REGISTERS
        "    movq 8(%rbp), %rdx\n"
        "    leaq 56(%rsp), %rcx\n"
        "    call cs_gnu_retarget\n"
        "    movq 56(%rsp), %rdi\n"
        "    movq %rdi, 0(%rsp)\n" CS_RESTORE_ARGUMENT_REGISTERS_AND_JUMP
        ".size cs_gnu_retarget_stub, .-cs_gnu_retarget_stub\n"
        ".p2align 4\n"
        ".globl cs_gnu_retarget_sret_stub\n"
        ".hidden cs_gnu_retarget_sret_stub\n"
        ".type cs_gnu_retarget_sret_stub,@function\n"
        "cs_gnu_retarget_sret_stub:\n" CS_SAVE_ARGUMENT_REGISTERS
        "    movq %rsi, %rdi\n"
        "    movq %rdx, %rsi\n"
        "    movq 8(%rbp), %rdx\n"
        "    leaq 56(%rsp), %rcx\n"
        "    call cs_gnu_retarget\n"
        "    movq 56(%rsp), %rsi\n"
        "    movq %rsi, 8(%rsp)\n" CS_RESTORE_ARGUMENT_REGISTERS_AND_JUMP
        ".size cs_gnu_retarget_sret_stub, .-cs_gnu_retarget_sret_stub\n");
void cs_gnu_retarget_stub(void);
void cs_gnu_retarget_sret_stub(void);

/* How the caller of an unrecognized message expects its result. */
typedef enum {
    CS_CALL_UNKNOWN = 0,   /* an untyped selector called directly: a struct buffer may be in rdi */
    CS_CALL_OBJECT = 1,    /* a marked object call (performSelector:): result in rax, self in rdi */
    CS_CALL_TYPED = 2,     /* the call-site types of a typed selector say it */
} cs_call_convention;

static cs_call_convention cs_gnu_convention(CS_UNRETAINED id receiver, SEL sel) {
    if (cs_gnu_take_object_call_mark(receiver, sel)) return CS_CALL_OBJECT;
    const char *types = sel_getTypeEncoding(sel);
    return types != NULL && types[0] != 0 ? CS_CALL_TYPED : CS_CALL_UNKNOWN;
}

/* True when a result of this type is returned in memory (the caller passes the buffer in rdi). */
static BOOL cs_gnu_returns_in_memory(const char *type) {
    const char *ret = objc_skip_type_qualifiers(type);
    return (ret[0] == '{' || ret[0] == '(') && objc_sizeof_type(ret) > 16;
}

/* The retarget stub for sending `sel` to `target`, from the target's own method types; NULL when
 * the caller's known convention differs from the target method's (result in memory or not). */
static IMP cs_gnu_retarget_stub_for(id target, SEL sel, cs_call_convention convention) {
    Method method = class_getInstanceMethod(object_getClass(target), sel);
    const char *types = method ? method_getTypeEncoding(method) : NULL;
    if (types == NULL) return NULL;
    BOOL target_in_memory = cs_gnu_returns_in_memory(types);
    if (convention == CS_CALL_OBJECT && target_in_memory) return NULL;
    if (convention == CS_CALL_TYPED && cs_gnu_returns_in_memory(sel_getTypeEncoding(sel)) != target_in_memory)
        return NULL;
    /* CS_CALL_UNKNOWN: the method that answers defines the convention, as it would for a
     * message that the receiver implemented. */
    return target_in_memory ? (IMP)cs_gnu_retarget_sret_stub : (IMP)cs_gnu_retarget_stub;
}

/* A struct returned in memory: the caller passes the buffer in rdi, so self and _cmd move one
 * argument along. The size comes from the call-site types of the selector it was called with
 * (only typed selectors get this stub). */
static void *cs_gnu_sret_stub(void *result, CS_UNRETAINED id self, SEL sel) {
    const char *types = sel_getTypeEncoding(sel);
    int size = types ? objc_sizeof_type(objc_skip_type_qualifiers(types)) : 0;
    if (size > 0) memset(result, 0, (size_t)size);
    cs_gnu_forward_report(self, sel, __builtin_return_address(0));
    return result;
}

/* True when an aggregate's encoding ({name=...}, (name=...)) has a long double member. */
static BOOL cs_aggregate_has_long_double(const char *type) {
    const char *p = strchr(type, '=');
    if (p == NULL) return NO;
    for (p++; *p; p++) {
        if (*p == '"') { /* a quoted field name */
            p = strchr(p + 1, '"');
            if (p == NULL) return NO;
        } else if (*p == 'D') {
            return YES;
        }
    }
    return NO;
}

/* The zero stub for a message sent with `sel` under `convention`; NULL = not covered, which
 * includes every call whose convention is unknown: a zero stub guessing "result in registers"
 * for a caller that passed a struct buffer would read the buffer as the receiver. */
static IMP cs_gnu_stub_for(SEL sel, cs_call_convention convention) {
    if (convention == CS_CALL_OBJECT) return (IMP)cs_gnu_zero_stub;
    if (convention != CS_CALL_TYPED) return NULL;
    const char *ret = objc_skip_type_qualifiers(sel_getTypeEncoding(sel));
    switch (ret[0]) {
    case 'D': return (IMP)cs_gnu_x87_stub;
    case 'j': return ret[1] == 'D' ? NULL : (IMP)cs_gnu_zero_stub;
    case '!': return NULL; /* vectors: wider registers than the stub clears */
    case '{':
    case '(':
        if (objc_sizeof_type(ret) > 16) return (IMP)cs_gnu_sret_stub;
        return cs_aggregate_has_long_double(ret) ? NULL : (IMP)cs_gnu_zero_stub;
    default: return (IMP)cs_gnu_zero_stub;
    }
}
#else
typedef int cs_call_convention;
static cs_call_convention cs_gnu_convention(CS_UNRETAINED id receiver, SEL sel) {
    (void)cs_gnu_take_object_call_mark(receiver, sel);
    return 0;
}
static IMP cs_gnu_stub_for(SEL sel, cs_call_convention convention) {
    (void)sel;
    (void)convention;
    return NULL; /* stubs exist for x86_64 only */
}
static IMP cs_gnu_retarget_stub_for(id target, SEL sel, cs_call_convention convention) {
    (void)target;
    (void)sel;
    (void)convention;
    return NULL;
}
#endif

/* The forward hook. Nothing here messages the receiver. */
static IMP cs_gnu_forward2(CS_UNRETAINED id receiver, SEL sel) {
    if (receiver != nil) {
        cs_call_convention convention = cs_gnu_convention(receiver, sel);
        uintptr_t retarget_class = CS_ATOMIC_LOAD(&g_retarget_class);
        if (retarget_class != 0 && (uintptr_t)object_getClass(receiver) == retarget_class) {
            /* The retarget client's decision is final for its class. */
            IMP zero_stub = cs_gnu_stub_for(sel, convention);
            cs_forward_retarget_decider decide = CS_ATOMIC_LOAD(&g_retarget_decider);
            cs_forward_decision decision = decide ? decide(receiver, sel, zero_stub != NULL) : CS_FORWARD_DECLINE;
            IMP stub = NULL;
            if (decision == CS_FORWARD_RETARGET) {
                cs_forward_target_fn target_for = CS_ATOMIC_LOAD(&g_retarget_target);
                id target = target_for ? target_for(receiver, sel) : nil;
                stub = target ? cs_gnu_retarget_stub_for(target, sel, convention) : NULL;
            } else if (decision == CS_FORWARD_STUB) {
                stub = zero_stub;
            }
            if (stub != NULL) return stub;
        } else {
            IMP stub = cs_gnu_stub_for(sel, convention);
            cs_forward_decider decide = CS_ATOMIC_LOAD(&g_forward_decider);
            if (stub != NULL && decide != NULL && decide(receiver, sel) == CS_FORWARD_STUB) return stub;
        }
    }
    cs_forward2_fn previous = g_previous_forward2;
    return previous ? previous(receiver, sel) : NULL;
}

static void cs_gnu_hook_forward2(void) {
    if (g_forward_installed) return;
    if (__objc_msg_forward2 != cs_gnu_forward2) g_previous_forward2 = __objc_msg_forward2;
    __objc_msg_forward2 = cs_gnu_forward2;
    g_forward_installed = YES;
}

/* Unhooks once neither client uses the hook. Restores only when nobody chained after us;
 * otherwise the hook stays and declines everything. */
static void cs_gnu_unhook_forward2_if_unused(void) {
    if (!g_forward_installed || CS_ATOMIC_LOAD(&g_forward_decider) != NULL || CS_ATOMIC_LOAD(&g_retarget_class) != 0)
        return;
    if (__objc_msg_forward2 == cs_gnu_forward2) {
        __objc_msg_forward2 = g_previous_forward2;
        g_forward_installed = NO;
    }
}

const char *cs_backend_install_forward_handler(cs_forward_decider decide, cs_forward_reporter report) {
#if !defined(__x86_64__)
    return "no unrecognized-selector stubs for this architecture";
#endif
    CS_ATOMIC_STORE(&g_forward_reporter, report);
    CS_ATOMIC_STORE(&g_forward_decider, decide);
    cs_gnu_hook_forward2();
    return NULL;
}

void cs_backend_uninstall_forward_handler(void) {
    CS_ATOMIC_STORE(&g_forward_decider, (cs_forward_decider)NULL);
    cs_gnu_unhook_forward2_if_unused();
}

const char *cs_backend_install_forward_retarget(Class cls, cs_forward_retarget_decider decide,
                                                cs_forward_target_fn target, cs_forward_reporter report) {
#if !defined(__x86_64__)
    return "no retarget stubs for this architecture";
#endif
    CS_ATOMIC_STORE(&g_retarget_reporter, report);
    CS_ATOMIC_STORE(&g_retarget_target, target);
    CS_ATOMIC_STORE(&g_retarget_decider, decide);
    CS_ATOMIC_STORE(&g_retarget_class, (uintptr_t)cls);
    cs_gnu_hook_forward2();
    return NULL;
}

void cs_backend_uninstall_forward_retarget(void) {
    CS_ATOMIC_STORE(&g_retarget_class, (uintptr_t)0);
    cs_gnu_unhook_forward2_if_unused();
}

#define CS_MAX_QUERY_ROOTS 64

typedef struct {
    const void *selector_id;
    size_t query;
} cs_query_by_selector;

static int cs_compare_query_by_selector(const void *a, const void *b) {
    uintptr_t x = (uintptr_t)((const cs_query_by_selector *)a)->selector_id;
    uintptr_t y = (uintptr_t)((const cs_query_by_selector *)b)->selector_id;
    return x < y ? -1 : x > y ? 1 : 0;
}

/* One owner search: the queries, their distinct roots (root_of[q]: query q's), and the queries
 * sorted by selector id, so each method costs one binary search whatever the number of queries. */
typedef struct {
    const cs_owner_query *queries;
    size_t count;
    const size_t *root_of;
    const Class *roots;
    size_t root_count;
    const cs_query_by_selector *by_selector;
    uint64_t instance_roots, class_roots; /* roots with an instance-side / a class-side query */
    const struct cs_root_set *root_set;   /* the roots, for cs_roots_above */
    uint64_t selector_filter[4];          /* bit cs_selector_bit(id) set for every query's selector */
    cs_owner_visitor visit;
    void *context;
} cs_owner_search;

/* One of 256 bits for a selector id: most methods of a class are no query's, and the filter
 * tells so without the binary search. */
static unsigned cs_selector_bit(const void *id) {
    return (unsigned)(((uintptr_t)id >> 3) * 0x9E3779B97F4A7C15ull >> 56);
}

/* Matches one side's own methods (instance or class) against the queries whose root is an
 * ancestor (bit set in `roots_above`) and that ask about this side. */
static void cs_visit_side(Class target, BOOL class_side, uint64_t roots_above, const cs_owner_search *search) {
    unsigned int method_count = 0;
    Method *methods = class_copyMethodList(target, &method_count);
    for (unsigned int m = 0; m < method_count; m++) {
        const void *id = cs_gnu_selector_id(method_getName(methods[m]));
        unsigned bit = cs_selector_bit(id);
        if (!(search->selector_filter[bit >> 6] & (UINT64_C(1) << (bit & 63)))) continue;
        size_t low = 0, high = search->count;
        while (low < high) {
            size_t middle = low + (high - low) / 2;
            if ((uintptr_t)search->by_selector[middle].selector_id < (uintptr_t)id) low = middle + 1;
            else high = middle;
        }
        for (size_t k = low; k < search->count && search->by_selector[k].selector_id == id; k++) {
            size_t q = search->by_selector[k].query;
            if (search->queries[q].class_side != class_side || !(roots_above & (UINT64_C(1) << search->root_of[q])))
                continue;
            search->visit(search->context, q, target, method_getImplementation(methods[m]));
        }
    }
    free(methods);
}

static size_t g_class_list_copies; /* CS_ATOMIC_* */

size_t cs_backend_class_list_copies(void) {
    return CS_ATOMIC_LOAD(&g_class_list_copies);
}

/* The queries' distinct roots, at most CS_MAX_QUERY_ROOTS (root_of[q]: the index of query q's
 * root); returns how many queries fit, the rest being for another pass. */
static size_t cs_index_roots(const cs_owner_query *queries, size_t count, Class *roots, size_t *root_count,
                             size_t *root_of) {
    *root_count = 0;
    for (size_t q = 0; q < count; q++) {
        size_t r = 0;
        while (r < *root_count && roots[r] != queries[q].root) r++;
        if (r == *root_count) {
            if (*root_count == CS_MAX_QUERY_ROOTS) return q;
            roots[(*root_count)++] = queries[q].root;
        }
        root_of[q] = r;
    }
    return count;
}

/* The queries' roots as an open-addressing set on the class pointer (CS_ROOT_SLOTS, at least
 * twice CS_MAX_QUERY_ROOTS): a class's ancestors cost one probe each, whatever the root count. */
#define CS_ROOT_SLOTS 128
typedef struct cs_root_set {
    CS_UNRETAINED Class classes[CS_ROOT_SLOTS];
    uint8_t index[CS_ROOT_SLOTS]; /* the root's index in search->roots */
} cs_root_set;

static size_t cs_root_slot(const cs_root_set *set, Class cls) {
    size_t slot = (size_t)(((uintptr_t)(__bridge const void *)cls >> 4) * 0x9E3779B97F4A7C15ull >> 57) & (CS_ROOT_SLOTS - 1);
    while (set->classes[slot] != Nil && set->classes[slot] != cls) slot = (slot + 1) & (CS_ROOT_SLOTS - 1);
    return slot;
}

static void cs_root_set_fill(cs_root_set *set, const Class *roots, size_t root_count) {
    memset(set, 0, sizeof *set);
    for (size_t r = 0; r < root_count; r++) {
        size_t slot = cs_root_slot(set, roots[r]);
        set->classes[slot] = roots[r];
        set->index[slot] = (uint8_t)r;
    }
}

/* The roots that are `cls` or one of its superclasses, as bits of search->roots. */
static uint64_t cs_roots_above(Class cls, const cs_owner_search *search) {
    uint64_t above = 0;
    for (Class c = cls; c != Nil; c = class_getSuperclass(c)) {
        size_t slot = cs_root_slot(search->root_set, c);
        if (search->root_set->classes[slot] == c) above |= UINT64_C(1) << search->root_set->index[slot];
    }
    return above;
}

/* Visits the owners among `cls` (and its metaclass) for the queries whose root is `cls` or one
 * of its superclasses. */
static void cs_visit_class(Class cls, const cs_owner_search *search) {
    uint64_t roots_above = cs_roots_above(cls, search);
    if (roots_above & search->instance_roots) cs_visit_side(cls, NO, roots_above, search);
    if (roots_above & search->class_roots) cs_visit_side(object_getClass((id)cls), YES, roots_above, search);
}

/* Answers the queries over `classes` (NULL: a copy of the whole class list, counted in
 * g_class_list_copies), plus, with `prefixes`, the classes of the class list whose name starts
 * with one of them and that are not among `classes`. */
static void cs_visit_classes(const cs_owner_query *queries, size_t count, const Class *classes, size_t class_count,
                             const char *const *prefixes, size_t prefix_count, cs_owner_visitor visit, void *context) {
    if (count == 0) return;
    CS_UNRETAINED Class roots[CS_MAX_QUERY_ROOTS];
    size_t root_count = 0;
    size_t *root_of = calloc(count, sizeof(size_t));
    cs_query_by_selector *by_selector = calloc(count, sizeof *by_selector);
    if (root_of == NULL || by_selector == NULL) {
        free(root_of);
        free(by_selector);
        return;
    }
    size_t answered = cs_index_roots(queries, count, roots, &root_count, root_of);
    if (answered < count) /* more distinct roots than one mask holds: the rest in another pass */
        cs_visit_classes(queries + answered, count - answered, classes, class_count, prefixes, prefix_count, visit,
                         context);
    for (size_t q = 0; q < answered; q++) by_selector[q] = (cs_query_by_selector){cs_gnu_selector_id(queries[q].sel), q};
    qsort(by_selector, answered, sizeof *by_selector, cs_compare_query_by_selector);
    uint64_t instance_roots = 0, class_roots = 0;
    for (size_t q = 0; q < answered; q++) {
        if (queries[q].class_side) class_roots |= UINT64_C(1) << root_of[q];
        else instance_roots |= UINT64_C(1) << root_of[q];
    }
    cs_root_set root_set;
    cs_root_set_fill(&root_set, roots, root_count);
    cs_owner_search search = {queries,        answered,    root_of,   roots,         root_count, by_selector,
                              instance_roots, class_roots, &root_set, {0, 0, 0, 0}, visit,      context};
    for (size_t q = 0; q < answered; q++) {
        unsigned bit = cs_selector_bit(by_selector[q].selector_id);
        search.selector_filter[bit >> 6] |= UINT64_C(1) << (bit & 63);
    }
    for (size_t i = 0; classes != NULL && i < class_count; i++) cs_visit_class(classes[i], &search);
    if (classes == NULL || prefix_count > 0) {
        CS_ATOMIC_FETCH_ADD(&g_class_list_copies, (size_t)1);
        int total = objc_getClassList(NULL, 0);
        CS_UNRETAINED Class *all = total > 0 ? (CS_UNRETAINED Class *)calloc((size_t)total + 16, sizeof(Class)) : NULL;
        if (all) total = objc_getClassList(all, total + 16);
        for (int i = 0; all && i < total; i++) {
            if (classes != NULL) {
                const char *name = class_getName(all[i]);
                BOOL named = NO;
                for (size_t p = 0; p < prefix_count && !named; p++)
                    named = prefixes[p] != NULL && strncmp(name, prefixes[p], strlen(prefixes[p])) == 0;
                if (!named) continue;
                BOOL listed = NO;
                for (size_t k = 0; k < class_count && !listed; k++) listed = classes[k] == all[i];
                if (listed) continue;
            }
            cs_visit_class(all[i], &search);
        }
        free(all);
    }
    free(by_selector);
    free(root_of);
}

static CS_UNRETAINED const Class *cs_system_classes(size_t *count);

void cs_backend_visit_owners(const cs_owner_query *queries, size_t count, const char *const *app_prefixes,
                             size_t app_prefix_count, cs_owner_visitor visit, void *context) {
    size_t class_count = 0;
    const Class *classes = cs_system_classes(&class_count);
    static const Class kNone[1] = {Nil};
    cs_visit_classes(queries, count, classes ? classes : kNone, classes ? class_count : 0, app_prefixes,
                     app_prefix_count, visit, context);
}

void cs_backend_visit_method_copies(const cs_owner_query *queries, size_t count, cs_owner_visitor visit,
                                    void *context) {
    cs_visit_classes(queries, count, NULL, 0, NULL, 0, visit, context);
}

/* The system's images: each entry spans the PT_LOAD segments of one loaded object that holds an
 * anchor (a class or function GNUstep or the runtime defines). Found once; these images are
 * never unloaded. */
#include <link.h>
#include <pthread.h>

#define CS_MAX_SYSTEM_IMAGES 4
static uintptr_t g_system_image_low[CS_MAX_SYSTEM_IMAGES], g_system_image_high[CS_MAX_SYSTEM_IMAGES];
/* Each system image's load bias and dynamic section (NULL: none), for cs_system_classes. */
static uintptr_t g_system_image_bias[CS_MAX_SYSTEM_IMAGES];
static const ElfW(Dyn) *g_system_image_dynamic[CS_MAX_SYSTEM_IMAGES];
static size_t g_system_image_count;
static pthread_once_t g_system_images_once = PTHREAD_ONCE_INIT;

typedef struct {
    uintptr_t anchors[CS_MAX_SYSTEM_IMAGES];
    size_t anchor_count;
} cs_system_anchors;

static int cs_collect_system_image(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    const cs_system_anchors *anchors = data;
    uintptr_t low = UINTPTR_MAX, high = 0;
    const ElfW(Dyn) *dynamic = NULL;
    for (int p = 0; p < info->dlpi_phnum; p++) {
        if (info->dlpi_phdr[p].p_type == PT_DYNAMIC)
            dynamic = (const ElfW(Dyn) *)((uintptr_t)info->dlpi_addr + (uintptr_t)info->dlpi_phdr[p].p_vaddr);
        if (info->dlpi_phdr[p].p_type != PT_LOAD) continue;
        uintptr_t start = (uintptr_t)info->dlpi_addr + (uintptr_t)info->dlpi_phdr[p].p_vaddr;
        uintptr_t end = start + (uintptr_t)info->dlpi_phdr[p].p_memsz;
        if (start < low) low = start;
        if (end > high) high = end;
    }
    for (size_t a = 0; a < anchors->anchor_count; a++) {
        if (anchors->anchors[a] < low || anchors->anchors[a] >= high) continue;
        if (g_system_image_count < CS_MAX_SYSTEM_IMAGES) {
            g_system_image_low[g_system_image_count] = low;
            g_system_image_high[g_system_image_count] = high;
            g_system_image_bias[g_system_image_count] = (uintptr_t)info->dlpi_addr;
            g_system_image_dynamic[g_system_image_count] = dynamic;
            g_system_image_count++;
        }
        break;
    }
    return 0;
}

static void cs_find_system_images(void) {
    cs_system_anchors anchors = {{0}, 0};
    anchors.anchors[anchors.anchor_count++] = (uintptr_t)CS_POINTER(CS_CLASS(NSObject)); /* GNUstep Base */
    anchors.anchors[anchors.anchor_count++] = (uintptr_t)&objc_msg_lookup;            /* libobjc */
    Class gui = objc_lookUpClass("NSApplication");                                      /* GNUstep GUI */
    if (gui != Nil) anchors.anchors[anchors.anchor_count++] = (uintptr_t)CS_POINTER(gui);
    dl_iterate_phdr(cs_collect_system_image, &anchors);
}

/* An address from a dynamic section entry: glibc relocates these entries in place when it
 * loads the image, other loaders leave them relative to the load bias. */
static uintptr_t cs_dynamic_address(uintptr_t bias, ElfW(Addr) value) {
    return (uintptr_t)value < bias ? bias + (uintptr_t)value : (uintptr_t)value;
}

/* The number of dynamic symbols, from DT_HASH's chain count or by walking DT_GNU_HASH's chains
 * to the end of the last one. */
static size_t cs_dynamic_symbol_count(const uint32_t *sysv_hash, const uint32_t *gnu_hash) {
    if (sysv_hash != NULL) return sysv_hash[1];
    if (gnu_hash == NULL) return 0;
    uint32_t bucket_count = gnu_hash[0], first = gnu_hash[1], bloom_words = gnu_hash[2];
    const uint32_t *buckets = (const uint32_t *)((const ElfW(Addr) *)(gnu_hash + 4) + bloom_words);
    const uint32_t *chains = buckets + bucket_count;
    uint32_t last = 0;
    for (uint32_t b = 0; b < bucket_count; b++)
        if (buckets[b] > last) last = buckets[b];
    if (last < first) return first;
    while ((chains[last - first] & 1u) == 0) last++;
    return (size_t)last + 1;
}

/* Appends the classes that image `i` defines: GCC emits an exported `__objc_class_name_<Name>`
 * symbol for every class a compilation unit implements, so the image's dynamic symbol table
 * names them all (checked against the class list: all 522 of GNUstep Base 1.28's). */
static void cs_collect_image_classes(size_t i, CS_UNRETAINED Class **classes, size_t *count, size_t *capacity) {
    static const char kPrefix[] = "__objc_class_name_";
    const ElfW(Dyn) *dynamic = g_system_image_dynamic[i];
    uintptr_t bias = g_system_image_bias[i];
    const ElfW(Sym) *symbols = NULL;
    const char *strings = NULL;
    const uint32_t *sysv_hash = NULL, *gnu_hash = NULL;
    for (const ElfW(Dyn) *d = dynamic; d != NULL && d->d_tag != DT_NULL; d++) {
        if (d->d_tag == DT_SYMTAB) symbols = (const ElfW(Sym) *)cs_dynamic_address(bias, d->d_un.d_ptr);
        else if (d->d_tag == DT_STRTAB) strings = (const char *)cs_dynamic_address(bias, d->d_un.d_ptr);
        else if (d->d_tag == DT_HASH) sysv_hash = (const uint32_t *)cs_dynamic_address(bias, d->d_un.d_ptr);
        else if (d->d_tag == DT_GNU_HASH) gnu_hash = (const uint32_t *)cs_dynamic_address(bias, d->d_un.d_ptr);
    }
    if (symbols == NULL || strings == NULL) return;
    size_t symbol_count = cs_dynamic_symbol_count(sysv_hash, gnu_hash);
    for (size_t s = 0; s < symbol_count; s++) {
        if (symbols[s].st_shndx == SHN_UNDEF) continue;
        const char *name = strings + symbols[s].st_name;
        if (strncmp(name, kPrefix, sizeof kPrefix - 1) != 0) continue;
        Class cls = objc_lookUpClass(name + sizeof kPrefix - 1);
        if (cls == Nil) continue;
        if (*count == *capacity) {
            size_t grown_capacity = *capacity ? *capacity * 2 : 1024;
            CS_UNRETAINED Class *grown = (CS_UNRETAINED Class *)realloc((void *)*classes, grown_capacity * sizeof(Class));
            if (grown == NULL) return;
            *classes = grown;
            *capacity = grown_capacity;
        }
        (*classes)[(*count)++] = cls;
    }
}

static CS_UNRETAINED Class *g_system_classes;
static size_t g_system_class_count;
static pthread_once_t g_system_classes_once = PTHREAD_ONCE_INIT;

static void cs_find_system_classes(void) {
    pthread_once(&g_system_images_once, cs_find_system_images);
    size_t capacity = 0;
    for (size_t i = 0; i < g_system_image_count; i++)
        cs_collect_image_classes(i, &g_system_classes, &g_system_class_count, &capacity);
}

/* The classes the system's images define (GNUstep Base, libobjc, GNUstep GUI when loaded),
 * found once from their dynamic symbols: the cost does not grow with the app's classes. Classes
 * made at run time are not among them. */
static CS_UNRETAINED const Class *cs_system_classes(size_t *count) {
    pthread_once(&g_system_classes_once, cs_find_system_classes);
    *count = g_system_class_count;
    return g_system_classes;
}

BOOL cs_backend_implementation_is_system(IMP implementation) {
    pthread_once(&g_system_images_once, cs_find_system_images);
    uintptr_t address = (uintptr_t)implementation;
    for (size_t i = 0; i < g_system_image_count; i++)
        if (address >= g_system_image_low[i] && address < g_system_image_high[i]) return YES;
    return NO;
}
#endif

SEL cs_backend_selector(const char *name) {
    return sel_registerName(name);
}

BOOL cs_backend_is_class_object(CS_UNRETAINED id receiver) {
    return receiver != nil && class_isMetaClass(object_getClass(receiver));
}

BOOL cs_backend_class_is_system(Class cls) {
    for (Class c = cls; c != Nil; c = class_getSuperclass(c)) {
        Dl_info info;
        if (dladdr(CS_POINTER(c), &info) != 0 && info.dli_fname != NULL)
            return cs_address_is_in_system_image((uintptr_t)c) ? YES : NO;
    }
    return YES;
}

void cs_backend_end_uncaught_exception(const char *name, const char *reason) {
    fprintf(stderr, "Uncaught exception %s, reason: %s\n", name ? name : "(unnamed)", reason ? reason : "(none)");
    fflush(stderr);
    abort();
}
