/*
 * csc_writer.h — the async-signal-safe streaming JSON writer of the crash report (csc_writer.c).
 * Platform-neutral and freestanding (see csc_sys.h): it formats into a static buffer and hands
 * full buffers to csc_sys_write().
 */
#ifndef CSC_WRITER_H
#define CSC_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    int fd;
    size_t length;
    bool failed;
    uint64_t written; /**< bytes the system accepted so far */
    int error;        /**< errno of the write that failed */
    char buffer[4096];
} csc_out;

void csc_out_flush(csc_out *out);
void csc_out_raw(csc_out *out, const char *text);
void csc_out_bytes(csc_out *out, const char *bytes, size_t length);
/** A JSON string literal (quoted, escaped, at most `max` source bytes). NULL writes null. */
void csc_out_string(csc_out *out, const char *text, size_t max);
void csc_out_u64(csc_out *out, uint64_t value);
void csc_out_i64(csc_out *out, int64_t value);
/** A quoted hex string "0x..." (addresses are strings: JSON numbers lose 64-bit precision). */
void csc_out_hex(csc_out *out, uint64_t value);
/** Writes `,"key":` (or `"key":` when `first`). */
void csc_out_key(csc_out *out, const char *key, bool first);
/** Formats `value` in decimal into `text` (NUL-terminated); returns the length. */
size_t csc_format_u64(char *text, uint64_t value);
/** Writes `pattern` into `text` (NUL-terminated, cut to `capacity` - 1 bytes) with each "{}"
 *  replaced by the next of `args` in decimal, or "?" when none is left: an incident's reason as
 *  the incident shows it (INT64_MAX reads "NSNotFound", a value above it is printed as the
 *  negative number it was). Returns the length. */
size_t csc_format_reason(char *text, size_t capacity, const char *pattern, const uint64_t *args, size_t arg_count);

#endif
