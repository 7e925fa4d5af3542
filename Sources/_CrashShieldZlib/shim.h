// zlib, for the gzip bodies of envelope uploads (CrashShieldSentry's transport).
#include <zlib.h>
