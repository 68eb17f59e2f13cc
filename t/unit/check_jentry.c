/* check_jentry.c - the journal entry converter: the message, the "journald" member byte for
 * byte, include/exclude_fields, bad bytes, truncation, random entries through jansson, and
 * (check_jentry_alloc) no allocation per entry once warm. */
#include "config.h"

#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../bench/alloc_count.h"
#include "logferry/jentry.h"
#include "logferry/utf8.h"

/* One data item; I("...") keeps embedded NUL bytes. */
struct item {
    const char *p;
    size_t n;
};
#define I(s)               \
    {                      \
        (s), sizeof(s) - 1 \
    }
#define N(a) (sizeof(a) / sizeof((a)[0]))

static struct {
    struct lf_input_conf in;
    char *include[8];
    char *exclude[8];
    struct lf_jentry *j;
    struct lf_jentry_out out;
} fx;

/* A converter with max_line_bytes max, the overflow rule, and NULL-ended field lists. */
static void start(size_t max,
                  enum lf_line_overflow overflow,
                  const char *const *include,
                  const char *const *exclude)
{
    memset(&fx, 0, sizeof(fx));
    fx.in.max_line_bytes = max;
    fx.in.line_overflow = overflow;
    for (size_t i = 0; include != NULL && include[i] != NULL; i++)
        fx.include[fx.in.n_include_fields++] = (char *)include[i];
    for (size_t i = 0; exclude != NULL && exclude[i] != NULL; i++)
        fx.exclude[fx.in.n_exclude_fields++] = (char *)exclude[i];
    fx.in.include_fields = fx.include;
    fx.in.exclude_fields = fx.exclude;
    ck_assert_int_eq(lf_jentry_new(&fx.in, &fx.j), LF_OK);
}

static void teardown(void)
{
    lf_jentry_free(fx.j);
    fx.j = NULL;
}

static void convert(const struct item *items, size_t n)
{
    lf_jentry_begin(fx.j, 1700000000123456u);
    for (size_t i = 0; i < n; i++)
        ck_assert_int_eq(lf_jentry_add(fx.j, items[i].p, items[i].n), LF_OK);
    ck_assert_int_eq(lf_jentry_end(fx.j, &fx.out), LF_OK);
}

#define expect_bytes(got, want) expect_bytes_((got), (want), sizeof(want) - 1, __LINE__)

static void expect_bytes_(struct lf_str got, const char *want, size_t want_len, int line)
{
    if (got.len != want_len || memcmp(got.ptr, want, want_len) != 0)
        ck_abort_msg("line %d: got [%.*s] (%zu bytes), want [%s] (%zu bytes)", line, (int)got.len,
                     got.ptr, got.len, want, want_len);
}

#define expect_extra(want)   expect_bytes(fx.out.extra, want)
#define expect_message(want) expect_bytes(fx.out.message, want)

START_TEST(every_mapped_field_in_the_table_order)
{
    start(1024, LF_OVERFLOW_TRUNCATE, NULL, NULL);
    const struct item items[] = {
        I("SYSLOG_IDENTIFIER=sshd"),
        I("_TRANSPORT=syslog"),
        I("_MACHINE_ID=4a1f0e0b5c6d4e7f8091a2b3c4d5e6f7"),
        I("_BOOT_ID=0123456789abcdef0123456789abcdef"),
        I("_HOSTNAME=h1"),
        I("MESSAGE=Accepted publickey for root"),
        I("_CMDLINE=sshd: /usr/sbin/sshd -D"),
        I("_EXE=/usr/sbin/sshd"),
        I("_COMM=sshd"),
        I("_GID=0"),
        I("_UID=0"),
        I("_PID=1234"),
        I("_SYSTEMD_USER_UNIT=x.service"),
        I("_SYSTEMD_UNIT=ssh.service"),
        I("SYSLOG_FACILITY=3"),
        I("PRIORITY=6"),
    };
    convert(items, N(items));
    expect_message("Accepted publickey for root");
    expect_extra("\"journald\":{\"priority\":6,\"priority_name\":\"info\",\"facility\":3,"
                 "\"facility_name\":\"daemon\",\"unit\":\"ssh.service\",\"user_unit\":"
                 "\"x.service\",\"pid\":1234,\"uid\":0,\"gid\":0,\"comm\":\"sshd\",\"exe\":"
                 "\"/usr/sbin/sshd\",\"cmdline\":\"sshd: /usr/sbin/sshd -D\",\"hostname\":"
                 "\"h1\",\"boot_id\":\"0123456789abcdef0123456789abcdef\",\"machine_id\":"
                 "\"4a1f0e0b5c6d4e7f8091a2b3c4d5e6f7\",\"transport\":\"syslog\","
                 "\"syslog_identifier\":\"sshd\"}");
    ck_assert_int_eq(fx.out.timestamp_ns, 1700000000123456000);
    ck_assert(!fx.out.truncated);
    ck_assert(!fx.out.skip);
    ck_assert_uint_eq(fx.out.invalid, 0);
    ck_assert_uint_eq(fx.out.bytes, 27);
}
END_TEST

START_TEST(digits_are_numbers_and_anything_else_a_string)
{
    start(1024, LF_OVERFLOW_TRUNCATE, NULL, NULL);
    const struct item a[] = { I("_PID=0123"), I("_UID=9223372036854775807"), I("_GID=00") };
    convert(a, N(a));
    expect_extra("\"journald\":{\"pid\":123,\"uid\":9223372036854775807,\"gid\":0}");
    /* Past INT64_MAX a 64-bit integer reader (Elasticsearch's long, jansson) overflows: a
     * string. */
    const struct item big[] = { I("_PID=9223372036854775808"), I("_UID=9999999999999999999") };
    convert(big, N(big));
    expect_extra("\"journald\":{\"pid\":\"9223372036854775808\",\"uid\":\"9999999999999999999\"}");
    const struct item b[] = { I("_PID=12345678901234567890"), I("_UID=-1"), I("_GID=") };
    convert(b, N(b));
    expect_extra("\"journald\":{\"pid\":\"12345678901234567890\",\"uid\":\"-1\",\"gid\":\"\"}");
    const struct item c[] = { I("_PID= 12"), I("_UID=1.5"), I("_GID=7x") };
    convert(c, N(c));
    expect_extra("\"journald\":{\"pid\":\" 12\",\"uid\":\"1.5\",\"gid\":\"7x\"}");
    /* String fields stay strings whatever they hold. */
    const struct item d[] = { I("_COMM=42"), I("_HOSTNAME=7") };
    convert(d, N(d));
    expect_extra("\"journald\":{\"comm\":\"42\",\"hostname\":\"7\"}");
}
END_TEST

START_TEST(priority_and_facility_names_and_values_out_of_range)
{
    static const char *const prio[] = { "emerg",   "alert",  "crit", "err",
                                        "warning", "notice", "info", "debug" };
    static const char *const fac[] = {
        "kern",   "user",   "mail",     "daemon", "auth",   "syslog",   "lpr",     "news",
        "uucp",   "cron",   "authpriv", "ftp",    "ntp",    "security", "console", "solaris-cron",
        "local0", "local1", "local2",   "local3", "local4", "local5",   "local6",  "local7",
    };
    start(1024, LF_OVERFLOW_TRUNCATE, NULL, NULL);
    char p_item[32], f_item[32], want[160];
    for (int i = 0; i < 24; i++) {
        snprintf(p_item, sizeof(p_item), "PRIORITY=%d", i);
        snprintf(f_item, sizeof(f_item), "SYSLOG_FACILITY=%d", i);
        const struct item items[] = { { f_item, strlen(f_item) }, { p_item, strlen(p_item) } };
        convert(items, N(items));
        if (i < 8)
            snprintf(want, sizeof(want),
                     "\"journald\":{\"priority\":%d,\"priority_name\":\"%s\",\"facility\":%d,"
                     "\"facility_name\":\"%s\"}",
                     i, prio[i], i, fac[i]);
        else
            snprintf(want, sizeof(want),
                     "\"journald\":{\"priority\":%d,\"facility\":%d,\"facility_name\":\"%s\"}", i,
                     i, fac[i]);
        ck_assert_uint_eq(fx.out.extra.len, strlen(want));
        ck_assert(memcmp(fx.out.extra.ptr, want, strlen(want)) == 0);
    }
    const struct item out[] = { I("PRIORITY=8"), I("SYSLOG_FACILITY=24") };
    convert(out, N(out));
    expect_extra("\"journald\":{\"priority\":8,\"facility\":24}");
    const struct item word[] = { I("PRIORITY=info"), I("SYSLOG_FACILITY=-3") };
    convert(word, N(word));
    expect_extra("\"journald\":{\"priority\":\"info\",\"facility\":\"-3\"}");
    const struct item zeros[] = { I("PRIORITY=0003"), I("SYSLOG_FACILITY=023") };
    convert(zeros, N(zeros));
    expect_extra("\"journald\":{\"priority\":3,\"priority_name\":\"err\",\"facility\":23,"
                 "\"facility_name\":\"local7\"}");
}
END_TEST

START_TEST(invalid_utf8_and_nul_bytes_in_the_message_and_in_a_field)
{
    start(1024, LF_OVERFLOW_TRUNCATE, NULL, NULL);
    /* \xff alone, a NUL, \xe2\x82 cut by the end: three bad bytes. */
    const struct item items[] = { I("MESSAGE=a\xff"
                                    "b\0c\xe2\x82"),
                                  I("_COMM=a\xff\0z\xc3") };
    convert(items, N(items));
    expect_message("a\xef\xbf\xbd"
                   "b\0c\xef\xbf\xbd\xef\xbf\xbd");
    ck_assert_uint_eq(fx.out.invalid, 3);
    ck_assert_uint_eq(fx.out.bytes, 7);
    expect_extra("\"journald\":{\"comm\":\"a\xef\xbf\xbd\\u0000z\xef\xbf\xbd\"}");
    /* An overlong encoding and a surrogate: each byte is one U+FFFD. */
    const struct item bad[] = { I("MESSAGE=\xc0\xaf|\xed\xa0\x80") };
    convert(bad, N(bad));
    expect_message("\xef\xbf\xbd\xef\xbf\xbd|\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
    ck_assert_uint_eq(fx.out.invalid, 5);
    expect_extra("");
}
END_TEST

START_TEST(binary_data_is_kept_whole_and_escaped_in_fields)
{
    start(1024, LF_OVERFLOW_TRUNCATE, NULL, NULL);
    const struct item items[] = {
        I("MESSAGE=line1\nline2\t\x01\"q\"\\ caf\xc3\xa9 \xe2\x80\xa8"),
        I("_CMDLINE=a\nb\"c\\d\x1f\xe2\x80\xa9"),
    };
    convert(items, N(items));
    expect_message("line1\nline2\t\x01\"q\"\\ caf\xc3\xa9 \xe2\x80\xa8");
    ck_assert_uint_eq(fx.out.invalid, 0);
    expect_extra("\"journald\":{\"cmdline\":\"a\\nb\\\"c\\\\d\\u001f\\u2029\"}");
}
END_TEST

START_TEST(truncation_cuts_at_a_character_boundary)
{
    /* "abc" then U+20AC (three bytes) across the limit of 5. */
    start(5, LF_OVERFLOW_TRUNCATE, NULL, NULL);
    const struct item euro[] = { I("MESSAGE=abc\xe2\x82\xac"
                                   "d") };
    convert(euro, N(euro));
    expect_message("abc");
    ck_assert(fx.out.truncated);
    ck_assert(!fx.out.skip);
    ck_assert_uint_eq(fx.out.bytes, 7);
    /* A U+FFFD that does not fit is left out whole. */
    const struct item bad[] = { I("MESSAGE=abcd\xff") };
    convert(bad, N(bad));
    expect_message("abcd");
    ck_assert(fx.out.truncated);
    /* Exactly the limit is not truncated. */
    const struct item fits[] = { I("MESSAGE=ab\xe2\x82\xac") };
    convert(fits, N(fits));
    expect_message("ab\xe2\x82\xac");
    ck_assert(!fx.out.truncated);
    teardown();
    start(6, LF_OVERFLOW_TRUNCATE, NULL, NULL);
    convert(euro, N(euro));
    expect_message("abc\xe2\x82\xac");
    ck_assert(fx.out.truncated);
}
END_TEST

START_TEST(skip_drops_a_message_over_the_limit)
{
    start(5, LF_OVERFLOW_SKIP, NULL, NULL);
    const struct item longer[] = { I("MESSAGE=abcdef"), I("_PID=7") };
    convert(longer, N(longer));
    ck_assert(fx.out.skip);
    ck_assert(!fx.out.truncated);
    expect_message("");
    ck_assert_uint_eq(fx.out.bytes, 6);
    const struct item fits[] = { I("MESSAGE=abcde") };
    convert(fits, N(fits));
    ck_assert(!fx.out.skip);
    ck_assert(!fx.out.truncated);
    expect_message("abcde");
}
END_TEST

START_TEST(an_empty_or_absent_message_is_empty)
{
    start(1024, LF_OVERFLOW_TRUNCATE, NULL, NULL);
    const struct item absent[] = { I("_PID=1") };
    convert(absent, N(absent));
    expect_message("");
    ck_assert_ptr_nonnull(fx.out.message.ptr);
    ck_assert_uint_eq(fx.out.bytes, 0);
    expect_extra("\"journald\":{\"pid\":1}");
    const struct item empty[] = { I("MESSAGE=") };
    convert(empty, N(empty));
    expect_message("");
    expect_extra("");
    ck_assert_ptr_nonnull(fx.out.extra.ptr);
    convert(NULL, 0);
    expect_message("");
    expect_extra("");
    /* An empty value, twice: the second comes from the cache. */
    const struct item blank[] = { I("_COMM=") };
    convert(blank, N(blank));
    convert(blank, N(blank));
    expect_extra("\"journald\":{\"comm\":\"\"}");
}
END_TEST

START_TEST(a_repeated_field_keeps_its_first_value)
{
    static const char *const all[] = { "*", NULL };
    start(1024, LF_OVERFLOW_TRUNCATE, all, NULL);
    const struct item items[] = {
        I("MESSAGE=first"),    I("_PID=1"),           I("FOO=a"),
        I("MESSAGE=second"),   I("_PID=2"),           I("FOO=b"),
        I("_SYSTEMD_UNIT=u1"), I("_SYSTEMD_UNIT=u2"),
    };
    convert(items, N(items));
    expect_message("first");
    expect_extra("\"journald\":{\"unit\":\"u1\",\"pid\":1,\"custom\":{\"foo\":\"a\"}}");
    /* The next entry starts afresh. */
    const struct item next[] = { I("FOO=c"), I("_PID=3"), I("_SYSTEMD_UNIT=u2") };
    convert(next, N(next));
    expect_extra("\"journald\":{\"unit\":\"u2\",\"pid\":3,\"custom\":{\"foo\":\"c\"}}");
}
END_TEST

START_TEST(star_includes_every_unmapped_field_but_address_fields_and_message)
{
    static const char *const all[] = { "*", NULL };
    start(1024, LF_OVERFLOW_TRUNCATE, all, NULL);
    const struct item items[] = {
        I("__CURSOR=s=abc;i=1"),
        I("__REALTIME_TIMESTAMP=1700000000123456"),
        I("__MONOTONIC_TIMESTAMP=42"),
        I("__SEQNUM=7"),
        I("MESSAGE=hi"),
        I("_SYSTEMD_CGROUP=/system.slice/ssh.service"),
        I("CONTAINER_NAME=web"),
        I("_PID=5"),
        I("CODE_LINE=12"),
        I("_SOURCE_REALTIME_TIMESTAMP=1700000000000000"),
        I("Mixed_Case9=x\"y"),
    };
    convert(items, N(items));
    expect_message("hi");
    expect_extra("\"journald\":{\"pid\":5,\"custom\":{\"systemd_cgroup\":"
                 "\"/system.slice/ssh.service\",\"container_name\":\"web\",\"code_line\":\"12\","
                 "\"source_realtime_timestamp\":\"1700000000000000\",\"mixed_case9\":"
                 "\"x\\\"y\"}}");
}
END_TEST

START_TEST(named_include_fields_take_only_those)
{
    static const char *const inc[] = { "CONTAINER_NAME", "_SYSTEMD_CGROUP",
                                       "__CURSOR",       "MESSAGE",
                                       "_PID",           NULL };
    start(1024, LF_OVERFLOW_TRUNCATE, inc, NULL);
    const struct item items[] = {
        I("__CURSOR=s=abc"), I("MESSAGE=m"),          I("_SYSTEMD_CGROUP=/x"),
        I("CODE_LINE=3"),    I("CONTAINER_NAME=web"), I("CONTAINER_NAMES=no"),
        I("_PID=9"),
    };
    convert(items, N(items));
    expect_extra("\"journald\":{\"pid\":9,\"custom\":{\"systemd_cgroup\":\"/x\","
                 "\"container_name\":\"web\"}}");
    /* Only custom members: the mapped ones absent. */
    const struct item only[] = { I("CONTAINER_NAME=db") };
    convert(only, N(only));
    expect_extra("\"journald\":{\"custom\":{\"container_name\":\"db\"}}");
}
END_TEST

START_TEST(exclude_fields_removes_mapped_and_custom_members)
{
    static const char *const all[] = { "*", NULL };
    static const char *const exc[] = { "_CMDLINE", "PRIORITY", "_SYSTEMD_CGROUP", "MESSAGE", NULL };
    start(1024, LF_OVERFLOW_TRUNCATE, all, exc);
    const struct item items[] = {
        I("PRIORITY=3"),         I("SYSLOG_FACILITY=4"),  I("_CMDLINE=/bin/x"), I("_EXE=/bin/x"),
        I("_SYSTEMD_CGROUP=/y"), I("CONTAINER_NAME=web"), I("MESSAGE=kept"),
    };
    convert(items, N(items));
    expect_message("kept");
    expect_extra("\"journald\":{\"facility\":4,\"facility_name\":\"auth\",\"exe\":\"/bin/x\","
                 "\"custom\":{\"container_name\":\"web\"}}");
    /* Excluding wins over a named include too. */
    teardown();
    static const char *const inc[] = { "CONTAINER_NAME", "IMAGE", NULL };
    static const char *const exc2[] = { "IMAGE", NULL };
    start(1024, LF_OVERFLOW_TRUNCATE, inc, exc2);
    const struct item two[] = { I("IMAGE=i"), I("CONTAINER_NAME=c") };
    convert(two, N(two));
    expect_extra("\"journald\":{\"custom\":{\"container_name\":\"c\"}}");
}
END_TEST

START_TEST(colliding_custom_names_keep_the_first_field)
{
    static const char *const all[] = { "*", NULL };
    start(1024, LF_OVERFLOW_TRUNCATE, all, NULL);
    const struct item a[] = { I("_FOO=underscore"), I("FOO=plain"), I("__FOO=address") };
    convert(a, N(a));
    expect_extra("\"journald\":{\"custom\":{\"foo\":\"underscore\"}}");
    const struct item b[] = { I("FOO=plain"), I("_FOO=underscore"), I("foo=lower") };
    convert(b, N(b));
    expect_extra("\"journald\":{\"custom\":{\"foo\":\"plain\"}}");
    /* Names whose bad bytes differ render alike: one member. */
    const struct item u[] = { I("X\xff=1"), I("_x\xfe=2") };
    convert(u, N(u));
    expect_extra("\"journald\":{\"custom\":{\"x\xef\xbf\xbd\":\"1\"}}");
    /* A name of underscores only has no custom name; one with a control character none
     * either. */
    const struct item c[] = { I("_=x"), I("A\x01=z"), I("B\0C=w"), I("D\x7f=v"), I("BAR=y") };
    convert(c, N(c));
    expect_extra("\"journald\":{\"custom\":{\"bar\":\"y\"}}");
}
END_TEST

START_TEST(items_without_a_field_name_are_ignored)
{
    static const char *const all[] = { "*", NULL };
    start(1024, LF_OVERFLOW_TRUNCATE, all, NULL);
    const struct item items[] = { I("MESSAGE"),  I("=value"),       I(""),     I("_PID"),
                                  I("NOEQUALS"), I("MESSAGE=real"), I("X=a=b") };
    convert(items, N(items));
    expect_message("real");
    expect_extra("\"journald\":{\"custom\":{\"x\":\"a=b\"}}");
}
END_TEST

START_TEST(cached_members_follow_the_values)
{
    start(1024, LF_OVERFLOW_TRUNCATE, NULL, NULL);
    /* More distinct values than the cache keeps, interleaved, and back again. */
    const char *units[] = { "a.service", "b.service", "a.service", "a.service", "ab.service",
                            "c",         "d",         "e",         "",          "a.service",
                            "c",         "",          "f",         "b.service" };
    char item[64], want[128];
    for (size_t i = 0; i < N(units); i++) {
        snprintf(item, sizeof(item), "_SYSTEMD_UNIT=%s", units[i]);
        const struct item items[] = { { item, strlen(item) }, I("_HOSTNAME=h") };
        convert(items, N(items));
        snprintf(want, sizeof(want), "\"journald\":{\"unit\":\"%s\",\"hostname\":\"h\"}", units[i]);
        ck_assert_uint_eq(fx.out.extra.len, strlen(want));
        ck_assert(memcmp(fx.out.extra.ptr, want, strlen(want)) == 0);
    }
    /* An entry without the field leaves it out even though its rendering is cached. */
    const struct item none[] = { I("_HOSTNAME=h") };
    convert(none, N(none));
    expect_extra("\"journald\":{\"hostname\":\"h\"}");
}
END_TEST

START_TEST(many_distinct_names_start_the_name_tables_over)
{
    static const char *const all[] = { "*", NULL };
    start(1024, LF_OVERFLOW_TRUNCATE, all, NULL);
    char a[32], b[32], want[128];
    for (int i = 0; i < 10000; i++) {
        int na = snprintf(a, sizeof(a), "F%d=%d", i, i);
        int nb = snprintf(b, sizeof(b), "_F%d=x", i);
        const struct item items[] = { { a, (size_t)na }, { b, (size_t)nb }, I("KEEP=k") };
        convert(items, N(items));
        int nw = snprintf(want, sizeof(want),
                          "\"journald\":{\"custom\":{\"f%d\":\"%d\",\"keep\":\"k\"}}", i, i);
        ck_assert_uint_eq(fx.out.extra.len, (size_t)nw);
        ck_assert(memcmp(fx.out.extra.ptr, want, (size_t)nw) == 0);
    }
}
END_TEST

/* A random field name from a small set (mapped, custom, address, odd bytes). */
static size_t random_name(char *out, unsigned *seed)
{
    static const char *const names[] = {
        "MESSAGE",   "PRIORITY", "SYSLOG_FACILITY", "_SYSTEMD_UNIT", "_PID", "_UID",
        "_COMM",     "_CMDLINE", "_BOOT_ID",        "__CURSOR",      "_FOO", "FOO",
        "BAR_BAZ",   "_",        "x\xff",           "Q\"\\",         "_GID", "SYSLOG_IDENTIFIER",
        "_HOSTNAME", "N\x01",
    };
    const char *n = names[rand_r(seed) % N(names)];
    size_t len = strlen(n);
    memcpy(out, n, len);
    return len;
}

START_TEST(random_entries_give_json_and_utf8)
{
    static const char *const all[] = { "*", NULL };
    static const char *const exc[] = { "_UID", "BAR_BAZ", NULL };
    start(16, (enum lf_line_overflow)(_i % 2), _i < 2 ? all : NULL, _i < 2 ? NULL : exc);
    unsigned seed = 12345u + (unsigned)_i;
    static const char alphabet[] = "09az\"\\\n\x01\x7f\xc3\xa9\xe2\x82\xac\xff\xed\xa0\x80 =_";
    struct lf_buf wrapped;
    lf_buf_init(&wrapped, SIZE_MAX);
    for (int e = 0; e < 3000; e++) {
        lf_jentry_begin(fx.j, (uint64_t)e * 1000);
        int items = rand_r(&seed) % 12;
        for (int k = 0; k < items; k++) {
            char item[96];
            size_t n = random_name(item, &seed);
            item[n++] = '=';
            int vlen = rand_r(&seed) % 24;
            bool digits = rand_r(&seed) % 2 == 0;
            for (int c = 0; c < vlen; c++)
                item[n++] = digits ? (char)('0' + rand_r(&seed) % 10)
                                   : alphabet[rand_r(&seed) % (sizeof(alphabet) - 1)];
            ck_assert_int_eq(lf_jentry_add(fx.j, item, n), LF_OK);
        }
        ck_assert_int_eq(lf_jentry_end(fx.j, &fx.out), LF_OK);
        ck_assert(fx.out.message.len <= 16);
        ck_assert(lf_utf8_valid(fx.out.message.ptr, fx.out.message.len));
        lf_buf_reset(&wrapped);
        ck_assert_int_eq(lf_buf_append(&wrapped, "{", 1), LF_OK);
        ck_assert_int_eq(lf_buf_append_str(&wrapped, fx.out.extra), LF_OK);
        ck_assert_int_eq(lf_buf_append(&wrapped, "}", 1), LF_OK);
        json_error_t jerr;
        /* Every number fits an int64 (jansson fails on one that does not). A key twice is
         * an error. */
        json_t *root = json_loadb(wrapped.ptr, wrapped.len,
                                  JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
        if (root == NULL)
            ck_abort_msg("entry %d: %s in {%.*s}", e, jerr.text, (int)fx.out.extra.len,
                         fx.out.extra.ptr);
        json_t *jd = json_object_get(root, "journald");
        if (fx.out.extra.len > 0) {
            ck_assert(json_is_object(jd));
            if (_i >= 2) /* _UID excluded, no custom members */
                ck_assert(json_object_get(jd, "uid") == NULL &&
                          json_object_get(jd, "custom") == NULL);
        } else {
            ck_assert_uint_eq(json_object_size(root), 0);
        }
        json_decref(root);
    }
    lf_buf_release(&wrapped);
}
END_TEST

/* Run alone by check_jentry_alloc (see main). */
START_TEST(steady_state_allocates_nothing_per_entry)
{
    static const char *const inc[] = { "CONTAINER_NAME", "_SYSTEMD_CGROUP", NULL };
    start(1 << 20, LF_OVERFLOW_TRUNCATE, inc, NULL);
    static const struct item e1[] = {
        I("_BOOT_ID=0123456789abcdef0123456789abcdef"),
        I("_TRANSPORT=syslog"),
        I("PRIORITY=6"),
        I("SYSLOG_FACILITY=4"),
        I("SYSLOG_IDENTIFIER=sshd"),
        I("_PID=1234"),
        I("_UID=0"),
        I("_GID=0"),
        I("_COMM=sshd"),
        I("_EXE=/usr/sbin/sshd"),
        I("_CMDLINE=sshd: root [priv]"),
        I("_SYSTEMD_CGROUP=/system.slice/ssh.service"),
        I("_SYSTEMD_UNIT=ssh.service"),
        I("_HOSTNAME=h1"),
        I("_MACHINE_ID=4a1f0e0b5c6d4e7f8091a2b3c4d5e6f7"),
        I("MESSAGE=Accepted publickey for root from 10.0.0.1 port 5022 ssh2"),
    };
    static const struct item e2[] = {
        I("_BOOT_ID=0123456789abcdef0123456789abcdef"),
        I("_TRANSPORT=stdout"),
        I("PRIORITY=3"),
        I("CONTAINER_NAME=web"),
        I("_PID=99"),
        I("_COMM=nginx"),
        I("_SYSTEMD_UNIT=docker.service"),
        I("_HOSTNAME=h1"),
        I("MESSAGE=caf\xc3\xa9 \xff bad \"quoted\"\n"),
    };
    static const struct item e3[] = { I("_TRANSPORT=kernel"), I("PRIORITY=4"),
                                      I("MESSAGE=usb 1-1: new device"), I("_HOSTNAME=h1") };
    const struct item *entries[] = { e1, e2, e3 };
    size_t counts[] = { N(e1), N(e2), N(e3) };
    enum lf_err err = LF_OK;
    struct lf_alloc_count a0 = { 0, 0 };
    /* No ck_assert inside the measured loop: Check's assertions allocate. */
    for (int r = 0; r < 3000 && !err; r++) {
        if (r == 3)
            a0 = lf_alloc_count_now(); /* after one pass over the entries */
        lf_jentry_begin(fx.j, (uint64_t)r);
        for (size_t i = 0; i < counts[r % 3] && !err; i++)
            err = lf_jentry_add(fx.j, entries[r % 3][i].p, entries[r % 3][i].n);
        if (!err)
            err = lf_jentry_end(fx.j, &fx.out);
    }
    struct lf_alloc_count a1 = lf_alloc_count_now();
    ck_assert_int_eq(err, LF_OK);
    ck_assert_uint_eq(a1.calls - a0.calls, 0);
}
END_TEST

static Suite *jentry_suite(void)
{
    Suite *s = suite_create("jentry");
    TCase *mapped = tcase_create("mapped fields");
    tcase_add_checked_fixture(mapped, NULL, teardown);
    tcase_add_test(mapped, every_mapped_field_in_the_table_order);
    tcase_add_test(mapped, digits_are_numbers_and_anything_else_a_string);
    tcase_add_test(mapped, priority_and_facility_names_and_values_out_of_range);
    tcase_add_test(mapped, a_repeated_field_keeps_its_first_value);
    tcase_add_test(mapped, cached_members_follow_the_values);
    suite_add_tcase(s, mapped);
    TCase *bytes = tcase_create("message and bytes");
    tcase_add_checked_fixture(bytes, NULL, teardown);
    tcase_add_test(bytes, invalid_utf8_and_nul_bytes_in_the_message_and_in_a_field);
    tcase_add_test(bytes, binary_data_is_kept_whole_and_escaped_in_fields);
    tcase_add_test(bytes, truncation_cuts_at_a_character_boundary);
    tcase_add_test(bytes, skip_drops_a_message_over_the_limit);
    tcase_add_test(bytes, an_empty_or_absent_message_is_empty);
    tcase_add_test(bytes, items_without_a_field_name_are_ignored);
    suite_add_tcase(s, bytes);
    TCase *custom = tcase_create("include and exclude");
    tcase_add_checked_fixture(custom, NULL, teardown);
    tcase_add_test(custom, star_includes_every_unmapped_field_but_address_fields_and_message);
    tcase_add_test(custom, named_include_fields_take_only_those);
    tcase_add_test(custom, exclude_fields_removes_mapped_and_custom_members);
    tcase_add_test(custom, colliding_custom_names_keep_the_first_field);
    tcase_add_test(custom, many_distinct_names_start_the_name_tables_over);
    suite_add_tcase(s, custom);
    TCase *random = tcase_create("random entries");
    tcase_add_checked_fixture(random, NULL, teardown);
    tcase_set_timeout(random, 60);
    tcase_add_loop_test(random, random_entries_give_json_and_utf8, 0, 4);
    suite_add_tcase(s, random);
    TCase *alloc = tcase_create("alloc");
    tcase_set_tags(alloc, "alloc");
    tcase_add_checked_fixture(alloc, NULL, teardown);
    tcase_add_test(alloc, steady_state_allocates_nothing_per_entry);
    suite_add_tcase(s, alloc);
    return s;
}

/* Built twice. t/unit/check_jentry runs every case but the one tagged alloc;
 * t/unit/check_jentry_alloc (LF_CHECK_ALLOC) runs that one alone and exits 77 (skipped, not
 * passed) where allocations cannot be counted (under ASan). */
int main(void)
{
#ifdef LF_CHECK_ALLOC
    if (!lf_alloc_count_enabled()) {
        printf("SKIP: allocation counting unavailable (sanitizer build): "
               "steady_state_allocates_nothing_per_entry not run\n");
        return 77;
    }
    const char *include = "alloc", *exclude = NULL;
#else
    const char *include = NULL, *exclude = "alloc";
#endif
    SRunner *sr = srunner_create(jentry_suite());
    srunner_run_tagged(sr, NULL, NULL, include, exclude, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
