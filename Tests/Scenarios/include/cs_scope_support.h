/*
 * cs_scope_support.h — app classes that implement hooked selectors themselves, for the tests of
 * the hooks' scope (ScopeTests): every class here is "app code" (this target's image), never
 * the system's. Not part of the SDK.
 */
#ifndef CS_SCOPE_SUPPORT_H
#define CS_SCOPE_SUPPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Legal calls on the app subclasses, described as text (malloc'd; free() it):
 *  CSScopeWrappingArray -objectAtIndex:5 of 3 items (wraps: items[5 % 3]),
 *  CSScopePaddedString -characterAtIndex: beyond its length (answers '.'),
 *  CSScopeNullStoringArray -addObject:nil (stores NSNull). "exception:Name" when one threw. */
char *cs_scope_app_subclass_calls(void);

/** The seven CSScopeString1..7 classes, each an NSString subclass with its own
 *  -characterAtIndex: (padding with '1'..'7' beyond its length): -characterAtIndex:10 of each
 *  "abc" instance, as text (malloc'd). */
char *cs_scope_seven_string_calls(void);

/** Makes sure `count` more app NSString subclasses exist, named CSScopeExtraString<N>, each
 *  defining its own -characterAtIndex: (made at run time, implementation in this image).
 *  Idempotent per name; returns how many exist now. */
size_t cs_scope_make_extra_string_classes(size_t count);

/** -characterAtIndex:10 of a "abc" instance of CSScopeExtraString<index>: '.' when its own
 *  implementation answered, 0 when a guard neutralised it, -1 when the class does not exist. */
int cs_scope_extra_string_character(size_t index);

/** Makes `count` empty NSObject subclasses at run time (CSScopeFiller<N>, idempotent), so start
 *  cost can be measured against the number of classes. Returns how many exist now. */
size_t cs_scope_make_filler_classes(size_t count);

/** Uses Objective-C once (an autorelease pool, a message to NSObject), as an app has before it
 *  starts the SDK: the runtime's once-per-process initialisation happens here. */
void cs_scope_use_objc_runtime(void);

/** Like cs_scope_make_filler_classes, but each class (CSScopeUsedFiller<n>) is messaged once, so
 *  its dispatch table is installed and a hook written into NSObject's table must reach it. */
size_t cs_scope_make_used_filler_classes(size_t count);

/** Uninstalls the guards, starts them (with `app_prefix`, non-NULL, opted in for hooking) and
 *  returns how many times the start walked the whole class list for owner discovery. Leaves the
 *  guards started. */
size_t cs_scope_class_list_copies_during_start(const char *app_prefix);

/** What the hooks' owner discovery finds for every hook spec of the registry, next to a walk of
 *  every class. */
typedef struct {
    /** (spec, owner) pairs the discovery found; SIZE_MAX when they are not exactly the pairs of
     *  the every-class walk whose owner is defined in a system image and whose implementation is
     *  the system's. */
    size_t system_pairs;
    /** Pairs of the every-class walk that the discovery leaves out because the implementation is
     *  the app's (an app class's own contract). */
    size_t app_pairs;
    /** Pairs of the every-class walk with a system implementation on a class made at run time
     *  (GNUstep's KVO subclasses), which the discovery does not see. */
    size_t runtime_made_pairs;
} cs_scope_discovery_comparison;

cs_scope_discovery_comparison cs_scope_compare_discovery(void);

/** Which implementations the backend counts as the system's, as bits: 1 -[NSObject description],
 *  2 a GNUstep array's own -objectAtIndex:, 4 objc_msg_lookup (the runtime), 8 the app class
 *  CSScopePaddedString's -characterAtIndex:, 16 an implementation added at run time to
 *  CSScopeExtraString0 from this image. Expected: 1|2|4. */
unsigned cs_scope_system_implementation_bits(void);

/** The "safe array" pattern of third-party libraries: exchanges the -objectAtIndex: of the class
 *  `[NSArray arrayWithObjects:...]` answers with an app implementation (this image) that returns
 *  nil beyond -count and otherwise calls the one it replaced (class_addMethod, else
 *  method_exchangeImplementations, as such categories do in +load). A second call exchanges back. */
void cs_scope_exchange_safe_array(void);

/** How many times the safe array implementation above has run. */
unsigned cs_scope_safe_array_calls(void);

/** -objectAtIndex:5 of a two-element immutable array (the exchanged class): true when nil. */
bool cs_scope_safe_array_read_beyond(void);

/** The same pattern for strings: exchanges the -characterAtIndex: of the class
 *  `[NSString stringWithUTF8String:"abc"]` answers with an app implementation that returns 0
 *  beyond -length. A second call exchanges back. */
void cs_scope_exchange_safe_string(void);

/** How many times the safe string implementation above has run. */
unsigned cs_scope_safe_string_calls(void);

/** -characterAtIndex:9 of `[NSString stringWithUTF8String:"abc"]`: true when 0. */
bool cs_scope_safe_string_read_beyond(void);

#ifdef __cplusplus
}
#endif
#endif
