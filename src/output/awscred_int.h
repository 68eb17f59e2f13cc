/* awscred_int.h - AWS credentials for signed requests (SigV4), within src/output/ only.
 *
 * One provider per output that signs (an http, elasticsearch or otlp output with
 * `aws_sigv4`, and every s3 output). At lf_awscred_new() it picks where the credentials
 * come from, the first of, as the AWS SDKs do:
 *
 *   1. the output's access_key_id + secret_access_key (+ session_token)   "config"
 *   2. AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN)     "environment"
 *   3. a web identity: role_arn and web_identity_token_file (or AWS_ROLE_ARN and
 *      AWS_WEB_IDENTITY_TOKEN_FILE: EKS IRSA), exchanged at STS with
 *      AssumeRoleWithWebIdentity                                            "web identity"
 *   4. the instance metadata service, IMDSv2 (a session token first)       "instance metadata"
 *
 * 1 and 2 never change. 3 and 4 give temporary credentials: a thread of the provider's
 * fetches them at once and again ahead of their expiry (5 minutes before, or at two thirds
 * of their life when shorter), and after a failure with backoff; a send never waits for
 * it. Nothing here ever writes a secret, a token or a key id's secret part into a message.
 * Any thread may call lf_awscred_get(). */
#ifndef LF_AWSCRED_INT_H
#define LF_AWSCRED_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "logferry/config.h"
#include "logferry/err.h"

#define LF_AWSCRED_KEY_MAX    128  /* access key id or secret, with its NUL */
#define LF_AWSCRED_TOKEN_MAX  4096 /* a session token, with its NUL */

/* A copy of the credentials, owned by its reader (a signer's thread). */
struct lf_awscred_value {
    char access_key_id[LF_AWSCRED_KEY_MAX];
    char secret_key[LF_AWSCRED_KEY_MAX];
    char session_token[LF_AWSCRED_TOKEN_MAX]; /* "": none */
    int64_t expires_ms; /* wall clock (ms since the epoch); 0: never */
    uint64_t gen;       /* which credentials these are; 0: none yet */
};

struct lf_awscred;

/* A provider for conf (borrowed: it must outlive the provider), its thread started when
 * the credentials are temporary; the first fetch runs there, not here. region is the
 * signing region (for STS's default endpoint). LF_ECONFIG with eb filled when a source
 * is half given (access_key_id without secret_access_key; role_arn without a token file)
 * or nothing can give credentials (imds: false and no other); LF_ENOMEM; LF_EIO. who
 * starts messages ("output archive"). */
LF_MUST_CHECK enum lf_err lf_awscred_new(const struct lf_output_conf *conf,
                                         const char *region,
                                         const char *who,
                                         struct lf_awscred **out,
                                         struct lf_errbuf *eb);

/* Stops the thread (within a second) and wipes and frees. NULL is fine. */
void lf_awscred_free(struct lf_awscred *c);

/* Brings v up to date: copies the current credentials into v unless v->gen is already
 * theirs (a mutex and a compare: cheap enough per request). LF_OK: v holds valid
 * credentials. LF_EAGAIN: none yet, or the last ones expired and the refresh keeps failing:
 * eb says why, without secrets ("output archive: no AWS credentials yet: STS answered
 * HTTP 403: AccessDenied"). Never blocks on the network. */
LF_MUST_CHECK enum lf_err
lf_awscred_get(struct lf_awscred *c, struct lf_awscred_value *v, struct lf_errbuf *eb);

/* Where the credentials come from: "config", "environment", "web identity" or "instance
 * metadata". */
const char *lf_awscred_source(const struct lf_awscred *c);

/* Asks the thread to fetch again now (a peer answered ExpiredToken or
 * InvalidClientTokenId / 403 with the current ones). A no-op for fixed credentials. */
void lf_awscred_refresh(struct lf_awscred *c);

/* The region of conf: aws_region, else $AWS_REGION, else $AWS_DEFAULT_REGION, else NULL.
 * Borrowed. */
const char *lf_awscred_region(const struct lf_output_conf *conf);

/* Wipes and frees v's copy where it was allocated; for a value on the stack, wipes it. */
void lf_awscred_value_wipe(struct lf_awscred_value *v);

#endif
