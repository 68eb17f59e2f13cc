/* keys.c - what the throttle and sample stages share: an event's key, rendered from a
 * %{field} template over the members earlier stages added (include/logferry/fields.h), and
 * the key's hash.
 *
 * The hash is fixed and seedless, so that every agent, in every run, decides alike for the
 * same key: FNV-1a (64 bits) over the key's bytes, then the 64-bit finalizer of
 * MurmurHash3 (fmix64) to spread FNV's weak low bits, since decisions take the hash modulo
 * N. docs/processing.md states it for anyone who wants to decide the same elsewhere. Any
 * thread; nothing here allocates per event once the scratch buffer has grown. */
#include "config.h"

#include <string.h>

#include "logferry/fields.h"
#include "stage_int.h"

/* The first segment of path (len bytes) when it names a key the agent writes itself or
 * the message: those are no members while stages run. */
static bool own_key(const char *path, size_t len)
{
    const char *dot = memchr(path, '.', len);
    size_t first = dot != NULL ? (size_t)(dot - path) : len;
    return lf_stage__taken_key(path, first);
}

enum lf_err
lf_stage__key_compile(const char *stage, const char *tmpl, struct lf_tmpl *t, struct lf_errbuf *eb)
{
    /* lf_tmpl_compile() words its errors for outputs: the template is checked here first. */
    for (const char *p = strstr(tmpl, "%{"); p != NULL; p = strstr(p + 2, "%{")) {
        const char *close = strchr(p + 2, '}');
        size_t col = (size_t)(p - tmpl) + 1;
        if (close == NULL || close == p + 2)
            return lf_fail(eb, LF_ECONFIG, "%s: key: %s at column %zu", stage,
                           close == NULL ? "%{ without its }" : "empty %{}", col);
        if (own_key(p + 2, (size_t)(close - p - 2)))
            return lf_fail(eb, LF_ECONFIG,
                           "%s: key: %%{%.*s} at column %zu: the agent writes that key itself "
                           "after the stages; name a member a stage adds (kubernetes.pod.name, "
                           "a decoded field)",
                           stage, (int)(close - p - 2), p + 2, col);
    }
    struct lf_errbuf sub = { "" };
    if (lf_tmpl_compile(t, tmpl, stage, "key", &sub))
        return lf_fail(eb, LF_ENOMEM, "%s: out of memory", stage);
    return LF_OK;
}

enum lf_err lf_stage__key_render(const struct lf_tmpl *t,
                                 const struct lf_event *ev,
                                 struct lf_buf *scratch,
                                 struct lf_str *key)
{
    struct lf_str members = ev->extra.ptr != NULL ? ev->extra : lf_str_make("", 0);
    /* The usual key is one field holding a plain string (a pod name, a trace id): its bytes
     * between the quotes are the key as they stand, with nothing to copy or unescape. */
    if (t->n == 1 && t->parts[0].field) {
        struct lf_str v;
        if (!lf_fields_find(members, t->parts[0].text, t->parts[0].len, &v)) {
            *key = lf_str_make("", 0);
            return LF_OK;
        }
        if (v.len >= 2 && v.ptr[0] == '"' && memchr(v.ptr + 1, '\\', v.len - 2) == NULL) {
            *key = lf_str_make(v.ptr + 1, v.len - 2);
            return LF_OK;
        }
    }
    size_t len = 0;
    lf_buf_reset(scratch);
    if (scratch->cap == 0) {
        enum lf_err err = lf_buf_grow(scratch, 64);
        if (err)
            return err;
    }
    /* A value is at most a line long: the buffer doubles until the key fits, then stays. */
    while (!lf_tmpl_render(t, members, scratch->ptr, scratch->cap, &len)) {
        enum lf_err err = lf_buf_grow(scratch, scratch->cap * 2);
        if (err)
            return err;
    }
    *key = lf_str_make(scratch->ptr, len);
    return LF_OK;
}

uint64_t lf_stage__key_hash(struct lf_str key)
{
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a 64: offset basis, then prime per byte */
    for (size_t i = 0; i < key.len; i++) {
        h ^= (unsigned char)key.ptr[i];
        h *= 0x100000001b3ull;
    }
    h ^= h >> 33; /* fmix64 */
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return h;
}
