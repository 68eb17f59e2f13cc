/* timefmt.h - time formats compiled once, for reading a line's own time.
 *
 * A format is a name (rfc3339, iso8601, rfc3164, common_log, unix, unix_ms, unix_us,
 * unix_ns) or an strftime-like layout ("%Y-%m-%d %H:%M:%S.%f"); docs/parsers.md lists the
 * directives. lf_timefmt_new() compiles it into a small program that lf_timefmt_parse()
 * runs over a value: no strptime (locale-dependent, slow), no allocation, nothing global.
 * A time without its own offset is read in the zone given at compile time; a time without
 * a year (rfc3164) takes the year that puts it at most LF_TIMEFMT_FUTURE_S after the
 * reference time (the time the line was read). Years outside 1677-2262, and times int64
 * nanoseconds cannot hold, never parse. Formats are read-only once built: any thread. */
#ifndef LF_TIMEFMT_H
#define LF_TIMEFMT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "logferry/err.h"
#include "logferry/tz.h"

/* How far after the read time a time without a year may lie: one day, for clocks that run
 * a little ahead and zones east of the reader's. */
#define LF_TIMEFMT_FUTURE_S 86400

struct lf_timefmt;

/* Returns a new format for spec (a name or a layout) in *out; free with lf_timefmt_free().
 * tz is borrowed: it must outlive the format. LF_ECONFIG with eb saying what is wrong with
 * the layout; LF_ENOMEM. */
LF_MUST_CHECK enum lf_err lf_timefmt_new(const char *spec,
                                         const struct lf_tz *tz,
                                         struct lf_timefmt **out,
                                         struct lf_errbuf *eb);

/* Frees the format. lf_timefmt_free(NULL) is a no-op. */
void lf_timefmt_free(struct lf_timefmt *f);

/* A config check (lf_conf_check_fn): NULL when spec compiles, else why not. */
const char *lf_timefmt_check(const char *spec);

/* Reads p[0..n) (spaces and tabs around it ignored) as a time in format f: true with ns
 * since the epoch in *ns_out when all of it is one; false otherwise. ref_ns (ns since the
 * epoch) is the read time, used only to infer a missing year. */
bool lf_timefmt_parse(
    const struct lf_timefmt *f, const char *p, size_t n, int64_t ref_ns, int64_t *ns_out);

/* Proleptic Gregorian calendar helpers (defined in tz.c). */
int64_t lf_days_from_civil(int64_t y, int m, int d); /* days since 1970-01-01 */
int64_t lf_year_of_days(int64_t days);               /* the year of that day */
bool lf_is_leap_year(int64_t y);
int lf_days_in_month(int64_t y, int m); /* m 1-12 */

#endif
