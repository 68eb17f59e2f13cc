/* sigv4_int.h - AWS Signature Version 4 request signing, within src/output/ only.
 *
 * A signer is made once per output from its credentials, region and service, and signs
 * one request at a time: it builds the canonical request and the string to sign in
 * buffers it owns and reuses, and writes the Authorization header's value into the
 * caller's buffer. The signing key (four chained HMAC-SHA256) is derived once per UTC day;
 * the HMAC's inner and outer SHA-256 states for it are kept, so a signature is the hash of
 * the canonical request and two passes of the HMAC, and allocates nothing once the
 * buffers have grown to the largest request seen.
 *
 * A signer belongs to one thread at a time (for an HTTP output, its client's loop thread,
 * where a request starts). The secret is held only in the signer and is never written
 * anywhere else. */
#ifndef LF_SIGV4_INT_H
#define LF_SIGV4_INT_H

#include <openssl/sha.h>
#include <stdbool.h>
#include <stddef.h>

#include "logferry/err.h"

#define LF_SIGV4_HEX_LEN  64 /* a SHA-256 in lower-case hex */
#define LF_SIGV4_DATE_LEN 16 /* YYYYMMDD'T'HHMMSS'Z' */

struct lf_sigv4_conf {
    const char *region;        /* "us-east-1" */
    const char *service;       /* "es", "aoss", "s3", "execute-api"... */
    const char *access_key_id; /* AKID... */
    const char *secret_key;    /* never logged */
    const char *session_token; /* NULL or "": none; else signed as x-amz-security-token */
    bool s3_paths;             /* the path as given (S3); else normalised, encoded again */
    bool sign_content_sha256;  /* add and sign x-amz-content-sha256 (S3 wants it) */
};

/* One header of the request as it is sent; name in any case, value untrimmed. */
struct lf_sigv4_header {
    const char *name;
    size_t name_len;
    const char *value;
    size_t value_len;
};

/* One request. The signer adds x-amz-date (and x-amz-security-token, x-amz-content-sha256
 * per the conf) itself: headers holds the others, host first among them. */
struct lf_sigv4_req {
    const char *method; /* "GET", "POST"... */
    const char *path;   /* as on the request line, percent-escapes kept */
    size_t path_len;
    const char *query; /* after the '?', as sent (escaped); may be empty */
    size_t query_len;
    const struct lf_sigv4_header *headers;
    size_t n_headers;
    const char *payload_sha256; /* LF_SIGV4_HEX_LEN hex of the body, the caller's */
    const char *amz_date;       /* LF_SIGV4_DATE_LEN characters */
};

struct lf_sigv4;

/* Loads libcrypto (through libssl, src/output/netlib.c) on first use and copies conf.
 * access_key_id may be NULL or "" when lf_sigv4_set_credentials() comes before the first
 * lf_sigv4_sign() (credentials from a provider that fetches them later). NULL with eb filled
 * (LF_EIO: no library; LF_EINVAL: a field missing; LF_ENOMEM). who starts the messages ("output
 * es"). */
struct lf_sigv4 *
lf_sigv4_new(const struct lf_sigv4_conf *conf, const char *who, struct lf_errbuf *eb);

/* Zeroes the key material and frees. NULL is fine. */
void lf_sigv4_free(struct lf_sigv4 *s);

/* Replaces the credentials (temporary ones were refreshed): copies them, wipes the old
 * secret and drops the day's key, so the next signature derives it from the new secret.
 * session_token NULL or "": none. LF_EINVAL (a key or the secret missing) or LF_ENOMEM:
 * the signer holds no credentials and lf_sigv4_sign() fails with LF_EINVAL until a call
 * succeeds. The signer's thread. */
LF_MUST_CHECK enum lf_err lf_sigv4_set_credentials(struct lf_sigv4 *s,
                                                   const char *access_key_id,
                                                   const char *secret_key,
                                                   const char *session_token);

/* Writes "AWS4-HMAC-SHA256 Credential=..., SignedHeaders=..., Signature=..." and a NUL into
 * out. LF_ETOOBIG when out is too small or the request too large; LF_EINVAL on a bad date
 * or hash, or no credentials; LF_ENOMEM. Nothing is allocated once the buffers hold a request this
 * large. */
LF_MUST_CHECK enum lf_err
lf_sigv4_sign(struct lf_sigv4 *s, const struct lf_sigv4_req *req, char *out, size_t out_size);

/* The canonical request and the string to sign of the last lf_sigv4_sign(), NUL-ended;
 * valid until the next. For tests. */
const char *lf_sigv4_canonical_request(const struct lf_sigv4 *s);
const char *lf_sigv4_string_to_sign(const struct lf_sigv4 *s);

/* The hex SHA-256 of len bytes at p into hex (LF_SIGV4_HEX_LEN + 1 bytes, NUL-ended): the
 * payload hash, computed by the caller once per body. libcrypto must be loaded (a signer
 * made). */
void lf_sigv4_sha256_hex(const void *p, size_t len, char *hex);

/* HMAC-SHA256 (RFC 2104) in two steps, so that a key used for many messages is hashed
 * once: lf_sigv4_hmac_key() leaves in inner and outer the states after the key's padded
 * blocks; lf_sigv4_hmac_from() is the 32-byte MAC of len bytes at msg from them (copies:
 * the states stay as they are, and may be shared by threads). libcrypto must be loaded
 * (lf_netlib_load(LF_NETLIB_SSL, ...)). */
void lf_sigv4_hmac_key(SHA256_CTX *inner, SHA256_CTX *outer, const void *key, size_t key_len);
void lf_sigv4_hmac_from(const SHA256_CTX *inner,
                        const SHA256_CTX *outer,
                        const void *msg,
                        size_t len,
                        unsigned char *mac);

#endif
