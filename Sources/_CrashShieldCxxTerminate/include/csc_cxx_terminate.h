/*
 * csc_cxx_terminate.h — names an uncaught C++ exception in the crash report.
 *
 * An uncaught C++ exception ends in std::terminate, which aborts: the SIGABRT handler of
 * _CrashShieldCapture writes the report with the real stack (the throw site is still on it: the
 * C++ runtime terminates before unwinding). The terminate handler installed here only notes the
 * exception's type and what() text first (csc_note_cxx_exception), then hands over to the
 * terminate handler that was installed before it (the C++ runtime's default one prints the
 * exception and aborts). Runs outside any signal handler; it may allocate.
 */
#ifndef CSC_CXX_TERMINATE_H
#define CSC_CXX_TERMINATE_H

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Installs the terminate handler (std::set_terminate), keeping the one installed before to call
 *  after noting. Idempotent: a second call while ours is installed changes nothing. A terminate
 *  handler the app installs later replaces ours (and uncaught exceptions are then reported with
 *  their stack only). Returns true when ours is the current one afterwards. */
bool csc_cxx_install_terminate_handler(void);

#ifdef __cplusplus
}
#endif
#endif
