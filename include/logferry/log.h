/* log.h - leveled logging on stderr, one record per line, text or JSON, one write(2) each.
 *
 * Each .c file that logs defines LF_LOG_COMPONENT before including this header. The level
 * and format are process-wide settings owned by src/util/log.c. Any thread. */
#ifndef LF_LOG_H
#define LF_LOG_H

#include <stdbool.h>
#include <stdint.h>

#include "logferry/err.h"

enum lf_log_level {
    LF_LOG_ERROR = 0,
    LF_LOG_WARN,
    LF_LOG_INFO,
    LF_LOG_DEBUG,
};

enum lf_log_format {
    LF_LOG_TEXT = 0,
    LF_LOG_JSON,
};

/* The current level; records above it are not formatted. Read by the macros below. */
extern enum lf_log_level lf_log_level_current;

void lf_log_set_level(enum lf_log_level level);
void lf_log_set_format(enum lf_log_format format);

/* Parses "error", "warn", "info" or "debug"; false if name is none of them. */
bool lf_log_level_parse(const char *name, enum lf_log_level *out);

/* Warnings and errors repeated word for word within this window are written once; the
 * first copy after the window says how many were held back. */
#define LF_LOG_REPEAT_WINDOW_MS 60000

/* Sets that window (tests); 0 writes every copy. Clears what was remembered. */
void lf_log_set_repeat_window(uint64_t ms);

/* Called with each warning and error (before the repeat window holds any back), on the
 * thread that logs it; msg is valid during the call only. Any thread (NULL: none). The daemon keeps each output's last error for /status with it. */
typedef void lf_log_hook_fn(enum lf_log_level level, const char *component, const char *msg);
void lf_log_set_hook(lf_log_hook_fn *hook);

/* Writes one record. Use the macros, which skip formatting below the level. Warnings and
 * errors repeated word for word within the repeat window are held back (see above). */
void lf_log_write(enum lf_log_level level, const char *component, const char *fmt, ...)
    LF_PRINTF(3, 4);

#ifndef LF_LOG_COMPONENT
#define LF_LOG_COMPONENT "logferry"
#endif

#define lf_log_at(lvl, ...)                                                                        \
    do {                                                                                           \
        if ((lvl) <= lf_log_level_current)                                                         \
            lf_log_write((lvl), LF_LOG_COMPONENT, __VA_ARGS__);                                    \
    } while (0)

#define lf_error(...) lf_log_at(LF_LOG_ERROR, __VA_ARGS__)
#define lf_warn(...)  lf_log_at(LF_LOG_WARN, __VA_ARGS__)
#define lf_info(...)  lf_log_at(LF_LOG_INFO, __VA_ARGS__)
#define lf_debug(...) lf_log_at(LF_LOG_DEBUG, __VA_ARGS__)

#endif
