/*
 * cs_capture_exceptions.h — uncaught Objective-C exceptions into crash reports.
 *
 * cs_capture_exceptions_start() installs an NSUncaughtExceptionHandler that writes a report
 * (name, reason, the exception's return addresses) through csc_report_exception() and then calls
 * the handler that was installed before it. What happens next is the runtime's: GNUstep prints
 * the exception and calls exit(1); Apple aborts (the SIGABRT writes no second report).
 * Call it after csc_install() (CrashCapture.start); the CrashShield module does.
 */
#ifndef CS_CAPTURE_EXCEPTIONS_H
#define CS_CAPTURE_EXCEPTIONS_H

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Idempotent. Returns false when no Objective-C runtime is available. */
bool cs_capture_exceptions_start(void);

#ifdef __cplusplus
}
#endif
#endif
