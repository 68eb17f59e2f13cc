/* awscred_parse_int.h - the pure parts of the AWS credentials provider (awscred.c), for
 * t/unit/check_awscred: reading STS's and the instance metadata service's answers, and the
 * arithmetic of when to fetch again. No network, no threads, no clock of their own. Within
 * src/output/ and its unit test only. */
#ifndef LF_AWSCRED_PARSE_INT_H
#define LF_AWSCRED_PARSE_INT_H

#include <stddef.h>
#include <stdint.h>

#include "awscred_int.h"

#define LF_AWSCRED_EARLY_MS       (5 * 60 * 1000)  /* fetch again this long before expiry ... */
#define LF_AWSCRED_SHORT_MS       (15 * 60 * 1000) /* ... unless the life is shorter than this */
#define LF_AWSCRED_BACKOFF_MS     1000             /* the first wait after a failure, doubling */
#define LF_AWSCRED_BACKOFF_MAX_MS 60000

/* An ISO 8601 UTC time ("2026-12-03T19:20:00Z", fractions and "+00:00" accepted) of len
 * bytes, as ms since the epoch; -1 when it is not one. */
int64_t lf_awscred__parse_time(const char *s, size_t len);

/* STS's AssumeRoleWithWebIdentity answer (XML) of len bytes into v (gen untouched): LF_OK
 * with the four elements found; LF_EREJECTED with reason "Code: Message" from an
 * <Error>; LF_EINVAL with reason saying what is missing. Never copies a secret into
 * reason. */
enum lf_err lf_awscred__parse_sts(
    const char *xml, size_t len, struct lf_awscred_value *v, char *reason, size_t reason_len);

/* The instance metadata service's credentials (JSON: AccessKeyId, SecretAccessKey, Token,
 * Expiration) of len bytes into v (gen untouched): LF_OK, or LF_EINVAL with reason. */
enum lf_err lf_awscred__parse_imds(
    const char *json, size_t len, struct lf_awscred_value *v, char *reason, size_t reason_len);

/* How long after now_ms (wall clock) to fetch again credentials expiring at expires_ms: 5
 * minutes before expiry, or at two thirds of the remaining life when it is shorter than 15
 * minutes; at least a second. */
int64_t lf_awscred__refresh_in_ms(int64_t now_ms, int64_t expires_ms);

/* The wait after the failures-th failure in a row (1 for the first): 1 s doubling to 60 s,
 * then up to a fifth less by rnd (any 32 random bits). */
int64_t lf_awscred__backoff_ms(unsigned failures, uint32_t rnd);

#endif
