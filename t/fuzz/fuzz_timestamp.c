/* fuzz_timestamp.c - libFuzzer target for the timestamp stage and its time formats.
 *
 * Each input is used three ways:
 *   - its bytes after the first, as one value, go to every named format and a few layouts
 *     in three zones (lf_timefmt_parse() directly): a parse must give the same instant
 *     twice, and a value without a year must not land more than a day after the read time;
 *   - its first 8 bytes, as a local wall time in 1678-2261, go through lf_tz_local_to_utc()
 *     in zones with DST north and south and a 30-minute one: the instant's own local time
 *     must be the input or, in a gap, at most the gap (2 h) after it;
 *   - the whole input, as a file, runs through a chain (chain_harness.h) whose ndjson or dissect
 *     stage makes the members the timestamp stage reads (picked by the first byte). */
#include "chain_harness.h"
#include "logferry/timefmt.h"
#include "logferry/tz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const configs[] = {
    "[{ndjson: {}}, {timestamp: {field: ts, formats: ['%Y-%m-%d %H:%M:%S.%f', rfc3339, unix_ms], "
    "timezone: Europe/Berlin, remove_field: true}}]",
    "[{ndjson: {target: j}}, {timestamp: {field: j.t, formats: [iso8601, unix, common_log], "
    "timezone: America/New_York}}]",
    "[{dissect: {tokenizer: '%{time} | %{msg}', target: d}}, {timestamp: {field: d.time, "
    "formats: [rfc3164, '%a %b %e %T %Y %Z', unix_us], remove_field: true}}]",
    "[{timestamp: {field: message, formats: ['%d/%b/%Y:%H:%M:%S %z', '%y%m%d %I%M%S %p', "
    "'%Y-%j'], timezone: Australia/Lord_Howe}}]",
};

#define N_CONFIGS (sizeof(configs) / sizeof(configs[0]))

static const char *const formats[] = {
    "rfc3339",        "iso8601",      "rfc3164",  "common_log",      "unix",
    "unix_ms",        "unix_us",      "unix_ns",  "%F %T.%f %z",     "%a, %d %B %Y %I:%M:%S %p %Z",
    "%b %e %H:%M:%S", "%Y%m%d%H%M%S", "%Y-%j %T", "%y-%m-%d%t%H:%M",
};

#define N_FORMATS (sizeof(formats) / sizeof(formats[0]))

static const char *const zones[] = { "Europe/Berlin", "Australia/Sydney", "Australia/Lord_Howe" };

#define N_ZONES (sizeof(zones) / sizeof(zones[0]))

static struct lf_tz *tzs[N_ZONES];
static struct lf_timefmt *fmts[N_ZONES][N_FORMATS];

static void setup(void)
{
    struct lf_errbuf eb = { "" };
    for (size_t z = 0; z < N_ZONES; z++) {
        FUZZ_CHECK(lf_tz_load(zones[z], &tzs[z], &eb) == LF_OK);
        for (size_t f = 0; f < N_FORMATS; f++)
            FUZZ_CHECK(lf_timefmt_new(formats[f], tzs[z], &fmts[z][f], &eb) == LF_OK);
    }
}

static void parse_value(const uint8_t *data, size_t size)
{
    const int64_t ref_ns = INT64_C(1796126400000000000); /* 2026-12-01T12:00:00Z */
    for (size_t z = 0; z < N_ZONES; z++) {
        for (size_t f = 0; f < N_FORMATS; f++) {
            int64_t a = 0;
            int64_t b = 0;
            bool ok = lf_timefmt_parse(fmts[z][f], (const char *)data, size, ref_ns, &a);
            FUZZ_CHECK(ok == lf_timefmt_parse(fmts[z][f], (const char *)data, size, ref_ns, &b));
            FUZZ_CHECK(!ok || a == b);
            if (ok && (f == 2 || f == 10)) /* no year: never more than a day ahead */
                FUZZ_CHECK(a / 1000000000 <= ref_ns / 1000000000 + LF_TIMEFMT_FUTURE_S);
        }
    }
}

static void local_times(const uint8_t *data, size_t size)
{
    if (size < 8)
        return;
    uint64_t raw = 0;
    memcpy(&raw, data, 8);
    const int64_t lo = INT64_C(-9214560000);   /* 1678-01-01 */
    const int64_t span = INT64_C(18902908800); /* to 2261-01-01 */
    int64_t local = lo + (int64_t)(raw % (uint64_t)span);
    for (size_t z = 0; z < N_ZONES; z++) {
        int64_t utc = lf_tz_local_to_utc(tzs[z], local);
        int64_t back = utc + lf_tz_offset_at(tzs[z], utc);
        FUZZ_CHECK(back >= local && back - local <= 7200);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct fuzz_chain_spec specs[N_CONFIGS];
    if (tzs[0] == NULL)
        setup();
    if (size > 0)
        parse_value(data + 1, size - 1);
    local_times(data, size);
    return fuzz_chain_input(configs, specs, N_CONFIGS, data, size);
}
