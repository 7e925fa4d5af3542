/*
 * csc_claim.h — who writes the report of a crash (one report per crash, never a hang).
 * Platform-neutral and freestanding (see csc_sys.h): atomics only, plus a millisecond sleep.
 * All functions are async-signal-safe.
 *
 * The owner is the thread whose id the first crashing thread stored with a CAS (0 = nobody). The
 * state says what the owner is doing: IDLE (no crash), WRITING (the report), DONE (an uncaught
 * exception was reported and the process is ending by exit or abort), CHAINING (a signal report
 * is written and the owner ends the process with its signal).
 * The depth counts the owner's entries into the handler (a fault inside the handler re-enters it).
 * Threads that lose the race wait and are counted (csc_claim_other_crashers()).
 */
#ifndef CSC_CLAIM_H
#define CSC_CLAIM_H

#include <stdbool.h>
#include <stdint.h>

/** A thread's id as the platform gives it (Linux: the kernel tid; Darwin: pthread_threadid_np).
 *  Never 0 for a live thread. */
typedef uint64_t csc_thread_id;

enum { CSC_STATE_IDLE = 0, CSC_STATE_WRITING = 1, CSC_STATE_DONE = 2, CSC_STATE_CHAINING = 3 };

typedef enum {
    CSC_CLAIM_OWNER,       /**< the calling thread owns the crash now: it writes the report */
    CSC_CLAIM_REENTERED,   /**< the calling thread already owned it: a signal inside its own handler
                            *   (or one raised by the handler it passes its signal on to) */
    CSC_CLAIM_PASS_ON,     /**< no report for this signal: an uncaught exception was reported (DONE),
                            *   or the owner's passing-on did not end within the chain wait limit */
    CSC_CLAIM_OWNER_STUCK, /**< the owner has been writing past the writing wait limit (it had no
                            *   watchdog): end the process with the signal its report names */
} csc_claim_outcome;

/** Claims the crash for `self`, or waits, counted among the other crashing threads, while
 *  another thread writes its report (at most `writing_wait_limit_ms`) or passes its signal on (at
 *  most `chain_wait_limit_ms`). A thread that was waiting and then claims (the owner released the
 *  claim: an opt-in recovery, or a signal a previous handler handled) is no longer counted. */
csc_claim_outcome csc_claim(csc_thread_id self, uint32_t writing_wait_limit_ms, uint32_t chain_wait_limit_ms);

/** Claims the crash for `self` if nobody owns it; never waits (the uncaught-exception path). */
bool csc_claim_try(csc_thread_id self);

/** True when `self` owns the crash (it writes or wrote the report, or passes its signal on). */
bool csc_claim_is_owner(csc_thread_id self);
int csc_claim_state(void);
void csc_claim_set_state(int state);
/** The owner starts writing: state WRITING, depth 1. */
void csc_claim_begin_writing(void);
/** One more entry of the owner into the handler; returns the depth before it. */
int csc_claim_enter_again(void);
/** The owner is done with this crash (the process goes on): depth 0, IDLE, no owner. */
void csc_claim_release(void);
/** Threads waiting for (or passed on by) the report owner. */
int csc_claim_other_crashers(void);
/** In the child of fork(): the parent's crash state means nothing here. */
void csc_claim_reset(void);

#endif
