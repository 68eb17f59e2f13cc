/* tz.c - TZif zones (RFC 8536) as one sorted transition table (see tz.h).
 *
 *   TZif file ─► v2+ 64-bit block (or the v1 block) ─► transitions up to the last one
 *             └► footer "CET-1CEST,M3.5.0,M10.5.0/3" ─► expanded per year up to 2262
 *
 * Each transition i keeps the UTC instant at which it happens, the offset before and after
 * it, and the span of local wall time it makes odd: [at + min(before, after), at +
 * max(before, after)) is a gap when clocks go forward, an overlap when they go back. A
 * local time is found by one binary search over the span starts: inside a span it takes
 * the offset before the change, which is both "shift forward by the gap" and "the earlier
 * of two instants"; past it, the offset after. This assumes spans of one zone do not
 * overlap each other, which holds for tzdata (changes are months apart, not hours). */
#include "config.h"

#include "logferry/tz.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "logferry/timefmt.h"

#define TZ_MAX_FILE_BYTES (1u << 20)  /* tzdata files are a few KiB */
#define TZ_MAX_OFFSET_S   (26 * 3600) /* beyond any offset in use (+14:00, -12:00) */
#define TZ_LAST_YEAR      2262        /* int64 ns end in April 2262 */
#define TZ_MAX_ABBREVS    16
#define TZ_ABBREV_MAX     8

struct trans {
    int64_t at;     /* UTC seconds of the change */
    int64_t lo;     /* local seconds where its gap or overlap starts */
    int64_t hi;     /* local seconds where it ends (== lo: offsets equal) */
    int32_t off;    /* seconds east after the change */
    int32_t before; /* seconds east before it */
};

struct abbrev {
    char name[TZ_ABBREV_MAX]; /* NUL-terminated */
    int32_t off;
};

struct lf_tz {
    struct trans *t; /* owned; ascending at */
    size_t n;
    size_t cap;
    int32_t off0; /* before the first transition */
    struct abbrev abbrevs[TZ_MAX_ABBREVS];
    size_t n_abbrevs;
};

/* The footer's rule: std all year, or std and dst with the two changes of each year. */
struct posix_rule {
    char std_name[TZ_ABBREV_MAX];
    char dst_name[TZ_ABBREV_MAX];
    int32_t std_off; /* seconds east */
    int32_t dst_off;
    bool has_dst;
    struct {
        char kind; /* 'J' (1-365, no Feb 29), 'D' (0-365), 'M' (month.week.day) */
        int n, m, w, d;
        int32_t time_s; /* local time of day of the change, may be negative or > 24 h */
    } start, end;
};

/* ---- civil dates ---- */

int64_t lf_days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    return era * 146097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719468;
}

bool lf_is_leap_year(int64_t y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

int lf_days_in_month(int64_t y, int m)
{
    static const unsigned char dim[12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
    return m == 2 && lf_is_leap_year(y) ? 29 : dim[m - 1];
}

int64_t lf_year_of_days(int64_t days)
{
    int64_t z = days + 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    return yoe + era * 400 + (mp >= 10);
}

static int64_t floor_div(int64_t a, int64_t b)
{
    return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

/* ---- the table ---- */

static bool push(struct lf_tz *tz, int64_t at, int32_t off)
{
    if (tz->n == tz->cap) {
        size_t cap = tz->cap != 0 ? tz->cap * 2 : 64;
        struct trans *t = realloc(tz->t, cap * sizeof(*t));
        if (t == NULL)
            return false;
        tz->t = t;
        tz->cap = cap;
    }
    int32_t before = tz->n > 0 ? tz->t[tz->n - 1].off : tz->off0;
    struct trans *tr = &tz->t[tz->n++];
    tr->at = at;
    tr->off = off;
    tr->before = before;
    tr->lo = at + (before < off ? before : off);
    tr->hi = at + (before < off ? off : before);
    return true;
}

static void add_abbrev(struct lf_tz *tz, const char *name, int32_t off)
{
    size_t len = strlen(name);
    if (len == 0 || len >= TZ_ABBREV_MAX || strcmp(name, "LMT") == 0)
        return;
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')))
            return; /* numeric ones ("+03") are offsets, for %z */
    }
    for (size_t i = 0; i < tz->n_abbrevs; i++) {
        if (strcmp(tz->abbrevs[i].name, name) == 0) {
            tz->abbrevs[i].off = off; /* a later use wins */
            return;
        }
    }
    if (tz->n_abbrevs < TZ_MAX_ABBREVS) {
        memcpy(tz->abbrevs[tz->n_abbrevs].name, name, len + 1);
        tz->abbrevs[tz->n_abbrevs++].off = off;
    }
}

/* ---- the POSIX TZ footer ---- */

static bool rule_name(const char **p, char *out)
{
    const char *s = *p;
    size_t n = 0;
    if (*s == '<') {
        s++;
        while (*s != '\0' && *s != '>')
            s++, n++;
        if (*s != '>' || n < 1)
            return false;
        memcpy(out, *p + 1, n < TZ_ABBREV_MAX ? n : 0);
        out[n < TZ_ABBREV_MAX ? n : 0] = '\0';
        *p = s + 1;
        return true;
    }
    while ((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z'))
        s++, n++;
    if (n < 3)
        return false;
    memcpy(out, *p, n < TZ_ABBREV_MAX ? n : 0);
    out[n < TZ_ABBREV_MAX ? n : 0] = '\0';
    *p = s;
    return true;
}

static bool rule_num(const char **p, int max, int *out)
{
    const char *s = *p;
    int v = 0;
    if (*s < '0' || *s > '9')
        return false;
    while (*s >= '0' && *s <= '9') {
        v = v * 10 + (*s++ - '0');
        if (v > max)
            return false;
    }
    *out = v;
    *p = s;
    return true;
}

/* [+-]hh[:mm[:ss]] in seconds, with hours up to max_h. */
static bool rule_time(const char **p, int max_h, int32_t *out)
{
    int sign = 1;
    if (**p == '+' || **p == '-')
        sign = *(*p)++ == '-' ? -1 : 1;
    int h = 0;
    int m = 0;
    int s = 0;
    if (!rule_num(p, max_h, &h))
        return false;
    if (**p == ':' && ((*p)++, !rule_num(p, 59, &m)))
        return false;
    if (**p == ':' && ((*p)++, !rule_num(p, 59, &s)))
        return false;
    *out = sign * (h * 3600 + m * 60 + s);
    return true;
}

static bool rule_date(const char **p, char *kind, int *n, int *m, int *w, int *d, int32_t *time_s)
{
    if (**p == 'J') {
        (*p)++;
        *kind = 'J';
        if (!rule_num(p, 365, n) || *n < 1)
            return false;
    } else if (**p == 'M') {
        (*p)++;
        *kind = 'M';
        if (!rule_num(p, 12, m) || *m < 1 || *(*p)++ != '.' || !rule_num(p, 5, w) || *w < 1 ||
            *(*p)++ != '.' || !rule_num(p, 6, d))
            return false;
    } else {
        *kind = 'D';
        if (!rule_num(p, 365, n))
            return false;
    }
    *time_s = 7200;
    if (**p == '/') {
        (*p)++;
        return rule_time(p, 167, time_s);
    }
    return true;
}

static bool parse_rule(const char *s, struct posix_rule *r)
{
    memset(r, 0, sizeof(*r));
    int32_t west;
    if (!rule_name(&s, r->std_name) || !rule_time(&s, 24, &west))
        return false;
    r->std_off = -west;
    if (*s == '\0')
        return true;
    if (!rule_name(&s, r->dst_name))
        return false;
    r->has_dst = true;
    r->dst_off = r->std_off + 3600;
    if (*s != ',' && *s != '\0') {
        if (!rule_time(&s, 24, &west))
            return false;
        r->dst_off = -west;
    }
    if (*s == '\0') { /* POSIX leaves the default rule to the system: the US one */
        s = ",M3.2.0,M11.1.0";
    }
    if (*s++ != ',' ||
        !rule_date(&s, &r->start.kind, &r->start.n, &r->start.m, &r->start.w, &r->start.d,
                   &r->start.time_s) ||
        *s++ != ',' ||
        !rule_date(&s, &r->end.kind, &r->end.n, &r->end.m, &r->end.w, &r->end.d, &r->end.time_s))
        return false;
    return *s == '\0';
}

/* Days since the epoch of a rule date in year y. */
static int64_t rule_day(int64_t y, char kind, int n, int m, int w, int d)
{
    int64_t jan1 = lf_days_from_civil(y, 1, 1);
    if (kind == 'J')
        return jan1 + n - 1 + (lf_is_leap_year(y) && n >= 60);
    if (kind == 'D')
        return jan1 + n;
    int64_t first = lf_days_from_civil(y, m, 1);
    int64_t wd_first = ((first % 7) + 7 + 4) % 7; /* 1970-01-01 was a Thursday (4) */
    int64_t day = first + (d - wd_first + 7) % 7 + (int64_t)(w - 1) * 7;
    while (day >= first + lf_days_in_month(y, m))
        day -= 7; /* week 5: the last such weekday */
    return day;
}

/* Appends the rule's changes after the table's last one, year by year up to 2262. */
static bool expand_rule(struct lf_tz *tz, const struct posix_rule *r)
{
    add_abbrev(tz, r->std_name, r->std_off);
    if (!r->has_dst) {
        if (tz->n > 0 && tz->t[tz->n - 1].off != r->std_off)
            return push(tz, tz->t[tz->n - 1].at + 1, r->std_off);
        if (tz->n == 0)
            tz->off0 = r->std_off;
        return true;
    }
    add_abbrev(tz, r->dst_name, r->dst_off);
    int64_t last = tz->n > 0 ? tz->t[tz->n - 1].at : INT64_MIN;
    int64_t y0 = tz->n > 0 ? lf_year_of_days(floor_div(last, 86400)) : 1677;
    if (tz->n == 0)
        tz->off0 = r->std_off;
    for (int64_t y = y0; y <= TZ_LAST_YEAR; y++) {
        int64_t on =
            rule_day(y, r->start.kind, r->start.n, r->start.m, r->start.w, r->start.d) * 86400 +
            r->start.time_s - r->std_off;
        int64_t off = rule_day(y, r->end.kind, r->end.n, r->end.m, r->end.w, r->end.d) * 86400 +
                      r->end.time_s - r->dst_off;
        int64_t first = on < off ? on : off;
        int64_t second = on < off ? off : on;
        int32_t first_off = on < off ? r->dst_off : r->std_off;
        int32_t second_off = on < off ? r->std_off : r->dst_off;
        if (first > last && !push(tz, first, first_off))
            return false;
        if (second > last && second > first && !push(tz, second, second_off))
            return false;
    }
    return true;
}

/* ---- TZif ---- */

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int64_t be64(const unsigned char *p)
{
    return (int64_t)((uint64_t)be32(p) << 32 | be32(p + 4));
}

struct tzif_counts {
    uint32_t isut, isstd, leap, time, type, chars;
};

static bool read_header(const unsigned char *p, size_t n, struct tzif_counts *c, int *version)
{
    if (n < 44 || memcmp(p, "TZif", 4) != 0)
        return false;
    *version = p[4] == 0 ? 1 : p[4] - '0';
    c->isut = be32(p + 20);
    c->isstd = be32(p + 24);
    c->leap = be32(p + 28);
    c->time = be32(p + 32);
    c->type = be32(p + 36);
    c->chars = be32(p + 40);
    return c->type >= 1 && c->type <= 256 && c->chars >= 1 && c->time <= 100000 &&
           c->leap <= 100000 && (c->isut == 0 || c->isut == c->type) &&
           (c->isstd == 0 || c->isstd == c->type);
}

static size_t block_len(const struct tzif_counts *c, size_t tsize)
{
    return (size_t)c->time * (tsize + 1) + (size_t)c->type * 6 + c->chars +
           (size_t)c->leap * (tsize + 4) + c->isstd + c->isut;
}

/* Fills tz from one data block (tsize 4 or 8 bytes per time); the reason on failure. */
static const char *
read_block(struct lf_tz *tz, const unsigned char *p, const struct tzif_counts *c, size_t tsize)
{
    if (c->leap > 0)
        return "leap-second (\"right/\") zones are not supported";
    const unsigned char *times = p;
    const unsigned char *idx = times + (size_t)c->time * tsize;
    const unsigned char *types = idx + c->time;
    const char *chars = (const char *)(types + (size_t)c->type * 6);
    for (uint32_t i = 0; i < c->type; i++) {
        int32_t off = (int32_t)be32(types + i * 6);
        if (off < -TZ_MAX_OFFSET_S || off > TZ_MAX_OFFSET_S || types[i * 6 + 5] >= c->chars)
            return "a corrupt time type";
    }
    tz->off0 = (int32_t)be32(types);
    for (uint32_t i = 0; i < c->time; i++) {
        int64_t at = tsize == 8 ? be64(times + i * 8) : (int32_t)be32(times + i * 4);
        if (idx[i] >= c->type || (tz->n > 0 && at <= tz->t[tz->n - 1].at))
            return "a corrupt transition table";
        const unsigned char *ty = types + idx[i] * 6;
        if (!push(tz, at, (int32_t)be32(ty)))
            return "out of memory";
        char name[TZ_ABBREV_MAX];
        size_t at_char = ty[5];
        size_t len = strnlen(chars + at_char, c->chars - at_char);
        if (len < TZ_ABBREV_MAX && at_char + len < c->chars) {
            memcpy(name, chars + at_char, len + 1);
            add_abbrev(tz, name, (int32_t)be32(ty));
        }
    }
    if (c->time == 0) {
        size_t len = strnlen(chars + types[5], c->chars - types[5]);
        char name[TZ_ABBREV_MAX];
        if (len < TZ_ABBREV_MAX && types[5] + len < c->chars) {
            memcpy(name, chars + types[5], len + 1);
            add_abbrev(tz, name, tz->off0);
        }
    }
    return NULL;
}

static const char *parse_tzif(struct lf_tz *tz, const unsigned char *p, size_t n)
{
    struct tzif_counts c;
    int version;
    if (!read_header(p, n, &c, &version))
        return "not a TZif file";
    size_t len = block_len(&c, 4);
    if (n - 44 < len)
        return "a truncated TZif file";
    if (version < 2)
        return read_block(tz, p + 44, &c, 4);
    const unsigned char *h2 = p + 44 + len;
    size_t left = n - 44 - len;
    struct tzif_counts c2;
    if (!read_header(h2, left, &c2, &version) || left - 44 < block_len(&c2, 8))
        return "a truncated TZif file";
    const char *why = read_block(tz, h2 + 44, &c2, 8);
    if (why != NULL)
        return why;
    const char *foot = (const char *)h2 + 44 + block_len(&c2, 8);
    size_t foot_len = left - 44 - block_len(&c2, 8);
    if (foot_len < 2 || foot[0] != '\n')
        return NULL; /* no footer: the last type holds for ever */
    const char *nl = memchr(foot + 1, '\n', foot_len - 1);
    if (nl == NULL || nl - foot > 64)
        return "a corrupt TZ footer";
    char rule_text[64];
    memcpy(rule_text, foot + 1, (size_t)(nl - foot - 1));
    rule_text[nl - foot - 1] = '\0';
    if (rule_text[0] == '\0')
        return NULL;
    struct posix_rule r;
    if (!parse_rule(rule_text, &r))
        return "a TZ footer rule this reader does not know";
    return expand_rule(tz, &r) ? NULL : "out of memory";
}

static bool name_ok(const char *name)
{
    if (name[0] == '\0' || name[0] == '/' || strlen(name) > 200)
        return false;
    for (const char *s = name; *s != '\0'; s++) {
        char c = *s;
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '/' || c == '_' || c == '-' || c == '+' || c == '.'))
            return false;
        if (c == '.' && s[1] == '.')
            return false; /* no way out of the zone directory */
    }
    return true;
}

/* Reads path (at most TZ_MAX_FILE_BYTES) into a new buffer in *out, its size in *n. */
static enum lf_err read_file(const char *path, unsigned char **out, size_t *n, struct lf_errbuf *eb)
{
    *out = NULL;
    *n = 0;
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        int e = errno;
        return lf_fail(eb, LF_ECONFIG, "%s: %s", path, lf_strerror(e));
    }
    unsigned char *buf = malloc(TZ_MAX_FILE_BYTES);
    if (buf == NULL) {
        fclose(f);
        return LF_ENOMEM;
    }
    *n = fread(buf, 1, TZ_MAX_FILE_BYTES, f);
    fclose(f);
    *out = buf;
    return LF_OK;
}

/* "+hh:mm" / "-hh:mm" / "+hh": a fixed offset. */
static bool fixed_offset(const char *s, int32_t *off)
{
    if ((s[0] != '+' && s[0] != '-') || s[1] < '0' || s[1] > '9' || s[2] < '0' || s[2] > '9')
        return false;
    int h = (s[1] - '0') * 10 + (s[2] - '0');
    int m = 0;
    if (s[3] == ':' && s[4] >= '0' && s[4] <= '5' && s[5] >= '0' && s[5] <= '9' && s[6] == '\0')
        m = (s[4] - '0') * 10 + (s[5] - '0');
    else if (s[3] != '\0')
        return false;
    if (h > 23)
        return false;
    *off = (s[0] == '-' ? -1 : 1) * (h * 3600 + m * 60);
    return true;
}

static enum lf_err load_file(struct lf_tz *tz, const char *path, struct lf_errbuf *eb)
{
    unsigned char *buf = NULL;
    size_t n = 0;
    enum lf_err err = read_file(path, &buf, &n, eb);
    if (err)
        return err;
    if (buf == NULL) /* read_file sets it whenever it succeeds; for the analyzer */
        return LF_ENOMEM;
    const char *why = parse_tzif(tz, buf, n);
    free(buf);
    if (why == NULL)
        return LF_OK;
    return lf_fail(eb, strcmp(why, "out of memory") == 0 ? LF_ENOMEM : LF_ECONFIG, "%s: %s", path,
                   why);
}

enum lf_err lf_tz_load(const char *name, struct lf_tz **out, struct lf_errbuf *eb)
{
    struct lf_tz *tz = calloc(1, sizeof(*tz));
    if (tz == NULL)
        return LF_ENOMEM;
    enum lf_err err = LF_OK;
    int32_t off = 0;
    if (strcmp(name, "UTC") == 0 || fixed_offset(name, &off)) {
        tz->off0 = off;
    } else if (strcmp(name, "Local") == 0) {
        FILE *f = fopen("/etc/localtime", "rb");
        if (f != NULL) { /* none: glibc takes UTC too */
            fclose(f);
            err = load_file(tz, "/etc/localtime", eb);
        }
    } else if (!name_ok(name)) {
        err = lf_fail(eb, LF_ECONFIG, "%s is not a zone name", name);
    } else {
        const char *dir = getenv("TZDIR");
        char path[512];
        snprintf(path, sizeof(path), "%s/%s",
                 dir != NULL && dir[0] == '/' ? dir : "/usr/share/zoneinfo", name);
        err = load_file(tz, path, eb);
    }
    if (err) {
        lf_tz_free(tz);
        return err;
    }
    *out = tz;
    return LF_OK;
}

void lf_tz_free(struct lf_tz *tz)
{
    if (tz == NULL)
        return;
    free(tz->t);
    free(tz);
}

const char *lf_tz_check(const char *name)
{
    struct lf_tz *tz = NULL;
    struct lf_errbuf eb = { "" };
    enum lf_err err = lf_tz_load(name, &tz, &eb);
    lf_tz_free(tz);
    if (err == LF_ENOMEM)
        return "out of memory while reading the zone";
    return err ? "expected a tzdata zone name (such as Europe/Berlin; see "
                 "/usr/share/zoneinfo), UTC, Local, or an offset such as +01:00"
               : NULL;
}

int32_t lf_tz_offset_at(const struct lf_tz *tz, int64_t utc_s)
{
    size_t lo = 0;
    size_t hi = tz->n;
    while (lo < hi) { /* the first transition after utc_s */
        size_t mid = lo + (hi - lo) / 2;
        if (tz->t[mid].at <= utc_s)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo == 0 ? tz->off0 : tz->t[lo - 1].off;
}

int64_t lf_tz_local_to_utc(const struct lf_tz *tz, int64_t local_s)
{
    size_t lo = 0;
    size_t hi = tz->n;
    while (lo < hi) { /* the first transition whose odd span starts after local_s */
        size_t mid = lo + (hi - lo) / 2;
        if (tz->t[mid].lo <= local_s)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return local_s - tz->off0;
    const struct trans *t = &tz->t[lo - 1];
    return local_s - (local_s < t->hi ? t->before : t->off);
}

bool lf_tz_abbrev(const struct lf_tz *tz, const char *p, size_t n, int32_t *off_s)
{
    for (size_t i = 0; i < tz->n_abbrevs; i++) {
        const struct abbrev *a = &tz->abbrevs[i];
        if (strlen(a->name) == n && memcmp(a->name, p, n) == 0) {
            *off_s = a->off;
            return true;
        }
    }
    return false;
}
