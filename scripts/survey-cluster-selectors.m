/* survey-cluster-selectors.m — one-off survey (not part of CI): every selector
 * with arguments of the cluster classes, probed with a legal call and with one argument made a misuse
 * (nil object, index 1000, range {1,1000}), each call in a forked child. Prints the selectors whose
 * misuse throws or crashes while the legal call does not. Build (GNUstep):
 *   clang -fobjc-runtime=gcc $(gnustep-config --objc-flags) scripts/survey-cluster-selectors.m \
 *         -o /tmp/survey $(gnustep-config --base-libs) && /tmp/survey */
#import <Foundation/Foundation.h>
#include <objc/runtime.h>
#include <sys/wait.h>
#include <unistd.h>
#include <signal.h>
#include <fcntl.h>

static id receiverFor(NSString *cls) {
  NSDictionary *attrs = [NSDictionary dictionaryWithObject:@"v" forKey:@"k"];
  if ([cls isEqual:@"NSArray"]) return [NSArray arrayWithObjects:@"a", @"b", nil];
  if ([cls isEqual:@"NSMutableArray"]) return [NSMutableArray arrayWithObjects:@"a", @"b", nil];
  if ([cls isEqual:@"NSDictionary"]) return [NSDictionary dictionaryWithObject:@"1" forKey:@"a"];
  if ([cls isEqual:@"NSMutableDictionary"]) return [NSMutableDictionary dictionaryWithObject:@"1" forKey:@"a"];
  if ([cls isEqual:@"NSSet"]) return [NSSet setWithObjects:@"a", @"b", nil];
  if ([cls isEqual:@"NSMutableSet"]) return [NSMutableSet setWithObjects:@"a", @"b", nil];
  if ([cls isEqual:@"NSOrderedSet"]) return [NSOrderedSet orderedSetWithObjects:@"a", @"b", nil];
  if ([cls isEqual:@"NSMutableOrderedSet"]) return [NSMutableOrderedSet orderedSetWithObjects:@"a", @"b", nil];
  if ([cls isEqual:@"NSData"]) return [NSData dataWithBytes:"ab" length:2];
  if ([cls isEqual:@"NSMutableData"]) return [NSMutableData dataWithBytes:"ab" length:2];
  if ([cls isEqual:@"NSString"]) return [NSString stringWithFormat:@"%s", "ab"];
  if ([cls isEqual:@"NSMutableString"]) return [NSMutableString stringWithString:@"ab"];
  if ([cls isEqual:@"NSAttributedString"]) return [[NSAttributedString alloc] initWithString:@"ab" attributes:attrs];
  if ([cls isEqual:@"NSMutableAttributedString"]) return [[NSMutableAttributedString alloc] initWithString:@"ab" attributes:attrs];
  return nil;
}

static id legalObjectFor(NSString *keyword) {
  NSString *k = [keyword lowercaseString];
  if ([k rangeOfString:@"index"].location != NSNotFound && [k rangeOfString:@"indexes"].location != NSNotFound) return [NSIndexSet indexSetWithIndex:0];
  if ([k rangeOfString:@"array"].location != NSNotFound || [k rangeOfString:@"objects"].location != NSNotFound) return [NSArray arrayWithObject:@"a"];
  if ([k rangeOfString:@"orderedset"].location != NSNotFound) return [NSOrderedSet orderedSetWithObject:@"a"];
  if ([k rangeOfString:@"set"].location != NSNotFound && [k rangeOfString:@"setwith"].location == NSNotFound) return [NSSet setWithObject:@"a"];
  if ([k rangeOfString:@"dictionary"].location != NSNotFound || [k rangeOfString:@"attributes"].location != NSNotFound) return [NSDictionary dictionaryWithObject:@"v" forKey:@"k"];
  if ([k rangeOfString:@"data"].location != NSNotFound) return [NSData dataWithBytes:"a" length:1];
  if ([k rangeOfString:@"attributedstring"].location != NSNotFound) return [[[NSAttributedString alloc] initWithString:@"a"] autorelease];
  if ([k rangeOfString:@"locale"].location != NSNotFound) return nil;
  if ([k rangeOfString:@"zone"].location != NSNotFound) return nil;
  return @"a";
}

/* variant: -1 legal; otherwise arg index to break */
static const char *probe(NSString *clsName, SEL sel, int variant, int *isMisuse) {
  id r = receiverFor(clsName);
  NSMethodSignature *sig = [r methodSignatureForSelector:sel];
  if (!sig) return "nosig";
  NSInvocation *inv = [NSInvocation invocationWithMethodSignature:sig];
  [inv setSelector:sel];
  [inv setTarget:r];
  NSArray *parts = [NSStringFromSelector(sel) componentsSeparatedByString:@":"];
  static char buffers[8][4096];
  *isMisuse = 0;
  for (unsigned i = 2; i < [sig numberOfArguments]; i++) {
    const char *t = [sig getArgumentTypeAtIndex:i];
    while (*t == 'r' || *t == 'n' || *t == 'N' || *t == 'o' || *t == 'O' || *t == 'V') t++;
    NSString *kw = (i - 2 < [parts count]) ? [parts objectAtIndex:i - 2] : @"";
    BOOL bad = (variant == (int)i);
    if (*t == '@') {
      if (t[1] == '?') return "block";
      id v = bad ? nil : legalObjectFor(kw);
      if (bad) *isMisuse = 1;
      [inv setArgument:&v atIndex:i];
    } else if (*t == 'Q' || *t == 'L' || *t == 'I' || *t == 'q' || *t == 'l' || *t == 'i') {
      NSUInteger v = bad ? 1000 : 0;
      if (bad) *isMisuse = 1;
      if (*t == 'I' || *t == 'i') { unsigned u = (unsigned)v; [inv setArgument:&u atIndex:i]; }
      else [inv setArgument:&v atIndex:i];
    } else if (*t == '{' && strncmp(t, "{_NSRange", 9) == 0) {
      NSRange v = bad ? NSMakeRange(1, 1000) : NSMakeRange(0, 0);
      if (bad) *isMisuse = 1;
      [inv setArgument:&v atIndex:i];
    } else if (*t == '^' || *t == '*') {
      void *p = buffers[i];
      memset(buffers[i], 0, 4096);
      [inv setArgument:&p atIndex:i];
    } else if (*t == 'c' || *t == 'C' || *t == 'B') {
      char c = 0; [inv setArgument:&c atIndex:i];
    } else if (*t == 'd') { double d = 0; [inv setArgument:&d atIndex:i];
    } else if (*t == 'f') { float d = 0; [inv setArgument:&d atIndex:i];
    } else if (*t == ':') { SEL s = @selector(description); [inv setArgument:&s atIndex:i];
    } else return "argtype";
  }
  if (variant >= 0 && !*isMisuse) return "same";
  @try { [inv invoke]; } @catch (NSException *e) { static char buf[128]; snprintf(buf, sizeof buf, "exc:%s", [[e name] UTF8String]); return buf; }
  return "ok";
}

static BOOL skip(const char *name) {
  const char *bad[] = {"init", "dealloc", "release", "retain", "autorelease", "copy", "mutableCopy", "encode", "class", "forward", "perform", "method", "write", "become", "zone", "_", "makeObjects", "enumerate", "sortUsing", "sortedArrayUsing", "sortWith", "indexesOf", "indexOfObjectPassing", "indexOfObjectWith", "objectsPassing", "keysOfEntries", "keysSortedBy", "getCString", "getCharacters", "getBytes:", "getObjects:", "getObjects:andKeys", "dataUsing", "writeTo", "addObserver", "removeObserver", "setValue", "takeValue", "valueFor", "takeStoredValue", "handle", "storedValue", "observ", "will", "did", "setNilValue", "unableToSet", "replacementObject", "classFor", "awake", "fileSystemRep", "getFileSystem", "getLineStart", "getParagraphStart", "enumerateLines", "enumerateSubstrings", "stringByAddingPercent", "stringByAppendingFormat", "appendFormat", "initWithFormat", "stringWithFormat", "propertyList", "cString", "lossyCString", "UTF8String", "fileSystemRepresentation", "deserialize", "serialize", "getBytes", "filter", "differenceFrom", "applyDifference", "apply", 0};
  for (int i = 0; bad[i]; i++) if (strncmp(name, bad[i], strlen(bad[i])) == 0) return YES;
  return NO;
}

static void runChild(NSString *cls, SEL sel, int variant, char *out, size_t cap) {
  int fds[2]; pipe(fds);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]); alarm(3);
    int fd = open("/dev/null", O_WRONLY); dup2(fd, 2);
    @autoreleasepool { int m; const char *r = probe(cls, sel, variant, &m); write(fds[1], r, strlen(r)); }
    _exit(0);
  }
  close(fds[1]);
  ssize_t n = read(fds[0], out, cap - 1); if (n < 0) n = 0; out[n] = 0; close(fds[0]);
  int st; waitpid(pid, &st, 0);
  if (WIFSIGNALED(st)) snprintf(out, cap, "signal:%d", WTERMSIG(st));
  else if (n == 0) snprintf(out, cap, "noreturn:exit%d", WEXITSTATUS(st));
}

int main(void) {
  @autoreleasepool {
    NSArray *classes = [NSArray arrayWithObjects:@"NSArray", @"NSMutableArray", @"NSDictionary", @"NSMutableDictionary", @"NSSet", @"NSMutableSet", @"NSOrderedSet", @"NSMutableOrderedSet", @"NSData", @"NSMutableData", @"NSString", @"NSMutableString", @"NSAttributedString", @"NSMutableAttributedString", nil];
    for (NSString *cls in classes) {
      unsigned count = 0;
      Method *methods = class_copyMethodList(NSClassFromString(cls), &count);
      unsigned surveyed = 0;
      for (unsigned m = 0; m < count; m++) {
        SEL sel = method_getName(methods[m]);
        const char *name = sel_getName(sel);
        if (strchr(name, ':') == NULL || skip(name)) continue;
        surveyed++;
        char legal[256]; runChild(cls, sel, -1, legal, sizeof legal);
        int nargs = 0; for (const char *p = name; *p; p++) if (*p == ':') nargs++;
        for (int v = 2; v < nargs + 2; v++) {
          char res[256]; runChild(cls, sel, v, res, sizeof res);
          if (strcmp(res, "same") == 0) continue;
          printf("%s %s arg%d legal=%s misuse=%s\n", [cls UTF8String], name, v - 2, legal, res);
        }
      }
      fprintf(stderr, "%s: %u methods, %u surveyed\n", [cls UTF8String], count, surveyed);
      free(methods);
    }
  }
  return 0;
}
