/* tables.c - every accepted config key, as rows of (name, kind, offsetof, default, help).
 *
 * docs/configuration.md describes the same keys for people; keep the two in step. */
#include "config.h"

#include <iconv.h>
#include <stdlib.h>
#include <string.h>

#include "config_int.h"
#include "logferry/timefmt.h"
#include "logferry/tz.h"

#define ROW(name_, kind_, type_, field_, def_, help_)                                            \
    {                                                                                            \
        .name = name_, .kind = kind_, .off = offsetof(type_, field_), .def = def_, .help = help_ \
    }
#define ROWX(name_, kind_, type_, field_, def_, arg_, min_, max_, flags_, help_)                \
    {                                                                                           \
        .name = name_, .kind = kind_, .off = offsetof(type_, field_), .def = def_, .arg = arg_, \
        .min = min_, .max = max_, .flags = flags_, .help = help_                                \
    }
#define LIST(name_, kind_, type_, field_, nfield_, flags_, help_)         \
    {                                                                     \
        .name = name_, .kind = kind_, .off = offsetof(type_, field_),     \
        .off_n = offsetof(type_, nfield_), .flags = flags_, .help = help_ \
    }
/* A list whose entries each pass check_ (an lf_conf_check_fn). */
#define LISTX(name_, kind_, type_, field_, nfield_, check_, flags_, help_)                   \
    {                                                                                         \
        .name = name_, .kind = kind_, .off = offsetof(type_, field_),                         \
        .off_n = offsetof(type_, nfield_), .arg = check_, .flags = flags_, .help = help_      \
    }
#define SECTION(name_, sub_, help_)                                        \
    {                                                                      \
        .name = name_, .kind = LF_CONF_SECTION, .arg = sub_, .help = help_ \
    }
#define EXTERNAL(name_, flags_, help_)                                          \
    {                                                                           \
        .name = name_, .kind = LF_CONF_EXTERNAL, .flags = flags_, .help = help_ \
    }
#define END          \
    {                \
        .name = NULL \
    }

static const char *check_encoding(const char *s)
{
    iconv_t cd = iconv_open("UTF-8", s);
    if (cd == (iconv_t)-1)
        return "expected an encoding iconv knows, such as utf-8, utf-16le or iso-8859-1";
    iconv_close(cd);
    return NULL;
}

static const char *check_absolute(const char *s)
{
    return s[0] == '/' ? NULL : "expected an absolute path (starting with /)";
}

/* A journal field name: upper-case letters, digits and '_', not starting with a digit, at
 * most 64 bytes (what journald accepts). "*" too when star is true. */
static const char *journal_field_why(const char *s, size_t n, bool star)
{
    if (star && n == 1 && s[0] == '*')
        return NULL;
    if (n == 0 || n > 64 || (s[0] >= '0' && s[0] <= '9') ||
        strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") < n)
        return star ? "expected a journal field name (upper-case letters, digits and _, such as "
                      "_SYSTEMD_CGROUP) or \"*\""
                    : "expected a journal field name (upper-case letters, digits and _, such as "
                      "_SYSTEMD_UNIT)";
    return NULL;
}

static const char *check_journal_field(const char *s)
{
    return journal_field_why(s, strlen(s), true);
}

/* FIELD=VALUE, as journalctl takes a match. */
static const char *check_journal_match(const char *s)
{
    const char *eq = strchr(s, '=');
    if (eq == NULL)
        return "expected FIELD=VALUE, such as _TRANSPORT=kernel";
    return journal_field_why(s, (size_t)(eq - s), false);
}

/* RFC 5424 header fields are printable US-ASCII without spaces, at most max bytes. */
static const char *check_syslog_token(const char *s, size_t max, const char *why)
{
    size_t n = strlen(s);
    if (n == 0 || n > max)
        return why;
    for (size_t i = 0; i < n; i++) {
        if ((unsigned char)s[i] < 33 || (unsigned char)s[i] > 126)
            return why;
    }
    return NULL;
}

static const char *check_app_name(const char *s)
{
    return check_syslog_token(s, 48, "expected 1-48 printable ASCII characters, no spaces");
}

static const char *check_syslog_hostname(const char *s)
{
    return check_syslog_token(s, 255, "expected 1-255 printable ASCII characters, no spaces");
}

static const char *const host_port_why =
    "expected HOST:PORT, such as 127.0.0.1:5066 or [::1]:5066";

/* Parses HOST:PORT with a non-empty host (an IPv6 address in brackets) and a port 0-65535
 * into *port; false if s is not of that form. */
static bool parse_host_port(const char *s, unsigned long *port)
{
    const char *colon = strrchr(s, ':');
    if (colon == NULL || colon == s)
        return false;
    if (s[0] == '[' && colon[-1] != ']')
        return false;
    if (s[0] != '[' && memchr(s, ':', (size_t)(colon - s)) != NULL)
        return false; /* a bare IPv6 address: the port is ambiguous */
    const char *p = colon + 1;
    *port = 0;
    if (*p == '\0')
        return false;
    for (; *p != '\0'; p++) {
        if (*p < '0' || *p > '9')
            return false;
        *port = *port * 10 + (unsigned long)(*p - '0');
        if (*port > 65535)
            return false;
    }
    return true;
}

/* A peer's HOST:PORT: port 1-65535. */
static const char *check_host_port(const char *s)
{
    unsigned long port;
    return parse_host_port(s, &port) && port != 0 ? NULL : host_port_why;
}

/* Where to listen: HOST:PORT, where port 0 asks for any free port; "" disables. */
static const char *check_listen(const char *s)
{
    unsigned long port;
    if (s[0] == '\0')
        return NULL;
    return parse_host_port(s, &port) ? NULL : host_port_why;
}

/* An HTTP method: an RFC 9110 token in upper case, such as POST or PUT. */
static const char *check_method(const char *s)
{
    if (s[0] == '\0' || strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != strlen(s))
        return "expected an HTTP method in upper case, such as POST or PUT";
    return NULL;
}

/* Rows stay one per line or two: a table is read across, not down. */
/* clang-format off */

/* ---- enums ---- */

static const struct lf_conf_enum input_types[] = {
    { "file", LF_INPUT_FILE },
    { "stdin", LF_INPUT_STDIN },
    { "journald", LF_INPUT_JOURNALD },
    { NULL, 0 },
};
/* Syslog severities as journalctl -p names them, and their numbers. */
static const struct lf_conf_enum priorities[] = {
    { "emerg", 0 }, { "alert", 1 }, { "crit", 2 }, { "err", 3 }, { "error", 3 },
    { "warning", 4 }, { "warn", 4 }, { "notice", 5 }, { "info", 6 }, { "debug", 7 },
    { "0", 0 }, { "1", 1 }, { "2", 2 }, { "3", 3 }, { "4", 4 }, { "5", 5 }, { "6", 6 },
    { "7", 7 },
    { NULL, 0 },
};
static const struct lf_conf_enum start_ats[] = {
    { "beginning", LF_START_BEGINNING },
    { "end", LF_START_END },
    { NULL, 0 },
};
static const struct lf_conf_enum overflows[] = {
    { "truncate", LF_OVERFLOW_TRUNCATE },
    { "skip", LF_OVERFLOW_SKIP },
    { NULL, 0 },
};
const struct lf_conf_enum lf_conf__output_types[] = {
    { "file", LF_OUTPUT_FILE },
    { "console", LF_OUTPUT_CONSOLE },
    { "http", LF_OUTPUT_HTTP },
    { "elasticsearch", LF_OUTPUT_ELASTICSEARCH },
    { "loki", LF_OUTPUT_LOKI },
    { "kafka", LF_OUTPUT_KAFKA },
    { "syslog", LF_OUTPUT_SYSLOG },
    { "splunk_hec", LF_OUTPUT_SPLUNK_HEC },
    { "otlp", LF_OUTPUT_OTLP },
    { "s3", LF_OUTPUT_S3 },
    { NULL, 0 },
};
static const struct lf_conf_enum file_compressions[] = {
    { "zstd", LF_COMPRESS_ZSTD },
    { "none", LF_COMPRESS_NONE },
    { NULL, 0 },
};
static const struct lf_conf_enum net_compressions[] = {
    { "zstd", LF_COMPRESS_ZSTD },
    { "gzip", LF_COMPRESS_GZIP },
    { "none", LF_COMPRESS_NONE },
    { NULL, 0 },
};
static const struct lf_conf_enum es_compressions[] = {
    { "gzip", LF_COMPRESS_GZIP },
    { "none", LF_COMPRESS_NONE },
    { NULL, 0 },
};
static const struct lf_conf_enum otlp_compressions[] = {
    { "gzip", LF_COMPRESS_GZIP },
    { "zstd", LF_COMPRESS_ZSTD },
    { "none", LF_COMPRESS_NONE },
    { NULL, 0 },
};
static const struct lf_conf_enum s3_path_styles[] = {
    { "auto", -1 },
    { "true", 1 },
    { "false", 0 },
    { NULL, 0 },
};
static const struct lf_conf_enum otlp_encodings[] = {
    { "protobuf", 0 },
    { "json", 1 },
    { NULL, 0 },
};
static const struct lf_conf_enum document_ids[] = {
    { "auto", 1 },
    { "none", 0 },
    { NULL, 0 },
};
static const struct lf_conf_enum kafka_acks[] = {
    { "all", 0 },
    { "1", 1 },
    { NULL, 0 },
};
static const struct lf_conf_enum console_formats[] = {
    { "json", LF_CONSOLE_JSON },
    { "text", LF_CONSOLE_TEXT },
    { NULL, 0 },
};
static const struct lf_conf_enum protocols[] = {
    { "tcp", LF_SYSLOG_TCP },
    { "udp", LF_SYSLOG_UDP },
    { "tls", LF_SYSLOG_TLS },
    { NULL, 0 },
};
static const struct lf_conf_enum syslog_formats[] = {
    { "message", LF_SYSLOG_MESSAGE },
    { "json", LF_SYSLOG_JSON },
    { NULL, 0 },
};
/* Facilities 12-15 (ntp, security, console, clock) have no agreed names: numbers only. */
static const struct lf_conf_enum syslog_facilities[] = {
    { "kern", 0 }, { "user", 1 }, { "mail", 2 }, { "daemon", 3 }, { "auth", 4 },
    { "syslog", 5 }, { "lpr", 6 }, { "news", 7 }, { "uucp", 8 }, { "cron", 9 },
    { "authpriv", 10 }, { "ftp", 11 }, { "local0", 16 }, { "local1", 17 }, { "local2", 18 },
    { "local3", 19 }, { "local4", 20 }, { "local5", 21 }, { "local6", 22 }, { "local7", 23 },
    { "0", 0 }, { "1", 1 }, { "2", 2 }, { "3", 3 }, { "4", 4 }, { "5", 5 }, { "6", 6 },
    { "7", 7 }, { "8", 8 }, { "9", 9 }, { "10", 10 }, { "11", 11 }, { "12", 12 },
    { "13", 13 }, { "14", 14 }, { "15", 15 }, { "16", 16 }, { "17", 17 }, { "18", 18 },
    { "19", 19 }, { "20", 20 }, { "21", 21 }, { "22", 22 }, { "23", 23 },
    { NULL, 0 },
};
static const struct lf_conf_enum syslog_severities[] = {
    { "emerg", 0 }, { "alert", 1 }, { "crit", 2 }, { "err", 3 }, { "error", 3 },
    { "warning", 4 }, { "warn", 4 }, { "notice", 5 }, { "info", 6 }, { "debug", 7 },
    { "0", 0 }, { "1", 1 }, { "2", 2 }, { "3", 3 }, { "4", 4 }, { "5", 5 }, { "6", 6 },
    { "7", 7 },
    { NULL, 0 },
};
static const struct lf_conf_enum log_levels[] = {
    { "error", 0 },
    { "warn", 1 },
    { "info", 2 },
    { "debug", 3 },
    { NULL, 0 },
};
static const struct lf_conf_enum log_formats[] = {
    { "text", 0 },
    { "json", 1 },
    { NULL, 0 },
};
static const struct lf_conf_enum container_formats[] = {
    { "auto", LF_CONTAINER_AUTO },
    { "cri", LF_CONTAINER_CRI },
    { "docker", LF_CONTAINER_DOCKER },
    { NULL, 0 },
};
static const struct lf_conf_enum container_streams[] = {
    { "all", LF_STREAM_ALL },
    { "stdout", LF_STREAM_STDOUT },
    { "stderr", LF_STREAM_STDERR },
    { NULL, 0 },
};
static const struct lf_conf_enum multiline_types[] = {
    { "pattern", LF_MULTILINE_PATTERN },
    { "count", LF_MULTILINE_COUNT },
    { "while_pattern", LF_MULTILINE_WHILE_PATTERN },
    { NULL, 0 },
};
static const struct lf_conf_enum multiline_matches[] = {
    { "after", LF_MATCH_AFTER },
    { "before", LF_MATCH_BEFORE },
    { NULL, 0 },
};
static const struct lf_conf_enum multiline_presets[] = {
    { "java", 0 },
    { "python", 1 },
    { "go", 2 },
    { "ruby", 3 },
    { NULL, 0 },
};

/* ---- top level ---- */

#define C struct lf_config
static const struct lf_conf_key batch_keys[] = {
    ROWX("max_events", LF_CONF_COUNT, C, queue.batch_max_events, "4096", NULL, 1, 0, 0,
         "events per batch at most"),
    ROWX("max_bytes", LF_CONF_SIZE, C, queue.batch_max_bytes, "1MiB", NULL, 1, 0, 0,
         "encoded bytes per batch at most"),
    ROWX("flush_interval", LF_CONF_DURATION, C, queue.batch_flush_interval_ms, "1s", NULL, 1, 0,
         0, "a partial batch is sent after this long"),
    END,
};
static const struct lf_conf_key spool_keys[] = {
    ROW("enabled", LF_CONF_BOOL, C, queue.spool_enabled, "false", "spool batches to data_dir"),
    ROWX("max_bytes", LF_CONF_SIZE, C, queue.spool_max_bytes, "1GiB", NULL, 1, 0, 0,
         "disk the spool may use"),
    END,
};
static const struct lf_conf_key queue_keys[] = {
    ROWX("max_bytes", LF_CONF_SIZE, C, queue.max_bytes, "8MiB", NULL, 1, 0, 0,
         "memory held by unacknowledged events"),
    SECTION("batch", batch_keys, "how batches are cut"),
    SECTION("spool", spool_keys, "the optional disk spool"),
    END,
};
static const struct lf_conf_key registry_keys[] = {
    ROW("flush_interval", LF_CONF_DURATION, C, registry.flush_interval_ms, "1s",
        "how often acknowledged offsets reach disk"),
    ROW("clean_removed", LF_CONF_BOOL, C, registry.clean_removed, "true",
        "forget files that no longer exist"),
    END,
};
static const struct lf_conf_key metrics_keys[] = {
    ROWX("listen", LF_CONF_STRING, C, metrics.listen, "127.0.0.1:5066", check_listen, 0, 0, 0,
         "HOST:PORT of /metrics, /healthz, /readyz and /status; \"\" disables"),
    ROWX("stuck_after", LF_CONF_DURATION, C, metrics.stuck_after_ms, "60s", NULL, 1000, 0, 0,
         "/healthz fails when a thread of the agent is blocked this long"),
    END,
};
static const struct lf_conf_key logging_keys[] = {
    ROWX("level", LF_CONF_ENUM_STR, C, logging.level, "info", log_levels, 0, 0, 0,
         "error, warn, info or debug"),
    ROWX("format", LF_CONF_ENUM_STR, C, logging.format, "text", log_formats, 0, 0, 0,
         "text or json"),
    END,
};
static const struct lf_conf_key kube_annotation_keys[] = {
    LIST("include", LF_CONF_STRLIST, C, kubernetes.ann_include, kubernetes.n_ann_include,
         LF_CONF_NONEMPTY, "globs of annotation keys to add (none: no annotations)"),
    LIST("exclude", LF_CONF_STRLIST, C, kubernetes.ann_exclude, kubernetes.n_ann_exclude,
         LF_CONF_NONEMPTY, "globs of annotation keys left out of what include added"),
    END,
};
static const struct lf_conf_key kube_keys[] = {
    ROW("enabled", LF_CONF_BOOL, C, kubernetes.enabled, "false",
        "add pod metadata from the API server to container log events"),
    ROW("api_server", LF_CONF_STRING, C, kubernetes.api_server, "",
        "https://HOST:PORT; \"\": in-cluster (KUBERNETES_SERVICE_HOST/PORT)"),
    ROW("token_file", LF_CONF_STRING, C, kubernetes.token_file,
        "/var/run/secrets/kubernetes.io/serviceaccount/token",
        "bearer token, re-read when it changes; \"\" sends none"),
    ROW("ca_file", LF_CONF_STRING, C, kubernetes.ca_file,
        "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt",
        "CA the API server's certificate is verified against"),
    ROW("node_name", LF_CONF_STRING, C, kubernetes.node_name, "",
        "the node whose pods are watched; \"\": $NODE_NAME, else the host name"),
    ROW("wait", LF_CONF_DURATION, C, kubernetes.wait_ms, "2s",
        "a new file of a pod not known yet waits this long for it"),
    ROW("delete_grace", LF_CONF_DURATION, C, kubernetes.delete_grace_ms, "60s",
        "a deleted pod's metadata is kept this long"),
    ROWX("timeout", LF_CONF_DURATION, C, kubernetes.timeout_ms, "30s", NULL, 1000, 0, 0,
         "a LIST, or a WATCH not answering, is given up after this long and tried again"),
    ROW("labels", LF_CONF_BOOL, C, kubernetes.labels, "true", "add kubernetes.labels.*"),
    ROW("dedot", LF_CONF_BOOL, C, kubernetes.dedot, "true",
        "'.' in label and annotation keys becomes '_'"),
    ROW("namespace_labels", LF_CONF_BOOL, C, kubernetes.namespace_labels, "false",
        "add kubernetes.namespace_labels.* (watches namespaces too)"),
    SECTION("annotations", kube_annotation_keys, "which pod annotations to add"),
    END,
};
static const struct lf_conf_key root_keys[] = {
    ROWX("data_dir", LF_CONF_STRING, C, data_dir, "/var/lib/logferry", NULL, 0, 0,
         LF_CONF_NONEMPTY, "registry and spool directory"),
    ROW("shutdown_timeout", LF_CONF_DURATION, C, shutdown_timeout_ms, "10s",
        "how long a stop may spend flushing"),
    ROW("config_watch", LF_CONF_BOOL, C, config_watch, "false",
        "reload when the config file changes, as on SIGHUP"),
    EXTERNAL("inputs", LF_CONF_REQUIRED, "what to read"),
    EXTERNAL("outputs", LF_CONF_REQUIRED, "where events go"),
    SECTION("queue", queue_keys, "memory, batching and spool"),
    SECTION("registry", registry_keys, "offset persistence"),
    SECTION("metrics", metrics_keys, "the HTTP metrics endpoint"),
    SECTION("logging", logging_keys, "the agent's own log"),
    SECTION("kubernetes", kube_keys, "pod metadata from the Kubernetes API server"),
    END,
};
#undef C
const struct lf_conf_key *const lf_conf__root_tables[] = { root_keys, NULL };

/* ---- inputs ---- */

#define I struct lf_input_conf
static const struct lf_conf_key input_keys[] = {
    ROWX("id", LF_CONF_STRING, I, id, NULL, NULL, 0, 0, LF_CONF_REQUIRED | LF_CONF_NONEMPTY,
         "unique name; registry state is keyed by it"),
    ROWX("type", LF_CONF_ENUM, I, type, "file", input_types, 0, 0, 0,
         "file, stdin or journald"),
    LIST("paths", LF_CONF_STRLIST, I, paths, n_paths, LF_CONF_NONEMPTY, "globs; ** recurses"),
    LIST("exclude_files", LF_CONF_REGEXLIST, I, exclude_files, n_exclude_files, 0,
         "regexes on the full path"),
    LISTX("allowed_roots", LF_CONF_STRLIST, I, allowed_roots, n_allowed_roots, check_absolute,
          LF_CONF_NONEMPTY, "directories the real path of every file read must lie in"),
    ROWX("start_at", LF_CONF_ENUM, I, start_at, "beginning", start_ats, 0, 0, 0,
         "where files not in the registry start"),
    ROWX("encoding", LF_CONF_STRING, I, encoding, "utf-8", check_encoding, 0, 0, 0,
         "any iconv name"),
    ROWX("max_line_bytes", LF_CONF_SIZE, I, max_line_bytes, "1MiB", NULL, 4, 0, 0,
         "longer lines are cut or dropped"),
    ROWX("line_overflow", LF_CONF_ENUM, I, line_overflow, "truncate", overflows, 0, 0, 0,
         "truncate or skip"),
    ROWX("buffer_size", LF_CONF_SIZE, I, buffer_size, "64KiB", NULL, 16, 0, 0, "read size"),
    ROWX("scan_interval", LF_CONF_DURATION, I, scan_interval_ms, "10s", NULL, 1, 0, 0,
         "glob rescan period"),
    ROW("close_inactive", LF_CONF_DURATION, I, close_inactive_ms, "5m",
        "close a file idle this long"),
    ROW("close_removed_after", LF_CONF_DURATION, I, close_removed_after_ms, "0",
        "give up the unread rest of a deleted file after this long; 0 = never"),
    ROW("ignore_older", LF_CONF_DURATION, I, ignore_older_ms, "0",
        "skip files not modified within it; 0 = off"),
    ROWX("max_open_files", LF_CONF_COUNT, I, max_open_files, "1024", NULL, 1, 0, 0,
         "harvester limit"),
    ROW("skip_empty_lines", LF_CONF_BOOL, I, skip_empty_lines, "false", "drop empty lines"),
    ROW("fields", LF_CONF_JSON, I, fields_json, NULL, "added to every event"),
    ROW("fields_under_root", LF_CONF_BOOL, I, fields_under_root, "false",
        "fields at the event root instead of under \"fields\""),
    EXTERNAL("outputs", 0, "output names; default all"),
    EXTERNAL("routes", 0, "send events to outputs by content"),
    EXTERNAL("parsers", 0, "the ordered stage chain"),
    LISTX("skip_if_exists", LF_CONF_STRLIST, I, skip_if_exists, n_skip_if_exists,
          check_absolute, 0, "the input reads nothing while one of these paths exists"),
    ROWX("directory", LF_CONF_STRING, I, journal_directory, NULL, check_absolute, 0, 0,
         LF_CONF_NONEMPTY, "journald: a journal directory (default: the local journal)"),
    LISTX("files", LF_CONF_STRLIST, I, journal_files, n_journal_files, check_absolute,
          LF_CONF_NONEMPTY, "journald: journal files (globs)"),
    LIST("units", LF_CONF_STRLIST, I, journal_units, n_journal_units, LF_CONF_NONEMPTY,
         "journald: only these units' entries"),
    LISTX("matches", LF_CONF_STRLIST, I, journal_matches, n_journal_matches,
          check_journal_match, 0, "journald: FIELD=VALUE, same field ORed, others ANDed"),
    ROWX("priority", LF_CONF_ENUM, I, journal_priority, "debug", priorities, 0, 0, 0,
         "journald: this priority and more important"),
    LISTX("include_fields", LF_CONF_STRLIST, I, include_fields, n_include_fields,
          check_journal_field, 0, "journald: fields added under journald.custom"),
    LISTX("exclude_fields", LF_CONF_STRLIST, I, exclude_fields, n_exclude_fields,
          check_journal_field, 0, "journald: fields left out of the event"),
    END,
};
#undef I
const struct lf_conf_key *const lf_conf__input_tables[] = { input_keys, NULL };

/* ---- parsers: one row per parser name; the value fills the union member ---- */

#define P struct lf_parser_conf
static const struct lf_conf_key container_keys[] = {
    ROWX("format", LF_CONF_ENUM, P, u.container.format, "auto", container_formats, 0, 0, 0,
         "auto, cri or docker"),
    ROWX("stream", LF_CONF_ENUM, P, u.container.stream, "all", container_streams, 0, 0, 0,
         "all, stdout or stderr"),
    END,
};
static const struct lf_conf_key multiline_keys[] = {
    ROWX("type", LF_CONF_ENUM, P, u.multiline.type, "pattern", multiline_types, 0, 0, 0,
         "pattern, count or while_pattern"),
    ROWX("preset", LF_CONF_ENUM_STR, P, u.multiline.preset, NULL, multiline_presets, 0, 0, 0,
         "java, python, go or ruby"),
    ROW("pattern", LF_CONF_REGEX, P, u.multiline.pattern, NULL, "the line pattern"),
    ROW("flush_pattern", LF_CONF_REGEX, P, u.multiline.flush_pattern, NULL,
        "a line matching it ends the event"),
    ROW("negate", LF_CONF_BOOL, P, u.multiline.negate, "false", "invert pattern"),
    ROWX("match", LF_CONF_ENUM, P, u.multiline.match, "after", multiline_matches, 0, 0, 0,
         "after or before"),
    ROWX("count_lines", LF_CONF_COUNT, P, u.multiline.count_lines, NULL, NULL, 1, 0, 0,
         "lines per event (type count)"),
    ROWX("max_lines", LF_CONF_COUNT, P, u.multiline.max_lines, "500", NULL, 1, 0, 0,
         "lines per event at most"),
    ROWX("max_bytes", LF_CONF_SIZE, P, u.multiline.max_bytes, "10MiB", NULL, 1, 0, 0,
         "bytes per event at most"),
    ROW("timeout", LF_CONF_DURATION, P, u.multiline.timeout_ms, "5s",
        "flush a pending event after this idle time"),
    END,
};
static const struct lf_conf_key ndjson_keys[] = {
    ROW("target", LF_CONF_STRING, P, u.ndjson.target, "", "where to merge; \"\" = root"),
    ROW("overwrite_keys", LF_CONF_BOOL, P, u.ndjson.overwrite_keys, "false",
        "decoded keys replace existing ones"),
    ROW("add_error_key", LF_CONF_BOOL, P, u.ndjson.add_error_key, "true",
        "add error.message on a decode error"),
    ROWX("message_key", LF_CONF_STRING, P, u.ndjson.message_key, "message", NULL, 0, 0,
         LF_CONF_NONEMPTY, "the key holding the message"),
    END,
};
static const struct lf_conf_enum trims[] = {
    { "none", LF_TRIM_NONE },
    { "left", LF_TRIM_LEFT },
    { "right", LF_TRIM_RIGHT },
    { "both", LF_TRIM_BOTH },
    { NULL, 0 },
};
static const struct lf_conf_key dissect_keys[] = {
    ROWX("tokenizer", LF_CONF_STRING, P, u.dissect.tokenizer, NULL, NULL, 0, 0,
         LF_CONF_REQUIRED | LF_CONF_NONEMPTY, "literals and %{key} fields"),
    ROW("target", LF_CONF_STRING, P, u.dissect.target, "", "where to put the keys; \"\" = root"),
    ROWX("trim_values", LF_CONF_ENUM, P, u.dissect.trim_values, "none", trims, 0, 0, 0,
         "trim spaces and tabs: none, left, right or both"),
    END,
};
static const struct lf_conf_enum syslog_parse_formats[] = {
    { "auto", LF_SYSLOG_PARSE_AUTO },
    { "rfc3164", LF_SYSLOG_PARSE_RFC3164 },
    { "rfc5424", LF_SYSLOG_PARSE_RFC5424 },
    { NULL, 0 },
};
static const struct lf_conf_key syslog_parse_keys[] = {
    ROWX("format", LF_CONF_ENUM, P, u.syslog.format, "auto", syslog_parse_formats, 0, 0, 0,
         "auto, rfc3164 or rfc5424"),
    ROW("target", LF_CONF_STRING, P, u.syslog.target, "", "where to put the members; \"\" = root"),
    ROW("keep_original", LF_CONF_BOOL, P, u.syslog.keep_original, "false",
        "keep the whole line in event.original"),
    END,
};
static const struct lf_conf_key kv_keys[] = {
    ROWX("field_split", LF_CONF_STRING, P, u.kv.field_split, " ", NULL, 0, 0, LF_CONF_NONEMPTY,
         "bytes that separate pairs"),
    ROWX("value_split", LF_CONF_STRING, P, u.kv.value_split, "=", NULL, 0, 0, LF_CONF_NONEMPTY,
         "text between a key and its value"),
    LIST("include_keys", LF_CONF_STRLIST, P, u.kv.include_keys, u.kv.n_include_keys, 0,
         "keep only these keys"),
    LIST("exclude_keys", LF_CONF_STRLIST, P, u.kv.exclude_keys, u.kv.n_exclude_keys, 0,
         "drop these keys"),
    ROW("prefix", LF_CONF_STRING, P, u.kv.prefix, "", "put before each key"),
    ROW("target", LF_CONF_STRING, P, u.kv.target, "", "where to put the keys; \"\" = root"),
    END,
};
static const struct lf_conf_key timestamp_keys[] = {
    ROWX("field", LF_CONF_STRING, P, u.timestamp.field, "timestamp", NULL, 0, 0, LF_CONF_NONEMPTY,
         "the member holding the time; a.b for nested ones"),
    LISTX("formats", LF_CONF_STRLIST, P, u.timestamp.formats, u.timestamp.n_formats,
          lf_timefmt_check, LF_CONF_NONEMPTY, "named formats or layouts, first match wins"),
    ROWX("timezone", LF_CONF_STRING, P, u.timestamp.timezone, "UTC", lf_tz_check, 0, 0,
         LF_CONF_NONEMPTY, "tzdata zone for times without an offset"),
    ROW("remove_field", LF_CONF_BOOL, P, u.timestamp.remove_field, "false",
        "drop the member once its time is read"),
    ROW("ignore_missing", LF_CONF_BOOL, P, u.timestamp.ignore_missing, "false",
        "an event without the member gets no error"),
    END,
};
static const struct lf_conf_enum on_failures[] = {
    { "keep", LF_ON_FAILURE_KEEP },
    { "drop", LF_ON_FAILURE_DROP },
    { "keep_silent", LF_ON_FAILURE_KEEP_SILENT },
    { NULL, 0 },
};
static const struct lf_conf_key regex_keys[] = {
    ROWX("pattern", LF_CONF_STRING, P, u.regex.pattern, NULL, NULL, 0, 0,
         LF_CONF_REQUIRED | LF_CONF_NONEMPTY, "PCRE2 with named groups; (?<n:int>...) types one"),
    ROWX("field", LF_CONF_STRING, P, u.regex.field, "message", NULL, 0, 0, LF_CONF_NONEMPTY,
         "what to match: message or a string member"),
    ROW("target", LF_CONF_STRING, P, u.regex.target, "", "where to put the groups; \"\" = root"),
    ROWX("on_failure", LF_CONF_ENUM, P, u.regex.on_failure, "keep", on_failures, 0, 0, 0,
         "a line that does not match: keep, drop or keep_silent"),
    ROW("types", LF_CONF_JSON, P, u.regex.types_json, NULL, "group: int, float, bool or string"),
    END,
};
static const struct lf_conf_enum access_formats[] = {
    { "combined", LF_ACCESS_COMBINED },
    { "common", LF_ACCESS_COMMON },
    { NULL, 0 },
};
static const struct lf_conf_key access_log_keys[] = {
    ROWX("format", LF_CONF_ENUM, P, u.access_log.format, "combined", access_formats, 0, 0, 0,
         "combined or common"),
    ROW("target", LF_CONF_STRING, P, u.access_log.target, "",
        "where to put the members; \"\" = root"),
    END,
};
static const struct lf_conf_key fields_keys[] = {
    ROW("add", LF_CONF_JSON, P, u.fields.add_json, NULL, "dotted path: value"),
    LIST("drop", LF_CONF_STRLIST, P, u.fields.drop, u.fields.n_drop, LF_CONF_NONEMPTY,
         "dotted paths to remove"),
    ROW("rename", LF_CONF_JSON, P, u.fields.rename_json, NULL, "dotted path: new dotted path"),
    END,
};
static const char *check_rate(const char *s)
{
    uint64_t n;
    uint64_t per_ms;
    return lf_parse_rate(s, &n, &per_ms) ? NULL
                                         : "expected events per second, minute or hour, such as "
                                           "1000/s, 30/m or 2/h (a whole number from 1 to "
                                           "1000000000)";
}
static const struct lf_conf_enum throttle_actions[] = {
    { "drop", LF_THROTTLE_DROP },
    { "sample", LF_THROTTLE_SAMPLE },
    { NULL, 0 },
};
static const struct lf_conf_key throttle_keys[] = {
    ROWX("rate", LF_CONF_STRING, P, u.throttle.rate, NULL, check_rate, 0, 0,
         LF_CONF_REQUIRED | LF_CONF_NONEMPTY, "N/s, N/m or N/h per key"),
    ROWX("burst", LF_CONF_COUNT, P, u.throttle.burst, NULL, NULL, 1, 1000000000, 0,
         "events a full bucket holds; default the rate per second"),
    ROW("key", LF_CONF_STRING, P, u.throttle.key, "", "%{field} template; one bucket per value"),
    ROWX("action", LF_CONF_ENUM, P, u.throttle.action, "drop", throttle_actions, 0, 0, 0,
         "what happens over the rate: drop"),
    ROWX("max_keys", LF_CONF_COUNT, P, u.throttle.max_keys, "10000", NULL, 1, 10000000, 0,
         "buckets kept; the least recently used is evicted"),
    END,
};
static const struct lf_conf_key sample_keys[] = {
    ROWX("rate", LF_CONF_COUNT, P, u.sample.rate, NULL, NULL, 1, 0, LF_CONF_REQUIRED,
         "keep 1 event in rate"),
    ROW("key", LF_CONF_STRING, P, u.sample.key, NULL,
        "%{field} template: one decision per value"),
    END,
};
static const struct lf_conf_enum redact_hashes[] = {
    { "none", LF_REDACT_HASH_NONE },
    { "sha256", LF_REDACT_HASH_SHA256 },
    { NULL, 0 },
};
static const struct lf_conf_key redact_keys[] = {
    LIST("patterns", LF_CONF_STRLIST, P, u.redact.patterns, u.redact.n_patterns,
         LF_CONF_NONEMPTY, "built-in patterns; default every one"),
    LIST("fields", LF_CONF_STRLIST, P, u.redact.fields, u.redact.n_fields, LF_CONF_NONEMPTY,
         "members scanned (message: the message); default the message"),
    ROWX("regex", LF_CONF_JSON, P, u.redact.regex_json, NULL, NULL, 0, 0, LF_CONF_LIST,
         "your own: [{name: n, pattern: PCRE2}]"),
    ROW("replace", LF_CONF_STRING, P, u.redact.replace, NULL,
        "text put for a match, %{pattern} its name; default [REDACTED]"),
    ROWX("hash", LF_CONF_ENUM, P, u.redact.hash, "none", redact_hashes, 0, 0, 0,
         "none or sha256: a keyed token instead of replace"),
    ROWX("hash_key", LF_CONF_STRING, P, u.redact.hash_key, NULL, NULL, 0, 0, LF_CONF_NONEMPTY,
         "the HMAC key for hash, from ${VAR}"),
    END,
};
/* drop has no keys of its own: `when` (below, every parser's) says what it drops. */
static const struct lf_conf_key drop_keys[] = {
    END,
};
#define R struct lf_route_conf
static const struct lf_conf_key route_keys[] = {
    ROWX("name", LF_CONF_STRING, R, name, NULL, NULL, 0, 0, LF_CONF_NONEMPTY,
         "the route's name in metrics and --preview; default route1, route2..."),
    ROW("when", LF_CONF_STRING, R, when, NULL, "a condition; default: every event"),
    ROW("continue", LF_CONF_BOOL, R, cont, "false",
        "also try the routes after this one when it matches"),
    EXTERNAL("outputs", LF_CONF_REQUIRED, "output names; [] drops the route's events"),
    END,
};
#undef R
const struct lf_conf_key *const lf_conf__route_tables[] = { route_keys, NULL };

const struct lf_conf_key lf_conf__when_keys[] = {
    ROW("when", LF_CONF_STRING, P, when, NULL,
        "a condition: the stage applies only to matching events"),
    END,
};
const struct lf_conf_key lf_conf__parser_keys[] = {
    SECTION("container", container_keys, "decode CRI or Docker JSON logs"),
    SECTION("multiline", multiline_keys, "join lines into events"),
    LIST("include_lines", LF_CONF_REGEXLIST, P, u.lines.patterns, u.lines.n_patterns, 0,
         "keep only matching events"),
    LIST("exclude_lines", LF_CONF_REGEXLIST, P, u.lines.patterns, u.lines.n_patterns, 0,
         "drop matching events"),
    SECTION("ndjson", ndjson_keys, "decode JSON messages"),
    SECTION("dissect", dissect_keys, "split lines at literals, no regex"),
    SECTION("kv", kv_keys, "key=value pairs and logfmt"),
    SECTION("syslog", syslog_parse_keys, "RFC 3164 and RFC 5424 syslog lines"),
    SECTION("timestamp", timestamp_keys, "the event's time from a member"),
    SECTION("regex", regex_keys, "named groups of a PCRE2 pattern"),
    SECTION("access_log", access_log_keys, "nginx and Apache common and combined logs"),
    SECTION("fields", fields_keys, "add, drop and rename members"),
    SECTION("throttle", throttle_keys, "a token bucket per key: drop events over a rate"),
    SECTION("sample", sample_keys, "keep 1 event in N, by key"),
    SECTION("redact", redact_keys, "mask secrets and personal data"),
    SECTION("drop", drop_keys, "drop the events its when matches"),
    END,
};
#undef P

/* ---- outputs: common rows, then one table per type ---- */

#define O struct lf_output_conf
static const struct lf_conf_key output_keys[] = {
    ROWX("name", LF_CONF_STRING, O, name, NULL, NULL, 0, 0, LF_CONF_REQUIRED | LF_CONF_NONEMPTY,
         "unique; inputs route by it"),
    ROWX("type", LF_CONF_ENUM, O, type, NULL, lf_conf__output_types, 0, 0, LF_CONF_REQUIRED,
         "file, console, http, elasticsearch, loki, kafka, syslog, splunk_hec, otlp or s3"),
    END,
};
static const struct lf_conf_key file_keys[] = {
    ROWX("path", LF_CONF_STRING, O, path, NULL, NULL, 0, 0, LF_CONF_REQUIRED | LF_CONF_NONEMPTY,
         "output directory"),
    ROWX("compression", LF_CONF_ENUM, O, compression, "zstd", file_compressions, 0, 0, 0,
         "zstd or none"),
    ROWX("level", LF_CONF_INT, O, compression_level, "1", NULL, 1, 22, 0, "zstd level"),
    ROWX("format", LF_CONF_ENUM, O, format, "json", console_formats, 0, 0, 0,
         "json (NDJSON events) or text (bare messages)"),
    ROWX("rotate_bytes", LF_CONF_SIZE, O, rotate_bytes, "64MiB", NULL, 1024, 0, 0,
         "size at which a new file starts"),
    ROW("rotate_keep", LF_CONF_COUNT, O, rotate_keep, "0",
        "rotated files kept, the newest; 0 = all"),
    ROW("max_age", LF_CONF_DURATION, O, max_age_ms, "0",
        "remove rotated files older than this; 0 = never"),
    END,
};
static const struct lf_conf_key console_keys[] = {
    ROWX("format", LF_CONF_ENUM, O, format, "json", console_formats, 0, 0, 0, "json or text"),
    END,
};
static const struct lf_conf_key backoff_keys[] = {
    ROWX("initial", LF_CONF_DURATION, O, backoff_initial_ms, "1s", NULL, 1, 0, 0,
         "first retry delay"),
    ROWX("max", LF_CONF_DURATION, O, backoff_max_ms, "60s", NULL, 1, 0, 0, "longest delay"),
    END,
};
static const struct lf_conf_key net_keys[] = {
    SECTION("backoff", backoff_keys, "exponential retry delays, with jitter"),
    ROWX("timeout", LF_CONF_DURATION, O, timeout_ms, "30s", NULL, 1, 0, 0,
         "per request or connection attempt"),
    ROWX("max_in_flight", LF_CONF_INT, O, max_in_flight, "4", NULL, 1, 64, 0,
         "batches sent and not yet answered, at most"),
    END,
};
#define URL_ROW                                                                                \
    ROWX("url", LF_CONF_STRING, O, url, NULL, NULL, 0, 0, LF_CONF_REQUIRED | LF_CONF_NONEMPTY, \
         "endpoint")
#define HEADERS_ROW ROW("headers", LF_CONF_JSON, O, headers_json, NULL, "extra HTTP headers")
static const struct lf_conf_key tls_keys[] = {
    ROWX("ca_file", LF_CONF_STRING, O, tls_ca_file, NULL, NULL, 0, 0, LF_CONF_NONEMPTY,
         "PEM bundle of the CAs to trust"),
    ROWX("cert_file", LF_CONF_STRING, O, tls_cert_file, NULL, NULL, 0, 0, LF_CONF_NONEMPTY,
         "client certificate, PEM"),
    ROWX("key_file", LF_CONF_STRING, O, tls_key_file, NULL, NULL, 0, 0, LF_CONF_NONEMPTY,
         "client private key, PEM"),
    ROW("verify", LF_CONF_BOOL, O, tls_verify, "true", "verify the peer's certificate and name"),
    END,
};
static const struct lf_conf_key auth_keys[] = {
    ROWX("user", LF_CONF_STRING, O, auth_user, NULL, NULL, 0, 0, LF_CONF_REQUIRED, "basic auth user"),
    ROWX("password", LF_CONF_STRING, O, auth_password, NULL, NULL, 0, 0, LF_CONF_REQUIRED,
         "basic auth password; never logged"),
    END,
};
#define HTTP_COMMON_ROWS                                                                       \
    SECTION("tls", tls_keys, "TLS settings for https:// URLs"),                                \
    SECTION("auth", auth_keys, "basic authentication"),                                        \
    ROWX("bearer_token", LF_CONF_STRING, O, bearer_token, NULL, NULL, 0, 0, LF_CONF_NONEMPTY,  \
         "sent as Authorization: Bearer; never logged"),                                       \
    ROWX("proxy", LF_CONF_STRING, O, proxy, NULL, NULL, 0, 0, LF_CONF_NONEMPTY, "proxy URL")
#define AWS_CRED_ROWS                                                                          \
    ROWX("access_key_id", LF_CONF_STRING, O, aws_access_key_id, NULL, NULL, 0, 0,              \
         LF_CONF_NONEMPTY, "AWS access key id; default from the environment, a web identity "  \
         "or the instance metadata"),                                                          \
    ROWX("secret_access_key", LF_CONF_STRING, O, aws_secret_access_key, NULL, NULL, 0, 0,      \
         LF_CONF_NONEMPTY, "its secret; never logged"),                                        \
    ROWX("session_token", LF_CONF_STRING, O, aws_session_token, NULL, NULL, 0, 0,              \
         LF_CONF_NONEMPTY, "temporary credentials' token; never logged"),                      \
    ROWX("role_arn", LF_CONF_STRING, O, aws_role_arn, NULL, NULL, 0, 0, LF_CONF_NONEMPTY,      \
         "web identity: the role to assume (default $AWS_ROLE_ARN)"),                          \
    ROWX("web_identity_token_file", LF_CONF_STRING, O, aws_web_identity_token_file, NULL,      \
         NULL, 0, 0, LF_CONF_NONEMPTY,                                                         \
         "web identity: the token file (default $AWS_WEB_IDENTITY_TOKEN_FILE)"),               \
    ROWX("role_session_name", LF_CONF_STRING, O, aws_role_session_name, NULL, NULL, 0, 0,      \
         LF_CONF_NONEMPTY, "web identity: the session's name (default logferry)"),             \
    ROWX("sts_endpoint", LF_CONF_STRING, O, aws_sts_endpoint, NULL, NULL, 0, 0,                \
         LF_CONF_NONEMPTY, "STS URL (default https://sts.REGION.amazonaws.com)"),              \
    ROWX("imds_endpoint", LF_CONF_STRING, O, aws_imds_endpoint, NULL, NULL, 0, 0,              \
         LF_CONF_NONEMPTY, "instance metadata URL (default http://169.254.169.254)"),          \
    ROW("imds", LF_CONF_BOOL, O, aws_imds, "true",                                             \
        "ask the instance metadata service when nothing else gives credentials")
static const struct lf_conf_key aws_sigv4_keys[] = {
    ROWX("region", LF_CONF_STRING, O, aws_region, NULL, NULL, 0, 0,
         LF_CONF_REQUIRED | LF_CONF_NONEMPTY, "AWS region, such as eu-west-1"),
    ROWX("service", LF_CONF_STRING, O, aws_service, NULL, NULL, 0, 0,
         LF_CONF_REQUIRED | LF_CONF_NONEMPTY,
         "signing name: es (OpenSearch Service), aoss (Serverless), execute-api..."),
    AWS_CRED_ROWS,
    END,
};
#define AWS_SIGV4_ROW \
    SECTION("aws_sigv4", aws_sigv4_keys, "sign every request with AWS Signature Version 4")
static const struct lf_conf_key http_keys[] = {
    URL_ROW,
    ROWX("compression", LF_CONF_ENUM, O, compression, "zstd", net_compressions, 0, 0, 0,
         "zstd, gzip or none"),
    HEADERS_ROW,
    ROWX("method", LF_CONF_STRING, O, method, "POST", check_method, 0, 0, 0,
         "HTTP method of each request"),
    ROWX("content_type", LF_CONF_STRING, O, content_type, "application/x-ndjson", NULL, 0, 0,
         LF_CONF_NONEMPTY, "Content-Type of each request"),
    AWS_SIGV4_ROW,
    HTTP_COMMON_ROWS,
    END,
};
static const struct lf_conf_key es_keys[] = {
    URL_ROW,
    ROWX("index", LF_CONF_STRING, O, index, "logferry-%Y.%m.%d", NULL, 0, 0, LF_CONF_NONEMPTY,
         "index name, strftime on each event's @timestamp (UTC)"),
    HEADERS_ROW,
    ROWX("compression", LF_CONF_ENUM, O, compression, "gzip", es_compressions, 0, 0, 0,
         "gzip or none"),
    ROWX("pipeline", LF_CONF_STRING, O, es_pipeline, NULL, NULL, 0, 0, LF_CONF_NONEMPTY,
         "ingest pipeline"),
    ROWX("api_key", LF_CONF_STRING, O, api_key, NULL, NULL, 0, 0, LF_CONF_NONEMPTY,
         "sent as Authorization: ApiKey; never logged"),
    ROWX("document_id", LF_CONF_ENUM, O, document_id_auto, "auto", document_ids, 0, 0, 0,
         "auto (deterministic _id) or none"),
    AWS_SIGV4_ROW,
    HTTP_COMMON_ROWS,
    END,
};
static const struct lf_conf_key loki_keys[] = {
    URL_ROW,
    ROW("labels", LF_CONF_JSON, O, labels_json, NULL, "stream labels"),
    HEADERS_ROW,
    ROWX("compression", LF_CONF_ENUM, O, compression, "gzip", es_compressions, 0, 0, 0,
         "gzip or none"),
    ROWX("tenant_id", LF_CONF_STRING, O, tenant_id, NULL, NULL, 0, 0, LF_CONF_NONEMPTY,
         "sent as X-Scope-OrgID"),
    HTTP_COMMON_ROWS,
    END,
};
static const struct lf_conf_key hec_keys[] = {
    URL_ROW,
    ROWX("token", LF_CONF_STRING, O, hec_token, NULL, NULL, 0, 0,
         LF_CONF_REQUIRED | LF_CONF_NONEMPTY, "HEC token, sent as Authorization: Splunk; never logged"),
    ROWX("index", LF_CONF_STRING, O, index, NULL, NULL, 0, 0, LF_CONF_NONEMPTY,
         "index, a %{field} template; default the token's"),
    ROWX("sourcetype", LF_CONF_STRING, O, hec_sourcetype, NULL, NULL, 0, 0, LF_CONF_NONEMPTY,
         "sourcetype, a %{field} template; default the token's"),
    ROWX("source", LF_CONF_STRING, O, hec_source, NULL, NULL, 0, 0, LF_CONF_NONEMPTY,
         "source, a %{field} template; default the token's"),
    ROWX("host", LF_CONF_STRING, O, hec_host, "%{host.name}", NULL, 0, 0, LF_CONF_NONEMPTY,
         "host, a %{field} template"),
    LIST("fields", LF_CONF_STRLIST, O, hec_fields, n_hec_fields, LF_CONF_NONEMPTY,
         "event fields sent as indexed fields"),
    ROW("ack", LF_CONF_BOOL, O, hec_ack, "false",
        "a batch counts as delivered once Splunk says it is indexed"),
    ROWX("ack_interval", LF_CONF_DURATION, O, hec_ack_interval_ms, "1s", NULL, 10, 0, 0,
         "how often outstanding acknowledgements are asked for"),
    ROWX("ack_timeout", LF_CONF_DURATION, O, hec_ack_timeout_ms, "60s", NULL, 100, 0, 0,
         "a batch not acknowledged by then is sent again"),
    HEADERS_ROW,
    ROWX("compression", LF_CONF_ENUM, O, compression, "gzip", es_compressions, 0, 0, 0,
         "gzip or none"),
    HTTP_COMMON_ROWS,
    END,
};
static const struct lf_conf_key otlp_keys[] = {
    ROWX("url", LF_CONF_STRING, O, url, NULL, NULL, 0, 0, LF_CONF_REQUIRED | LF_CONF_NONEMPTY,
         "the logs endpoint, such as http://collector:4318/v1/logs"),
    ROWX("encoding", LF_CONF_ENUM, O, otlp_json, "protobuf", otlp_encodings, 0, 0, 0,
         "protobuf or json"),
    ROWX("compression", LF_CONF_ENUM, O, compression, "gzip", otlp_compressions, 0, 0, 0,
         "gzip, zstd or none"),
    HEADERS_ROW,
    ROWX("severity_field", LF_CONF_STRING, O, otlp_severity_field, "log.level", NULL, 0, 0,
         LF_CONF_NONEMPTY, "event field holding the severity text"),
    ROW("resource", LF_CONF_JSON, O, otlp_resource_json, NULL,
        "resource attributes, such as service.name"),
    AWS_SIGV4_ROW,
    HTTP_COMMON_ROWS,
    END,
};
static const struct lf_conf_key s3_keys[] = {
    ROWX("bucket", LF_CONF_STRING, O, s3_bucket, NULL, NULL, 0, 0,
         LF_CONF_REQUIRED | LF_CONF_NONEMPTY, "the bucket"),
    ROWX("region", LF_CONF_STRING, O, aws_region, NULL, NULL, 0, 0, LF_CONF_NONEMPTY,
         "the bucket's region (default $AWS_REGION, then $AWS_DEFAULT_REGION)"),
    ROWX("endpoint", LF_CONF_STRING, O, s3_endpoint, NULL, NULL, 0, 0, LF_CONF_NONEMPTY,
         "an S3-compatible store's URL; default AWS's"),
    ROWX("path_style", LF_CONF_ENUM, O, s3_path_style, "auto", s3_path_styles, 0, 0, 0,
         "ENDPOINT/BUCKET/KEY (true) or BUCKET.ENDPOINT/KEY (false); auto: true with an "
         "endpoint"),
    ROWX("key", LF_CONF_STRING, O, s3_key, NULL, NULL, 0, 0, LF_CONF_NONEMPTY,
         "object key: %{field}, strftime and %{uuid}; default "
         "logs/%{input.id}/%Y/%m/%d/%H/%{uuid}.ndjson.zst"),
    ROWX("compression", LF_CONF_ENUM, O, compression, "zstd", net_compressions, 0, 0, 0,
         "zstd, gzip or none"),
    ROWX("object_bytes", LF_CONF_SIZE, O, s3_object_bytes, "8MiB", NULL, 1024, 0, 0,
         "an object is put once this large (compressed)"),
    ROWX("object_interval", LF_CONF_DURATION, O, s3_object_interval_ms, "60s", NULL, 10, 0, 0,
         "or this long after its first batch"),
    ROWX("part_bytes", LF_CONF_SIZE, O, s3_part_bytes, "8MiB", NULL, 5 << 20, 5368709120, 0,
         "objects above 16 MiB go up in parts this large"),
    ROWX("storage_class", LF_CONF_STRING, O, s3_storage_class, NULL, NULL, 0, 0,
         LF_CONF_NONEMPTY, "x-amz-storage-class, such as STANDARD_IA or GLACIER_IR"),
    ROWX("server_side_encryption", LF_CONF_STRING, O, s3_sse, NULL, NULL, 0, 0,
         LF_CONF_NONEMPTY, "AES256 or aws:kms"),
    ROWX("sse_kms_key_id", LF_CONF_STRING, O, s3_sse_kms_key_id, NULL, NULL, 0, 0,
         LF_CONF_NONEMPTY, "aws:kms: the key's id or ARN"),
    AWS_CRED_ROWS,
    SECTION("tls", tls_keys, "TLS settings for https:// endpoints"),
    ROWX("proxy", LF_CONF_STRING, O, proxy, NULL, NULL, 0, 0, LF_CONF_NONEMPTY, "proxy URL"),
    END,
};
static const struct lf_conf_key kafka_keys[] = {
    LISTX("brokers", LF_CONF_STRLIST, O, brokers, n_brokers, check_host_port,
          LF_CONF_REQUIRED | LF_CONF_NONEMPTY, "HOST:PORT list"),
    ROWX("topic", LF_CONF_STRING, O, topic, NULL, NULL, 0, 0, LF_CONF_REQUIRED | LF_CONF_NONEMPTY,
         "topic, or a template such as logs-%{input.id}"),
    ROW("key", LF_CONF_STRING, O, key, NULL, "message key template, such as %{host.name}"),
    ROWX("acks", LF_CONF_ENUM_STR, O, acks, "all", kafka_acks, 0, 0, 0,
         "all (idempotent) or 1"),
    ROWX("compression", LF_CONF_ENUM, O, compression, "zstd", net_compressions, 0, 0, 0,
         "zstd, gzip or none"),
    ROW("librdkafka", LF_CONF_JSON, O, librdkafka_json, NULL,
        "client options passed through (SASL, TLS)"),
    END,
};
static const struct lf_conf_key syslog_keys[] = {
    ROWX("address", LF_CONF_STRING, O, address, NULL, check_host_port, 0, 0, LF_CONF_REQUIRED,
         "HOST:PORT"),
    ROWX("protocol", LF_CONF_ENUM, O, protocol, "tcp", protocols, 0, 0, 0, "tcp, udp or tls"),
    ROWX("facility", LF_CONF_ENUM, O, syslog_facility, "user", syslog_facilities, 0, 0, 0,
         "kern, user, ..., local7, or 0-23"),
    ROWX("severity", LF_CONF_ENUM, O, syslog_severity, "info", syslog_severities, 0, 0, 0,
         "fixed severity, and the fallback of severity_field"),
    ROWX("severity_field", LF_CONF_STRING, O, syslog_severity_field, NULL, NULL, 0, 0,
         LF_CONF_NONEMPTY, "event field holding the severity, such as level"),
    ROWX("app_name", LF_CONF_STRING, O, syslog_app_name, "logferry", check_app_name, 0, 0, 0,
         "APP-NAME, and the fallback of app_name_field"),
    ROWX("app_name_field", LF_CONF_STRING, O, syslog_app_name_field, NULL, NULL, 0, 0,
         LF_CONF_NONEMPTY, "event field holding the APP-NAME"),
    ROWX("hostname", LF_CONF_STRING, O, syslog_hostname, NULL, check_syslog_hostname, 0, 0, 0,
         "HOSTNAME; default the agent's host name"),
    ROWX("format", LF_CONF_ENUM, O, syslog_format, "message", syslog_formats, 0, 0, 0,
         "MSG is the message, or the event as json"),
    ROWX("max_message_bytes", LF_CONF_SIZE, O, syslog_max_message_bytes, "2048", NULL, 480,
         65507, 0, "udp: longer datagrams are cut"),
    ROW("settle", LF_CONF_DURATION, O, syslog_settle_ms, "100ms",
        "tcp, tls: the connection must stay up this long after the peer's TCP acknowledged "
        "a batch"),
    SECTION("tls", tls_keys, "protocol tls: CA, client certificate, verification"),
    END,
};
#undef O

/* clang-format on */

void lf_conf__output_tables(int type, const struct lf_conf_key **tables)
{
    static const struct lf_conf_key *const by_type[] = {
        [LF_OUTPUT_FILE] = file_keys,     [LF_OUTPUT_CONSOLE] = console_keys,
        [LF_OUTPUT_HTTP] = http_keys,     [LF_OUTPUT_ELASTICSEARCH] = es_keys,
        [LF_OUTPUT_LOKI] = loki_keys,     [LF_OUTPUT_KAFKA] = kafka_keys,
        [LF_OUTPUT_SYSLOG] = syslog_keys, [LF_OUTPUT_SPLUNK_HEC] = hec_keys,
        [LF_OUTPUT_OTLP] = otlp_keys,     [LF_OUTPUT_S3] = s3_keys,
    };
    size_t n = 0;
    tables[n++] = output_keys;
    if (type >= 0 && (size_t)type < sizeof(by_type) / sizeof(by_type[0])) {
        tables[n++] = by_type[type];
        if (type >= LF_OUTPUT_HTTP)
            tables[n++] = net_keys;
    }
    tables[n] = NULL;
}
