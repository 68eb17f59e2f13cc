/* env.c - the values ${VAR} put into a config, and scrubbing them out of text.
 *
 * A value from the environment may be a secret (a token, a password, a SASL mechanism an
 * attacker should not learn). The loader never shows one in its own messages (it says
 * `from ${VAR}`); text it does not write itself (librdkafka's "Unsupported SASL mechanism:
 * <value>", a libcurl error naming a host or file) is scrubbed here before it is logged. */
#include "config.h"

#include "logferry/config.h"

#include <stdlib.h>
#include <string.h>

#include "config_int.h"

enum lf_err
lf_conf__env_add(struct lf_env_values *env, const char *name, size_t name_len, const char *value)
{
    for (size_t i = 0; i < env->n; i++) {
        if (strlen(env->v[i].name) == name_len && memcmp(env->v[i].name, name, name_len) == 0)
            return LF_OK;
    }
    struct lf_env_value *v = realloc(env->v, (env->n + 1) * sizeof(*v));
    if (v == NULL)
        return LF_ENOMEM;
    env->v = v;
    char *n = strndup(name, name_len);
    char *val = strdup(value);
    if (n == NULL || val == NULL) {
        free(n);
        free(val);
        return LF_ENOMEM;
    }
    env->v[env->n++] = (struct lf_env_value){ .name = n, .value = val };
    return LF_OK;
}

void lf_conf__env_release(struct lf_env_values *env)
{
    for (size_t i = 0; i < env->n; i++) {
        free(env->v[i].name);
        free(env->v[i].value);
    }
    free(env->v);
    *env = (struct lf_env_values){ 0 };
}

enum lf_err lf_conf__env_copy(struct lf_env_values *dst, const struct lf_env_values *src)
{
    lf_conf__env_release(dst);
    for (size_t i = 0; i < src->n; i++) {
        const struct lf_env_value *v = &src->v[i];
        if (lf_conf__env_add(dst, v->name, strlen(v->name), v->value)) {
            lf_conf__env_release(dst);
            return LF_ENOMEM;
        }
    }
    return LF_OK;
}

/* The longest value of env found at p (at most left bytes), or NULL. The longest first, so
 * a value that holds another (a URL and its password) is replaced whole. */
static const struct lf_env_value *
match_at(const struct lf_env_values *env, const char *p, size_t left)
{
    const struct lf_env_value *best = NULL;
    size_t best_len = 0;
    for (size_t i = 0; i < env->n; i++) {
        size_t len = strlen(env->v[i].value);
        if (len >= LF_SCRUB_MIN_BYTES && len <= left && len > best_len &&
            memcmp(p, env->v[i].value, len) == 0) {
            best = &env->v[i];
            best_len = len;
        }
    }
    return best;
}

void lf_config_scrub(const struct lf_env_values *env, char *text, size_t cap)
{
    if (env == NULL || env->n == 0 || cap == 0)
        return;
    char local[2048];
    char *out = cap <= sizeof(local) ? local : malloc(cap);
    if (out == NULL) {
        text[0] = '\0'; /* no room to scrub: say nothing rather than a secret */
        return;
    }
    size_t len = strlen(text);
    size_t o = 0;
    for (size_t i = 0; i < len && o + 1 < cap;) {
        const struct lf_env_value *v = match_at(env, text + i, len - i);
        if (v == NULL) {
            out[o++] = text[i++];
            continue;
        }
        size_t room = cap - 1 - o;
        size_t n = strlen(v->name) + 3;
        char ref[300];
        snprintf(ref, sizeof(ref), "${%s}", v->name);
        n = n < sizeof(ref) ? n : sizeof(ref) - 1;
        memcpy(out + o, ref, n < room ? n : room);
        o += n < room ? n : room;
        i += strlen(v->value);
    }
    out[o] = '\0';
    memcpy(text, out, o + 1);
    if (out != local)
        free(out);
}
