/* s3_int.h - the s3 output's requests (s3_req.c), within src/output/ only.
 *
 * s3.c gathers batches into objects and decides what to send and what an answer means;
 * s3_req.c sends one request at a time on the output's thread: the URL of a key (path-style
 * or virtual-hosted), the headers, the SigV4 signature with the current credentials and the
 * server's clock offset, and a blocking libcurl easy handle made once. Nothing here writes a
 * secret anywhere but into the request. */
#ifndef LF_S3_INT_H
#define LF_S3_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "logferry/config.h"
#include "logferry/err.h"

#define LF_S3_CODE_MAX     64  /* S3's <Code> */
#define LF_S3_MESSAGE_MAX  200 /* the start of its <Message> */
#define LF_S3_ETAG_MAX     128
#define LF_S3_UPLOADID_MAX 1024

/* How a request ended. */
struct lf_s3_reply {
    long status;                        /* the HTTP status; 0: no answer */
    char error[256];                    /* status 0: why (connection, timeout) */
    char code[LF_S3_CODE_MAX];          /* the error document's <Code>, or "" */
    char message[LF_S3_MESSAGE_MAX];    /* its <Message>, printable ASCII, or "" */
    char etag[LF_S3_ETAG_MAX];          /* the ETag header (UploadPart), quotes kept */
    char upload_id[LF_S3_UPLOADID_MAX]; /* <UploadId> (CreateMultipartUpload) */
    uint64_t retry_after_ms;            /* Retry-After in seconds, or 0 */
    int64_t date_s;                     /* the Date header, seconds since the epoch; 0: none */
};

/* What goes with a request beside its body. */
struct lf_s3_call {
    const char *method; /* "PUT", "POST", "DELETE" */
    const char *key;    /* the object's key, unescaped */
    const char *query;  /* after '?', escaped as S3 wants it ("uploads="), or "" */
    const void *body;
    size_t len;
    const char *sha256;  /* LF_SIGV4_HEX_LEN hex of the body, computed once by the caller */
    bool object_headers; /* Content-Type, storage class and encryption: a PUT of an object
                            or a CreateMultipartUpload */
};

struct lf_s3req;

/* Returns a new requester for conf (borrowed: it must outlive it) in *out; free with
 * lf_s3req_free(). cancel (borrowed) is read during transfers: when it turns true, the
 * transfer on the wire is ended. LF_ECONFIG (no region, a bad endpoint, half-given
 * credentials), LF_EIO, LF_ENOMEM with eb filled, starting with who. */
LF_MUST_CHECK enum lf_err lf_s3req_new(const struct lf_output_conf *conf,
                                       const char *who,
                                       const bool *cancel,
                                       struct lf_s3req **out,
                                       struct lf_errbuf *eb);

void lf_s3req_free(struct lf_s3req *r);

/* Sends c, signed, and waits for its end: LF_OK with *reply filled (status 0: no answer).
 * LF_EAGAIN: no credentials yet (eb says why, without secrets); LF_ENOMEM, LF_ETOOBIG.
 * The output's thread. */
LF_MUST_CHECK enum lf_err lf_s3req_send(struct lf_s3req *r,
                                        const struct lf_s3_call *c,
                                        struct lf_s3_reply *reply,
                                        struct lf_errbuf *eb);

/* From now on, requests are dated offset_s seconds off the local clock (the server's clock
 * per its Date header, after a RequestTimeTooSkewed). */
void lf_s3req_set_skew(struct lf_s3req *r, int64_t offset_s);

/* Asks the credentials provider for new credentials (an ExpiredToken answer). */
void lf_s3req_refresh(struct lf_s3req *r);

/* The default key template for compression: logs/%{input.id}/%Y/%m/%d/%H/%{uuid}.ndjson
 * and .zst, .gz or nothing. Static. */
const char *lf_s3_default_key(enum lf_compression compression);

#endif
