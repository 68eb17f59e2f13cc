/* timefmt.c - compiled time formats (see timefmt.h).
 *
 *   "%d/%b/%Y:%H:%M:%S %z" ─compile─► DAY LIT(/) MONNAME LIT(/) YEAR4 LIT(:) HOUR ... WS OFF
 *   "10/Oct/2000:13:55:36 -0700" ─run─► fields {2000,10,10,13,55,36, off -25200} ─► ns
 *
 * A layout becomes an array of ops, each reading its piece of the value into a struct
 * fields; rfc3164 and common_log are such layouts. rfc3339 and iso8601 have optional and
 * alternative parts, so each is a hand-written reader filling the same fields; unix* read
 * a decimal number. Then one function turns fields into ns: ranges checked (Feb 29 only
 * in leap years, second 60 taken as the next minute's 0), year inferred when missing,
 * offset from the value or else the zone, and every product checked for overflow. */
#include "config.h"

#include "logferry/timefmt.h"

#include <stdlib.h>
#include <string.h>

#define MAX_OPS     64
#define MAX_LITERAL 256
#define NS_PER_S    INT64_C(1000000000)
#define MIN_YEAR    1677 /* int64 ns span 1677-09-21 .. 2262-04-11 */
#define MAX_YEAR    2262

enum op_kind {
    OP_LIT = 0, /* bytes lit[off..off+len) */
    OP_WS,      /* one or more spaces or tabs */
    OP_YEAR4,   /* %Y */
    OP_YEAR2,   /* %y */
    OP_MON,     /* %m */
    OP_MONNAME, /* %b %h %B */
    OP_DAY,     /* %d */
    OP_DAY_SP,  /* %e */
    OP_YDAY,    /* %j */
    OP_HOUR,    /* %H */
    OP_HOUR12,  /* %I */
    OP_AMPM,    /* %p */
    OP_MIN,     /* %M */
    OP_SEC,     /* %S */
    OP_FRAC,    /* %f */
    OP_WDAY,    /* %a %A: read, not checked against the date */
    OP_OFF,     /* %z */
    OP_ZONE,    /* %Z */
};

enum fmt_kind {
    FMT_LAYOUT = 0,
    FMT_RFC3339,
    FMT_ISO8601,
    FMT_UNIX,
};

struct op {
    unsigned char kind; /* enum op_kind */
    unsigned char len;  /* OP_LIT */
    unsigned short off; /* OP_LIT: into lit */
};

struct lf_timefmt {
    enum fmt_kind kind;
    const struct lf_tz *tz; /* borrowed */
    int64_t unit_ns;        /* FMT_UNIX: ns per unit */
    bool has_year;          /* FMT_LAYOUT: else inferred */
    size_t n_ops;
    struct op ops[MAX_OPS];
    char lit[MAX_LITERAL];
};

/* What a value said. */
struct fields {
    int64_t year; /* 0: not given */
    int mon, day, yday;
    int hour, min, sec;
    int pm; /* -1 none, 0 am, 1 pm */
    int64_t frac_ns;
    bool has_off;
    int32_t off_s;
};

static const char *const month_names[12] = { "january",   "february", "march",    "april",
                                             "may",       "june",     "july",     "august",
                                             "september", "october",  "november", "december" };
static const char *const day_names[7] = { "sunday",   "monday", "tuesday", "wednesday",
                                          "thursday", "friday", "saturday" };

/* ---- compile ---- */

struct directive {
    char c;
    enum op_kind kind;
};

static const struct directive directives[] = {
    { 'Y', OP_YEAR4 },   { 'y', OP_YEAR2 },   { 'm', OP_MON },    { 'b', OP_MONNAME },
    { 'h', OP_MONNAME }, { 'B', OP_MONNAME }, { 'd', OP_DAY },    { 'e', OP_DAY_SP },
    { 'j', OP_YDAY },    { 'H', OP_HOUR },    { 'I', OP_HOUR12 }, { 'p', OP_AMPM },
    { 'M', OP_MIN },     { 'S', OP_SEC },     { 'f', OP_FRAC },   { 'a', OP_WDAY },
    { 'A', OP_WDAY },    { 'z', OP_OFF },     { 'Z', OP_ZONE },   { 'n', OP_WS },
    { 't', OP_WS },
};

static bool add_op(struct lf_timefmt *f, enum op_kind kind)
{
    if (f->n_ops == MAX_OPS)
        return false;
    f->ops[f->n_ops].kind = (unsigned char)kind;
    f->ops[f->n_ops].len = 0;
    f->ops[f->n_ops].off = 0;
    f->n_ops++;
    return true;
}

/* Appends literal byte c, joining it to a literal op just before. */
static bool add_lit(struct lf_timefmt *f, size_t *lit_len, char c)
{
    if (*lit_len == MAX_LITERAL)
        return false;
    struct op *last = f->n_ops > 0 ? &f->ops[f->n_ops - 1] : NULL;
    if (last == NULL || last->kind != OP_LIT || last->len == 255) {
        if (!add_op(f, OP_LIT))
            return false;
        last = &f->ops[f->n_ops - 1];
        last->off = (unsigned short)*lit_len;
    }
    f->lit[(*lit_len)++] = c;
    last->len++;
    return true;
}

static bool has_op(const struct lf_timefmt *f, enum op_kind kind)
{
    for (size_t i = 0; i < f->n_ops; i++) {
        if (f->ops[i].kind == kind)
            return true;
    }
    return false;
}

/* Compiles layout s into f; NULL or why not. */
static const char *compile_layout(struct lf_timefmt *f, const char *s)
{
    size_t lit_len = 0;
    const char *too_long = "the layout is too long (64 directives, 256 literal bytes at most)";
    for (; *s != '\0'; s++) {
        if (*s == ' ' || *s == '\t') {
            while (s[1] == ' ' || s[1] == '\t')
                s++;
            if (!add_op(f, OP_WS))
                return too_long;
            continue;
        }
        if (*s != '%') {
            if (!add_lit(f, &lit_len, *s))
                return too_long;
            continue;
        }
        char c = *++s;
        bool ok = true;
        if (c == '%') {
            ok = add_lit(f, &lit_len, '%');
        } else if (c == 'T') {
            ok = add_op(f, OP_HOUR) && add_lit(f, &lit_len, ':') && add_op(f, OP_MIN) &&
                 add_lit(f, &lit_len, ':') && add_op(f, OP_SEC);
        } else if (c == 'F') {
            ok = add_op(f, OP_YEAR4) && add_lit(f, &lit_len, '-') && add_op(f, OP_MON) &&
                 add_lit(f, &lit_len, '-') && add_op(f, OP_DAY);
        } else {
            size_t i = 0;
            while (i < sizeof(directives) / sizeof(directives[0]) && directives[i].c != c)
                i++;
            if (i == sizeof(directives) / sizeof(directives[0]))
                return c == '\0' ? "the layout ends in a lone %"
                                 : "unknown directive; known: %Y %y %m %b %h %B %d %e %j %H %I "
                                   "%p %M %S %f %a %A %z %Z %T %F %n %t %%";
            ok = add_op(f, directives[i].kind);
        }
        if (!ok)
            return too_long;
    }
    bool date =
        (has_op(f, OP_DAY) || has_op(f, OP_DAY_SP)) && (has_op(f, OP_MON) || has_op(f, OP_MONNAME));
    if (!date && !has_op(f, OP_YDAY))
        return "a layout needs a day and a month (%d or %e, and %m or %b), or %j";
    if (has_op(f, OP_YDAY) && !has_op(f, OP_YEAR4) && !has_op(f, OP_YEAR2))
        return "%j needs a year (%Y or %y)";
    if (has_op(f, OP_HOUR12) != has_op(f, OP_AMPM))
        return "%I and %p go together";
    f->has_year = has_op(f, OP_YEAR4) || has_op(f, OP_YEAR2);
    return NULL;
}

static const char *compile(struct lf_timefmt *f, const char *spec)
{
    static const struct {
        const char *name;
        enum fmt_kind kind;
        int64_t unit_ns;
        const char *layout;
    } named[] = {
        { "rfc3339", FMT_RFC3339, 0, NULL },
        { "iso8601", FMT_ISO8601, 0, NULL },
        { "rfc3164", FMT_LAYOUT, 0, "%b %e %H:%M:%S" },
        { "common_log", FMT_LAYOUT, 0, "%d/%b/%Y:%H:%M:%S %z" },
        { "unix", FMT_UNIX, NS_PER_S, NULL },
        { "unix_ms", FMT_UNIX, 1000000, NULL },
        { "unix_us", FMT_UNIX, 1000, NULL },
        { "unix_ns", FMT_UNIX, 1, NULL },
    };
    for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++) {
        if (strcmp(spec, named[i].name) == 0) {
            f->kind = named[i].kind;
            f->unit_ns = named[i].unit_ns;
            return named[i].layout != NULL ? compile_layout(f, named[i].layout) : NULL;
        }
    }
    if (strchr(spec, '%') == NULL)
        return "expected rfc3339, iso8601, rfc3164, common_log, unix, unix_ms, unix_us, "
               "unix_ns or a layout with % directives such as %Y-%m-%d %H:%M:%S";
    f->kind = FMT_LAYOUT;
    return compile_layout(f, spec);
}

enum lf_err lf_timefmt_new(const char *spec,
                           const struct lf_tz *tz,
                           struct lf_timefmt **out,
                           struct lf_errbuf *eb)
{
    struct lf_timefmt *f = calloc(1, sizeof(*f));
    if (f == NULL)
        return LF_ENOMEM;
    f->tz = tz;
    const char *why = compile(f, spec);
    if (why != NULL) {
        free(f);
        return lf_fail(eb, LF_ECONFIG, "format \"%s\": %s", spec, why);
    }
    *out = f;
    return LF_OK;
}

void lf_timefmt_free(struct lf_timefmt *f)
{
    free(f);
}

const char *lf_timefmt_check(const char *spec)
{
    struct lf_timefmt f;
    memset(&f, 0, sizeof(f));
    return compile(&f, spec);
}

/* ---- run ---- */

struct cur {
    const char *p;
    const char *end;
};

/* Reads min..max digits into *v. */
static bool num(struct cur *c, int min, int max, int *v)
{
    int n = 0;
    int x = 0;
    while (n < max && c->p < c->end && *c->p >= '0' && *c->p <= '9') {
        x = x * 10 + (*c->p++ - '0');
        n++;
    }
    *v = x;
    return n >= min;
}

/* Reads one or more digits as a fraction of a second (digits past the ninth dropped). */
static bool frac(struct cur *c, int64_t *ns)
{
    const char *start = c->p;
    int64_t scale = 100000000;
    int64_t v = 0;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
        v += (*c->p++ - '0') * scale;
        scale /= 10;
    }
    *ns = v;
    return c->p > start;
}

/* c in lower case (ASCII letters only), as an int to compare with a char. */
static int lower(char c)
{
    int u = (unsigned char)c;
    return u >= 'A' && u <= 'Z' ? u + ('a' - 'A') : u;
}

/* Reads a name from names (3-letter abbreviation or the full name, any case); its index. */
static bool name(struct cur *c, const char *const *names, int n, int *idx)
{
    if (c->end - c->p < 3)
        return false;
    for (int i = 0; i < n; i++) {
        const char *nm = names[i];
        if (lower(c->p[0]) != nm[0] || lower(c->p[1]) != nm[1] || lower(c->p[2]) != nm[2])
            continue;
        size_t k = 3;
        while (nm[k] != '\0' && c->p + k < c->end && lower(c->p[k]) == nm[k])
            k++;
        c->p += nm[k] == '\0' ? k : 3;
        *idx = i;
        return true;
    }
    return false;
}

/* Z, or +hh, +hhmm, +hh:mm (colon_only: only Z and +hh:mm, as RFC 3339). */
static bool offset(struct cur *c, bool colon_only, int32_t *off)
{
    if (c->p < c->end && (*c->p == 'Z' || *c->p == 'z')) {
        c->p++;
        *off = 0;
        return true;
    }
    if (c->p >= c->end || (*c->p != '+' && *c->p != '-'))
        return false;
    int sign = *c->p++ == '-' ? -1 : 1;
    int h = 0;
    int m = 0;
    if (!num(c, 2, 2, &h) || h > 23)
        return false;
    bool colon = c->p < c->end && *c->p == ':';
    if (colon)
        c->p++;
    else if (colon_only)
        return false;
    if (colon && !num(c, 2, 2, &m))
        return false;
    if (!colon && c->p < c->end && *c->p >= '0' && *c->p <= '9' && !num(c, 2, 2, &m))
        return false;
    if (m > 59)
        return false;
    *off = sign * (h * 3600 + m * 60);
    return true;
}

/* A zone abbreviation: UTC, GMT, UT, Z, or one the configured zone uses. */
static bool zone(struct cur *c, const struct lf_tz *tz, int32_t *off)
{
    const char *s = c->p;
    while (c->p < c->end && c->p - s < 7 &&
           ((*c->p >= 'A' && *c->p <= 'Z') || (*c->p >= 'a' && *c->p <= 'z')))
        c->p++;
    size_t n = (size_t)(c->p - s);
    if ((n == 3 && (memcmp(s, "UTC", 3) == 0 || memcmp(s, "GMT", 3) == 0)) ||
        (n == 2 && memcmp(s, "UT", 2) == 0) || (n == 1 && *s == 'Z')) {
        *off = 0;
        return true;
    }
    return n > 0 && tz != NULL && lf_tz_abbrev(tz, s, n, off);
}

static bool
run_op(const struct lf_timefmt *f, const struct op *op, struct cur *c, struct fields *fl)
{
    int v = 0;
    switch ((enum op_kind)op->kind) {
    case OP_LIT:
        if (c->end - c->p < op->len)
            return false;
        for (size_t i = 0; i < op->len; i++) { /* mostly 1 byte: no memcmp call */
            if (c->p[i] != f->lit[op->off + i])
                return false;
        }
        c->p += op->len;
        return true;
    case OP_WS: {
        const char *s = c->p;
        while (c->p < c->end && (*c->p == ' ' || *c->p == '\t'))
            c->p++;
        return c->p > s;
    }
    case OP_YEAR4:
        if (!num(c, 4, 4, &v))
            return false;
        fl->year = v;
        return true;
    case OP_YEAR2:
        if (!num(c, 2, 2, &v))
            return false;
        fl->year = v < 69 ? 2000 + v : 1900 + v; /* POSIX: 69-99 are 19xx */
        return true;
    case OP_MON:
        return num(c, 1, 2, &fl->mon);
    case OP_MONNAME:
        if (!name(c, month_names, 12, &v))
            return false;
        fl->mon = v + 1;
        return true;
    case OP_DAY_SP:
        if (c->p < c->end && *c->p == ' ')
            c->p++;
        /* fall through */
    case OP_DAY:
        return num(c, 1, 2, &fl->day);
    case OP_YDAY:
        return num(c, 1, 3, &fl->yday) && fl->yday >= 1;
    case OP_HOUR:
        return num(c, 1, 2, &fl->hour);
    case OP_HOUR12:
        return num(c, 1, 2, &fl->hour) && fl->hour >= 1 && fl->hour <= 12;
    case OP_AMPM:
        if (c->end - c->p < 2 || lower(c->p[1]) != 'm' ||
            (lower(c->p[0]) != 'a' && lower(c->p[0]) != 'p'))
            return false;
        fl->pm = lower(c->p[0]) == 'p';
        c->p += 2;
        return true;
    case OP_MIN:
        return num(c, 1, 2, &fl->min);
    case OP_SEC:
        return num(c, 1, 2, &fl->sec);
    case OP_FRAC:
        return frac(c, &fl->frac_ns);
    case OP_WDAY:
        return name(c, day_names, 7, &v);
    case OP_OFF:
        fl->has_off = true;
        return offset(c, false, &fl->off_s);
    case OP_ZONE:
        fl->has_off = true;
        return zone(c, f->tz, &fl->off_s);
    }
    return false;
}

/* s seconds and ns nanoseconds (0 <= ns < 1e9) as one int64 ns; false on overflow. */
static bool to_ns(int64_t s, int64_t frac_ns, int64_t *out)
{
    if (s < 0 && frac_ns > 0) { /* so the product does not pass INT64_MIN before the sum */
        s++;
        frac_ns -= NS_PER_S;
    }
    return !__builtin_mul_overflow(s, NS_PER_S, out) && !__builtin_add_overflow(*out, frac_ns, out);
}

/* The instant fl names in year y, in *ns; false when no such time. */
static bool instant(const struct lf_timefmt *f, const struct fields *fl, int64_t y, int64_t *ns)
{
    if (y < MIN_YEAR || y > MAX_YEAR)
        return false;
    int64_t days;
    if (fl->yday != 0) {
        if (fl->yday > 365 + lf_is_leap_year(y))
            return false;
        days = lf_days_from_civil(y, 1, 1) + fl->yday - 1;
    } else {
        if (fl->mon < 1 || fl->mon > 12 || fl->day < 1 || fl->day > lf_days_in_month(y, fl->mon))
            return false;
        days = lf_days_from_civil(y, fl->mon, fl->day);
    }
    int hour = fl->pm >= 0 ? fl->hour % 12 + 12 * fl->pm : fl->hour;
    if (hour > 23 || fl->min > 59 || fl->sec > 60)
        return false;
    int64_t local = days * 86400 + hour * 3600 + fl->min * 60 + fl->sec;
    int64_t utc = fl->has_off ? local - fl->off_s : lf_tz_local_to_utc(f->tz, local);
    return to_ns(utc, fl->frac_ns, ns);
}

static int64_t floor_div(int64_t a, int64_t b)
{
    return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

/* A time without a year: the latest year that does not put it more than
 * LF_TIMEFMT_FUTURE_S past ref_ns (Feb 29 looks back to the last leap year). */
static bool
infer_year(const struct lf_timefmt *f, const struct fields *fl, int64_t ref_ns, int64_t *ns)
{
    int64_t ref_s = floor_div(ref_ns, NS_PER_S);
    int32_t off = fl->has_off ? fl->off_s : lf_tz_offset_at(f->tz, ref_s);
    int64_t ref_year = lf_year_of_days(floor_div(ref_s + off, 86400));
    int64_t limit = ref_s + LF_TIMEFMT_FUTURE_S;
    for (int64_t y = ref_year; y >= ref_year - 8; y--) {
        if (!instant(f, fl, y, ns) || floor_div(*ns, NS_PER_S) > limit)
            continue;
        /* Next year's is a year later: worth a look only from early January against a
         * late-December read time. */
        int64_t next = 0;
        if (y == ref_year && floor_div(*ns, NS_PER_S) + 365 * 86400 <= limit &&
            instant(f, fl, y + 1, &next) && floor_div(next, NS_PER_S) <= limit)
            *ns = next;
        return true;
    }
    return false;
}

static bool parse_layout(const struct lf_timefmt *f, struct cur *c, struct fields *fl)
{
    for (size_t i = 0; i < f->n_ops; i++) {
        if (!run_op(f, &f->ops[i], c, fl))
            return false;
    }
    return true;
}

/* rfc3339 (strict) and iso8601: date, then optionally a time and an offset. */
static bool parse_iso(struct cur *c, bool strict, struct fields *fl)
{
    int y = 0;
    if (!num(c, 4, 4, &y))
        return false;
    fl->year = y;
    bool extended = c->p < c->end && *c->p == '-';
    if (strict && !extended)
        return false;
    if (extended)
        c->p++;
    if (!num(c, 2, 2, &fl->mon) || (extended && (c->p >= c->end || *c->p++ != '-')) ||
        !num(c, 2, 2, &fl->day))
        return false;
    if (c->p == c->end)
        return !strict; /* a date alone: midnight */
    char sep = *c->p++;
    if (sep != 'T' && sep != 't' && sep != ' ')
        return false;
    if (!num(c, 2, 2, &fl->hour))
        return false;
    bool colon = c->p < c->end && *c->p == ':';
    if (strict && !colon)
        return false;
    if ((colon && (c->p++, !num(c, 2, 2, &fl->min))) ||
        (!colon && c->p < c->end && *c->p >= '0' && *c->p <= '9' && !num(c, 2, 2, &fl->min)))
        return false;
    colon = c->p < c->end && *c->p == ':';
    if (strict && !colon)
        return false;
    if ((colon && (c->p++, !num(c, 2, 2, &fl->sec))) ||
        (!colon && c->p < c->end && *c->p >= '0' && *c->p <= '9' && !num(c, 2, 2, &fl->sec)))
        return false;
    if (c->p < c->end && (*c->p == '.' || (!strict && *c->p == ','))) {
        c->p++;
        if (!frac(c, &fl->frac_ns))
            return false;
    }
    if (c->p == c->end)
        return !strict;
    fl->has_off = true;
    return offset(c, strict, &fl->off_s);
}

/* [-]digits[.digits] in units of unit_ns. */
static bool parse_unix(const struct lf_timefmt *f, struct cur *c, int64_t *ns)
{
    bool neg = c->p < c->end && *c->p == '-';
    if (neg)
        c->p++;
    const char *start = c->p;
    int64_t v = 0;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, *c->p - '0', &v))
            return false;
        c->p++;
    }
    if (c->p == start || __builtin_mul_overflow(v, f->unit_ns, &v))
        return false;
    if (c->p < c->end && *c->p == '.') {
        c->p++;
        const char *fs = c->p;
        int64_t scale = f->unit_ns / 10;
        while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
            if (__builtin_add_overflow(v, (*c->p - '0') * scale, &v))
                return false;
            scale /= 10;
            c->p++;
        }
        if (c->p == fs)
            return false;
    }
    *ns = neg ? -v : v;
    return c->p == c->end;
}

bool lf_timefmt_parse(
    const struct lf_timefmt *f, const char *p, size_t n, int64_t ref_ns, int64_t *ns_out)
{
    while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
        n--;
    while (n > 0 && (*p == ' ' || *p == '\t'))
        p++, n--;
    struct cur c = { p, p + n };
    if (f->kind == FMT_UNIX)
        return n > 0 && parse_unix(f, &c, ns_out);
    struct fields fl;
    memset(&fl, 0, sizeof(fl));
    fl.pm = -1;
    bool ok = f->kind == FMT_LAYOUT ? parse_layout(f, &c, &fl)
                                    : parse_iso(&c, f->kind == FMT_RFC3339, &fl);
    if (!ok || c.p != c.end)
        return false;
    if (f->kind == FMT_LAYOUT && !f->has_year)
        return infer_year(f, &fl, ref_ns, ns_out);
    return instant(f, &fl, fl.year, ns_out);
}
