#import <Foundation/Foundation.h>
#include <objc/runtime.h>
typedef struct { Class isa, super_class; const char *name; long version; unsigned long info; long instance_size;
  void *ivars; void *methods; void *dtable; Class subclass_list, sibling_class; } L;
typedef struct { void **buckets; void *empty; void *version; short ref_count; void *is_copy_of; size_t capacity; } SA;
int main(void) { setvbuf(stdout, NULL, _IONBF, 0);
  @autoreleasepool {
  [NSArray array];
  SA *a = ((L*)[NSObject class])->dtable;
  SA *m = ((L*)object_getClass([NSObject class]))->dtable;
  SA *arr = ((L*)object_getClass([NSArray array]))->dtable;
  printf("NSObject cap=%zu ref=%d copy_of=%p | meta cap=%zu ref=%d | array cap=%zu ref=%d copyof==root %d\n", a->capacity, a->ref_count, a->is_copy_of, m->capacity, m->ref_count, arr->capacity, arr->ref_count, arr->is_copy_of == a);
  const char *names[] = {"self", "removeObserver:forKeyPath:context:", "removeObserver:forKeyPath:", "objectAtIndex:"};
  for (int i = 0; i < 4; i++) printf("%s id=%zu\n", names[i], (size_t)*(void**)sel_registerName(names[i]));
  SEL f = sel_registerName("brandNewSelectorXYZ"); [NSObject class]; printf("NSObject cap=%zu\n", a->capacity); printf("fresh id=%zu\n", (size_t)*(void**)f);
  }
  return 0; }
