/* tz.h - time zones read from tzdata (TZif files), for converting a line's local time.
 *
 * A zone is loaded once, at config compile time, from ${TZDIR:-/usr/share/zoneinfo}/NAME:
 * the TZif v1 or v2+ (64-bit) transition table, with the POSIX TZ footer rule expanded into
 * further transitions up to 2262 (the end of int64 nanoseconds), so every lookup is one
 * binary search. Nothing here touches TZ, localtime() or other process-wide state: zones
 * are plain read-only values, any number of them, usable from any thread once loaded.
 *
 * Besides tzdata names, lf_tz_load() takes "UTC", "Local" (/etc/localtime, or UTC where
 * the machine has none) and fixed offsets "+hh:mm" / "-hh:mm". */
#ifndef LF_TZ_H
#define LF_TZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "logferry/err.h"

struct lf_tz;

/* Returns a new zone for name in *out; free with lf_tz_free(). LF_ECONFIG with eb saying
 * why when the name is not a zone (no such file, not TZif, leap-second "right/" data);
 * LF_ENOMEM. */
LF_MUST_CHECK enum lf_err lf_tz_load(const char *name, struct lf_tz **out, struct lf_errbuf *eb);

/* Frees the zone. lf_tz_free(NULL) is a no-op. */
void lf_tz_free(struct lf_tz *tz);

/* A config check (lf_conf_check_fn): NULL when name loads as a zone, else an "expected ..."
 * text. */
const char *lf_tz_check(const char *name);

/* The zone's offset from UTC (seconds east) at utc_s seconds since the epoch. */
int32_t lf_tz_offset_at(const struct lf_tz *tz, int64_t utc_s);

/* Seconds since the epoch of the local wall time local_s (seconds since 1970-01-01 00:00
 * local). A time in a gap (skipped when clocks go forward) is shifted forward by the gap
 * (02:30 in a 02:00-03:00 gap gives 03:30 after it); a time in an overlap (met twice when
 * clocks go back) gives the earlier instant. */
int64_t lf_tz_local_to_utc(const struct lf_tz *tz, int64_t local_s);

/* Looks up a time zone abbreviation (p[0..n), e.g. CEST) the zone uses, with the offset it
 * stands for there in *off_s (its most recent use). false when the zone never uses it. */
bool lf_tz_abbrev(const struct lf_tz *tz, const char *p, size_t n, int32_t *off_s);

#endif
