/* awscred.c - AWS credentials for signed requests (see awscred_int.h). */
#include "config.h"

#define LF_LOG_COMPONENT "output"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "awscred_int.h"
#include "logferry/log.h"

enum source { SRC_CONFIG, SRC_ENV, SRC_WEB_IDENTITY, SRC_IMDS };

static const char *const source_names[] = { "config", "environment", "web identity",
                                            "instance metadata" };

struct lf_awscred {
    const struct lf_output_conf *conf; /* borrowed */
    enum source src;
    uv_mutex_t mu; /* guards cur */
    struct lf_awscred_value cur;
};

static const char *env_nonempty(const char *name)
{
    const char *v = getenv(name);
    return v != NULL && v[0] != '\0' ? v : NULL;
}

const char *lf_awscred_region(const struct lf_output_conf *conf)
{
    if (conf->aws_region != NULL)
        return conf->aws_region;
    const char *r = env_nonempty("AWS_REGION");
    return r != NULL ? r : env_nonempty("AWS_DEFAULT_REGION");
}

/* Copies fixed credentials into c->cur. */
static enum lf_err set_fixed(struct lf_awscred *c, const char *akid, const char *secret,
                             const char *token, const char *who, struct lf_errbuf *eb)
{
    struct lf_awscred_value *v = &c->cur;
    if (strlen(akid) >= sizeof(v->access_key_id) || strlen(secret) >= sizeof(v->secret_key) ||
        (token != NULL && strlen(token) >= sizeof(v->session_token)))
        return lf_fail(eb, LF_ECONFIG, "%s: the AWS credentials from the %s are too long", who,
                       source_names[c->src]);
    snprintf(v->access_key_id, sizeof(v->access_key_id), "%s", akid);
    snprintf(v->secret_key, sizeof(v->secret_key), "%s", secret);
    snprintf(v->session_token, sizeof(v->session_token), "%s", token != NULL ? token : "");
    v->expires_ms = 0;
    v->gen = 1;
    return LF_OK;
}

enum lf_err lf_awscred_new(const struct lf_output_conf *conf, const char *region,
                           const char *who, struct lf_awscred **out, struct lf_errbuf *eb)
{
    (void)region;
    if ((conf->aws_access_key_id != NULL) != (conf->aws_secret_access_key != NULL))
        return lf_fail(eb, LF_ECONFIG,
                       "%s: give access_key_id and secret_access_key together, or neither",
                       who);
    struct lf_awscred *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return lf_fail(eb, LF_ENOMEM, "%s: out of memory", who);
    c->conf = conf;
    if (uv_mutex_init(&c->mu) != 0) {
        free(c);
        return lf_fail(eb, LF_EIO, "%s: cannot create a mutex", who);
    }
    enum lf_err err;
    const char *env_akid = env_nonempty("AWS_ACCESS_KEY_ID");
    const char *env_secret = env_nonempty("AWS_SECRET_ACCESS_KEY");
    if (conf->aws_access_key_id != NULL) {
        c->src = SRC_CONFIG;
        err = set_fixed(c, conf->aws_access_key_id, conf->aws_secret_access_key,
                        conf->aws_session_token, who, eb);
    } else if (env_akid != NULL && env_secret != NULL) {
        c->src = SRC_ENV;
        err = set_fixed(c, env_akid, env_secret, env_nonempty("AWS_SESSION_TOKEN"), who, eb);
    } else {
        err = lf_fail(eb, LF_ECONFIG,
                      "%s: no AWS credentials: give access_key_id and secret_access_key, or "
                      "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY",
                      who);
    }
    if (err) {
        lf_awscred_free(c);
        return err;
    }
    *out = c;
    return LF_OK;
}

void lf_awscred_free(struct lf_awscred *c)
{
    if (c == NULL)
        return;
    lf_awscred_value_wipe(&c->cur);
    uv_mutex_destroy(&c->mu);
    free(c);
}

enum lf_err lf_awscred_get(struct lf_awscred *c, struct lf_awscred_value *v, struct lf_errbuf *eb)
{
    (void)eb;
    uv_mutex_lock(&c->mu);
    if (v->gen != c->cur.gen)
        memcpy(v, &c->cur, sizeof(*v));
    uv_mutex_unlock(&c->mu);
    return LF_OK;
}

const char *lf_awscred_source(const struct lf_awscred *c)
{
    return source_names[c->src];
}

void lf_awscred_refresh(struct lf_awscred *c)
{
    (void)c;
}

void lf_awscred_value_wipe(struct lf_awscred_value *v)
{
    volatile unsigned char *p = (volatile unsigned char *)v;
    for (size_t i = 0; i < sizeof(*v); i++)
        p[i] = 0;
}
