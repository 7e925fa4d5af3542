/*
 * cs_wrapper_support.h — app subclasses whose contract runs through the system's wrappers
 * (implementations that check no bounds and forward to a primitive), for the tests of the
 * container and string guards' bounds checks on them. Not part of the SDK.
 */
#ifndef CS_WRAPPER_SUPPORT_H
#define CS_WRAPPER_SUPPORT_H

#ifdef __cplusplus
extern "C" {
#endif

/** Legal calls that reach a system wrapper on app subclasses, described as text (malloc'd; free()
 *  it), one per line: a ring array (own -count 3 and a wrapping -objectAtIndex:) read with
 *  subscript 4 and -objectsAtIndexes: {4}; its subclass that overrides only -count (2), read with
 *  subscript 2 and {2}; a mutable string whose own -replaceCharactersInRange:withString: clamps
 *  the range, sent -deleteCharactersInRange: {1, 10} and -insertString:atIndex: 10.
 *  "exception:Name" for a call that threw. */
char *cs_wrapper_app_subclass_calls(void);

#ifdef __cplusplus
}
#endif
#endif
