// zlib, for the gzip bodies of envelope uploads (CrashShieldCapture's transport).
#include <zlib.h>
