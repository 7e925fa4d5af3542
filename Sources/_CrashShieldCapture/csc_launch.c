/*
 * csc_launch.c — see csc_launch.h. Runs at start and from launch protection, never in a signal
 * handler.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "csc_launch.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#if defined(__linux__)
#include <sys/random.h>
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

/** Reads all of `fd` (closing it) into a malloc'd, NUL-terminated buffer; NULL on a read error
 *  or when there are more than `limit` bytes. */
static char *csc_read_all(int fd, size_t limit, size_t *length) {
    struct stat info;
    size_t capacity = fstat(fd, &info) == 0 && info.st_size > 0 ? (size_t)info.st_size + 1 : 4096;
    if (capacity > limit + 1) capacity = limit + 1;
    char *buffer = malloc(capacity);
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
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    return fd < 0 ? NULL : csc_read_all(fd, limit, length);
}

csc_launch_state_status csc_launch_state_read(const char *path, csc_launch_state *state) {
    memset(state, 0, sizeof *state);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return CSC_LAUNCH_STATE_ABSENT;
    size_t length = 0;
    char *bytes = csc_read_all(fd, CSC_STATE_FILE_MAX, &length);
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

bool csc_write_file_atomically(const char *path, const void *bytes, size_t length) {
    size_t path_length = strlen(path);
    char *temporary = malloc(path_length + 32);
    if (temporary == NULL) return false;
    snprintf(temporary, path_length + 32, "%s.tmp-%ld", path, (long)getpid());
    int fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        free(temporary);
        return false;
    }
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
#if defined(__linux__) && defined(RENAME_EXCHANGE)
        if (renameat2(AT_FDCWD, temporary, AT_FDCWD, path, RENAME_EXCHANGE) == 0) {
            unlink(temporary); /* now the old content */
            free(temporary);
            return true;
        }
        /* ENOENT: no old file yet; EINVAL/ENOSYS: no swap here. Either way a plain rename. */
#endif
        ok = rename(temporary, path) == 0;
    }
    if (!ok) unlink(temporary);
    free(temporary);
    return ok;
}

/* ---- launch id, pending reports, deferred call ---------------------------------------------- */

void csc_make_launch_id(char out[37]) {
    unsigned char random[16];
    size_t filled = 0;
#if defined(__linux__)
    while (filled < sizeof random) {
        ssize_t count = getrandom(random + filled, sizeof random - filled, 0);
        if (count < 0 && errno == EINTR) continue;
        if (count <= 0) break;
        filled += (size_t)count;
    }
#elif defined(__APPLE__)
    arc4random_buf(random, sizeof random);
    filled = sizeof random;
#endif
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

bool csc_directory_has_reports(const char *directory) {
    DIR *handle = opendir(directory);
    if (handle == NULL) return false;
    bool found = false;
    struct dirent *entry;
    while (!found && (entry = readdir(handle)) != NULL) {
        size_t length = strlen(entry->d_name);
        found = length >= 12 && strncmp(entry->d_name, "report-", 7) == 0 && strcmp(entry->d_name + length - 5, ".json") == 0;
    }
    closedir(handle);
    return found;
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
