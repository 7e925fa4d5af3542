/*
 * CSBackend_Owners.m — the runtime-neutral part of owner discovery: cs_backend_find_owners() for
 * one (root, selector) question over every class, through each runtime's cs_backend_visit_method_copies().
 */
#import "CSBackend.h"

typedef struct {
    CS_UNRETAINED Class *out;
    size_t capacity;
    size_t found;
} cs_owner_collector;

static void cs_collect_owner(void *context, size_t query, Class owner, IMP implementation) {
    (void)query;
    (void)implementation;
    cs_owner_collector *collector = context;
    if (collector->found < collector->capacity) collector->out[collector->found] = owner;
    collector->found++;
}

size_t cs_backend_find_owners(Class root, SEL sel, BOOL class_side, Class *out, size_t capacity) {
    cs_owner_query query = {root, sel, class_side};
    cs_owner_collector collector = {out, capacity, 0};
    cs_backend_visit_method_copies(&query, 1, cs_collect_owner, &collector);
    return collector.found;
}
