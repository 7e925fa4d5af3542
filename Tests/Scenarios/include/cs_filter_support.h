/*
 * cs_filter_support.h — app classes named with the prefix "MY", for the tests of the class
 * filters (allowedClassPrefixes / deniedClassPrefixes): the filters decide which misuses are
 * guarded, never whether a guard works. Not part of the SDK.
 */
#ifndef CS_FILTER_SUPPORT_H
#define CS_FILTER_SUPPORT_H

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/** -addObject:nil on a MYFilterArray: an app NSMutableArray subclass that implements the
 *  primitives and inherits NSMutableArray's own -addObject: (so the container guard's hook sees a
 *  MYFilterArray receiver). Returns malloc'd text (free() it): "count=N" when the call returned,
 *  "exception:Name" when it threw. */
char *cs_filter_app_array_add_nil(void);

/** -valueForKey: of a key MYFilterModel (an app NSObject subclass) does not have. Returns malloc'd
 *  text: "value=nil" / "value=<description>" when the call returned, "exception:Name" when it threw. */
char *cs_filter_app_model_undefined_key(void);

/** Starts a pthread that repeats -[NSArray objectAtIndex:] beyond the count of a Foundation
 *  array, each call in its own @try, until cs_filter_concurrent_misuse_stop(); returns once the
 *  first call is done. False when the thread could not be started or one already runs. */
bool cs_filter_concurrent_misuse_start(void);

/** Stops the thread cs_filter_concurrent_misuse_start() started and joins it. `*returned`: calls
 *  that returned (a guard neutralised them), `*threw`: calls that threw NSRangeException,
 *  `*other`: calls that threw anything else. */
void cs_filter_concurrent_misuse_stop(long *returned, long *threw, long *other);

#ifdef __cplusplus
}
#endif
#endif
