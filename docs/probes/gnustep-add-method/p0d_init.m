#import <Foundation/Foundation.h>
#include <objc/runtime.h>
#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>
typedef struct { Class isa, super_class; const char *name; long version; unsigned long info; long instance_size;
  void *ivars; void *methods; void *dtable; Class subclass_list, sibling_class; } L;
struct m { SEL name; const char *types; IMP imp; };
struct ml { struct ml *next; int count; struct m list[1]; };
static volatile int in_init, release_init;
@interface Slow : NSObject @end
@implementation Slow
+ (void)initialize { if (self == [Slow class]) { in_init = 1; while (!release_init) usleep(1000); } }
- (int)other { return 1; }
@end
static int added(id s, SEL c) { return 42; }
static void (*g_put)(void*, size_t, void*); static void *g_un; static void (*g_update)(Class); static size_t g_idx;
static void walk(Class c) { L *l = (L*)c; if (l->dtable == g_un) { g_update(c); return; } g_put(l->dtable, g_idx, (void*)added); for (Class s = l->subclass_list; s; s = ((L*)s)->sibling_class) walk(s); }
static void *starter(void *x) { [Slow new]; return NULL; }
@interface T : NSObject @end @implementation T - (void)run:(id)x { } @end
int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0); @autoreleasepool {
  int *alive = dlsym(RTLD_DEFAULT, "__objc_runtime_threads_alive");
  printf("threads_alive at start=%d\n", *alive);
  [NSThread detachNewThreadSelector:@selector(run:) toTarget:[T new] withObject:nil];
  usleep(100000);
  printf("threads_alive after NSThread=%d multi=%d\n", *alive, [NSThread isMultiThreaded]);
  void (*put)(void*, size_t, void*) = dlsym(RTLD_DEFAULT, "sarray_at_put_safe");
  void **mutex = dlsym(RTLD_DEFAULT, "__objc_runtime_mutex");
  void **uninst = dlsym(RTLD_DEFAULT, "__objc_uninstalled_dtable");
  int (*lock)(void*) = dlsym(RTLD_DEFAULT, "objc_mutex_lock");
  int (*unlock)(void*) = dlsym(RTLD_DEFAULT, "objc_mutex_unlock");
  void (*update)(Class) = dlsym(RTLD_DEFAULT, "__objc_update_dispatch_table_for_class");
  pthread_t t; pthread_create(&t, NULL, starter, NULL);
  while (!in_init) usleep(1000);
  Class slow = objc_getClass("Slow");
  printf("Slow uninstalled during +initialize=%d\n", ((L*)slow)->dtable == *uninst);
  { int (*trylock)(void*) = dlsym(RTLD_DEFAULT, "objc_mutex_trylock"); printf("trylock during +initialize on another thread: %d (0 = acquired)\n", trylock(*mutex)); fflush(stdout);  }
  release_init = 1; usleep(200000);
  SEL sel = sel_registerTypedName("probeRoot", "i@:");
  struct ml *list = calloc(1, sizeof *list);
  list->count = 1; list->list[0].name = sel; list->list[0].types = "i@:"; list->list[0].imp = (IMP)added;
  L *root = (L*)[NSObject class];
  lock(*mutex);
  list->next = root->methods; root->methods = list;
  /* only root table + uninstalled refresh of Slow; other installed subclasses intentionally walked */
  g_put=put; g_un=*uninst; g_update=update; g_idx=(size_t)*(void**)sel; walk((Class)root);
  unlock(*mutex);
  release_init = 1; pthread_join(t, NULL);
  printf("Slow answers added: %d (want 42)\n", [(id)[Slow new] probeRoot]);
  printf("NSArray answers added: %d\n", [(id)[NSArray array] probeRoot]);
  }
  return 0;
}
