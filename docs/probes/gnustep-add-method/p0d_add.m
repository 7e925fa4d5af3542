#import <Foundation/Foundation.h>
#include <objc/runtime.h>
#include <dlfcn.h>
#include <pthread.h>
typedef struct { Class isa, super_class; const char *name; long version; unsigned long info; long instance_size;
  void *ivars; void *methods; void *dtable; Class subclass_list, sibling_class; } L;
struct m { SEL name; const char *types; IMP imp; };
struct ml { struct ml *next; int count; struct m list[1]; };
@interface Base : NSObject @end @implementation Base @end
@interface Sub : Base @end @implementation Sub @end
@interface Own : Base - (int)probeSel; @end @implementation Own - (int)probeSel { return 7; } @end
@interface Never : Base @end @implementation Never @end
static int added(id s, SEL c) { return 42; }
int main(void) {
  @autoreleasepool {
  void (*put)(void*, size_t, void*) = dlsym(RTLD_DEFAULT, "sarray_at_put_safe");
  void **mutex = dlsym(RTLD_DEFAULT, "__objc_runtime_mutex");
  void **uninst = dlsym(RTLD_DEFAULT, "__objc_uninstalled_dtable");
  int (*lock)(void*) = dlsym(RTLD_DEFAULT, "objc_mutex_lock");
  int (*unlock)(void*) = dlsym(RTLD_DEFAULT, "objc_mutex_unlock");
  void (*update)(Class) = dlsym(RTLD_DEFAULT, "__objc_update_dispatch_table_for_class");
  [Sub new]; [Own new]; [Base new];
  SEL sel = sel_registerTypedName("probeSel", "i@:");
  printf("Own methods list before: %p; Never dtable uninstalled=%d\n", ((L*)Own.class)->methods, ((L*)objc_getClass("Never"))->dtable == *uninst);
  /* Add to Base in place */
  struct ml *list = calloc(1, sizeof *list);
  list->count = 1; list->list[0].name = sel; list->list[0].types = "i@:"; list->list[0].imp = (IMP)added;
  L *b = (L*)objc_getClass("Base");
  lock(*mutex);
  list->next = b->methods;
  __atomic_store_n(&b->methods, list, __ATOMIC_RELEASE);
  size_t idx = (size_t)*(void**)sel;
  put(b->dtable, idx, (void*)added);
  put(((L*)objc_getClass("Sub"))->dtable, idx, (void*)added);
  Class nv = objc_getClass("Never");
  if (((L*)nv)->dtable == *uninst) update(nv);
  unlock(*mutex);
  printf("Never still uninstalled after update: %d\n", ((L*)nv)->dtable == *uninst);
  printf("Base: %d Sub: %d Own: %d Never: %d\n", [(id)[Base new] probeSel], [(id)[Sub new] probeSel], [[Own new] probeSel], [(id)[Never new] probeSel]);
  printf("respondsToSelector Base=%d class_getInstanceMethod(Sub)=%p imp=%p added=%p\n", [Base instancesRespondToSelector:sel], class_getInstanceMethod([Sub class], sel), method_getImplementation(class_getInstanceMethod([Sub class], sel)), added);
  unsigned n; Method *ms = class_copyMethodList([Base class], &n); int found=0; for (unsigned i=0;i<n;i++) if (sel_isEqual(method_getName(ms[i]), sel)) found=1; printf("copyMethodList found=%d n=%u\n", found, n);
  printf("method types=%s\n", method_getTypeEncoding(class_getInstanceMethod([Base class], sel)));
  /* A later rebuild keeps it */
  update([Base class]);
  printf("after rebuild Sub: %d Own: %d\n", [(id)[Sub new] probeSel], [[Own new] probeSel]);
  /* class_addMethod now refuses (already defined) */
  printf("class_addMethod again: %d\n", class_addMethod([Base class], sel, (IMP)added, "i@:"));
  /* meta: root metaclass subclass links */
  L *rootmeta = (L*)object_getClass([NSObject class]);
  printf("root meta super=%s sub_list first=%s; NSObject subclass_list contains meta? ", rootmeta->super_class ? class_getName(rootmeta->super_class) : "nil", rootmeta->subclass_list ? class_getName(rootmeta->subclass_list) : "nil");
  int has = 0; for (Class c = ((L*)[NSObject class])->subclass_list; c; c = ((L*)c)->sibling_class) if (c == (Class)rootmeta) has = 1;
  printf("%d\n", has);
  }
  return 0;
}
