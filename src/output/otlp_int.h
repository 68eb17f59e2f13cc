/* otlp_int.h - the OTLP logs encoder of the otlp output, within src/output/ only.
 *
 * Writes an ExportLogsServiceRequest (opentelemetry/proto/collector/logs/v1), as protobuf
 * wire format or as OTLP's JSON mapping, straight from events' JSON lines into one buffer:
 * no message objects, no allocation per event once the buffers have grown. Every
 * length-delimited field is written with a one to three byte guess of its length, moved
 * once at its end if the guess was wrong, so the output is the canonical encoding.
 *
 * An encoder belongs to one thread at a time (the otlp output's lane thread). */
#ifndef LF_OTLP_INT_H
#define LF_OTLP_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "logferry/buf.h"
#include "logferry/err.h"

/* The event members that make a resource, in the order they are written. */
enum lf_otlp_res {
    LF_OTLP_HOST = 0,  /* host.name */
    LF_OTLP_NAMESPACE, /* kubernetes.namespace -> k8s.namespace.name */
    LF_OTLP_POD,       /* kubernetes.pod.name -> k8s.pod.name */
    LF_OTLP_CONTAINER, /* kubernetes.container.name -> k8s.container.name */
    LF_OTLP_UID,       /* kubernetes.pod.uid -> k8s.pod.uid */
    LF_OTLP_NODE,      /* kubernetes.node.name -> k8s.node.name */
    LF_OTLP_N_RES,
};

#define LF_OTLP_DEPTH_MAX 32 /* messages open at once, at most */

struct lf_otlp_enc {
    bool json;                  /* OTLP's JSON mapping, else protobuf */
    struct lf_buf *out;         /* borrowed: what is written to */
    struct lf_buf path;         /* owned; the dotted path of the member at hand */
    struct lf_buf text;         /* owned; a string unescaped */
    struct lf_buf fixed;        /* owned; the configured resource attributes, encoded */
    const char *severity_field; /* borrowed; dotted path */
    size_t severity_len;
    bool res_fixed[LF_OTLP_N_RES];          /* the configured resource names one: the event's is
                                               neither written to the resource nor an attribute */
    size_t open[LF_OTLP_DEPTH_MAX];         /* protobuf: where each open field's length starts */
    unsigned char guess[LF_OTLP_DEPTH_MAX]; /* bytes reserved for it */
    size_t depth;
    struct lf_str sev;   /* the event's severity value (raw JSON), or empty */
    struct lf_str trace; /* its trace id, 32 hex digits (without quotes), or empty */
    struct lf_str span;  /* its span id, 16 hex digits, or empty */
    struct lf_str body;  /* the event's message (raw JSON), or empty */
};

/* The raw JSON of each resource member of the event line (len 0: absent) into vals, in one
 * walk of its top-level members (then of `host` and `kubernetes` only). */
void lf_otlp_resource_values(struct lf_str line, struct lf_str vals[LF_OTLP_N_RES]);

/* The OTel attribute name of resource member r. */
const char *lf_otlp_res_name(enum lf_otlp_res r);

/* Starts e (zeroed before) for json or protobuf with the severity path; resource_json: the
 * configured attributes (a JSON object of names to scalar values) or NULL. LF_EINVAL with
 * *bad the offending name (borrowed from nothing: a static text) for a value that is not a
 * string, number or bool; LF_ENOMEM. */
LF_MUST_CHECK enum lf_err lf_otlp_enc_init(struct lf_otlp_enc *e,
                                           bool json,
                                           const char *severity_field,
                                           const char *resource_json);

void lf_otlp_enc_release(struct lf_otlp_enc *e);

/* The request's start, into out (reset first). */
LF_MUST_CHECK enum lf_err lf_otlp_begin(struct lf_otlp_enc *e, struct lf_buf *out);

/* A ResourceLogs with its resource: the configured attributes, then vals[r] (raw JSON of
 * each resource member; len 0: absent), then its ScopeLogs' scope. first: the request's
 * first resource. */
LF_MUST_CHECK enum lf_err
lf_otlp_resource(struct lf_otlp_enc *e, bool first, const struct lf_str vals[LF_OTLP_N_RES]);

/* One LogRecord of the open resource, from the event's JSON line (one object). first: the
 * resource's first record. LF_EINVAL: the line is not a JSON object. */
LF_MUST_CHECK enum lf_err lf_otlp_record(
    struct lf_otlp_enc *e, bool first, struct lf_str line, int64_t time_ns, int64_t observed_ns);

/* Closes the open resource. */
LF_MUST_CHECK enum lf_err lf_otlp_resource_end(struct lf_otlp_enc *e);

/* The request's end. */
LF_MUST_CHECK enum lf_err lf_otlp_end(struct lf_otlp_enc *e);

/* The OTel severity number of a severity text (case-insensitive; "warning", "err",
 * "critical" and the other usual names), 0 (unspecified) if unknown. */
int lf_otlp_severity_number(const char *s, size_t len);

/* (otlp.c) The partial_success of an answer's body (protobuf, or JSON "partialSuccess"): rejected
 * records into *rejected and the message into msg (cap bytes, NUL-terminated, maybe cut).
 * false if the body holds none. */
bool lf_otlp_partial(struct lf_str body, bool json, int64_t *rejected, char *msg, size_t cap);

#endif
