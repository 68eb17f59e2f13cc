/* log.c - one record per line on stderr, one write(2) each (see log.h).
 *
 * Owns the process-wide log settings. A record is formatted on the stack, so logging
 * allocates nothing and records from different threads never interleave. Warnings and
 * errors repeated word for word are held back: the first one of a window is written, the
 * copies within the window are counted, and the first copy after it carries the count. */
#include "config.h"

#include "logferry/log.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "logferry/utf8.h"

enum lf_log_level lf_log_level_current = LF_LOG_INFO;
static enum lf_log_format log_format = LF_LOG_TEXT;

static const char *const level_names[] = { "error", "warn", "info", "debug" };

/* Repeated records: a small table of the texts seen lately, by hash (direct-mapped: two
 * texts sharing a slot each get through more often, never less). */
#define REPEAT_SLOTS 64
struct repeat {
    uint64_t hash;      /* 0: empty */
    int64_t start_ms;   /* when the window of this text began (monotonic) */
    uint64_t held;      /* copies not written in this window */
};
static struct repeat repeats[REPEAT_SLOTS];
static pthread_mutex_t repeats_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t repeat_window_ms = LF_LOG_REPEAT_WINDOW_MS;

void lf_log_set_repeat_window(uint64_t ms)
{
    pthread_mutex_lock(&repeats_mu);
    repeat_window_ms = ms;
    memset(repeats, 0, sizeof(repeats));
    pthread_mutex_unlock(&repeats_mu);
}

static uint64_t text_hash(enum lf_log_level level, const char *component, const char *msg)
{
    uint64_t h = 0xcbf29ce484222325ull ^ (uint64_t)level;
    for (const char *s = component; *s != '\0'; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    h = (h ^ 0xff) * 0x100000001b3ull;
    for (const char *s = msg; *s != '\0'; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h ? h : 1;
}

/* Decides whether a warning or error is written: false for a copy within its window. When
 * it is written after copies were held back, *held says how many. */
static bool repeat_allows(enum lf_log_level level, const char *component, const char *msg,
                          uint64_t *held)
{
    *held = 0;
    if (level > LF_LOG_WARN || repeat_window_ms == 0)
        return true;
    uint64_t h = text_hash(level, component, msg);
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    int64_t now_ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
    bool allow = true;
    pthread_mutex_lock(&repeats_mu);
    struct repeat *r = &repeats[h % REPEAT_SLOTS];
    if (r->hash == h && now_ms - r->start_ms < (int64_t)repeat_window_ms) {
        r->held++;
        allow = false;
    } else {
        if (r->hash == h)
            *held = r->held;
        *r = (struct repeat){ h, now_ms, 0 };
    }
    pthread_mutex_unlock(&repeats_mu);
    return allow;
}

/* " (repeated 1,240 times in the last minute)" into buf. */
static void repeat_note(char *buf, size_t cap, uint64_t held)
{
    char digits[32];
    int n = snprintf(digits, sizeof(digits), "%" PRIu64, held);
    char grouped[48];
    size_t g = 0;
    for (int i = 0; i < n; i++) {
        if (i > 0 && (n - i) % 3 == 0)
            grouped[g++] = ',';
        grouped[g++] = digits[i];
    }
    grouped[g] = '\0';
    if (repeat_window_ms == 60000)
        snprintf(buf, cap, " (repeated %s times in the last minute)", grouped);
    else
        snprintf(buf, cap, " (repeated %s times in the last %" PRIu64 " ms)", grouped,
                 repeat_window_ms);
}

void lf_log_set_level(enum lf_log_level level)
{
    lf_log_level_current = level;
}

void lf_log_set_format(enum lf_log_format format)
{
    log_format = format;
}

bool lf_log_level_parse(const char *name, enum lf_log_level *out)
{
    for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
        if (strcmp(name, level_names[i]) == 0) {
            *out = (enum lf_log_level)i;
            return true;
        }
    }
    return false;
}

/* Appends s to buf[*len..cap) as the body of a JSON string; truncates quietly at cap, never
 * inside a character. Invalid UTF-8 (a file name may hold any bytes) becomes U+FFFD, so a
 * record is valid JSON in valid UTF-8 whatever the message quotes. */
static void json_escape_into(char *buf, size_t *len, size_t cap, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s);
    while (n > 0 && *len + 7 < cap) {
        unsigned char c = *p;
        int clen = c < 0x80 ? 1 : lf_utf8_char(p, n);
        if (c == '"' || c == '\\') {
            buf[(*len)++] = '\\';
            buf[(*len)++] = (char)c;
        } else if (c < 0x20) {
            memcpy(buf + *len, "\\u00", 4);
            buf[*len + 4] = hex[c >> 4];
            buf[*len + 5] = hex[c & 15];
            *len += 6;
        } else if (clen <= 0) {
            memcpy(buf + *len, "\\ufffd", 6);
            *len += 6;
            clen = 1;
        } else {
            memcpy(buf + *len, p, (size_t)clen);
            *len += (size_t)clen;
        }
        p += clen;
        n -= (size_t)clen;
    }
}

/* Appends s to buf[*len..cap) for a text record: control bytes become visible escapes (\n,
 * \r, \t, \xNN), so a message quoting a file name with a newline stays one line and cannot
 * forge another record (or send escape sequences to a terminal). Truncates quietly at cap. */
static void text_escape_into(char *buf, size_t *len, size_t cap, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    for (; *s != '\0' && *len + 5 < cap; s++) {
        unsigned char c = (unsigned char)*s;
        if (c >= 0x20 && c != 0x7f) {
            buf[(*len)++] = (char)c;
            continue;
        }
        buf[(*len)++] = '\\';
        if (c == '\n' || c == '\r' || c == '\t') {
            buf[(*len)++] = (char)(c == '\n' ? 'n' : c == '\r' ? 'r' : 't');
        } else {
            buf[(*len)++] = 'x';
            buf[(*len)++] = hex[c >> 4];
            buf[(*len)++] = hex[c & 15];
        }
    }
}

static _Atomic(lf_log_hook_fn *) log_hook;

void lf_log_set_hook(lf_log_hook_fn *hook)
{
    atomic_store(&log_hook, hook);
}

void lf_log_write(enum lf_log_level level, const char *component, const char *fmt, ...)
{
    int saved = errno;
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (n < 0)
        msg[0] = '\0';
    lf_log_hook_fn *hook = level <= LF_LOG_WARN ? atomic_load(&log_hook) : NULL;
    if (hook != NULL)
        hook(level, component, msg);
    uint64_t held = 0;
    if (!repeat_allows(level, component, msg, &held)) {
        errno = saved;
        return;
    }
    char note[96] = "";
    if (held > 0)
        repeat_note(note, sizeof(note), held);

    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char when[64];
    snprintf(when, sizeof(when), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000);

    char rec[4096]; /* room for a message whose bytes are escaped */
    size_t len = 0;
    if (log_format == LF_LOG_JSON) {
        int k = snprintf(rec, sizeof(rec), "{\"time\":\"%s\",\"level\":\"%s\",\"component\":\"",
                         when, level_names[level]);
        len = (size_t)k;
        json_escape_into(rec, &len, sizeof(rec) - 8, component);
        memcpy(rec + len, "\",\"msg\":\"", 9);
        len += 9;
        json_escape_into(rec, &len, sizeof(rec) - 4 - strlen(note), msg);
        json_escape_into(rec, &len, sizeof(rec) - 4, note);
        memcpy(rec + len, "\"}\n", 3);
        len += 3;
    } else {
        int k = snprintf(rec, sizeof(rec), "%s %-5s ", when, level_names[level]);
        len = k < 0 ? 0 : (size_t)k;
        text_escape_into(rec, &len, sizeof(rec) - 4, component);
        memcpy(rec + len, ": ", 2);
        len += 2;
        text_escape_into(rec, &len, sizeof(rec) - 1 - strlen(note), msg);
        text_escape_into(rec, &len, sizeof(rec) - 1, note);
        rec[len++] = '\n';
    }
    ssize_t w = write(STDERR_FILENO, rec, len);
    (void)w; /* nowhere left to report a failed log write */
    errno = saved;
}
