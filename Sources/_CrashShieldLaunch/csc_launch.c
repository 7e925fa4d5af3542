/*
 * csc_launch.c — see csc_launch.h. Runs at start and from launch protection, never in a signal
 * handler.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "csc_launch.h"
#include "csc_capture.h"
#include "csc_launch_platform.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#if defined(__APPLE__)
#include <xlocale.h> /* strtod_l, newlocale: Apple declares the _l functions of the headers included before it */
#endif

#define CSC_STATE_HEADER "crashshield-launch-state 1"
#define CSC_STATE_FILE_MAX (1u << 20)

/* ---- state codec -------------------------------------------------------------------------- */

static uint64_t csc_fnv1a(const unsigned char *bytes, size_t length) {
    uint64_t hash = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < length; i++) {
        hash ^= bytes[i];
        hash *= 0x100000001b3ull;
    }
    return hash;
}

/** Lowercase hex without leading zeros ("0" for zero), as the Swift writer of version 1 did. */
static size_t csc_hex(char *out, uint64_t value) {
    static const char digits[] = "0123456789abcdef";
    char reversed[16];
    size_t n = 0;
    do {
        reversed[n++] = digits[value & 15];
        value >>= 4;
    } while (value);
    for (size_t i = 0; i < n; i++) out[i] = reversed[n - 1 - i];
    out[n] = 0;
    return n;
}

/** Swift's Int(String) accepted by version 1: optional sign, then one or more ASCII digits. */
static bool csc_parse_count(const char *text, int32_t *out) {
    bool negative = false;
    if (*text == '+' || *text == '-') negative = *text++ == '-';
    if (*text == 0) return false;
    uint64_t value = 0;
    for (; *text; text++) {
        if (*text < '0' || *text > '9') return false;
        value = value * 10 + (uint64_t)(*text - '0');
        if (value > 1000000) value = 1000000; /* saturate: out of range either way */
    }
    if (negative && value != 0) return false;
    if (value >= 1000000) return false;
    *out = (int32_t)value;
    return true;
}

void csc_launch_state_free(csc_launch_state *state) {
    if (state == NULL) return;
    free(state->storage);
    memset(state, 0, sizeof *state);
}

csc_launch_state_status csc_launch_state_decode(const void *bytes, size_t length, csc_launch_state *state) {
    memset(state, 0, sizeof *state);
    const unsigned char *input = bytes;
    /* The checksum line is the last line; it covers every byte before it. */
    size_t end = length;
    if (end > 0 && input[end - 1] == '\n') end--;
    size_t last_newline = end;
    for (size_t i = end; i > 0; i--) {
        if (input[i - 1] == '\n') {
            last_newline = i - 1;
            break;
        }
    }
    if (last_newline == end) return CSC_LAUNCH_STATE_CORRUPT;
    char expected[9 + 17] = "checksum=";
    size_t expected_length = 9 + csc_hex(expected + 9, csc_fnv1a(input, last_newline + 1));
    size_t checksum_length = end - (last_newline + 1);
    if (checksum_length != expected_length || memcmp(input + last_newline + 1, expected, expected_length) != 0)
        return CSC_LAUNCH_STATE_CORRUPT;

    /* Lines become NUL-terminated strings in a private copy the fields point into. */
    char *text = malloc(last_newline + 1);
    if (text == NULL) return CSC_LAUNCH_STATE_CORRUPT;
    memcpy(text, input, last_newline + 1);
    bool first = true;
    csc_launch_state decoded;
    memset(&decoded, 0, sizeof decoded);
    for (size_t start = 0; start <= last_newline;) {
        size_t stop = start;
        while (text[stop] != '\n') stop++; /* text[last_newline] is '\n' */
        text[stop] = 0;
        char *line = text + start;
        size_t line_length = stop - start;
        start = stop + 1;
        if (line_length == 0) continue; /* empty lines are skipped */
        if (memchr(line, 0, line_length) != NULL) goto corrupt;
        if (first) {
            if (strcmp(line, CSC_STATE_HEADER) != 0) goto corrupt;
            first = false;
            continue;
        }
        char *equals = strchr(line, '=');
        if (equals == NULL) goto corrupt;
        *equals = 0;
        const char *key = line, *value = equals + 1;
        if (strcmp(key, "launch_id") == 0) {
            decoded.launch_id = value;
        } else if (strcmp(key, "phase") == 0) {
            if (strcmp(value, "launching") != 0 && strcmp(value, "running") != 0 && strcmp(value, "exited") != 0)
                goto corrupt;
            decoded.phase = value;
        } else if (strcmp(key, "app_version") == 0) {
            decoded.app_version = value;
        } else if (strcmp(key, "consecutive_launch_crashes") == 0) {
            if (!csc_parse_count(value, &decoded.consecutive_launch_crashes)) goto corrupt;
        } else if (strcmp(key, "attempted_steps") == 0) {
            decoded.attempted_steps = value;
        } else if (strcmp(key, "safe_mode") == 0) {
            if (strcmp(value, "0") != 0 && strcmp(value, "1") != 0) goto corrupt;
            decoded.safe_mode = value[0] == '1';
        } /* else: a newer writer's key, ignored */
    }
    if (first) goto corrupt; /* no header */
    decoded.storage = text;
    *state = decoded;
    return CSC_LAUNCH_STATE_OK;
corrupt:
    free(text);
    return CSC_LAUNCH_STATE_CORRUPT;
}

/** Opens `path` for reading without ever blocking and only when it is a regular file: lstat(2)
 *  first, so nothing else is opened at all (opening a device node can have effects of its own);
 *  then, for an entry swapped in meanwhile, O_NONBLOCK (a FIFO would otherwise block open(2)
 *  until a writer appears), O_NOFOLLOW (the SDK never writes symlinks, so one at its path is not
 *  its file) and fstat(2) on the descriptor. Returns the descriptor, or -1 with errno from
 *  lstat/open (ENOENT: nothing there), or EINVAL when something that is not a regular file is
 *  there (a symlink included). */
static int csc_open_regular(const char *path, struct stat *info) {
    if (lstat(path, info) != 0) return -1;
    if (!S_ISREG(info->st_mode)) {
        errno = EINVAL;
        return -1;
    }
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        if (errno == ELOOP) errno = EINVAL; /* a symlink: something, but not ours */
        return -1;
    }
    if (fstat(fd, info) != 0 || !S_ISREG(info->st_mode)) {
        close(fd);
        errno = EINVAL;
        return -1;
    }
    return fd;
}

/** Reads all of regular file `fd` (closing it), whose fstat is `info`, into a malloc'd,
 *  NUL-terminated buffer; NULL on a read error or when there are more than `limit` bytes (a file
 *  larger than `limit` is refused from its size, before anything is allocated or read). */
static char *csc_read_all(int fd, const struct stat *info, size_t limit, size_t *length) {
    char *buffer = NULL;
    if (info->st_size < 0 || (uint64_t)info->st_size > limit) goto fail;
    size_t capacity = info->st_size > 0 ? (size_t)info->st_size + 1 : 4096;
    if (capacity > limit + 1) capacity = limit + 1;
    buffer = malloc(capacity);
    size_t used = 0;
    while (buffer != NULL) {
        if (used == capacity) { /* the file grew, or its size was unknown */
            if (used > limit) goto fail;
            size_t grown = capacity * 2 > limit + 1 ? limit + 1 : capacity * 2;
            char *bigger = realloc(buffer, grown);
            if (bigger == NULL) goto fail;
            buffer = bigger;
            capacity = grown;
        }
        ssize_t count = read(fd, buffer + used, capacity - used);
        if (count < 0 && errno == EINTR) continue;
        if (count < 0) goto fail;
        if (count == 0) break;
        used += (size_t)count;
    }
    if (buffer == NULL || used > limit) goto fail;
    if (used == capacity) {
        char *bigger = realloc(buffer, used + 1);
        if (bigger == NULL) goto fail;
        buffer = bigger;
    }
    close(fd);
    buffer[used] = 0;
    *length = used;
    return buffer;
fail:
    close(fd);
    free(buffer);
    return NULL;
}

char *csc_read_file(const char *path, size_t limit, size_t *length) {
    struct stat info;
    int fd = csc_open_regular(path, &info);
    return fd < 0 ? NULL : csc_read_all(fd, &info, limit, length);
}

csc_launch_state_status csc_launch_state_read(const char *path, csc_launch_state *state) {
    memset(state, 0, sizeof *state);
    struct stat info;
    int fd = csc_open_regular(path, &info);
    if (fd < 0) {
        /* Nothing there (or no directory): a first launch. Anything else (a FIFO, a directory, a
         * symlink, a device, no permission) is not a state this SDK wrote: reset. */
        return errno == ENOENT || errno == ENOTDIR ? CSC_LAUNCH_STATE_ABSENT : CSC_LAUNCH_STATE_CORRUPT;
    }
    size_t length = 0;
    char *bytes = csc_read_all(fd, &info, CSC_STATE_FILE_MAX, &length);
    if (bytes == NULL) return CSC_LAUNCH_STATE_CORRUPT; /* unreadable, or larger than any state file */
    csc_launch_state_status status = csc_launch_state_decode(bytes, length, state);
    free(bytes);
    return status;
}

/** Appends `key` `value` '\n', replacing line breaks (and commas when `no_commas`) with '_'. */
static size_t csc_put_line(char *out, size_t at, const char *key, const char *value, bool no_commas) {
    size_t key_length = strlen(key);
    memcpy(out + at, key, key_length);
    at += key_length;
    for (const char *c = value; *c; c++) {
        bool replace = *c == '\n' || *c == '\r' || (no_commas && *c == ',');
        out[at++] = replace ? '_' : *c;
    }
    out[at++] = '\n';
    return at;
}

char *csc_launch_state_encode(const csc_launch_state *state, size_t *length) {
    const char *steps = state->attempted_steps ? state->attempted_steps : "";
    size_t capacity = sizeof CSC_STATE_HEADER + 200 + strlen(steps)
        + (state->launch_id ? strlen(state->launch_id) : 0) + (state->phase ? strlen(state->phase) : 0)
        + (state->app_version ? strlen(state->app_version) : 0);
    char *out = malloc(capacity);
    if (out == NULL) return NULL;
    size_t at = csc_put_line(out, 0, "", CSC_STATE_HEADER, false);
    if (state->launch_id) at = csc_put_line(out, at, "launch_id=", state->launch_id, true);
    if (state->phase) at = csc_put_line(out, at, "phase=", state->phase, true);
    if (state->app_version) at = csc_put_line(out, at, "app_version=", state->app_version, true);
    char number[24];
    snprintf(number, sizeof number, "%d", (int)(state->consecutive_launch_crashes < 0 ? 0 : state->consecutive_launch_crashes));
    at = csc_put_line(out, at, "consecutive_launch_crashes=", number, false);
    at = csc_put_line(out, at, "attempted_steps=", steps, false);
    at = csc_put_line(out, at, "safe_mode=", state->safe_mode ? "1" : "0", false);
    char hex[17];
    csc_hex(hex, csc_fnv1a((const unsigned char *)out, at));
    at = csc_put_line(out, at, "checksum=", hex, false);
    *length = at;
    return out;
}

bool csc_launch_state_write(const char *path, const csc_launch_state *state) {
    size_t length = 0;
    char *bytes = csc_launch_state_encode(state, &length);
    if (bytes == NULL) return false;
    bool written = csc_write_file_atomically(path, bytes, length);
    free(bytes);
    return written;
}

/** Creates a new temporary file next to `path` for writing: "<path>.tmp-<pid>-<n>", n unique in
 *  this process (two writers in one process never share one). O_EXCL | O_NOFOLLOW: an existing
 *  entry of that name (left by a process of the same pid that died mid-write) is unlinked first,
 *  never opened; one that cannot be unlinked (a directory) makes the next name be tried, so no
 *  leftover blocks later writes. */
static int csc_create_temporary(const char *path, char **temporary_out) {
    static _Atomic unsigned long sequence;
    size_t size = strlen(path) + 48;
    char *temporary = malloc(size);
    if (temporary == NULL) return -1;
    for (int attempt = 0; attempt < 8; attempt++) {
        snprintf(temporary, size, "%s.tmp-%ld-%lu", path, (long)getpid(), (unsigned long)atomic_fetch_add(&sequence, 1));
        int fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0644);
        if (fd < 0 && errno == EEXIST && unlink(temporary) == 0)
            fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0644);
        if (fd >= 0) {
            *temporary_out = temporary;
            return fd;
        }
        if (errno != EEXIST) break; /* no directory, no permission, no space: no name helps */
    }
    free(temporary);
    return -1;
}

bool csc_write_file_atomically(const char *path, const void *bytes, size_t length) {
    /* Only a file (or a symlink, FIFO, socket or device node, which rename replaces without
     * opening) is ever replaced. A directory is not the SDK's: an empty one is removed, a
     * non-empty one is left alone and the write fails, without touching anything. (Swapping a
     * directory in would park it under the temporary name, where unlink cannot remove it.) */
    struct stat existing;
    if (lstat(path, &existing) == 0 && S_ISDIR(existing.st_mode) && rmdir(path) != 0) return false;
    char *temporary = NULL;
    int fd = csc_create_temporary(path, &temporary);
    if (fd < 0) return false;
    size_t done = 0;
    while (done < length) {
        ssize_t count = write(fd, (const char *)bytes + done, length - done);
        if (count < 0 && errno == EINTR) continue;
        if (count <= 0) break;
        done += (size_t)count;
    }
    close(fd);
    bool ok = false;
    if (done == length) {
        if (csc_platform_swap_paths(temporary, path) == 0) {
            /* Now the old entry. A directory that appeared since the lstat above is swapped
             * back, so it is neither lost nor left under the temporary name. */
            struct stat swapped_out; /* unlink(2) of a directory: EISDIR on Linux, EPERM on Apple */
            if (unlink(temporary) != 0 && lstat(temporary, &swapped_out) == 0 && S_ISDIR(swapped_out.st_mode)
                && csc_platform_swap_paths(temporary, path) == 0) {
                unlink(temporary);
                free(temporary);
                return false;
            }
            free(temporary);
            return true;
        }
        /* ENOENT: no old file yet; anything else: no swap here. Either way a plain rename. */
        ok = rename(temporary, path) == 0;
    }
    if (!ok) unlink(temporary);
    free(temporary);
    return ok;
}

/* ---- launch id, pending reports, deferred call ---------------------------------------------- */

void csc_make_launch_id(char out[37]) {
    unsigned char random[16];
    size_t filled = csc_platform_random(random, sizeof random);
    if (filled < sizeof random) { /* no entropy source: time, pid and address bits, still unique enough */
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        uint64_t mix = ((uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec) ^ ((uint64_t)getpid() << 40)
            ^ (uint64_t)(uintptr_t)&now;
        for (size_t i = filled; i < sizeof random; i++) {
            mix = mix * 6364136223846793005ull + 1442695040888963407ull;
            random[i] = (unsigned char)(mix >> 56);
        }
    }
    random[6] = (unsigned char)((random[6] & 0x0f) | 0x40); /* version 4 */
    random[8] = (unsigned char)((random[8] & 0x3f) | 0x80); /* RFC 4122 variant */
    static const char digits[] = "0123456789abcdef";
    size_t at = 0;
    for (size_t i = 0; i < sizeof random; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10) out[at++] = '-';
        out[at++] = digits[random[i] >> 4];
        out[at++] = digits[random[i] & 15];
    }
    out[at] = 0;
}

static bool csc_is_report_name(const char *name);

bool csc_directory_has_reports(const char *directory) {
    DIR *handle = opendir(directory);
    if (handle == NULL) return false;
    bool found = false;
    struct dirent *entry;
    while (!found && (entry = readdir(handle)) != NULL) found = csc_is_report_name(entry->d_name);
    closedir(handle);
    return found;
}

static bool csc_is_report_name(const char *name) {
    size_t length = strlen(name);
    return length >= 12 && strncmp(name, "report-", 7) == 0 && strcmp(name + length - 5, ".json") == 0;
}

static int csc_compare_pending(const void *left, const void *right) {
    const csc_pending_report *a = left, *b = right;
    if (a->modified_ns != b->modified_ns) return a->modified_ns < b->modified_ns ? -1 : 1;
    return strcmp(a->path, b->path);
}

csc_pending_report *csc_pending_reports_list(const char *directory, bool read, size_t limit, size_t *count) {
    *count = 0;
    DIR *handle = opendir(directory);
    if (handle == NULL) return NULL;
    csc_pending_report *reports = NULL;
    size_t used = 0, capacity = 0;
    size_t directory_length = strlen(directory);
    struct dirent *entry;
    while ((entry = readdir(handle)) != NULL) {
        if (!csc_is_report_name(entry->d_name)) continue;
        if (used == capacity) {
            size_t grown = capacity ? capacity * 2 : 4;
            csc_pending_report *bigger = realloc(reports, grown * sizeof *reports);
            if (bigger == NULL) break;
            reports = bigger;
            capacity = grown;
        }
        size_t name_length = strlen(entry->d_name);
        char *path = malloc(directory_length + name_length + 2);
        if (path == NULL) break;
        memcpy(path, directory, directory_length);
        path[directory_length] = '/';
        memcpy(path + directory_length + 1, entry->d_name, name_length + 1);
        csc_pending_report *report = &reports[used++];
        memset(report, 0, sizeof *report);
        report->path = path;
        struct stat info; /* follows a symlink, like the listing always did; reading does not */
        if (stat(path, &info) == 0) report->modified_ns = csc_platform_modified_ns(&info);
    }
    closedir(handle);
    if (used > 1) qsort(reports, used, sizeof *reports, csc_compare_pending);
    if (read) csc_pending_reports_read(reports, used, limit);
    *count = used;
    return reports;
}

size_t csc_pending_reports_prune(csc_pending_report *reports, size_t *count, size_t keep, int64_t oldest_ns) {
    size_t used = *count;
    if (reports == NULL || used == 0) return 0;
    /* Oldest first: drop from the front, never the newest entry. */
    size_t drop = used > keep ? used - keep : 0;
    while (oldest_ns > 0 && drop + 1 < used && reports[drop].modified_ns < oldest_ns) drop++;
    size_t dropped = 0;
    for (size_t i = 0; i < drop; i++) {
        if (unlink(reports[i].path) == 0 || errno == ENOENT) dropped++;
        free(reports[i].path);
        free(reports[i].bytes);
    }
    memmove(reports, reports + drop, (used - drop) * sizeof *reports);
    *count = used - drop;
    return dropped;
}

void csc_pending_reports_read(csc_pending_report *reports, size_t count, size_t limit) {
    for (size_t i = 0; reports != NULL && i < count; i++) {
        csc_pending_report *report = &reports[i];
        if (report->bytes != NULL) continue;
        report->bytes = csc_read_file(report->path, limit, &report->length);
        if (report->bytes != NULL) csc_report_scan_launch_fields(report->bytes, report->length, &report->fields);
    }
}

void csc_pending_reports_free(csc_pending_report *reports, size_t count) {
    for (size_t i = 0; reports != NULL && i < count; i++) {
        free(reports[i].path);
        free(reports[i].bytes);
    }
    free(reports);
}

typedef struct {
    uint64_t nanoseconds;
    void (*callback)(void *context);
    void *context;
} csc_deferred;

static uint64_t csc_monotonic_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
}

static void *csc_deferred_main(void *argument) {
    csc_deferred call = *(csc_deferred *)argument;
    free(argument);
    uint64_t deadline = csc_monotonic_ns() + call.nanoseconds;
    for (uint64_t now = csc_monotonic_ns(); now < deadline; now = csc_monotonic_ns()) {
        uint64_t left = deadline - now;
        struct timespec pause = {(time_t)(left / 1000000000ull), (long)(left % 1000000000ull)};
        nanosleep(&pause, NULL); /* EINTR: the loop sleeps the rest */
    }
    call.callback(call.context);
    return NULL;
}

bool csc_run_after(uint64_t nanoseconds, void (*callback)(void *context), void *context) {
    csc_deferred *call = malloc(sizeof *call);
    if (call == NULL) return false;
    call->nanoseconds = nanoseconds;
    call->callback = callback;
    call->context = context;
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attributes, 256 * 1024); /* the callback is small Swift code */
    pthread_t thread;
    int failed = pthread_create(&thread, &attributes, csc_deferred_main, call);
    pthread_attr_destroy(&attributes);
    if (failed) free(call);
    return failed == 0;
}

/* ---- launch fields of a pending report ------------------------------------------------------ */

/* A port of TolerantJSON's parser (Sources/CrashShieldRecording/TolerantJSON.swift) that stops
 * where it stops, so a field is seen here exactly when it is in the document that the full
 * decoder gets after the repair: a value counts once it is complete; the first byte that is not
 * valid JSON (or the end of a cut report) ends the scan with what was complete before it.
 * Kept beside TolerantJSON: the start path reads only the launch fields of every pending report, in
 * place and in C, and leaves the full Swift decode (repair, then JSONDecoder) to a report's first use. */

typedef enum { CSC_JSON_STRING, CSC_JSON_NUMBER, CSC_JSON_TRUE, CSC_JSON_FALSE, CSC_JSON_NULL, CSC_JSON_OBJECT, CSC_JSON_ARRAY } csc_json_type;

/** Which container it is: the report itself, its "crash" object, its (first) "crashed_thread"
 *  object, that object's "guard_frames" array, or anything else. */
typedef enum { CSC_SCAN_OTHER, CSC_SCAN_REPORT, CSC_SCAN_CRASH, CSC_SCAN_CRASHED_THREAD, CSC_SCAN_GUARD_NAMES } csc_scan_role;

typedef struct {
    const unsigned char *input;
    size_t length;
    size_t position;
    int depth;
    csc_report_launch_fields *fields;
    unsigned seen; /* bit per wanted key: a key seen twice is left to the full decoder */
    /* The guard_frames array being scanned: its names so far, and whether each was plain. */
    char guard_names[sizeof(((csc_report_launch_fields *)0)->guard_frames)];
    size_t guard_names_length;
    unsigned guard_name_count;
    bool guard_names_plain;
    /* Something the decoder may read differently from the scan's guard_frames: a second
     * crashed_thread or guard_frames key, or a key in crashed_thread with an escape or non-ASCII. */
    bool guard_frames_doubtful;
} csc_scanner;

typedef struct {
    csc_json_type type;
    size_t start, end; /* a string's bytes between the quotes */
    bool escaped;      /* the string holds a backslash escape */
} csc_json_value;

static bool csc_scan_value(csc_scanner *s, csc_scan_role role, csc_json_value *value);

static void csc_scan_space(csc_scanner *s) {
    while (s->position < s->length) {
        unsigned char c = s->input[s->position];
        if (c != ' ' && c != '\n' && c != '\r' && c != '\t') break;
        s->position++;
    }
}

static int csc_hex_digit(unsigned char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static bool csc_scan_hex_unit(const csc_scanner *s, size_t at, uint32_t *unit) {
    if (at + 4 > s->length) return false;
    uint32_t value = 0;
    for (size_t i = at; i < at + 4; i++) {
        int digit = csc_hex_digit(s->input[i]);
        if (digit < 0) return false;
        value = value << 4 | (uint32_t)digit;
    }
    *unit = value;
    return true;
}

/** Length of the well-formed UTF-8 sequence at `at` (a byte >= 0x80), or 0. */
static size_t csc_scan_utf8(const csc_scanner *s, size_t at) {
    unsigned char lead = s->input[at];
    size_t length;
    uint32_t minimum, scalar;
    if (lead >= 0xC2 && lead <= 0xDF) { length = 2; minimum = 0x80; scalar = lead & 0x1F; }
    else if (lead >= 0xE0 && lead <= 0xEF) { length = 3; minimum = 0x800; scalar = lead & 0x0F; }
    else if (lead >= 0xF0 && lead <= 0xF4) { length = 4; minimum = 0x10000; scalar = lead & 0x07; }
    else return 0;
    if (at + length > s->length) return 0;
    for (size_t i = at + 1; i < at + length; i++) {
        if ((s->input[i] & 0xC0) != 0x80) return 0;
        scalar = scalar << 6 | (s->input[i] & 0x3F);
    }
    if (scalar < minimum || scalar > 0x10FFFF || (scalar >= 0xD800 && scalar <= 0xDFFF)) return 0;
    return length;
}

static bool csc_scan_string(csc_scanner *s, csc_json_value *value) {
    s->position++; /* the opening quote */
    value->type = CSC_JSON_STRING;
    value->start = s->position;
    value->escaped = false;
    while (s->position < s->length) {
        unsigned char c = s->input[s->position];
        if (c == '"') {
            value->end = s->position++;
            return true;
        }
        if (c < 0x20) return false;
        if (c >= 0x80) {
            size_t length = csc_scan_utf8(s, s->position);
            if (length == 0) return false;
            s->position += length;
            continue;
        }
        if (c == '\\') {
            if (s->position + 1 >= s->length) return false;
            value->escaped = true;
            unsigned char escaped = s->input[s->position + 1];
            if (escaped == 'u') {
                uint32_t unit;
                if (!csc_scan_hex_unit(s, s->position + 2, &unit)) return false;
                s->position += 6;
                if (unit >= 0xDC00 && unit <= 0xDFFF) return false; /* lone low surrogate */
                if (unit >= 0xD800 && unit <= 0xDBFF) {
                    uint32_t low;
                    if (s->position + 1 >= s->length || s->input[s->position] != '\\' || s->input[s->position + 1] != 'u')
                        return false;
                    if (!csc_scan_hex_unit(s, s->position + 2, &low) || low < 0xDC00 || low > 0xDFFF) return false;
                    s->position += 6;
                }
                continue;
            }
            if (strchr("\"\\/bfnrt", escaped) == NULL || escaped == 0) return false;
            s->position += 2;
            continue;
        }
        s->position++;
    }
    return false;
}

static bool csc_scan_literal(csc_scanner *s, const char *word, csc_json_type type, csc_json_value *value) {
    for (; *word; word++) {
        if (s->position >= s->length || s->input[s->position] != (unsigned char)*word) return false;
        s->position++;
    }
    value->type = type;
    return true;
}

/** strtod in the C locale: the app's LC_NUMERIC must not change what is a number. */
static double csc_strtod_c(const char *text) {
    static _Atomic(locale_t) c_locale;
    locale_t locale = atomic_load(&c_locale);
    if (locale == (locale_t)0) {
        locale_t made = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
        locale_t expected = (locale_t)0;
        if (made != (locale_t)0 && !atomic_compare_exchange_strong(&c_locale, &expected, made)) freelocale(made);
        locale = atomic_load(&c_locale);
    }
    return locale != (locale_t)0 ? strtod_l(text, NULL, locale) : strtod(text, NULL);
}

static bool csc_scan_number(csc_scanner *s, csc_json_value *value) {
    size_t start = s->position;
    const unsigned char *in = s->input;
    if (s->position < s->length && in[s->position] == '-') s->position++;
    size_t first_digit = s->position, digits = 0;
    while (s->position < s->length && in[s->position] >= '0' && in[s->position] <= '9') { s->position++; digits++; }
    if (digits == 0 || (digits > 1 && in[first_digit] == '0')) return false;
    if (s->position < s->length && in[s->position] == '.') {
        s->position++;
        size_t fraction = 0;
        while (s->position < s->length && in[s->position] >= '0' && in[s->position] <= '9') { s->position++; fraction++; }
        if (fraction == 0) return false;
    }
    if (s->position < s->length && (in[s->position] == 'e' || in[s->position] == 'E')) {
        s->position++;
        if (s->position < s->length && (in[s->position] == '+' || in[s->position] == '-')) s->position++;
        size_t exponent = 0;
        while (s->position < s->length && in[s->position] >= '0' && in[s->position] <= '9') { s->position++; exponent++; }
        if (exponent == 0) return false;
    }
    if (s->position == s->length) return false; /* may itself be cut short */
    /* Out of range for a double (1e999): readers reject it. */
    size_t length = s->position - start;
    char small[64];
    char *text = length < sizeof small ? small : malloc(length + 1);
    if (text == NULL) return false;
    memcpy(text, in + start, length);
    text[length] = 0;
    bool finite = isfinite(csc_strtod_c(text));
    if (text != small) free(text);
    value->type = CSC_JSON_NUMBER;
    return finite;
}

enum { CSC_KEY_ID = 1, CSC_KEY_LAUNCH_ID = 2, CSC_KEY_LAUNCH_PHASE = 4, CSC_KEY_CRASH = 8, CSC_KEY_RECOVERED = 16,
       /* Keys of the guard fail-safe: recorded by csc_scan_container itself, never with csc_record. */
       CSC_KEY_CRASHED_THREAD = 32, CSC_KEY_GUARD_FRAMES = 64, CSC_KEY_FRAMES = 128 };
#define CSC_GUARD_KEYS (CSC_KEY_CRASHED_THREAD | CSC_KEY_GUARD_FRAMES | CSC_KEY_FRAMES)

/** The key as JSONDecoder's convertFromSnakeCase sees it (ASCII keys only; see
 *  csc_scan_container): leading and trailing underscores kept, the words between them joined,
 *  the first lowercased, the others capitalized ("LAUNCH__phase" -> "launchPhase"), a key of
 *  one word unchanged. False when the result does not fit `out` (then it matches no wanted key). */
static bool csc_snake_to_camel(const char *key, size_t length, char *out, size_t capacity) {
    size_t first = 0, last = length;
    while (first < length && key[first] == '_') first++;
    while (last > first && key[last - 1] == '_') last--;
    if (length + 1 > capacity) return false;
    if (memchr(key + first, '_', last - first) == NULL) { /* one word (or none): unchanged */
        memcpy(out, key, length);
        out[length] = 0;
        return true;
    }
    size_t at = 0;
    for (size_t i = 0; i < first; i++) out[at++] = '_';
    bool first_word = true, word_start = true;
    for (size_t i = first; i < last; i++) {
        char c = key[i];
        if (c == '_') {
            if (!word_start) first_word = false;
            word_start = true;
            continue;
        }
        bool upper = word_start && !first_word;
        out[at++] = upper ? (char)((c >= 'a' && c <= 'z') ? c - 32 : c) : (char)((c >= 'A' && c <= 'Z') ? c + 32 : c);
        word_start = false;
    }
    for (size_t i = last; i < length; i++) out[at++] = '_';
    out[at] = 0;
    return true;
}

static unsigned csc_wanted_key(const csc_scanner *s, csc_scan_role role, const csc_json_value *key) {
    char name[64];
    if (!csc_snake_to_camel((const char *)s->input + key->start, key->end - key->start, name, sizeof name)) return 0;
    if (role == CSC_SCAN_REPORT) {
        if (strcmp(name, "id") == 0) return CSC_KEY_ID;
        if (strcmp(name, "launchId") == 0) return CSC_KEY_LAUNCH_ID;
        if (strcmp(name, "launchPhase") == 0) return CSC_KEY_LAUNCH_PHASE;
        if (strcmp(name, "crash") == 0) return CSC_KEY_CRASH;
        if (strcmp(name, "crashedThread") == 0) return CSC_KEY_CRASHED_THREAD;
    } else if (role == CSC_SCAN_CRASH) {
        if (strcmp(name, "recovered") == 0) return CSC_KEY_RECOVERED;
    } else if (role == CSC_SCAN_CRASHED_THREAD) {
        if (strcmp(name, "guardFrames") == 0) return CSC_KEY_GUARD_FRAMES;
        if (strcmp(name, "frames") == 0) return CSC_KEY_FRAMES;
    }
    return 0;
}

/** Copies a plain string value into `out`; false (decode instead) when it has escapes or is too long. */
static bool csc_copy_plain(const csc_scanner *s, const csc_json_value *value, char *out, size_t capacity) {
    size_t length = value->end - value->start;
    if (value->escaped || length >= capacity) return false;
    memcpy(out, s->input + value->start, length);
    out[length] = 0;
    return true;
}

/** Records a complete value of a wanted key; what the scan cannot judge alike with the full
 *  decoder (wrong type, escapes, a long value, a key seen twice) is left to the full decoder. */
static void csc_record(csc_scanner *s, unsigned key, const csc_json_value *value) {
    csc_report_launch_fields *fields = s->fields;
    if (s->seen & key) {
        fields->needs_full_decode = true;
        return;
    }
    s->seen |= key;
    if (key == CSC_KEY_ID) {
        if (value->type == CSC_JSON_STRING) fields->is_report = true;
        else fields->needs_full_decode = true;
        return;
    }
    if (value->type == CSC_JSON_NULL) return; /* the decoder's nil */
    switch (key) {
    case CSC_KEY_LAUNCH_ID:
        fields->has_launch_id = value->type == CSC_JSON_STRING && csc_copy_plain(s, value, fields->launch_id, sizeof fields->launch_id);
        if (!fields->has_launch_id) fields->needs_full_decode = true;
        break;
    case CSC_KEY_LAUNCH_PHASE:
        fields->has_launch_phase = value->type == CSC_JSON_STRING && csc_copy_plain(s, value, fields->launch_phase, sizeof fields->launch_phase);
        if (!fields->has_launch_phase) fields->needs_full_decode = true;
        break;
    case CSC_KEY_CRASH:
        if (value->type != CSC_JSON_OBJECT) fields->needs_full_decode = true;
        break;
    case CSC_KEY_RECOVERED:
        if (value->type == CSC_JSON_TRUE || value->type == CSC_JSON_FALSE) fields->recovered = value->type == CSC_JSON_TRUE;
        else fields->needs_full_decode = true;
        break;
    }
}

/** One element of the guard_frames array: a plain name is appended, anything else makes the
 *  array unreadable (the decoder's call). */
static void csc_guard_name_element(csc_scanner *s, const csc_json_value *value) {
    if (!s->guard_names_plain) return;
    size_t length = value->end - value->start;
    bool plain = value->type == CSC_JSON_STRING && !value->escaped && length > 0 && length < CSC_GUARD_NAME_MAX &&
                 s->guard_name_count < CSC_GUARD_RANGES_MAX &&
                 s->guard_names_length + length + 2 <= sizeof s->guard_names;
    for (size_t i = value->start; plain && i < value->end; i++) {
        unsigned char c = s->input[i];
        plain = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    }
    if (!plain) {
        s->guard_names_plain = false;
        return;
    }
    if (s->guard_name_count++) s->guard_names[s->guard_names_length++] = ',';
    memcpy(s->guard_names + s->guard_names_length, s->input + value->start, length);
    s->guard_names_length += length;
    s->guard_names[s->guard_names_length] = 0;
}

/** A fail-safe key of the report or its crashed_thread, before its value is scanned: returns the
 *  role of the value. guard_frames counts as unreadable until its value is complete and plain. */
static csc_scan_role csc_guard_key_begins(csc_scanner *s, unsigned key) {
    csc_report_launch_fields *fields = s->fields;
    bool again = s->seen & key;
    s->seen |= key;
    switch (key) {
    case CSC_KEY_CRASHED_THREAD:
        if (!again) return CSC_SCAN_CRASHED_THREAD;
        s->guard_frames_doubtful = true; /* which one the decoder keeps is its call */
        return CSC_SCAN_OTHER;
    case CSC_KEY_FRAMES:
        fields->has_crashed_frames = true;
        return CSC_SCAN_OTHER;
    case CSC_KEY_GUARD_FRAMES:
        fields->guard_frames_status = CSC_GUARD_FRAMES_UNREADABLE;
        if (again) {
            s->guard_frames_doubtful = true;
            return CSC_SCAN_OTHER;
        }
        s->guard_names[0] = 0;
        s->guard_names_length = 0;
        s->guard_name_count = 0;
        s->guard_names_plain = true;
        return CSC_SCAN_GUARD_NAMES;
    }
    return CSC_SCAN_OTHER;
}

static bool csc_scan_container(csc_scanner *s, unsigned char close, bool is_object, csc_scan_role role) {
    if (++s->depth >= 512) return false;
    s->position++;
    csc_scan_space(s);
    if (s->position < s->length && s->input[s->position] == close) {
        s->position++;
        s->depth--;
        return true;
    }
    for (;;) {
        unsigned key = 0;
        csc_scan_role child_role = CSC_SCAN_OTHER;
        if (is_object) {
            csc_json_value name;
            csc_scan_space(s);
            if (s->position >= s->length || s->input[s->position] != '"') return false;
            if (!csc_scan_string(s, &name)) return false;
            if (role == CSC_SCAN_REPORT || role == CSC_SCAN_CRASH || role == CSC_SCAN_CRASHED_THREAD) {
                /* An escape or a non-ASCII letter might spell a wanted key after decoding and case
                 * mapping ("launch_\u0069d", a dotless i that uppercases to I): decoder's call. */
                bool plain = !name.escaped;
                for (size_t i = name.start; plain && i < name.end; i++) plain = s->input[i] < 0x80;
                if (!plain && role == CSC_SCAN_CRASHED_THREAD) s->guard_frames_doubtful = true;
                else if (!plain) s->fields->needs_full_decode = true;
            }
            key = csc_wanted_key(s, role, &name);
            if (key == CSC_KEY_CRASH && !(s->seen & CSC_KEY_CRASH)) child_role = CSC_SCAN_CRASH;
            if (key & CSC_GUARD_KEYS) child_role = csc_guard_key_begins(s, key);
            csc_scan_space(s);
            if (s->position >= s->length || s->input[s->position] != ':') return false;
            s->position++;
        }
        csc_json_value value;
        /* A value cut short is not recorded; what a "crash" object cut short held before the cut
         * was recorded inside it (the repair closes that object, so the decoder sees it too). */
        if (!csc_scan_value(s, child_role, &value)) return false;
        if (role == CSC_SCAN_GUARD_NAMES) csc_guard_name_element(s, &value);
        if (key == CSC_KEY_GUARD_FRAMES && child_role == CSC_SCAN_GUARD_NAMES && value.type == CSC_JSON_ARRAY &&
            s->guard_names_plain) {
            memcpy(s->fields->guard_frames, s->guard_names, s->guard_names_length + 1);
            s->fields->guard_frames_status = CSC_GUARD_FRAMES_READ;
        } else if (key && !(key & CSC_GUARD_KEYS)) {
            csc_record(s, key, &value);
        }
        csc_scan_space(s);
        if (s->position >= s->length) return false;
        if (s->input[s->position] == ',') {
            s->position++;
            continue;
        }
        if (s->input[s->position] == close) {
            s->position++;
            s->depth--;
            return true;
        }
        return false;
    }
}

static bool csc_scan_value(csc_scanner *s, csc_scan_role role, csc_json_value *value) {
    csc_scan_space(s);
    value->type = CSC_JSON_NULL;
    if (s->position >= s->length) return false;
    switch (s->input[s->position]) {
    case '{':
        value->type = CSC_JSON_OBJECT;
        return csc_scan_container(s, '}', true, role == CSC_SCAN_GUARD_NAMES ? CSC_SCAN_OTHER : role);
    case '[':
        value->type = CSC_JSON_ARRAY;
        return csc_scan_container(s, ']', false, role == CSC_SCAN_GUARD_NAMES ? role : CSC_SCAN_OTHER);
    case '"': return csc_scan_string(s, value);
    case 't': return csc_scan_literal(s, "true", CSC_JSON_TRUE, value);
    case 'f': return csc_scan_literal(s, "false", CSC_JSON_FALSE, value);
    case 'n': return csc_scan_literal(s, "null", CSC_JSON_NULL, value);
    default: return csc_scan_number(s, value);
    }
}

void csc_report_scan_launch_fields(const void *bytes, size_t length, csc_report_launch_fields *fields) {
    memset(fields, 0, sizeof *fields);
    csc_scanner scanner = {.input = bytes, .length = length, .fields = fields};
    csc_scan_space(&scanner);
    if (scanner.position >= length || scanner.input[scanner.position] != '{') return; /* not an object: never a report */
    csc_json_value value;
    (void)csc_scan_value(&scanner, CSC_SCAN_REPORT, &value); /* a stop keeps what was complete */
    if (scanner.guard_frames_doubtful) fields->guard_frames_status = CSC_GUARD_FRAMES_UNREADABLE;
    if (fields->guard_frames_status != CSC_GUARD_FRAMES_READ) fields->guard_frames[0] = 0;
}
