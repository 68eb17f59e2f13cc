/* rfc3339.c - RFC 3339 times (`2026-11-30T01:02:03.456789Z`) to nanoseconds since the
 * epoch, by hand: no locale, no strptime per line. The container stage reads the runtime's
 * time of every line with it, syslog and ndjson their RFC 3339 times; access_log borrows
 * its digits and days. Pure functions on the caller's bytes: any thread, the memo (owned
 * by the caller's state) excepted, which one thread at a time uses. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "stage_int.h"

static bool digits(const char *p, size_t n, int *out)
{
    int v = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return false;
        v = v * 10 + (p[i] - '0');
    }
    *out = v;
    return true;
}

/* Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar. */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static int days_in_month(int y, int m)
{
    static const int dim[12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return m == 2 && leap ? 29 : dim[m - 1];
}

/* Parses the time zone suffix at p[0..n): Z or +hh:mm / -hh:mm, into seconds east. */
static bool parse_zone(const char *p, size_t n, int64_t *east_s)
{
    int hh;
    int mm;
    if (n == 1 && (p[0] == 'Z' || p[0] == 'z')) {
        *east_s = 0;
        return true;
    }
    if (n != 6 || (p[0] != '+' && p[0] != '-') || p[3] != ':' || !digits(p + 1, 2, &hh) ||
        !digits(p + 4, 2, &mm) || hh > 23 || mm > 59)
        return false;
    *east_s = (p[0] == '-' ? -1 : 1) * (int64_t)(hh * 3600 + mm * 60);
    return true;
}

/* hh:mm:ss at p[0..8) as seconds into the day; false unless valid. */
static bool parse_clock(const char *p, int64_t *secs)
{
    int h, mi, s;
    if (p[2] != ':' || p[5] != ':' || !digits(p, 2, &h) || !digits(p + 3, 2, &mi) ||
        !digits(p + 6, 2, &s) || h > 23 || mi > 59 || s > 60)
        return false;
    *secs = h * 3600 + mi * 60 + s;
    return true;
}

/* Days since 1970-01-01 of the date `yyyy-mm-dd` at p[0..10); false unless valid. */
static bool parse_date(const char *p, int64_t *days)
{
    int y, mo, d;
    if (p[4] != '-' || p[7] != '-' || !digits(p, 4, &y) || !digits(p + 5, 2, &mo) ||
        !digits(p + 8, 2, &d) || mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo))
        return false;
    *days = days_from_civil(y, mo, d);
    return true;
}

/* Seconds since the epoch of the date and time to the second at p[0..19), local to the
 * zone that follows; false unless it is `yyyy-mm-ddThh:mm:ss` with valid fields. The day
 * comes from memo when it holds the same date (and goes into it when it does not). */
static bool parse_head(struct lf_stage_time_memo *memo, const char *p, int64_t *secs)
{
    int64_t days;
    int64_t clock;
    if ((p[10] != 'T' && p[10] != 't') || !parse_clock(p + 11, &clock))
        return false;
    if (memo != NULL && memo->date_set && memcmp(p, memo->date, sizeof(memo->date)) == 0) {
        days = memo->days;
    } else {
        if (!parse_date(p, &days))
            return false;
        if (memo != NULL) {
            memcpy(memo->date, p, sizeof(memo->date));
            memo->days = days;
            memo->date_set = true;
        }
    }
    *secs = days * 86400 + clock;
    return true;
}

/* lf_stage__parse_rfc3339(), remembering in memo (may be NULL) the last time's first 19
 * bytes and their seconds (and its date): a container writes many lines to the second, so
 * most times need only their fraction and zone read. */
static bool
parse_time(struct lf_stage_time_memo *memo, const char *p, size_t n, int64_t *ns_out)
{
    int64_t secs;
    if (n < 20)
        return false;
    if (memo != NULL && memo->set && memcmp(p, memo->head, sizeof(memo->head)) == 0) {
        secs = memo->secs;
    } else {
        if (!parse_head(memo, p, &secs))
            return false;
        if (memo != NULL) {
            memcpy(memo->head, p, sizeof(memo->head));
            memo->secs = secs;
            memo->set = true;
        }
    }
    size_t i = 19;
    int64_t frac = 0;
    if (p[i] == '.') {
        static const int64_t scale[10] = { 1000000000, 100000000, 10000000, 1000000, 100000,
                                           10000,      1000,      100,      10,      1 };
        size_t start = ++i;
        size_t kept = 0;
        while (i < n && p[i] >= '0' && p[i] <= '9') {
            if (kept < 9) { /* digits past the ninth are below 1 ns */
                frac = frac * 10 + (p[i] - '0');
                kept++;
            }
            i++;
        }
        if (i == start)
            return false;
        frac *= scale[kept];
    }
    int64_t east_s;
    if (!parse_zone(p + i, n - i, &east_s))
        return false;
    secs -= east_s;
    /* A year from the line itself: int64 ns end in 1677 and 2262, so check, never wrap. */
    int64_t ns;
    if (secs < 0 && frac > 0) { /* so the product does not pass INT64_MIN before the sum */
        secs++;
        frac -= 1000000000;
    }
    if (__builtin_mul_overflow(secs, INT64_C(1000000000), &ns) ||
        __builtin_add_overflow(ns, frac, &ns))
        return false;
    *ns_out = ns;
    return true;
}

bool lf_stage__parse_rfc3339(struct lf_stage_time_memo *memo,
                             const char *p,
                             size_t n,
                             int64_t *ns_out)
{
    return parse_time(memo, p, n, ns_out);
}

/* Shared within src/stage/ (stage_int.h). */
bool lf_stage__digits(const char *p, size_t n, int *out)
{
    return digits(p, n, out);
}

int64_t lf_stage__days_from_civil(int64_t y, int m, int d)
{
    return days_from_civil(y, m, d);
}
