/* config.h - the YAML config (SPEC.md "Config") as typed structs.
 *
 * lf_config_load() parses, expands ${VAR} / ${VAR:-default}, validates everything, and
 * either returns a complete config or reports every problem it found, one line each, as
 * `FILE:LINE:COL: message`. The process never starts half-configured.
 * The structs are plain data: read freely; they are owned by the struct lf_config. */
#ifndef LF_CONFIG_H
#define LF_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "logferry/buf.h"
#include "logferry/err.h"

/* Where a value came from, for messages raised after loading. line and col are 1-based. */
struct lf_conf_pos {
    unsigned line;
    unsigned col;
};

enum lf_input_type {
    LF_INPUT_FILE = 0,
    LF_INPUT_STDIN,
    LF_INPUT_JOURNALD,
};

enum lf_start_at {
    LF_START_BEGINNING = 0,
    LF_START_END,
};

enum lf_line_overflow {
    LF_OVERFLOW_TRUNCATE = 0,
    LF_OVERFLOW_SKIP,
};

enum lf_parser_kind {
    LF_PARSER_CONTAINER = 0,
    LF_PARSER_MULTILINE,
    LF_PARSER_INCLUDE_LINES,
    LF_PARSER_EXCLUDE_LINES,
    LF_PARSER_NDJSON,
    LF_PARSER_DISSECT,
    LF_PARSER_KV,
    LF_PARSER_SYSLOG,
    LF_PARSER_TIMESTAMP,
    LF_PARSER_REGEX,
    LF_PARSER_ACCESS_LOG,
    LF_PARSER_FIELDS,
    LF_PARSER_THROTTLE,
    LF_PARSER_SAMPLE,
    LF_PARSER_REDACT,
    LF_PARSER_DROP,
};

/* What the throttle stage does with an event over its key's rate. */
enum lf_throttle_action {
    LF_THROTTLE_DROP = 0, /* dropped, counted as throttled (and filtered) */
    LF_THROTTLE_SAMPLE,   /* refused at load: not defined (docs/processing.md says why) */
};

/* What the regex stage does with a line its pattern does not match. */
enum lf_on_failure {
    LF_ON_FAILURE_KEEP = 0,    /* unchanged, with error.message */
    LF_ON_FAILURE_DROP,        /* dropped, counted as filtered */
    LF_ON_FAILURE_KEEP_SILENT, /* unchanged */
};

/* How the redact stage masks a match. */
enum lf_redact_hash {
    LF_REDACT_HASH_NONE = 0, /* the replace text */
    LF_REDACT_HASH_SHA256,   /* a keyed HMAC-SHA256 token of the match */
};

enum lf_access_format {
    LF_ACCESS_COMBINED = 0,
    LF_ACCESS_COMMON,
};

enum lf_container_format {
    LF_CONTAINER_AUTO = 0,
    LF_CONTAINER_CRI,
    LF_CONTAINER_DOCKER,
};

enum lf_container_stream {
    LF_STREAM_ALL = 0,
    LF_STREAM_STDOUT,
    LF_STREAM_STDERR,
};

enum lf_syslog_parse {
    LF_SYSLOG_PARSE_AUTO = 0,
    LF_SYSLOG_PARSE_RFC3164,
    LF_SYSLOG_PARSE_RFC5424,
};

enum lf_trim {
    LF_TRIM_NONE = 0,
    LF_TRIM_LEFT,
    LF_TRIM_RIGHT,
    LF_TRIM_BOTH,
};

enum lf_multiline_type {
    LF_MULTILINE_PATTERN = 0,
    LF_MULTILINE_COUNT,
    LF_MULTILINE_WHILE_PATTERN,
};

enum lf_multiline_match {
    LF_MATCH_AFTER = 0,
    LF_MATCH_BEFORE,
};

/* One entry of an input's `parsers:` list. Regex strings are validated (PCRE2) at load. */
struct lf_parser_conf {
    enum lf_parser_kind kind;
    struct lf_conf_pos pos; /* of the parser's key, e.g. `multiline:` */
    char *when; /* owned; the `when:` condition (include/logferry/cond.h), checked at load;
                   NULL: every event. Required for drop */
    struct lf_conf_pos when_pos; /* of the `when:` value */
    union {
        struct {
            enum lf_container_format format; /* default auto */
            enum lf_container_stream stream; /* default all */
        } container;
        struct {
            enum lf_multiline_type type; /* default pattern */
            char *preset;                /* owned; java|python|go|ruby, or NULL */
            char *pattern;               /* owned, or NULL */
            char *flush_pattern;         /* owned, or NULL */
            bool negate;
            enum lf_multiline_match match; /* default after */
            size_t count_lines;            /* type count */
            size_t max_lines;              /* default 500 */
            size_t max_bytes;              /* default 10 MiB */
            uint64_t timeout_ms;           /* default 5 s */
        } multiline;
        struct {
            char **patterns; /* owned; include_lines / exclude_lines */
            size_t n_patterns;
        } lines;
        struct {
            char *target;      /* owned; "" = merge at the root */
            bool overwrite_keys;
            bool add_error_key; /* default true */
            char *message_key; /* owned; default "message" */
        } ndjson;
        struct {
            char *tokenizer;          /* owned; required */
            char *target;             /* owned; "" = members at the root */
            enum lf_trim trim_values; /* default none */
        } dissect;
        struct {
            char *field_split;   /* owned; bytes that separate pairs, default " " */
            char *value_split;   /* owned; separates key and value, default "=" */
            char **include_keys; /* owned; empty = all */
            size_t n_include_keys;
            char **exclude_keys; /* owned */
            size_t n_exclude_keys;
            char *prefix; /* owned; put before each key, default "" */
            char *target; /* owned; "" = members at the root */
        } kv;
        struct {
            enum lf_syslog_parse format; /* default auto */
            char *target;                /* owned; "" = members at the root */
            bool keep_original;          /* the whole line in event.original */
        } syslog;
        struct {
            char *field;    /* owned; member (dotted path) holding the time, default
                               "timestamp" */
            char **formats; /* owned; tried in order; empty = rfc3339, rfc3164 */
            size_t n_formats;
            char *timezone;    /* owned; for times without an offset, default "UTC" */
            bool remove_field; /* drop the member once its time parsed */
            bool ignore_missing; /* no member: no error.message either */
        } timestamp;
        struct {
            char *pattern; /* owned; required; group names may end in :int|:float|:bool */
            char *field;   /* owned; the member matched, default "message" */
            char *target;  /* owned; "" = members at the root */
            enum lf_on_failure on_failure; /* default keep */
            char *types_json;              /* owned; JSON object {"group":"int",...}, or NULL */
        } regex;
        struct {
            enum lf_access_format format; /* default combined */
            char *target;                 /* owned; "" = members at the root */
        } access_log;
        struct {
            char *add_json; /* owned; JSON object {"dotted.path": value}, or NULL */
            char **drop;    /* owned; dotted paths */
            size_t n_drop;
            char *rename_json; /* owned; JSON object {"from.path": "to.path"}, or NULL */
        } fields;
        struct {
            char *rate;    /* owned; required; "N/s", "N/m" or "N/h" (lf_parse_rate()) */
            size_t burst;  /* events a full bucket holds; 0 = the rate per second (at least 1) */
            char *key;     /* owned; %{field} template naming the bucket, default "" (one) */
            enum lf_throttle_action action; /* default drop */
            size_t max_keys; /* buckets kept at most (least recently used evicted), 10,000 */
        } throttle;
        struct {
            size_t rate; /* required; keep 1 event in rate */
            char *key;   /* owned; %{field} template: same value, same decision; NULL = a
                            counter per source */
        } sample;
        struct {
            char **patterns; /* owned; built-in pattern names; empty = every one */
            size_t n_patterns;
            char **fields; /* owned; dotted members scanned, "message" the message; empty =
                              the message only */
            size_t n_fields;
            char *regex_json;         /* owned; JSON list [{"name":..,"pattern":..}], or NULL */
            char *replace;            /* owned; NULL = "[REDACTED]" (unless hash) */
            enum lf_redact_hash hash; /* default none */
            char *hash_key;           /* owned; the HMAC key (a secret: never shown) */
        } redact;
    } u;
};

/* Routes per input, at most: an event carries the routes it matched as bits of a word. */
#define LF_MAX_ROUTES 63
/* Outputs an input's routes and `outputs:` reach together, at most: the batcher fills a
 * batch per output of an input with routes. */
#define LF_MAX_ROUTED_OUTPUTS 16

/* One entry of an input's `routes:` list (docs/processing.md "Routing"). */
struct lf_route_conf {
    char *name;             /* owned; `name:`, default "route1", "route2"... in list order */
    struct lf_conf_pos pos; /* of the list item */
    char *when;             /* owned; the condition (checked at load); NULL: every event */
    bool cont;              /* `continue:`: the next routes are tried too */
    size_t *outputs;        /* owned; indexes into lf_config.outputs, each once; none: the
                               route's events are dropped (acknowledged, counted as filtered) */
    size_t n_outputs;
};

struct lf_input_conf {
    char *id; /* owned; unique */
    struct lf_conf_pos pos; /* of the list item */
    enum lf_input_type type;
    char **paths; /* owned; globs */
    size_t n_paths;
    char **exclude_files; /* owned; PCRE2 regexes on the full path */
    size_t n_exclude_files;
    char **allowed_roots; /* owned; absolute directories a file's real path must lie in; when
                             not configured: each glob's fixed directory part, plus /var/log */
    size_t n_allowed_roots;
    enum lf_start_at start_at;
    char *encoding;         /* owned; iconv name, default "utf-8" */
    size_t max_line_bytes;  /* default 1 MiB */
    enum lf_line_overflow line_overflow;
    size_t buffer_size;     /* default 64 KiB */
    uint64_t scan_interval_ms;  /* default 10 s */
    uint64_t close_inactive_ms; /* default 5 min */
    uint64_t close_removed_after_ms; /* 0 = never give up unread data of a deleted file */
    uint64_t ignore_older_ms;   /* 0 = off */
    size_t max_open_files;      /* default 1024 */
    bool skip_empty_lines;
    char *fields_json; /* owned; `fields` rendered once as a JSON object "{...}", or NULL */
    bool fields_under_root;
    size_t *outputs; /* owned; indexes into lf_config.outputs this input routes to */
    size_t n_outputs; /* always >= 1 after load: an absent `outputs:` means all of them.
                         With routes: where events no route matched go (the "default") */
    struct lf_route_conf *routes; /* owned; `routes:` in order (at most LF_MAX_ROUTES) */
    size_t n_routes;
    struct lf_parser_conf *parsers; /* owned; in config order */
    size_t n_parsers;
    char *settings_json; /* owned; the item as written (${VAR} expanded) as compact JSON:
                            a reload keeps an input whose text is equal running */
    char **skip_if_exists; /* owned; absolute paths: while one exists (at start and at a
                              reload), the input reads nothing */
    size_t n_skip_if_exists;
    /* type journald (docs/journald.md): */
    char *journal_directory; /* owned; a journal directory, or NULL */
    char **journal_files;    /* owned; journal files (globs), or none */
    size_t n_journal_files;  /* neither directory nor files: the local journal */
    char **journal_units;    /* owned; unit names (ssh.service) */
    size_t n_journal_units;
    char **journal_matches;  /* owned; FIELD=VALUE, as sd_journal_add_match() takes them */
    size_t n_journal_matches;
    int journal_priority;    /* 0 (emerg) .. 7 (debug): that and more important; default 7 */
    char **include_fields;   /* owned; journal field names added under journald.custom ("*":
                                every field not otherwise mapped) */
    size_t n_include_fields;
    char **exclude_fields;   /* owned; journal field names left out of the event */
    size_t n_exclude_fields;
};

/* A value ${VAR} expansion put into the config. It may be a secret: text from a library that
 * may quote a configured value goes through lf_config_scrub() before it is logged. */
struct lf_env_value {
    char *name;  /* owned; VAR */
    char *value; /* owned; what the environment gave it, never "" */
};

struct lf_env_values {
    struct lf_env_value *v; /* owned; one per variable, in the order first met */
    size_t n;
};

enum lf_output_type {
    LF_OUTPUT_FILE = 0,
    LF_OUTPUT_CONSOLE,
    LF_OUTPUT_HTTP,
    LF_OUTPUT_ELASTICSEARCH,
    LF_OUTPUT_LOKI,
    LF_OUTPUT_KAFKA,
    LF_OUTPUT_SYSLOG,
    LF_OUTPUT_SPLUNK_HEC,
    LF_OUTPUT_OTLP,
    LF_OUTPUT_S3,
};

enum lf_compression {
    LF_COMPRESS_ZSTD = 0,
    LF_COMPRESS_NONE,
    LF_COMPRESS_GZIP,
};

enum lf_console_format {
    LF_CONSOLE_JSON = 0,
    LF_CONSOLE_TEXT,
};

enum lf_syslog_protocol {
    LF_SYSLOG_TCP = 0,
    LF_SYSLOG_UDP,
    LF_SYSLOG_TLS,
};

enum lf_syslog_format {
    LF_SYSLOG_MESSAGE = 0, /* MSG is the event's message */
    LF_SYSLOG_JSON,        /* MSG is the whole event as JSON */
};

struct lf_output_conf {
    char *name; /* owned; unique */
    struct lf_conf_pos pos;
    enum lf_output_type type;
    /* file */
    char *path;                     /* owned; directory */
    enum lf_compression compression; /* default zstd */
    int compression_level;          /* zstd level, default 1 (key `level`) */
    size_t rotate_bytes;            /* default 64 MiB */
    size_t rotate_keep;             /* rotated files kept, the newest; 0 = all (default) */
    uint64_t max_age_ms;            /* rotated files older than this are removed; 0 = never */
    /* console */
    enum lf_console_format format;  /* console and file; default json */
    /* network outputs (parsed and validated; rejected at load until they are built) */
    char *url;                      /* owned; http, elasticsearch, loki, otlp */
    char *index;                    /* owned; elasticsearch, default "logferry-%Y.%m.%d" */
    char *labels_json;              /* owned; loki `labels` as a JSON object, or NULL */
    char *headers_json;             /* owned; http/elasticsearch/loki `headers`, or NULL */
    char **brokers;                 /* owned; kafka HOST:PORT list */
    size_t n_brokers;
    char *topic;                    /* owned; kafka, a %{field} template */
    char *key;                      /* owned; kafka message key template, or NULL: no key */
    char *acks;                     /* owned; kafka "all" (default) or "1" */
    char *librdkafka_json;          /* owned; kafka `librdkafka` client options as a JSON
                                       object, or NULL */
    char *address;                  /* owned; syslog HOST:PORT */
    enum lf_syslog_protocol protocol; /* syslog, default tcp */
    int syslog_facility;            /* syslog: 0-23, default 1 (user) */
    int syslog_severity;            /* syslog: 0-7, default 6 (info); also the fallback when
                                       severity_field is missing or not a severity */
    char *syslog_severity_field;    /* owned; syslog: dotted event field, or NULL */
    char *syslog_app_name;          /* owned; syslog: default "logferry" */
    char *syslog_app_name_field;    /* owned; syslog: dotted event field, or NULL */
    char *syslog_hostname;          /* owned; syslog: NULL = the agent's host name */
    enum lf_syslog_format syslog_format; /* syslog: default message */
    size_t syslog_max_message_bytes; /* syslog udp: datagram size at most, default 2048 */
    uint64_t syslog_settle_ms;      /* syslog tcp/tls: how long a connection must stay up
                                       after the peer's TCP acknowledged a batch before the
                                       batch counts as delivered; default 100 ms */
    char *tls_ca_file;              /* owned; http-based outputs and syslog: CA bundle (PEM),
                                       or NULL: the system's */
    char *tls_cert_file;            /* owned; client certificate (PEM), or NULL */
    char *tls_key_file;             /* owned; its private key (PEM), or NULL */
    bool tls_verify;                /* check the peer's certificate and name; default true */
    uint64_t backoff_initial_ms;    /* default 1 s */
    uint64_t backoff_max_ms;        /* default 60 s */
    uint64_t timeout_ms;            /* default 30 s */
    /* http-based outputs (http, elasticsearch, loki) */
    char *method;                   /* owned; http, default POST */
    char *content_type;             /* owned; http, default application/x-ndjson */
    char *proxy;                    /* owned; a proxy URL, or NULL */
    char *auth_user;                /* owned; basic auth user, or NULL */
    char *auth_password;            /* owned; a secret: never logged */
    char *bearer_token;             /* owned; a secret: never logged */
    char *data_dir;                 /* owned; a copy of struct lf_config's: dead letters go
                                       there (lf_config_set_data_dir() changes both) */
    /* elasticsearch */
    char *es_pipeline;              /* owned; ingest pipeline, or NULL */
    char *api_key;                  /* owned; a secret: never logged */
    int document_id_auto;           /* 1 (auto): _id from input, file and offset; 0 (none) */
    /* loki */
    char *tenant_id;                /* owned; sent as X-Scope-OrgID, or NULL */
    /* splunk_hec (index: the `index` above, a template here, NULL: the token's default) */
    char *hec_token;                /* owned; a secret: sent as Authorization: Splunk, never
                                       logged */
    char *hec_sourcetype;           /* owned; template, or NULL: the token's default */
    char *hec_source;               /* owned; template, or NULL */
    char *hec_host;                 /* owned; template, default "%{host.name}" */
    char **hec_fields;              /* owned; dotted event fields sent as indexed fields */
    size_t n_hec_fields;
    bool hec_ack;                   /* indexer acknowledgement; default false */
    uint64_t hec_ack_interval_ms;   /* how often outstanding ackIds are polled; default 1 s */
    uint64_t hec_ack_timeout_ms;    /* an ackId not indexed by then: the batch is sent again;
                                       default 60 s */
    /* otlp */
    int otlp_json;                  /* `encoding`: 1 json, 0 protobuf (default) */
    char *otlp_severity_field;      /* owned; dotted event field, default "log.level" */
    char *otlp_resource_json;       /* owned; `resource` attributes as a JSON object, or
                                       NULL */
    /* AWS: the `aws_sigv4` section of http, elasticsearch and otlp (aws_region set: every
     * request is signed), and the s3 output's own keys. Credentials: the first found of
     * these keys, the AWS_* environment, a web identity (role_arn + token file: STS
     * AssumeRoleWithWebIdentity), the instance metadata service (src/output/awscred.c). */
    char *aws_region;               /* owned; NULL: not signed (s3: $AWS_REGION) */
    char *aws_service;              /* owned; aws_sigv4 `service` ("es", "aoss", ...); s3:
                                       NULL, "s3" is used */
    char *aws_access_key_id;        /* owned; NULL: from the chain */
    char *aws_secret_access_key;    /* owned; a secret: never logged */
    char *aws_session_token;        /* owned; a secret: never logged */
    char *aws_role_arn;             /* owned; web identity: the role (else $AWS_ROLE_ARN) */
    char *aws_web_identity_token_file; /* owned; else $AWS_WEB_IDENTITY_TOKEN_FILE */
    char *aws_role_session_name;    /* owned; default "logferry" ($AWS_ROLE_SESSION_NAME) */
    char *aws_sts_endpoint;         /* owned; default https://sts.REGION.amazonaws.com
                                       ($AWS_ENDPOINT_URL_STS) */
    char *aws_imds_endpoint;        /* owned; default http://169.254.169.254
                                       ($AWS_EC2_METADATA_SERVICE_ENDPOINT) */
    bool aws_imds;                  /* ask the instance metadata service last; default true
                                       ($AWS_EC2_METADATA_DISABLED=true turns it off) */
    /* s3 (compression: the `compression` above, default zstd) */
    char *s3_bucket;                /* owned */
    char *s3_endpoint;              /* owned; an S3-compatible store's URL, or NULL: AWS */
    int s3_path_style;              /* -1 (default): true with an endpoint, else false */
    char *s3_key;                   /* owned; key template; NULL: the default of docs/outputs.md,
                                       its suffix following compression */
    size_t s3_object_bytes;         /* an object is put once this large (compressed);
                                       default 8 MiB */
    uint64_t s3_object_interval_ms; /* ... or this long after its first batch; default 60 s */
    size_t s3_part_bytes;           /* objects above 16 MiB go up in parts this large;
                                       default 8 MiB, at least 5 MiB */
    char *s3_storage_class;         /* owned; x-amz-storage-class, or NULL */
    char *s3_sse;                   /* owned; x-amz-server-side-encryption ("AES256",
                                       "aws:kms"), or NULL */
    char *s3_sse_kms_key_id;        /* owned; x-amz-server-side-encryption-aws-kms-key-id */
    int max_in_flight;              /* batches sent, not answered; default 4; 0 (file,
                                       console): bounded only by the queue's caps */
    char *settings_json;            /* owned; the item as written, as compact JSON: a
                                       reload keeps an output whose text is equal */
    struct lf_env_values env;       /* owned; a copy of the config's: what its messages are
                                       scrubbed of (lf_config_scrub()) */
};

/* The kubernetes section: pod metadata from the API server (include/logferry/kube.h). */
struct lf_kube_conf {
    bool enabled;             /* default false: events carry only what the file name says */
    char *api_server;         /* owned; "https://host:port"; default "": in-cluster, from
                                 KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT */
    char *token_file;         /* owned; the service account's (projected) token, re-read
                                 when it changes; default /var/run/secrets/kubernetes.io/
                                 serviceaccount/token; "" sends none */
    char *ca_file;            /* owned; default .../serviceaccount/ca.crt */
    char *node_name;          /* owned; default "": $NODE_NAME, else the host name */
    uint64_t wait_ms;         /* a new file of an unknown pod waits this long; default 2 s */
    uint64_t delete_grace_ms; /* a deleted pod's record stays this long; default 60 s */
    uint64_t timeout_ms;      /* a LIST, or a WATCH not answering, is given up after; 30 s */
    bool labels;              /* kubernetes.labels.*; default true */
    bool dedot;               /* '.' in label/annotation keys becomes '_'; default true */
    bool namespace_labels;    /* kubernetes.namespace_labels.*; default false */
    char **ann_include;       /* owned; globs of annotation keys kept; none: none kept */
    size_t n_ann_include;
    char **ann_exclude;       /* owned; globs taken out of what ann_include kept */
    size_t n_ann_exclude;
};

struct lf_config {
    char *path; /* owned; the file it was loaded from */
    char *data_dir; /* owned; default /var/lib/logferry */
    uint64_t shutdown_timeout_ms; /* default 10 s */
    bool config_watch; /* reload when the file at path changes; default false */
    struct lf_input_conf *inputs; /* owned */
    size_t n_inputs;
    struct lf_output_conf *outputs; /* owned */
    size_t n_outputs;
    struct {
        size_t max_bytes; /* default 8 MiB */
        size_t batch_max_events; /* default 4096 */
        size_t batch_max_bytes;  /* default 1 MiB */
        uint64_t batch_flush_interval_ms; /* default 1 s */
        bool spool_enabled;
        size_t spool_max_bytes; /* default 1 GiB */
    } queue;
    struct {
        uint64_t flush_interval_ms; /* default 1 s */
        bool clean_removed;         /* default true */
    } registry;
    struct {
        char *listen;         /* owned; default "127.0.0.1:5066"; "" disables */
        uint64_t stuck_after_ms; /* /healthz: a thread silent this long is stuck; 60 s */
    } metrics;
    struct lf_kube_conf kubernetes;
    struct lf_env_values env; /* owned; every ${VAR} value in the file */
    struct {
        char *level;  /* owned; error|warn|info|debug, default info */
        char *format; /* owned; text|json, default text */
    } logging;
};

/* Where a check run by the loader reports a problem (struct lf_config_checks), or, outside a
 * load, wherever fn sends it (lf_output_open() fills its errbuf with the first). key is a
 * dotted path inside the item checked ("url", "tls.ca_file", "headers.X-Token"), or NULL
 * for the item itself. A value from the environment in msg is shown as its ${VAR}
 * (lf_config_scrub()). */
typedef void lf_config_report_fn(void *arg, const char *key, const char *msg);

struct lf_config_report {
    lf_config_report_fn *fn;
    void *arg;
    size_t n; /* problems reported so far: read freely */
};

/* Formats one problem and hands it to rep->fn. */
void lf_config_report(struct lf_config_report *rep, const char *key, const char *fmt, ...)
    LF_PRINTF(3, 4);

/* What the loader cannot judge alone, run on every item that loaded without a problem, so
 * one load reports every problem as FILE:LINE:COL (the agent's lf_agent_load_config() sets
 * them: the stages compile each parser, each output type checks its own settings). Either
 * may be NULL. */
struct lf_config_checks {
    void (*parser)(const struct lf_input_conf *in, size_t i, struct lf_config_report *rep);
    void (*output)(const struct lf_output_conf *conf, struct lf_config_report *rep);
};

/* Loads and validates the YAML file at path. On success *out is a new config; free with
 * lf_config_free(). On failure returns LF_ECONFIG (or LF_EIO if the file cannot be read, or
 * LF_ENOMEM) and appends every problem to errors, one `FILE:LINE:COL: message\n` line each
 * (an unreadable file gives one `FILE: message\n` line). */
LF_MUST_CHECK enum lf_err lf_config_load(const char *path, struct lf_config **out,
                                         struct lf_buf *errors);

/* Same as lf_config_load() for YAML held in memory; name is used in messages. */
LF_MUST_CHECK enum lf_err lf_config_load_mem(const char *name, const char *yaml, size_t len,
                                             struct lf_config **out, struct lf_buf *errors);

/* lf_config_load() and lf_config_load_mem() running checks (borrowed; NULL: none) too. */
LF_MUST_CHECK enum lf_err lf_config_load_checked(const char *path,
                                                 const struct lf_config_checks *checks,
                                                 struct lf_config **out,
                                                 struct lf_buf *errors);
LF_MUST_CHECK enum lf_err lf_config_load_mem_checked(const char *name,
                                                     const char *yaml,
                                                     size_t len,
                                                     const struct lf_config_checks *checks,
                                                     struct lf_config **out,
                                                     struct lf_buf *errors);

/* Makes dir (copied) the data_dir of cfg and of every output in it: --data-dir, and a reload
 * keeping the running one. Call it before anything reads cfg. LF_ENOMEM leaves cfg as it was. */
LF_MUST_CHECK enum lf_err lf_config_set_data_dir(struct lf_config *cfg, const char *dir);

/* Frees the config and everything it owns. lf_config_free(NULL) is a no-op. */
void lf_config_free(struct lf_config *cfg);

/* Finds an input by id; NULL if none. Borrowed: valid while cfg lives. */
const struct lf_input_conf *lf_config_input(const struct lf_config *cfg, const char *id);

/* True if a and b have the same settings (as written, after ${VAR}): a reload keeps such an
 * input running untouched. Its `outputs:` routing is part of the settings. */
bool lf_config_input_same(const struct lf_input_conf *a, const struct lf_input_conf *b);

/* True if a and b have the same settings: a reload keeps such an output open. */
bool lf_config_output_same(const struct lf_output_conf *a, const struct lf_output_conf *b);

/* Replaces in text (NUL-terminated, in a buffer of cap bytes) every value of env at least
 * LF_SCRUB_MIN_BYTES long with its `${VAR}`, cutting the result to fit cap. For text from a
 * library (librdkafka, libcurl, OpenSSL) or a peer, before it is logged or kept: it may quote
 * a configured value, and one from the environment may be a secret. Any thread. */
void lf_config_scrub(const struct lf_env_values *env, char *text, size_t cap);

/* Shorter values (a digit, a flag) are left: they cannot be told from the text around them. */
#define LF_SCRUB_MIN_BYTES 3

/* Parses "64KiB", "1MiB", "2GiB", "512" (bytes) ... ; false on anything else or overflow. */
bool lf_parse_size(const char *s, size_t *out);

/* Parses a rate, "1000/s", "30/m", "2/h": *n events per *per_ms milliseconds (1000, 60000 or
 * 3600000); n from 1 to LF_RATE_MAX. false on anything else. */
#define LF_RATE_MAX 1000000000ull
bool lf_parse_rate(const char *s, uint64_t *n, uint64_t *per_ms);

/* Parses "250ms", "5s", "10m", "1h", "0"; false on anything else or overflow. */
bool lf_parse_duration_ms(const char *s, uint64_t *out);

#endif
