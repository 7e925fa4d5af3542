#import <Foundation/Foundation.h>
#include <objc/runtime.h>
int main(void) { setvbuf(stdout, NULL, _IONBF, 0);
  char n[64]; for (int i = 0; i < 40; i++) { snprintf(n, 64, "freshSel%d", i); SEL s = sel_registerName(n); size_t r = (size_t)*(void**)s; printf("%zx ", r); } printf("\n"); return 0; }
