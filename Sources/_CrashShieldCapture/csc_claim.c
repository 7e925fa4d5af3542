/*
 * csc_claim.c — claiming a crash (csc_claim.h). Platform-neutral and freestanding: it includes
 * only csc_claim.h, csc_sys.h and <stdatomic.h>. Every atomic is sequentially consistent.
 */
#include "csc_claim.h"
#include "csc_sys.h"

#include <stdatomic.h>

static _Atomic csc_thread_id g_owner;
static _Atomic int g_state;
static _Atomic int g_depth;
static _Atomic int g_other_crashers;

csc_claim_outcome csc_claim(csc_thread_id self, uint32_t writing_wait_limit_ms, uint32_t chain_wait_limit_ms) {
    bool counted = false; /* this thread is in g_other_crashers */
    uint32_t waited_for_writer_ms = 0, waited_for_chain_ms = 0;
    for (;;) {
        csc_thread_id expected = 0;
        if (atomic_compare_exchange_strong(&g_owner, &expected, self)) {
            if (counted) atomic_fetch_sub(&g_other_crashers, 1);
            return CSC_CLAIM_OWNER;
        }
        int state = atomic_load(&g_state);
        if (expected == self) return CSC_CLAIM_REENTERED;
        /* An uncaught exception was reported and the process is exiting: no second report. */
        if (state == CSC_STATE_DONE) return CSC_CLAIM_PASS_ON;
        /* Another thread writes its report or passes its signal on: it ends the process with the
         * signal its report names (or finds the signal handled and releases the claim). */
        if (!counted) {
            atomic_fetch_add(&g_other_crashers, 1);
            counted = true;
        }
        if (state == CSC_STATE_WRITING && ++waited_for_writer_ms > writing_wait_limit_ms) return CSC_CLAIM_OWNER_STUCK;
        /* The owner's previous handler neither ended the process nor returned in time (or it
         * resolved a fault and reset the default action: the owner went on without releasing). */
        if (state == CSC_STATE_CHAINING && ++waited_for_chain_ms > chain_wait_limit_ms) return CSC_CLAIM_PASS_ON;
        csc_sys_sleep_one_millisecond();
    }
}

bool csc_claim_try(csc_thread_id self) {
    csc_thread_id expected = 0;
    return atomic_compare_exchange_strong(&g_owner, &expected, self);
}

bool csc_claim_is_owner(csc_thread_id self) { return atomic_load(&g_owner) == self; }

int csc_claim_state(void) { return atomic_load(&g_state); }
void csc_claim_set_state(int state) { atomic_store(&g_state, state); }

void csc_claim_begin_writing(void) {
    atomic_store(&g_state, CSC_STATE_WRITING);
    atomic_store(&g_depth, 1);
}

int csc_claim_enter_again(void) { return atomic_fetch_add(&g_depth, 1); }

void csc_claim_release(void) {
    atomic_store(&g_depth, 0);
    atomic_store(&g_state, CSC_STATE_IDLE);
    atomic_store(&g_owner, 0);
}

int csc_claim_other_crashers(void) { return atomic_load(&g_other_crashers); }

void csc_claim_reset(void) {
    atomic_store(&g_owner, 0);
    atomic_store(&g_state, CSC_STATE_IDLE);
    atomic_store(&g_depth, 0);
    atomic_store(&g_other_crashers, 0);
}
