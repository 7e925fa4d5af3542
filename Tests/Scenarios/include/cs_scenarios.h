/*
 * cs_scenarios.h — misuse scenarios and legal-input oracles, for `shield demo` and the tests.
 * Not part of the SDK: apps never link this target.
 *
 * A scenario performs one misuse a guard covers and checks the neutralised result. An oracle runs
 * legal calls of one hooked selector and describes their results as text, so a test can compare
 * the text with and without guards.
 */
#ifndef CS_SCENARIOS_H
#define CS_SCENARIOS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    const char *name;       /**< "array.objectAtIndex.beyond": area.selector.misuse */
    const char *guard_name; /**< guard expected to intercept it */
    const char *selector;   /**< selector the incident must name */
    bool class_method;      /**< the incident is a `+` method */
    /** Performs the misuse; returns true when the value it got back is the neutralised one.
     *  Without guards it usually throws before returning. */
    bool (*run)(void);
} cs_scenario;

typedef struct {
    const char *name;
    /** Runs legal calls; returns an autoreleased NSString * describing every result. */
    void *(*run)(void);
} cs_oracle;

/** One `shield bench` case. `run` performs `iterations` operations and returns the elapsed
 *  nanoseconds. The harness calls it with guards uninstalled (`guarded` false: the baseline) and
 *  installed (`guarded` true), alternating rounds, in one process. Most cases run the same code
 *  both times; a misuse case may differ (the baseline throws and catches the exception the guard
 *  prevents). */
typedef struct {
    const char *name;
    uint64_t (*run)(uint64_t iterations, bool guarded);
    /** Optional: a figure the case measured besides time (written into `buffer`), read once after
     *  all rounds. NULL for most cases. */
    void (*note)(char *buffer, size_t capacity);
    /** Optional: operations per measurement when one operation is long (a whole workload run);
     *  0 lets the harness calibrate. */
    uint64_t fixed_iterations;
} cs_bench_case;

size_t cs_bench_count(void);
const cs_bench_case *cs_bench_at(size_t index);

size_t cs_scenario_count(void);
const cs_scenario *cs_scenario_at(size_t index);

/** Outcome of one scenario run in this process. */
typedef enum {
    CS_SCENARIO_RETURNED_NEUTRAL = 0, /**< returned, with the neutralised value */
    CS_SCENARIO_RETURNED_OTHER = 1,   /**< returned, with another value */
    CS_SCENARIO_THREW = 2,            /**< threw; the exception's name is in `exception_name` */
} cs_scenario_outcome;

/** Runs scenario `index` inside an autorelease pool, catching any exception it throws. */
cs_scenario_outcome cs_scenario_run(size_t index, char *exception_name, size_t capacity);
/** Runs scenario `index` inside an autorelease pool with nothing around it: an exception it throws
 *  unwinds to the caller (uncaught, it ends the process as it would an app). Returns whether it
 *  returned the neutralised value; false for an unknown index. */
bool cs_scenario_run_uncaught(size_t index);
/** cs_scenario_run on a new thread (a pthread), waited for; CS_SCENARIO_RETURNED_OTHER when no
 *  thread could be started. */
cs_scenario_outcome cs_scenario_run_on_new_thread(size_t index, char *exception_name, size_t capacity);

size_t cs_oracle_count(void);
const char *cs_oracle_name(size_t index);
/** Runs oracle `index`; returns a malloc'd UTF-8 description (free() it), "exception:Name"
 *  when a legal call threw. */
char *cs_oracle_run(size_t index);

/* ---- runtime backend fixtures (TestSupport_Runtime.m) ------------------------------------- */

/** What cs_test_dispatch_refresh() observed: 1 = the original IMP answered, 2 = the replacement. */
typedef struct {
    int before;               /**< 11: both methods original before any change */
    int control_base, control_sub; /**< plain method_setImplementation, no refresh */
    int backend_base, backend_sub; /**< cs_backend_replace_implementation */
    bool previous_is_original;
    bool non_owner_refused;
    int restored_sub;
} cs_dispatch_probe;

/** Replaces a method on a base class whose subclass holds its own dispatch-table bucket, once with
 *  the plain runtime call and once with the backend primitive, and restores it. */
cs_dispatch_probe cs_test_dispatch_refresh(void);
/** What cs_test_concurrent_replacement() observed. */
typedef struct {
    unsigned long calls;  /**< messages the two messaging threads completed (> 0: they ran meanwhile) */
    unsigned stale;       /**< replacements after which the receiver's class still dispatched elsewhere */
    bool found_owner;     /**< an ancestor of the array's class defines objectAtIndex: */
} cs_concurrent_replacement_probe;

/** Replaces objectAtIndex: on the class that owns it for an immutable array (`root` false) or
 *  NSObject's -self (`root` true: every table below the root is affected) `replacements` times,
 *  alternately a passthrough hook and the original, ending on the original, with
 *  cs_backend_replace_implementation, while two threads message such an array (objectAtIndex:,
 *  count, description, self) without pause. A backend that frees dispatch tables those threads
 *  are reading kills the process with SIGSEGV: run it in a child. */
cs_concurrent_replacement_probe cs_test_concurrent_replacement(unsigned replacements, bool root);
/** Adds `adds` new methods (fresh selectors) to NSObject with cs_backend_add_method while two
 *  threads message an immutable array (objectAtIndex:, count, description, self) without pause;
 *  after each add, the array's class must dispatch the new selector to the added method, which
 *  must answer, and the array must respond to it (`stale` counts adds where one failed). A backend that rebuilds the
 *  tables, as class_addMethod does on GCC libobjc, kills the process with SIGSEGV: run it in a
 *  child. `found_owner` is true when NSObject exists. */
cs_concurrent_replacement_probe cs_test_concurrent_add(unsigned adds);
/** What cs_test_concurrent_add_past_tables() observed. */
typedef struct {
    cs_concurrent_replacement_probe run; /**< calls, stale adds, NSObject found */
    unsigned past_capacity;              /**< adds whose selector NSObject's table did not hold before */
    bool grows_tables;                   /**< the backend grows tables in place (else it rebuilds) */
} cs_past_tables_probe;

/** cs_test_concurrent_add() for selectors registered after the dispatch tables were built:
 *  fresh selectors are registered until NSObject's table no longer holds them, then `adds` more,
 *  and each is added to NSObject while two threads message an immutable array. Every table below
 *  NSObject must grow for them; libobjc's own growth (sarray_realloc) and class_addMethod's
 *  rebuild both free memory those threads are reading: run it in a child. GNUstep only. */
cs_past_tables_probe cs_test_concurrent_add_past_tables(unsigned adds);

/** What cs_test_replace_past_table() observed. */
typedef struct {
    bool fixture_holds;  /**< the owner's table did not hold the method's selector before */
    bool previous_is_original; /**< the replacement returned the method's IMP */
    int owner_answer;    /**< the owner's answer after the replacement (2: the replacement) */
    int sub_answer;      /**< a subclass's answer to a method it inherits from the same owner */
} cs_past_table_probe;

/** Replaces a method whose selector lies past its owner's dispatch table: a method list holding it
 *  is published on an installed class (with an installed subclass, so the table is shared) without
 *  a table update, as another runtime-patching library could leave it. sarray_at_put_safe would
 *  grow that table through sarray_realloc, which aborts on a shared table: run it in a child.
 *  GNUstep only. */
cs_past_table_probe cs_test_replace_past_table(void);

/** The backend's cs_dispatch_write_status().fallback: NULL when dispatch tables are written in
 *  place, else the stable code of why they are rebuilt. GNUstep only. */
const char *cs_test_dispatch_write_fallback(void);
/** Adds a fresh method to a compiled class with cs_backend_add_method and checks that a
 *  subclass of it (tables installed) answers it. GNUstep only. */
bool cs_test_add_method_reaches_subclass(void);
/** Number of classes at or below `root` that define `selector` themselves. */
size_t cs_test_owner_count(const char *root, const char *selector, bool class_side);
/** What the runtime's exception helpers (Backend/CSObjCTry.mm) did: cs_objc_try caught a thrown
 *  NSRangeException and returned nil for a body that did not throw; cs_objc_try_finally ran its
 *  cleanup for a body that threw and let the exception reach its caller. */
typedef struct {
    bool try_caught_range_exception;
    bool try_returned_nil_without_exception;
    bool finally_cleanup_ran;
    bool finally_exception_reached_caller;
} cs_objc_try_probe;
cs_objc_try_probe cs_test_objc_try(void);
/** The runtime's interned string for "interned": equal to the text, and the same object on every call. */
bool cs_test_interned_string(void);
/** Gives NSObject a -length returning 0 (as GNUstep's own test suite does with a category), so
 *  NSNull answers -length itself. For child processes only: it changes every class. */
void cs_test_add_nsobject_length(void);
/** GNUstep's NSOperation removing a dependency it already stopped observing (Tests/base
 *  NSOperation/basic.m): its own code removes a KVO registration that no longer exists, which
 *  GNUstep ignores. Returns whether the dependency list is empty afterwards. */
bool cs_test_nsoperation_remove_cancelled_dependency(void);
/** Hammers the side table from `threads` threads; returns the number of inconsistencies seen. */
unsigned cs_test_sidetable_stress(unsigned threads, unsigned iterations);

typedef struct {
    size_t owners;                 /**< (owner, selector) pairs the hook tables cover */
    size_t slot_chained_to_slot;   /**< installed slots whose original is a slot function */
    size_t changed_after_uninstall;/**< owners whose own IMP differs from before the first start */
} cs_install_cycle_result;
/** Starts and uninstalls every guard `cycles` times (leaves them uninstalled). */
cs_install_cycle_result cs_test_install_cycles(unsigned cycles);

/** An address whose owning guard is known: `guard` NULL when it belongs to no guard. */
typedef struct {
    const char *guard;
    const char *label;
    uintptr_t address; /**< 0 when the method was not found (a test failure in itself) */
} cs_guard_code_probe;
/** Fills `out` with addresses inside each guard's code (hooked methods, the guards' own helper
 *  classes' methods) and outside every guard. Call with the guards started. */
size_t cs_test_guard_code_probes(cs_guard_code_probe *out, size_t capacity);

/** An observed object and an observer for KVO tests that switch the guard's policy between calls;
 *  contexts are 1, 2 or 3. `change` sets the observed value once and returns the notifications it
 *  produced per context as 100*c1 + 10*c2 + c3. `free` releases the observer, then the object. */
typedef struct cs_test_kvo_pair cs_test_kvo_pair;
cs_test_kvo_pair *cs_test_kvo_pair_new(void);
void cs_test_kvo_pair_add(cs_test_kvo_pair *pair, unsigned context);
void cs_test_kvo_pair_remove(cs_test_kvo_pair *pair);
void cs_test_kvo_pair_remove_context(cs_test_kvo_pair *pair, unsigned context);
unsigned cs_test_kvo_pair_change(cs_test_kvo_pair *pair);
void cs_test_kvo_pair_free(cs_test_kvo_pair *pair);
/** A one-shot observer: it removes itself (by context when `by_context`) in its first
 *  notification, the initial one when `initial`; then the value changes twice. Returns the
 *  notifications it received (1 when the removal worked). */
unsigned cs_test_kvo_one_shot(bool initial, bool by_context);
/** The one-shot observer removing itself in the initial notification of an add that replaces its
 *  registration of the same key path (GNUstep replaces); returns the notifications it received. */
unsigned cs_test_kvo_one_shot_replacing(void);
/** An observer registered while guarded, then cs_guards_uninstall(); the value
 *  changes (one notification), the app removes the observer (by context when `by_context`), the
 *  value changes, the observer is freed, the value changes. Returns the notifications after the
 *  removal (0 as without guards), or -1 when the change after the stop was not delivered. */
int cs_test_kvo_across_stop(bool by_context);

/* ---- containers (Scenarios_Containers.m): helpers for the container guard's tests ---------- */

/** Runs `threads` threads for `iterations` rounds each, mixing legal calls and misuse on
 *  containers shared by all threads (plus legal mutations of per-thread arrays). Returns the
 *  number of misuses performed, or UINT64_MAX when a shared container changed or a legal call
 *  returned a wrong value. */
uint64_t cs_containers_stress(unsigned threads, unsigned iterations);
/** Seeded random misuse/legal mix on arrays, mutable arrays, dictionaries and data, checked
 *  against a model of the neutralised results. Writes the number of misuses to `misuses` and
 *  returns the number of results that differed from the model (0 when all matched). */
uint64_t cs_containers_randomized(uint64_t seed, unsigned iterations, uint64_t *misuses);
/** -[NSArray objectsAtIndexes:nil]; returns true when it gave an empty array. Call it ONLY with
 *  the container guard on: unguarded, GNUstep 1.28 allocates until memory runs out (so it is not
 *  a demo scenario, whose unguarded run would do exactly that). */
bool cs_containers_nil_index_set_misuse(void);

/** Removes at index 9 through a getter/setter key-value coding proxy and through an
 *  instance-variable proxy (two misuses, both stopped in the collection the proxy forwards to);
 *  true when the model's collections are unchanged. Unguarded it throws. */
bool cs_containers_kvc_proxy_misuse(void);

/* ---- boundary oracle of the container and string guards (Scenarios_Boundaries.m) ---------- */

/** Number of boundary cases (some indexes are padding: their name and run are NULL). */
size_t cs_boundary_count(void);
/** "NSArray objectAtIndex: n=3 n+1": receiver class, selector, receiver size, input; malloc'd
 *  (free() it), NULL for padding. */
char *cs_boundary_name(size_t index);
/** Runs the case on a fresh receiver: what the call returned (and the receiver after a
 *  mutation), or "threw:<exception name>"; malloc'd, NULL for padding. */
char *cs_boundary_run(size_t index);

/* ---- strings (Scenarios_Strings.m) ------------------------------------------------------ */

/** Runs `threads` threads that each make `iterations` rounds of legal string calls and string
 *  misuses on shared receivers (plus legal mutations of thread-local strings). Returns the number
 *  of misuses performed, which is the exact number of "string" incidents to expect when the guard
 *  neutralises; `*wrong_results` (optional) receives how many calls returned something other than
 *  the legal or the neutralised value. */
uint64_t cs_strings_stress(unsigned threads, unsigned iterations, uint64_t *wrong_results);

/* ---- messages (Scenarios_Messages.m: unrecognized selectors, NSNull, KVC) ---------------- */

/** Sends -length to an NSNumber (a system class): 1 = answered 0, 0 = other value, -1 = threw. */
int cs_msg_system_class_unrecognized(void);
/** Sends a message neither a forwarding class nor its target implements: same encoding. */
int cs_msg_forwarder_unknown(void);
/** Sends NSNull messages with register, variadic and floating-point arguments and a result
 *  returned in memory; returns 0 when each answered as the empty value does, else a bit mask of
 *  the wrong ones. */
int cs_msg_nsnull_answers_like_empty_values(void);
/** Runs the selector, NSNull and KVC misuses on `threads` threads (at most 16), `iterations`
 *  each; returns how many iterations did not get the neutralised results. */
uint32_t cs_msg_run_concurrently(uint32_t threads, uint32_t iterations);

/** Calls a selector made with NSSelectorFromString (untyped: its return convention is unknown to
 *  the runtime) through objc_msg_lookup, cast to the result type `kind` names, on an app object
 *  (or NSNull). Returns 1 when the lookup threw NSInvalidArgumentException, 0 when the call
 *  returned zero, 2 when it returned something else, -1 for another exception. */
enum {
    CS_MSG_UNTYPED_STRUCT32 = 0, /**< a 32-byte struct, returned in memory */
    CS_MSG_UNTYPED_DOUBLE = 1,
    CS_MSG_UNTYPED_LONG_DOUBLE = 2,
    CS_MSG_UNTYPED_FLOAT = 3,
    CS_MSG_UNTYPED_SMALL_STRUCT = 4, /**< NSRange, in rax:rdx */
    CS_MSG_UNTYPED_VARIADIC = 5,
    CS_MSG_UNTYPED_NSNULL_STRUCT32 = 6, /**< the 32-byte struct, sent to NSNull */
};
int cs_msg_untyped_call(int kind);
/** Sends an app NSProxy (which forwards everything to an NSString) a message the string does
 *  not implement: 1 = answered nil, 0 = other value, -1 = threw. */
int cs_msg_proxy_relays_unknown_to_json(void);
/** The runtime class name of the JSON values the type-confusion scenarios use: 0 NSNumber,
 *  1 NSArray, 2 NSMutableDictionary, 3 NSMutableString. */
const char *cs_msg_json_class_name(int which);
/** Sends -cs_missingInt to an instance of an NSString subclass made at run time whose own
 *  methodSignatureForSelector:/forwardInvocation: answer 42: returns the answer, -1 if it threw. */
int cs_msg_runtime_json_subclass_forwards(void);

/** -cs_missingInt sent to an instance of the app class CSMsgLateForwarder: its answer, or -1 when
 *  it threw. 42 once cs_msg_late_forwarder_add_forwarding() gave the class its own forwarding. */
int cs_msg_late_forwarder_missing_int(void);

/** Adds -methodSignatureForSelector: and -forwardInvocation: (answering 42 for any message) to
 *  CSMsgLateForwarder with class_addMethod. Permanent for the process. */
void cs_msg_late_forwarder_add_forwarding(void);
/** -cs_missingInt sent to an instance of the app class CSMsgLateRedirector: its answer, or -1 when
 *  it threw. 42 once cs_msg_late_forwarder_add_target() gave the class a forwarding target. */
int cs_msg_late_redirector_missing_int(void);
/** Adds -forwardingTargetForSelector: (an object answering -cs_missingInt with 42) to
 *  CSMsgLateRedirector with class_addMethod. Permanent for the process. */
void cs_msg_late_forwarder_add_target(void);
/** Sends -length to an NSDate (a system class outside the JSON classes): as above. */
int cs_msg_system_date_unrecognized(void);
/* ---- lifecycle guards (Scenarios_Lifecycle.m) ---------------------------------------------- */

/** True on the process's main thread (the kernel's answer, not GNUstep's first NSThread), or in
 *  work the main dispatch queue runs (after dispatch_main() workers drain it). */
bool cs_scenarios_is_main_thread(void);
/** Configures the main-thread guard with the fixture class CSLMainThreadOnly
 *  (-cs_touch: with an object, -cs_touchValue: with a long). */
void cs_lifecycle_configure_main_thread_fixture(void);
/** On the main thread: drains the main dispatch queue and the run loop until `done(context)`
 *  (or, with `done` NULL, for the whole time); false when it timed out first. */
bool cs_lifecycle_drain_main_queue(double seconds, bool (*done)(void *), void *context);

/** What a CSLMainThreadOnly fixture saw: calls, calls made on the main thread, last argument. */
typedef struct {
    int calls;
    int main_calls;
    long last_argument;
} cs_mainthread_fixture_state;
void *cs_lifecycle_mainthread_fixture_new(void);
void cs_lifecycle_mainthread_fixture_free(void *object);
/** Calls -cs_touch: (with_object, argument 7) or -cs_touchValue: (42) on a new thread; joins it. */
void cs_lifecycle_mainthread_call_from_background(void *object, bool with_object);
/** Calls -cs_touchValue:5 on the calling thread. */
void cs_lifecycle_mainthread_call_here(void *object);
cs_mainthread_fixture_state cs_lifecycle_mainthread_state(void *object);

/** Opts the fixture class CSLZombieVictim in as a zombie class (0: default budgets). */
void cs_lifecycle_configure_zombies(size_t max_bytes, size_t max_count);
/** Opts every class out again and frees every kept zombie. */
void cs_lifecycle_unconfigure_zombies(void);
/** Creates and frees `objects` CSLZombieVictim objects with zombies opted in under the given
 *  budget; returns the highest zombie byte total seen (the accounting), *count_after the zombies
 *  kept at the end. Leaves the configuration in place (unconfigure afterwards). */
size_t cs_lifecycle_zombie_churn(size_t objects, size_t max_bytes, size_t max_count, size_t *count_after);
/** Creates and frees `objects` CSLZombieVictim objects under the current configuration; returns
 *  the number of zombies kept afterwards. */
size_t cs_lifecycle_free_victims(size_t objects);
/** Frees a new CSLZombieVictim and sends it -count; true when the answer was 0. */
bool cs_lifecycle_message_latest_zombie(void);

/** Runs every dealloc-hook path (KVO and notification observers dying registered, a timer target
 *  released, zombies kept and evicted) on a new thread, the releases outside any autorelease pool.
 *  GNUstep logs "autorelease called without pool" to standard error if any path autoreleases. */
void cs_lifecycle_dealloc_paths_without_pool(void);

/** `threads` threads add, remove, post and deallocate KVO observers and observed objects,
 *  notification observers and timer targets at once, free and message zombie-class objects (opted
 *  in for the run, with a budget it never reaches: every zombie is still kept when messaged), and,
 *  when `mainthread_fixture` is not NULL, call its main-thread-only -cs_touchValue: once per
 *  iteration (configure the fixture first). Returns anomalies seen (wrong delivery counts, a zombie
 *  answering non-zero); a memory error crashes instead. */
unsigned cs_lifecycle_stress(unsigned threads, unsigned iterations, void *mainthread_fixture);

/** A repeating timer (timerWithTimeInterval:, or -initWithFireDate:... when `init_with_fire_date`;
 *  not scheduled) gets a target of class CSLScreen (`screen`, a subclass of CSLTicker) or
 *  CSLTicker, which its creator then releases. Returns true when the target is still alive (the
 *  timer holds it strongly); then fires the timer once (an incident when the target is gone) and
 *  invalidates it. Uses the current weak-target list. */
bool cs_lifecycle_timer_keeps_released_target(bool screen, bool init_with_fire_date);
/** Across cs_guards_uninstall(): a notification observer registered while guarded
 *  gets a post after the stop and none after its removal; returns the pings after the removal,
 *  -1 when the post after the stop was not delivered. */
int cs_lifecycle_notification_across_stop(void);
/** An observer that removes itself from the center in its callback and
 *  deallocates there, inside the post (registered for two names). Returns 1 when it deallocated
 *  and nothing crashed. */
int cs_lifecycle_observer_ends_itself_in_post(void);
/** The owner of a repeating timer invalidates it in its second tick and deallocates there, inside
 *  the timer's fire. Returns 1 when it deallocated within 1 s. */
int cs_lifecycle_timer_owner_ends_itself_in_fire(void);
/** A repeating timer scheduled while guarded fires after the stop and stops after -invalidate;
 *  returns the ticks after -invalidate, -1 when it did not fire after the stop. */
int cs_lifecycle_timer_across_stop(void);
/** A CSLZombieVictim kept as a zombie, then the stop: true when it is still kept and its stale
 *  pointer answers nil and 0 (harmless) after the stop. Frees the zombies afterwards. */
bool cs_lifecycle_zombie_across_stop(void);

/** Sends -removeObserver:forKeyPath:context: (never registered) to the class object CSLModel.
 *  Guards started only: GNUstep 1.28 has no such method of its own. */
void cs_test_kvo_class_remove_context(void);

/* ---- hot-path fixtures (TestSupport_HotPath.m) ------------------------------------------ */

/** What the receiver-measure cache reads from a -count/-length IMP whose first bytes are `code`:
 *  the field's width (4 or 8) with its offset in *offset, or 0 when the code is not a plain field
 *  getter (the hook then calls the IMP). */
int cs_test_getter_field(const unsigned char *code, int32_t *offset);

/** Sends each misuse of the fast hooks (-objectAtIndex:, -objectAtIndexedSubscript:,
 *  -characterAtIndex:, -substringWithRange:) once, after a legal call of the same selector on the
 *  same receiver (so the receiver's class is cached), from this function. Returns the start of
 *  this function (an incident's first frame must lie just after it) and the number of neutralised
 *  results in *neutralised (4 when guarded). */
uintptr_t cs_test_fast_hook_misuses(unsigned *neutralised);

/** performSelector: on one receiver class, legal then unknown (untyped) then legal, instance and
 *  class side, and a selector that +resolveInstanceMethod: adds during the call. Bit i set: step
 *  i gave the expected result (0x7f when guarded; unguarded the unknown steps throw). */
unsigned cs_test_perform_after_memo(void);
/** A fresh receiver-measure cache asked for an array's -count: bit 0 the count, 1 its class
 *  published in its home bucket, 2 in field form, 3 the field read gives the count, 4 found there
 *  again (0x1f when all hold). */
unsigned cs_test_measure_cache_entry(void);
/** Only the legal steps of cs_test_perform_after_memo (bits 0, 4, 6): 0x51 with or without guards. */
unsigned cs_test_perform_legal_only(void);

/* ---- deliberate Objective-C crashes for `shield crash` (TestSupport_Crashes.m) ---------------- */

/** Raises an NSException named "CrashShieldTestException" that nobody catches (shield crash objc-exception). */
void cs_capture_raise_uncaught_exception(void);
/** `-objectAtIndex:5` on a two-element array, uncaught: NSRangeException unguarded or with the
 *  container guard report-only; returns when the guard neutralises it. */
void cs_capture_array_beyond_for_testing(void);
/** Faults inside the container guard's hook code (fail-safe test; start guards first). */
void cs_capture_crash_inside_guard_for_testing(void);

#ifdef __cplusplus
}
#endif
#endif
