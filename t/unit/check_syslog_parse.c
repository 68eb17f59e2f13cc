/* check_syslog_parse.c - the syslog stage: a table of real lines (Debian rsyslog's
 * traditional and high-precision formats, auth.log, kern.log, RFC 5424 with structured
 * data, the RFC's own examples) and malformed ones, config errors, the whole event as
 * encoded, and no allocation per event in steady state. */
#include "config.h"

#include "stage_fixture.h"

struct sl_conf {
    enum lf_syslog_parse format;
    const char *target; /* NULL: the default */
    bool keep_original;
};

static enum lf_err start(const struct sl_conf *c, struct lf_errbuf *eb)
{
    struct lf_parser_conf pc = { .kind = LF_PARSER_SYSLOG };
    pc.u.syslog.format = c->format;
    pc.u.syslog.target = (char *)c->target;
    pc.u.syslog.keep_original = c->keep_original;
    return fx_start(&lf_stage_syslog, &pc, eb);
}

#define AUTO                          \
    {                                 \
        LF_SYSLOG_PARSE_AUTO, NULL, 0 \
    }
#define ERR(why)  "\"error\":{\"message\":\"syslog: " why "\"}"
#define NOTIME    ERR("no RFC 3164 or RFC 3339 time where the header starts")
#define BADTIME   ERR("the time is not an RFC 3339 time between 1677 and 2262")
#define EARLY     ERR("the RFC 5424 header ends early or has an empty field")
#define BADSD     ERR("the RFC 5424 STRUCTURED-DATA is neither - nor well-formed elements")
#define READ_TIME "1970-01-01T00:00:00.000Z" /* the fixture's events: 42 ns */
#define DEB       "\"timestamp\":\"Dec  1 00:08:01\",\"hostname\":\"web-1\","
#define PRI38                                                                               \
    "\"priority\":38,\"facility\":{\"code\":4,\"name\":\"auth\"},\"severity\":{\"code\":6," \
    "\"name\":\"info\"},"

static const struct sl_case {
    struct sl_conf conf;
    const char *line;
    const char *prior; /* extra before the stage */
    const char *msg;   /* the message after it; NULL: unchanged */
    const char *extra; /* the extra after it */
    const char *ts;    /* @timestamp after it, as encoded */
} cases[] = {
    /* 0-8: /var/log/syslog, auth.log, kern.log as Debian's rsyslog writes them (no PRI) */
    { AUTO,
      "Dec  1 00:08:01 web-1 CRON[4711]: (root) CMD (   cd / && run-parts --report "
      "/etc/cron.hourly)",
      "", "(root) CMD (   cd / && run-parts --report /etc/cron.hourly)",
      DEB "\"appname\":\"CRON\",\"procid\":\"4711\"", READ_TIME },
    { AUTO,
      "Nov 30 23:59:58 web-1 sshd[812]: Accepted publickey for deploy from 198.51.100.7 "
      "port 52214 ssh2: ED25519 SHA256:Vb8Zq0Hj6mG1mUu2xfn9Q0oQGQ7cW5iL2gk5C5yqZ7Y",
      "",
      "Accepted publickey for deploy from 198.51.100.7 port 52214 ssh2: ED25519 "
      "SHA256:Vb8Zq0Hj6mG1mUu2xfn9Q0oQGQ7cW5iL2gk5C5yqZ7Y",
      "\"timestamp\":\"Nov 30 23:59:58\",\"hostname\":\"web-1\",\"appname\":\"sshd\","
      "\"procid\":\"812\"",
      READ_TIME },
    /* sudo has no pid and pads its user with spaces: one space after the colon goes */
    { AUTO,
      "Dec  1 00:08:01 web-1 sudo:    alice : TTY=pts/0 ; PWD=/home/alice ; USER=root ; "
      "COMMAND=/usr/bin/apt update",
      "", "   alice : TTY=pts/0 ; PWD=/home/alice ; USER=root ; COMMAND=/usr/bin/apt update",
      DEB "\"appname\":\"sudo\"", READ_TIME },
    { AUTO,
      "Dec  1 00:08:01 web-1 sudo: pam_unix(sudo:session): session opened for user "
      "root(uid=0) by alice(uid=1000)",
      "", "pam_unix(sudo:session): session opened for user root(uid=0) by alice(uid=1000)",
      DEB "\"appname\":\"sudo\"", READ_TIME },
    { AUTO,
      "Dec  1 00:08:01 web-1 kernel: [    0.000000] Linux version 6.1.0-27-amd64 "
      "(debian-kernel@lists.debian.org) (gcc-12 (Debian 12.2.0-14) 12.2.0)",
      "",
      "[    0.000000] Linux version 6.1.0-27-amd64 (debian-kernel@lists.debian.org) "
      "(gcc-12 (Debian 12.2.0-14) 12.2.0)",
      DEB "\"appname\":\"kernel\"", READ_TIME },
    { AUTO,
      "Dec  1 00:08:01 web-1 kernel: usb 2-1: new SuperSpeed USB device number 2 using "
      "xhci_hcd",
      "", "usb 2-1: new SuperSpeed USB device number 2 using xhci_hcd",
      DEB "\"appname\":\"kernel\"", READ_TIME },
    { AUTO, "Dec  1 00:08:01 web-1 systemd[1]: Starting logrotate.service - Rotate log files...",
      "", "Starting logrotate.service - Rotate log files...",
      DEB "\"appname\":\"systemd\",\"procid\":\"1\"", READ_TIME },
    { AUTO,
      "Dec  1 00:08:01 web-1 dbus-daemon[804]: [system] Activating via systemd: service "
      "name='org.freedesktop.hostname1'",
      "", "[system] Activating via systemd: service name='org.freedesktop.hostname1'",
      DEB "\"appname\":\"dbus-daemon\",\"procid\":\"804\"", READ_TIME },
    { AUTO,
      "Dec 10 13:45:12 web-1 rsyslogd: [origin software=\"rsyslogd\" swVersion=\"8.2302.0\"] "
      "rsyslogd was HUPed",
      "", "[origin software=\"rsyslogd\" swVersion=\"8.2302.0\"] rsyslogd was HUPed",
      "\"timestamp\":\"Dec 10 13:45:12\",\"hostname\":\"web-1\",\"appname\":\"rsyslogd\"",
      READ_TIME },
    /* 9-10: rsyslog's high-precision form: the time sets @timestamp, no "timestamp" */
    { AUTO,
      "2026-12-01T00:08:01.123456+00:00 web-1 CRON[4711]: (root) CMD (command -v "
      "debian-sa1 > /dev/null && debian-sa1 1 1)",
      "", "(root) CMD (command -v debian-sa1 > /dev/null && debian-sa1 1 1)",
      "\"hostname\":\"web-1\",\"appname\":\"CRON\",\"procid\":\"4711\"",
      "2026-12-01T00:08:01.123Z" },
    { AUTO, "2026-12-01T01:08:01.5+01:00 web-1 kernel: [   12.345678] e1000e: eno1 NIC Link is Up",
      "", "[   12.345678] e1000e: eno1 NIC Link is Up",
      "\"hostname\":\"web-1\",\"appname\":\"kernel\"", "2026-12-01T00:08:01.500Z" },
    /* 11-14: no host, no pid, no tag */
    { AUTO, "Dec  1 00:08:01 sshd[42]: Connection closed by 203.0.113.5 port 40022 [preauth]", "",
      "Connection closed by 203.0.113.5 port 40022 [preauth]",
      "\"timestamp\":\"Dec  1 00:08:01\",\"appname\":\"sshd\",\"procid\":\"42\"", READ_TIME },
    { AUTO, "Dec  1 00:08:01 logger: hello", "", "hello",
      "\"timestamp\":\"Dec  1 00:08:01\",\"appname\":\"logger\"", READ_TIME },
    { AUTO, "Dec  1 00:08:01 web-1 a message without a tag", "", "a message without a tag",
      "\"timestamp\":\"Dec  1 00:08:01\",\"hostname\":\"web-1\"", READ_TIME },
    { AUTO, "Dec  1 00:08:01 web-1 app[]: empty pid", "", "empty pid", DEB "\"appname\":\"app\"",
      READ_TIME },
    /* 15-18: a PRI gives priority, facility and severity; its range ends at 191 */
    { AUTO, "<38>Dec  1 00:08:01 web-1 sshd[42]: Accepted password for bob", "",
      "Accepted password for bob", PRI38 DEB "\"appname\":\"sshd\",\"procid\":\"42\"", READ_TIME },
    { AUTO, "<0>Dec  1 00:08:01 web-1 kernel: panic", "", "panic",
      "\"priority\":0,\"facility\":{\"code\":0,\"name\":\"kern\"},\"severity\":{\"code\":0,"
      "\"name\":\"emerg\"}," DEB "\"appname\":\"kernel\"",
      READ_TIME },
    { AUTO, "<191>Dec  1 00:08:01 web-1 app: x", "", "x",
      "\"priority\":191,\"facility\":{\"code\":23,\"name\":\"local7\"},\"severity\":{\"code\":7,"
      "\"name\":\"debug\"}," DEB "\"appname\":\"app\"",
      READ_TIME },
    { AUTO, "<13>2026-12-01T00:08:01Z web-1 logger: high precision over the network", "",
      "high precision over the network",
      "\"priority\":13,\"facility\":{\"code\":1,\"name\":\"user\"},\"severity\":{\"code\":5,"
      "\"name\":\"notice\"},\"hostname\":\"web-1\",\"appname\":\"logger\"",
      "2026-12-01T00:08:01.000Z" },
    /* 19-22: bad PRIs */
    { AUTO, "<192>Dec  1 00:08:01 web-1 app: x", "", NULL,
      ERR("PRI is over 191 (facility 23, severity 7)"), READ_TIME },
    { AUTO, "<1000>Dec  1 00:08:01 web-1 app: x", "", NULL,
      ERR("the line starts with '<' but not with a PRI such as <13>"), READ_TIME },
    { AUTO, "<abc>Dec  1 00:08:01 web-1 app: x", "", NULL,
      ERR("the line starts with '<' but not with a PRI such as <13>"), READ_TIME },
    { AUTO, "<13", "", NULL, ERR("the line starts with '<' but not with a PRI such as <13>"),
      READ_TIME },
    /* 23-24: the day zero-padded, or one digit alone */
    { AUTO, "Dec 01 00:08:01 web-1 app: x", "", "x",
      "\"timestamp\":\"Dec 01 00:08:01\",\"hostname\":\"web-1\",\"appname\":\"app\"", READ_TIME },
    { AUTO, "Dec 1 00:08:01 web-1 app: x", "", "x",
      "\"timestamp\":\"Dec 1 00:08:01\",\"hostname\":\"web-1\",\"appname\":\"app\"", READ_TIME },
    /* 25-31: truncated headers and lines that are not syslog */
    { AUTO, "Dec  1 00:0", "", NULL, NOTIME, READ_TIME },
    { AUTO, "Dec  1 00:08:01", "", NULL, ERR("the header ends after the time"), READ_TIME },
    { AUTO, "Dec  1 00:08:01 ", "", "", "\"timestamp\":\"Dec  1 00:08:01\"", READ_TIME },
    { AUTO, "Dec 32 00:08:01 web-1 app: x", "", NULL, NOTIME, READ_TIME },
    { AUTO, "Dez  1 00:08:01 web-1 app: x", "", NULL, NOTIME, READ_TIME },
    { AUTO, "", "", NULL, NOTIME, READ_TIME },
    { AUTO, "2026-11-30 12:00:01.123 ERROR [db] timeout", "", NULL, BADTIME, READ_TIME },
    /* 32-33: UTF-8, and what the reader made of invalid bytes (U+FFFD) */
    { AUTO,
      "Dec  1 00:08:01 web-1 app[7]: Gr\xc3\xbc\xc3\x9f"
      "e aus M\xc3\xbcnchen \xe2\x9c\x93",
      "",
      "Gr\xc3\xbc\xc3\x9f"
      "e aus M\xc3\xbcnchen \xe2\x9c\x93",
      DEB "\"appname\":\"app\",\"procid\":\"7\"", READ_TIME },
    { AUTO,
      "Dec  1 00:08:01 h\xef\xbf\xbd"
      "st app\xef\xbf\xbd: bad \xef\xbf\xbd byte\ttab",
      "", "bad \xef\xbf\xbd byte\ttab",
      "\"timestamp\":\"Dec  1 00:08:01\",\"hostname\":\"h\xef\xbf\xbd"
      "st\",\"appname\":\"app\xef\xbf\xbd\"",
      READ_TIME },
    /* 34-37: RFC 5424's own examples (section 6.5) */
    { AUTO,
      "<34>1 2003-10-11T22:14:15.003Z mymachine.example.com su - ID47 - "
      "\xef\xbb\xbf'su root' failed for lonvick on /dev/pts/8",
      "", "'su root' failed for lonvick on /dev/pts/8",
      "\"priority\":34,\"facility\":{\"code\":4,\"name\":\"auth\"},\"severity\":{\"code\":2,"
      "\"name\":\"crit\"},\"version\":1,\"hostname\":\"mymachine.example.com\",\"appname\":\"su\","
      "\"msgid\":\"ID47\"",
      "2003-10-11T22:14:15.003Z" },
    { AUTO,
      "<165>1 2003-08-24T05:14:15.000003-07:00 192.0.2.1 myproc 8710 - - %% It's time to "
      "make the do-nuts.",
      "", "%% It's time to make the do-nuts.",
      "\"priority\":165,\"facility\":{\"code\":20,\"name\":\"local4\"},\"severity\":{\"code\":5,"
      "\"name\":\"notice\"},\"version\":1,\"hostname\":\"192.0.2.1\",\"appname\":\"myproc\","
      "\"procid\":\"8710\"",
      "2003-08-24T12:14:15.000Z" },
    { AUTO,
      "<165>1 2003-10-11T22:14:15.003Z mymachine.example.com evntslog - ID47 "
      "[exampleSDID@32473 iut=\"3\" eventSource=\"Application\" eventID=\"1011\"] "
      "\xef\xbb\xbf"
      "An application event log entry...",
      "", "An application event log entry...",
      "\"priority\":165,\"facility\":{\"code\":20,\"name\":\"local4\"},\"severity\":{\"code\":5,"
      "\"name\":\"notice\"},\"version\":1,\"hostname\":\"mymachine.example.com\","
      "\"appname\":\"evntslog\",\"msgid\":\"ID47\",\"structured_data\":{\"exampleSDID@32473\":"
      "{\"iut\":\"3\",\"eventSource\":\"Application\",\"eventID\":\"1011\"}}",
      "2003-10-11T22:14:15.003Z" },
    { AUTO,
      "<165>1 2003-10-11T22:14:15.003Z mymachine.example.com evntslog - ID47 "
      "[exampleSDID@32473 iut=\"3\" eventSource=\"Application\" eventID=\"1011\"]"
      "[examplePriority@32473 class=\"high\"]",
      "", "",
      "\"priority\":165,\"facility\":{\"code\":20,\"name\":\"local4\"},\"severity\":{\"code\":5,"
      "\"name\":\"notice\"},\"version\":1,\"hostname\":\"mymachine.example.com\","
      "\"appname\":\"evntslog\",\"msgid\":\"ID47\",\"structured_data\":{\"exampleSDID@32473\":"
      "{\"iut\":\"3\",\"eventSource\":\"Application\",\"eventID\":\"1011\"},"
      "\"examplePriority@32473\":{\"class\":\"high\"}}",
      "2003-10-11T22:14:15.003Z" },
    /* 38-40: nil values everywhere; escapes; repeated SD-IDs and names keep the first */
    { AUTO, "<14>1 - - - - - -", "", "",
      "\"priority\":14,\"facility\":{\"code\":1,\"name\":\"user\"},\"severity\":{\"code\":6,"
      "\"name\":\"info\"},\"version\":1",
      READ_TIME },
    { AUTO,
      "<14>1 - h a - - [x@1 q=\"say \\\"hi\\\"\" b=\"[a\\]\" s=\"c:\\\\tmp\\\\\" "
      "o=\"\\n stays\" u=\"M\xc3\xbcnchen\"] m",
      "", "m",
      "\"priority\":14,\"facility\":{\"code\":1,\"name\":\"user\"},\"severity\":{\"code\":6,"
      "\"name\":\"info\"},\"version\":1,\"hostname\":\"h\",\"appname\":\"a\","
      "\"structured_data\":{\"x@1\":{\"q\":\"say \\\"hi\\\"\",\"b\":\"[a]\",\"s\":\"c:\\\\tmp\\\\\","
      "\"o\":\"\\\\n stays\",\"u\":\"M\xc3\xbcnchen\"}}",
      READ_TIME },
    { AUTO, "<14>1 - h a - - [a x=\"1\" x=\"2\" y=\"\"][a z=\"3\"][b] m", "", "m",
      "\"priority\":14,\"facility\":{\"code\":1,\"name\":\"user\"},\"severity\":{\"code\":6,"
      "\"name\":\"info\"},\"version\":1,\"hostname\":\"h\",\"appname\":\"a\","
      "\"structured_data\":{\"a\":{\"x\":\"1\",\"y\":\"\"},\"b\":{}}",
      READ_TIME },
    /* 41-47: malformed RFC 5424 */
    { AUTO, "<34>1 2003-10-11T22:14:15.003Z mymachine.example.com su", "", NULL, EARLY, READ_TIME },
    { AUTO, "<34>1 2003-10-11T22:14:15.003Z host su - ID47", "", NULL, EARLY, READ_TIME },
    { AUTO, "<34>1 - host  app - - - m", "", NULL, EARLY, READ_TIME },
    { AUTO, "<34>1 - h a - - [id k=\"v] m", "", NULL, BADSD, READ_TIME },
    { AUTO, "<34>1 - h a - - [id k=v] m", "", NULL, BADSD, READ_TIME },
    { AUTO, "<34>1 - h a - - [id]m", "", NULL, ERR("no space between STRUCTURED-DATA and MSG"),
      READ_TIME },
    { AUTO, "<34>1 1500-10-11T22:14:15Z h a - - - m", "", NULL, BADTIME, READ_TIME },
    /* 48-49: a format that is not auto refuses the other one */
    { { LF_SYSLOG_PARSE_RFC3164, NULL, false },
      "<34>1 - h a - - - m",
      "",
      NULL,
      NOTIME,
      READ_TIME },
    { { LF_SYSLOG_PARSE_RFC5424, NULL, false },
      "<38>Dec  1 00:08:01 web-1 sshd[42]: x",
      "",
      NULL,
      ERR("not an RFC 5424 line (<PRI>VERSION at its start)"),
      READ_TIME },
    /* 50: a target holds every member; the message still becomes MSG */
    { { LF_SYSLOG_PARSE_AUTO, "syslog", false },
      "<38>Dec  1 00:08:01 web-1 sshd[42]: Accepted password for bob",
      "\"stream\":\"stdout\"",
      "Accepted password for bob",
      "\"stream\":\"stdout\",\"syslog\":{" PRI38 DEB "\"appname\":\"sshd\",\"procid\":\"42\"}",
      READ_TIME },
    /* 51-52: keys and a target an earlier stage added keep their value */
    { AUTO, "Dec  1 00:08:01 web-1 sshd[42]: x", "\"hostname\":\"pod-1\"", "x",
      "\"hostname\":\"pod-1\",\"timestamp\":\"Dec  1 00:08:01\",\"appname\":\"sshd\","
      "\"procid\":\"42\"",
      READ_TIME },
    { { LF_SYSLOG_PARSE_AUTO, "stream", false },
      "Dec  1 00:08:01 web-1 sshd[42]: x",
      "\"stream\":\"stdout\"",
      "x",
      "\"stream\":\"stdout\"",
      READ_TIME },
    /* 53-54: a line that is not syslog keeps an earlier error, or adds its own after prior */
    { AUTO, "plain", "\"error\":{\"message\":\"earlier\"}", NULL,
      "\"error\":{\"message\":\"earlier\"}", READ_TIME },
    { AUTO, "plain", "\"stream\":\"stderr\"", NULL, "\"stream\":\"stderr\"," NOTIME, READ_TIME },
    /* 55: keep_original puts the whole line in event.original */
    { { LF_SYSLOG_PARSE_AUTO, NULL, true },
      "Dec  1 00:08:01 web-1 su[9]: \"quoted\"",
      "",
      "\"quoted\"",
      DEB "\"appname\":\"su\",\"procid\":\"9\",\"event\":{\"original\":\"Dec  1 00:08:01 web-1 "
          "su[9]: \\\"quoted\\\"\"}",
      READ_TIME },
    /* 56: a two-digit version */
    { AUTO, "<14>12 - - - - - - m", "", "m",
      "\"priority\":14,\"facility\":{\"code\":1,\"name\":\"user\"},\"severity\":{\"code\":6,"
      "\"name\":\"info\"},\"version\":12",
      READ_TIME },
};

/* The @timestamp text of the encoded event in fx.json. */
static void encoded_ts(char out[25])
{
    const char *head = "{\"@timestamp\":\"";
    ck_assert_uint_ge(fx.json.len, strlen(head) + 24);
    ck_assert_mem_eq(fx.json.ptr, head, strlen(head));
    memcpy(out, fx.json.ptr + strlen(head), 24);
    out[24] = '\0';
}

START_TEST(each_case_gives_its_message_members_and_time)
{
    const struct sl_case *c = &cases[_i];
    struct lf_errbuf eb = { "" };
    ck_assert_msg(start(&c->conf, &eb) == LF_OK, "case %d: %s", _i, eb.msg);
    struct lf_source *src = NULL;
    ck_assert_int_eq(lf_source_new("/var/log/syslog", "sys", "node-1", NULL, false, &src), LF_OK);
    feed(c->line, strlen(c->line), c->prior, src);
    lf_source_free(src);
    ck_assert_msg(strcmp(fx.extra, c->extra) == 0, "case %d: extra\n  got  %s\n  want %s", _i,
                  fx.extra, c->extra);
    const char *msg = c->msg != NULL ? c->msg : c->line;
    ck_assert_msg(strcmp(fx.msg, msg) == 0, "case %d: message\n  got  %s\n  want %s", _i, fx.msg,
                  msg);
    char ts[25];
    encoded_ts(ts);
    ck_assert_msg(strcmp(ts, c->ts) == 0, "case %d: @timestamp %s, want %s", _i, ts, c->ts);
}
END_TEST

START_TEST(a_nul_byte_in_the_message_is_data)
{
    struct sl_conf conf = AUTO;
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(start(&conf, &eb), LF_OK);
    static const char line[] = "<14>1 - h a - - [i k=\"x\0y\"] m\0n";
    struct lf_source *src = NULL;
    ck_assert_int_eq(lf_source_new(NULL, "sys", NULL, NULL, false, &src), LF_OK);
    feed(line, sizeof(line) - 1, "", src);
    lf_source_free(src);
    ck_assert_int_eq(lf_buf_append(&fx.json, "", 1), LF_OK);
    ck_assert_str_eq(fx.extra, "\"priority\":14,\"facility\":{\"code\":1,\"name\":\"user\"},"
                               "\"severity\":{\"code\":6,\"name\":\"info\"},\"version\":1,"
                               "\"hostname\":\"h\",\"appname\":\"a\","
                               "\"structured_data\":{\"i\":{\"k\":\"x\\u0000y\"}}");
    ck_assert_ptr_nonnull(strstr(fx.json.ptr, "\"message\":\"m\\u0000n\""));
}
END_TEST

START_TEST(many_sd_elements_grow_the_seen_names_and_keep_them)
{
    struct sl_conf conf = AUTO;
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(start(&conf, &eb), LF_OK);
    char line[2048] = "<14>1 - h a - - ";
    char want[4096] = "";
    for (int i = 0; i < 30; i++) {
        char el[64];
        snprintf(el, sizeof(el), "[e%d a=\"%d\" b=\"%d\"]", i, i, i);
        strcat(line, el);
        snprintf(el, sizeof(el), "%s\"e%d\":{\"a\":\"%d\",\"b\":\"%d\"}", i > 0 ? "," : "", i, i,
                 i);
        strcat(want, el);
    }
    strcat(line, "[e0 dup=\"1\"] msg");
    feed(line, strlen(line), "", NULL);
    const char *sd = strstr(fx.extra, "\"structured_data\":{");
    ck_assert_ptr_nonnull(sd);
    sd += strlen("\"structured_data\":{");
    ck_assert_uint_eq(strlen(sd), strlen(want) + 1);
    ck_assert_mem_eq(sd, want, strlen(want));
    ck_assert_str_eq(fx.msg, "msg");
}
END_TEST

START_TEST(the_encoded_event_carries_the_members_after_log)
{
    struct sl_conf conf = AUTO;
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(start(&conf, &eb), LF_OK);
    struct lf_source *src = NULL;
    ck_assert_int_eq(lf_source_new("/var/log/auth.log", "sys", "node-1", NULL, false, &src), LF_OK);
    const char *line = "<38>1 2026-12-01T00:08:01.250+01:00 web-1 sshd 42 - - Accepted";
    feed(line, strlen(line), "", src);
    lf_source_free(src);
    ck_assert_int_eq(lf_buf_append(&fx.json, "", 1), LF_OK);
    ck_assert_str_eq(fx.json.ptr,
                     "{\"@timestamp\":\"2026-11-30T23:08:01.250Z\",\"message\":\"Accepted\","
                     "\"log\":{\"file\":{\"path\":\"/var/log/auth.log\"},\"offset\":0},"
                     "\"priority\":38,\"facility\":{\"code\":4,\"name\":\"auth\"},"
                     "\"severity\":{\"code\":6,\"name\":\"info\"},\"version\":1,"
                     "\"hostname\":\"web-1\",\"appname\":\"sshd\",\"procid\":\"42\","
                     "\"input\":{\"id\":\"sys\"},\"host\":{\"name\":\"node-1\"}}\n");
}
END_TEST

START_TEST(a_message_without_bytes_is_not_syslog)
{
    struct sl_conf conf = AUTO;
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(start(&conf, &eb), LF_OK);
    struct lf_event ev = { { NULL, 0 }, 42, 0, 1, 0, NULL, { NULL, 0 }, 0 };
    ck_assert_int_eq(lf_stage_syslog.process(fx.spec, fx.state, &ev, 0, &sink), LF_OK);
    ck_assert_str_eq(fx.extra, NOTIME);
}
END_TEST

static const struct bad_case {
    struct sl_conf conf;
    const char *why;
} bad[] = {
    { { LF_SYSLOG_PARSE_AUTO, "host", false },
      "syslog: target \"host\" is a key every event has already" },
    { { LF_SYSLOG_PARSE_AUTO, "message", false },
      "syslog: target \"message\" is a key every event has already" },
    { { LF_SYSLOG_PARSE_AUTO, "@timestamp", false },
      "syslog: target \"@timestamp\" is a key every event has already" },
};

/* ---- scanning: every byte the scans stop at, or that JSON escapes, at every offset ---- */

/* Appends s (n bytes) JSON-escaped to b. */
static void json_into(struct lf_buf *b, const char *s, size_t n)
{
    ck_assert_int_eq(lf_json_escape(b, lf_str_make(s, n)), LF_OK);
}

/* Appends an SD value's body (n bytes at v) as the stage must: \" \\ \] unescaped, any other
 * backslash kept, JSON-escaped. */
static void sd_value_into(struct lf_buf *b, const char *v, size_t n)
{
    struct lf_buf raw;
    lf_buf_init(&raw, SIZE_MAX);
    for (size_t i = 0; i < n; i++) {
        if (v[i] == '\\' && i + 1 < n && (v[i + 1] == '"' || v[i + 1] == '\\' || v[i + 1] == ']'))
            i++;
        ck_assert_int_eq(lf_buf_append(&raw, v + i, 1), LF_OK);
    }
    json_into(b, raw.ptr, raw.len);
    lf_buf_release(&raw);
}

/* Runs the len bytes of line from a buffer of exactly that size (ASan catches a read past
 * it) and asserts the members. */
static void assert_exact(const char *line, size_t len, const struct lf_buf *want)
{
    char *exact = malloc(len);
    ck_assert_ptr_nonnull(exact);
    memcpy(exact, line, len);
    feed(exact, len, "", NULL);
    free(exact);
    ck_assert_msg(strlen(fx.extra) == want->len && memcmp(fx.extra, want->ptr, want->len) == 0,
                  "line %.*s\n  got  %s\n  want %.*s", (int)len, line, fx.extra, (int)want->len,
                  want->ptr);
}

#define PRI165                                                                                  \
    "\"priority\":165,\"facility\":{\"code\":20,\"name\":\"local4\"},\"severity\":{\"code\":5," \
    "\"name\":\"notice\"},"

START_TEST(header_words_and_sd_values_hold_any_byte_at_any_offset)
{
    /* Words end at a space and SD values at an unescaped quote, found 16 bytes a step (a
     * tail under 16 bytes with the 16 that end the line), which also tells whether the
     * bytes passed need JSON escaping: each such byte after 0 to 70 bytes, in a header
     * word, in an SD value followed by more, and in one that ends the line. */
    static const char *const in_word[] = { "\"",    "\\",   "\x01", "\x1f", "\xe2\x80\xa8",
                                           "\xe2x", "\xe2", "\xff", "\xc3", "\xc3\xa4",
                                           "]",     "[",    "=",    "x" };
    static const char *const in_value[] = {
        "\\\"", "\\\\", "\\]",          "\\q",  "]",    "=",    " ",        "'",
        "\t",   "\x01", "\xe2\x80\xa9", "\xe2", "\xff", "\xc3", "\\\\\\\"", "x"
    };
    struct sl_conf conf = AUTO;
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(start(&conf, &eb), LF_OK);
    struct lf_buf line;
    struct lf_buf want;
    lf_buf_init(&line, SIZE_MAX);
    lf_buf_init(&want, SIZE_MAX);
    char pad[80];
    for (size_t n = 0; n <= 70; n++) {
        memset(pad, 'p', n);
        for (size_t k = 0; k < sizeof(in_word) / sizeof(in_word[0]); k++) {
            /* RFC 5424 and RFC 3164 hostnames */
            for (int rfc3164 = 0; rfc3164 < 2; rfc3164++) {
                lf_buf_reset(&line);
                lf_buf_reset(&want);
                const char *head = rfc3164 ? "Dec  1 00:08:01 h" : "<165>1 - h";
                ck_assert_int_eq(lf_buf_append_cstr(&line, head), LF_OK);
                ck_assert_int_eq(lf_buf_append(&line, pad, n), LF_OK);
                ck_assert_int_eq(lf_buf_append_cstr(&line, in_word[k]), LF_OK);
                ck_assert_int_eq(
                    lf_buf_append_cstr(&want, rfc3164 ? "\"timestamp\":\"Dec  1 00:08:01\","
                                                      : PRI165 "\"version\":1,"),
                    LF_OK);
                ck_assert_int_eq(lf_buf_append_cstr(&want, "\"hostname\":\"h"), LF_OK);
                json_into(&want, pad, n);
                json_into(&want, in_word[k], strlen(in_word[k]));
                ck_assert_int_eq(lf_buf_append_cstr(&line, rfc3164 ? " app[7]: m" : " app - - - m"),
                                 LF_OK);
                ck_assert_int_eq(lf_buf_append_cstr(&want, rfc3164 ? "\",\"appname\":\"app\","
                                                                     "\"procid\":\"7\""
                                                                   : "\",\"appname\":\"app\""),
                                 LF_OK);
                assert_exact(line.ptr, line.len, &want);
            }
        }
        for (size_t k = 0; k < sizeof(in_value) / sizeof(in_value[0]); k++) {
            for (int at_end = 0; at_end < 2; at_end++) {
                lf_buf_reset(&line);
                lf_buf_reset(&want);
                ck_assert_int_eq(lf_buf_append_cstr(&line, "<165>1 - h a - - [i@1 k=\""), LF_OK);
                ck_assert_int_eq(lf_buf_append(&line, pad, n), LF_OK);
                ck_assert_int_eq(lf_buf_append_cstr(&line, in_value[k]), LF_OK);
                ck_assert_int_eq(lf_buf_append_cstr(&line, at_end ? "\"]" : "y\" z=\"1\"] m"),
                                 LF_OK);
                ck_assert_int_eq(lf_buf_append_cstr(&want, PRI165 "\"version\":1,\"hostname\":"
                                                                  "\"h\",\"appname\":\"a\","
                                                                  "\"structured_data\":{\"i@1\":{"
                                                                  "\"k\":\""),
                                 LF_OK);
                sd_value_into(&want, pad, n);
                sd_value_into(&want, in_value[k], strlen(in_value[k]));
                ck_assert_int_eq(lf_buf_append_cstr(&want, at_end ? "\"}}" : "y\",\"z\":\"1\"}}"),
                                 LF_OK);
                assert_exact(line.ptr, line.len, &want);
            }
        }
        /* an SD value that the line ends in, its quote never closed */
        lf_buf_reset(&line);
        lf_buf_reset(&want);
        ck_assert_int_eq(lf_buf_append_cstr(&line, "<165>1 - h a - - [i@1 k=\""), LF_OK);
        ck_assert_int_eq(lf_buf_append(&line, pad, n), LF_OK);
        ck_assert_int_eq(lf_buf_append_cstr(&want, BADSD), LF_OK);
        assert_exact(line.ptr, line.len, &want);
        ck_assert_int_eq(lf_buf_append_cstr(&line, "\\\""), LF_OK);
        assert_exact(line.ptr, line.len, &want);
    }
    lf_buf_release(&line);
    lf_buf_release(&want);
}
END_TEST

START_TEST(a_bad_setting_is_a_config_error_that_says_why)
{
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(start(&bad[_i].conf, &eb), LF_ECONFIG);
    ck_assert_str_eq(eb.msg, bad[_i].why);
    ck_assert_ptr_null(fx.spec);
}
END_TEST

/* Run alone by check_syslog_parse_alloc (see stage_fixture_main()). */
START_TEST(steady_state_allocates_nothing_per_event)
{
    struct sl_conf conf = { LF_SYSLOG_PARSE_AUTO, NULL, true };
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(start(&conf, &eb), LF_OK);
    const char *lines[] = { cases[0].line,  cases[9].line,  cases[37].line,
                            cases[40].line, cases[15].line, "not syslog" };
    const char *extras[] = { "\"stream\":\"stdout\"", "\"stream\":\"stdout\"",
                             "\"stream\":\"stdout\"", "\"stream\":\"stdout\"",
                             "\"stream\":\"stdout\"", "\"stream\":\"stdout\"" };
    fx_assert_no_allocs(lines, extras, sizeof(lines) / sizeof(lines[0]));
}
END_TEST

static Suite *syslog_suite(void)
{
    Suite *s = suite_create("syslog_parse");
    TCase *tc = tcase_create("lines");
    tcase_add_checked_fixture(tc, NULL, teardown);
    tcase_add_loop_test(tc, each_case_gives_its_message_members_and_time, 0,
                        (int)(sizeof(cases) / sizeof(cases[0])));
    tcase_add_test(tc, a_nul_byte_in_the_message_is_data);
    tcase_add_test(tc, many_sd_elements_grow_the_seen_names_and_keep_them);
    tcase_add_test(tc, the_encoded_event_carries_the_members_after_log);
    tcase_add_test(tc, a_message_without_bytes_is_not_syslog);
    tcase_add_test(tc, header_words_and_sd_values_hold_any_byte_at_any_offset);
    suite_add_tcase(s, tc);
    TCase *conf = tcase_create("config errors");
    tcase_add_checked_fixture(conf, NULL, teardown);
    tcase_add_loop_test(conf, a_bad_setting_is_a_config_error_that_says_why, 0,
                        (int)(sizeof(bad) / sizeof(bad[0])));
    suite_add_tcase(s, conf);
    TCase *alloc = tcase_create("alloc");
    tcase_set_tags(alloc, "alloc");
    tcase_add_checked_fixture(alloc, NULL, teardown);
    tcase_add_test(alloc, steady_state_allocates_nothing_per_event);
    suite_add_tcase(s, alloc);
    return s;
}

int main(void)
{
    return stage_fixture_main(syslog_suite());
}
