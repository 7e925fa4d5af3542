/*
 * csc_writer.c — a streaming JSON writer into a static buffer, flushed with csc_sys_write().
 * Async-signal-safe (see the rules in csc_capture.h): no allocation, no locale, no stdio.
 * Platform-neutral and freestanding: it includes only csc_writer.h and csc_sys.h, which need
 * nothing but the compiler's freestanding headers.
 */
#include "csc_writer.h"
#include "csc_sys.h"

void csc_out_flush(csc_out *out) {
    size_t done = 0;
    while (done < out->length && !out->failed) {
        int error = 0;
        size_t n = csc_sys_write(out->fd, out->buffer + done, out->length - done, &error);
        if (n == 0) {
            out->error = error;
            out->failed = true;
            break;
        }
        done += n;
        out->written += (uint64_t)n;
    }
    out->length = 0;
}

void csc_out_bytes(csc_out *out, const char *bytes, size_t length) {
    for (size_t i = 0; i < length; i++) {
        if (out->length == sizeof out->buffer) csc_out_flush(out);
        out->buffer[out->length++] = bytes[i];
    }
}

void csc_out_raw(csc_out *out, const char *text) {
    size_t length = 0;
    while (text[length]) length++;
    csc_out_bytes(out, text, length);
}

/** Length of the well-formed UTF-8 sequence at text[0] (RFC 3629: no overlong forms, no
 *  surrogates, at most U+10FFFF), reading no further than `available` bytes (the caller stops
 *  them at the bound and at the terminating NUL); 0 when the bytes there are not one. Sets
 *  *cut when they are the well-formed beginning of a sequence that the end of the text cut. */
static size_t csc_utf8_sequence_length(const unsigned char *text, size_t available, bool *cut) {
    *cut = false;
    unsigned char lead = text[0];
    size_t length;
    unsigned char low = 0x80, high = 0xbf; /* allowed range of the second byte */
    if (lead >= 0xc2 && lead <= 0xdf) {
        length = 2;
    } else if (lead >= 0xe0 && lead <= 0xef) {
        length = 3;
        if (lead == 0xe0) low = 0xa0;  /* overlong */
        if (lead == 0xed) high = 0x9f; /* UTF-16 surrogates */
    } else if (lead >= 0xf0 && lead <= 0xf4) {
        length = 4;
        if (lead == 0xf0) low = 0x90;  /* overlong */
        if (lead == 0xf4) high = 0x8f; /* above U+10FFFF */
    } else {
        return 0;
    }
    size_t present = length < available ? length : available; /* never read past the text's end */
    if (present > 1 && (text[1] < low || text[1] > high)) return 0;
    for (size_t i = 2; i < present; i++)
        if (text[i] < 0x80 || text[i] > 0xbf) return 0;
    if (present < length) {
        *cut = true;
        return 0;
    }
    return length;
}

void csc_out_string(csc_out *out, const char *text, size_t max) {
    static const char hex[] = "0123456789abcdef";
    if (text == NULL) {
        csc_out_raw(out, "null");
        return;
    }
    csc_out_bytes(out, "\"", 1);
    for (size_t i = 0; i < max && text[i];) {
        unsigned char c = (unsigned char)text[i];
        if (c == '"' || c == '\\') {
            char escaped[2] = {'\\', (char)c};
            csc_out_bytes(out, escaped, 2);
            i++;
        } else if (c < 0x20 || c == 0x7f) {
            char escaped[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            csc_out_bytes(out, escaped, 6);
            i++;
        } else if (c >= 0x80) {
            /* Well-formed UTF-8 (a path under /home/josé, a reason in Chinese, an emoji thread
             * name) is copied as it is. A byte that does not start a well-formed sequence
             * (garbage memory) is written as \u00XX, so the file always stays valid JSON. The NUL check stops the sequence
             * scan at the string's end: it never reads past the terminator. */
            size_t available = 0;
            while (available < 4 && i + available < max && (available == 0 || text[i + available])) available++;
            bool cut = false;
            size_t length = csc_utf8_sequence_length((const unsigned char *)text + i, available, &cut);
            if (cut) break; /* a character cut by truncation (the bound, a kernel-cut thread name) is left out */
            if (length) {
                csc_out_bytes(out, text + i, length);
                i += length;
            } else {
                char escaped[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
                csc_out_bytes(out, escaped, 6);
                i++;
            }
        } else {
            char plain = (char)c;
            csc_out_bytes(out, &plain, 1);
            i++;
        }
    }
    csc_out_bytes(out, "\"", 1);
}

size_t csc_format_u64(char *text, uint64_t value) {
    char reversed[24];
    size_t n = 0;
    do {
        reversed[n++] = (char)('0' + value % 10);
        value /= 10;
    } while (value);
    for (size_t i = 0; i < n; i++) text[i] = reversed[n - 1 - i];
    text[n] = 0;
    return n;
}

size_t csc_format_reason(char *text, size_t capacity, const char *pattern, const uint64_t *args, size_t arg_count) {
    if (capacity == 0) return 0;
    size_t at = 0, next = 0;
    for (const char *p = pattern ? pattern : ""; *p && at + 1 < capacity; p++) {
        if (p[0] != '{' || p[1] != '}') {
            text[at++] = *p;
            continue;
        }
        p++;
        char number[28];
        size_t n;
        if (next >= arg_count) {
            number[0] = '?';
            n = 1;
        } else if (args[next] == (uint64_t)INT64_MAX) {
            static const char kNotFound[] = "NSNotFound";
            for (n = 0; kNotFound[n]; n++) number[n] = kNotFound[n];
        } else if (args[next] > (uint64_t)INT64_MAX) {
            number[0] = '-';
            n = 1 + csc_format_u64(number + 1, (uint64_t)0 - args[next]);
        } else {
            n = csc_format_u64(number, args[next]);
        }
        next++;
        for (size_t i = 0; i < n && at + 1 < capacity; i++) text[at++] = number[i];
    }
    text[at] = 0;
    return at;
}

void csc_out_u64(csc_out *out, uint64_t value) {
    char text[24];
    size_t n = csc_format_u64(text, value);
    csc_out_bytes(out, text, n);
}

void csc_out_i64(csc_out *out, int64_t value) {
    if (value < 0) {
        csc_out_bytes(out, "-", 1);
        csc_out_u64(out, (uint64_t)0 - (uint64_t)value);
    } else {
        csc_out_u64(out, (uint64_t)value);
    }
}

void csc_out_hex(csc_out *out, uint64_t value) {
    static const char hex[] = "0123456789abcdef";
    char text[20];
    size_t n = 0;
    text[n++] = '"';
    text[n++] = '0';
    text[n++] = 'x';
    int shift = 60;
    while (shift > 0 && ((value >> shift) & 15) == 0) shift -= 4;
    for (; shift >= 0; shift -= 4) text[n++] = hex[(value >> shift) & 15];
    text[n++] = '"';
    csc_out_bytes(out, text, n);
}

void csc_out_key(csc_out *out, const char *key, bool first) {
    if (!first) csc_out_bytes(out, ",", 1);
    csc_out_bytes(out, "\"", 1);
    csc_out_raw(out, key);
    csc_out_bytes(out, "\":", 2);
}
