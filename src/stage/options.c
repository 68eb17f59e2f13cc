/* options.c - compiles a stage's options from its table, and frees, opens and closes what
 * the table says (see options.h). Any thread; nothing here runs per event. */
#include "config.h"

#include "options.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stage_int.h"

/* The field at offset off of base, as a T. */
#define AT(T, base, off)  ((T *)(void *)((char *)(base) + (off)))
#define CAT(T, base, off) ((const T *)(const void *)((const char *)(base) + (off)))

/* The list at offset off of pc. */
static char *const *list_at(const struct lf_parser_conf *pc, size_t off)
{
    char **v;
    memcpy(&v, (const char *)pc + off, sizeof(v));
    return v;
}

bool lf_stage__taken_key(const char *key, size_t len)
{
    return (len == 7 && memcmp(key, "message", 7) == 0) || lf_stage__is_encoder_key(key, len);
}

enum lf_err lf_stage__member_head(const char *s, const char *tail, char **out)
{
    struct lf_buf b;
    lf_buf_init(&b, SIZE_MAX);
    enum lf_err err = lf_buf_append(&b, "\"", 1);
    if (!err)
        err = lf_json_escape(&b, lf_str_make(s, strlen(s)));
    if (!err)
        err = lf_buf_append_cstr(&b, "\":");
    if (!err)
        err = lf_buf_append_cstr(&b, tail);
    *out = err ? NULL : strndup(b.ptr != NULL ? b.ptr : "", b.len);
    lf_buf_release(&b);
    return *out != NULL ? LF_OK : LF_ENOMEM;
}

pcre2_code *lf_stage__pcre2(const char *pattern,
                            size_t len,
                            uint32_t flags,
                            bool *jit,
                            char *why,
                            size_t why_len,
                            size_t *off)
{
    int code = 0;
    PCRE2_SIZE at = 0;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, len, flags, &code, &at, NULL);
    if (re == NULL) {
        if (pcre2_get_error_message(code, (PCRE2_UCHAR *)why, why_len) < 0)
            snprintf(why, why_len, "error %d", code);
        *off = (size_t)at;
        return NULL;
    }
    /* JIT makes matching several times faster; without it the interpreter is right. */
    *jit = pcre2_jit_compile(re, PCRE2_JIT_COMPLETE) == 0;
    return re;
}

enum lf_err
lf_stage__regex(const char *stage, const char *pattern, pcre2_code **out, struct lf_errbuf *eb)
{
    char why[256];
    size_t off = 0;
    bool jit = false;
    *out = lf_stage__pcre2(pattern, PCRE2_ZERO_TERMINATED, PCRE2_UTF, &jit, why, sizeof(why), &off);
    if (*out != NULL)
        return LF_OK;
    return lf_fail(eb, LF_ECONFIG, "%s%s%s at offset %zu of \"%s\"", stage != NULL ? stage : "",
                   stage != NULL ? ": " : "", why, off, pattern);
}

/* The error `stage: why` (`why` for a table without a name). */
static enum lf_err fail(const struct lf_stage_table *t, struct lf_errbuf *eb, const char *why)
{
    return lf_fail(eb, LF_ECONFIG, "%s%s%s", t->name != NULL ? t->name : "",
                   t->name != NULL ? ": " : "", why);
}

static enum lf_err take_target(const struct lf_stage_table *t,
                               const char *s,
                               struct lf_stage_target *to,
                               struct lf_errbuf *eb)
{
    size_t len = strlen(s);
    if (lf_stage__taken_key(s, len))
        return lf_fail(eb, LF_ECONFIG, "%s: target \"%s\" is a key every event has already",
                       t->name, s);
    to->name = strdup(s);
    to->len = len;
    enum lf_err err = to->name != NULL ? LF_OK : LF_ENOMEM;
    if (!err)
        err = len > 0 ? lf_stage__member_head(s, "{", &to->open)
                      : ((to->open = strdup("")) != NULL ? LF_OK : LF_ENOMEM);
    to->open_len = to->open != NULL ? strlen(to->open) : 0;
    return err;
}

static enum lf_err
take_names(const struct lf_stage_opt *o, const struct lf_parser_conf *pc, void *spec)
{
    char *const *from = list_at(pc, o->from);
    size_t n = *CAT(size_t, pc, o->from_n);
    struct lf_stage_name *to = calloc(n + 1, sizeof(*to));
    *AT(struct lf_stage_name *, spec, o->to) = to;
    if (to == NULL)
        return LF_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        to[i].name = strdup(from[i]);
        to[i].len = strlen(from[i]);
        if (to[i].name == NULL)
            return LF_ENOMEM;
        *AT(size_t, spec, o->to_n) = i + 1;
    }
    return LF_OK;
}

static enum lf_err take_regexes(const struct lf_stage_table *t,
                                const struct lf_stage_opt *o,
                                const struct lf_parser_conf *pc,
                                void *spec,
                                struct lf_errbuf *eb)
{
    char *const *from = list_at(pc, o->from);
    size_t n = *CAT(size_t, pc, o->from_n);
    pcre2_code **to = calloc(n + 1, sizeof(*to));
    *AT(pcre2_code **, spec, o->to) = to;
    if (to == NULL)
        return LF_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        enum lf_err err = lf_stage__regex(t->name, from[i], &to[i], eb);
        if (err)
            return err;
        *AT(size_t, spec, o->to_n) = i + 1;
    }
    return LF_OK;
}

static enum lf_err take_json(const struct lf_stage_table *t,
                             const struct lf_stage_opt *o,
                             const char *text,
                             void *spec,
                             struct lf_errbuf *eb)
{
    json_t **to = AT(json_t *, spec, o->to);
    if (text == NULL)
        return LF_OK;
    json_error_t jerr;
    *to = json_loads(text, 0, &jerr);
    if (*to != NULL && json_is_object(*to))
        return LF_OK;
    json_decref(*to);
    *to = NULL;
    return fail(t, eb, o->why);
}

/* Takes row o's option from pc into spec. */
static enum lf_err take(const struct lf_stage_table *t,
                        const struct lf_stage_opt *o,
                        const struct lf_parser_conf *pc,
                        void *spec,
                        struct lf_errbuf *eb)
{
    if (o->kind == LF_STAGE_OPT_VALUE) {
        memcpy(AT(char, spec, o->to), CAT(char, pc, o->from), o->size);
        return LF_OK;
    }
    if (o->kind == LF_STAGE_OPT_NAMES)
        return take_names(o, pc, spec);
    if (o->kind == LF_STAGE_OPT_REGEXES)
        return take_regexes(t, o, pc, spec, eb);
    const char *s = *CAT(char *, pc, o->from); /* the kinds left take a string */
    if (s == NULL && o->kind != LF_STAGE_OPT_REGEX && o->kind != LF_STAGE_OPT_JSON)
        s = o->def != NULL ? o->def : "";
    if (o->why != NULL && s != NULL && s[0] == '\0' && o->kind != LF_STAGE_OPT_JSON)
        return fail(t, eb, o->why);
    switch (o->kind) {
    case LF_STAGE_OPT_STRING:
        *AT(char *, spec, o->to) = strdup(s);
        if (o->to_n != 0)
            *AT(size_t, spec, o->to_n) = strlen(s);
        return *AT(char *, spec, o->to) != NULL ? LF_OK : LF_ENOMEM;
    case LF_STAGE_OPT_ESCAPED:
        return lf_json_escape(AT(struct lf_buf, spec, o->to), lf_str_make(s, strlen(s)));
    case LF_STAGE_OPT_TARGET:
        return take_target(t, s, AT(struct lf_stage_target, spec, o->to), eb);
    case LF_STAGE_OPT_REGEX:
        return s != NULL ? lf_stage__regex(t->name, s, AT(pcre2_code *, spec, o->to), eb) : LF_OK;
    case LF_STAGE_OPT_JSON:
    default:
        return take_json(t, o, s, spec, eb);
    }
}

/* Frees what row o made in spec. */
static void drop(const struct lf_stage_opt *o, void *spec)
{
    size_t n = o->to_n != 0 ? *AT(size_t, spec, o->to_n) : 0;
    switch (o->kind) {
    case LF_STAGE_OPT_VALUE:
        break;
    case LF_STAGE_OPT_STRING:
        free(*AT(char *, spec, o->to));
        break;
    case LF_STAGE_OPT_ESCAPED:
        lf_buf_release(AT(struct lf_buf, spec, o->to));
        break;
    case LF_STAGE_OPT_TARGET:
        free(AT(struct lf_stage_target, spec, o->to)->name);
        free(AT(struct lf_stage_target, spec, o->to)->open);
        break;
    case LF_STAGE_OPT_NAMES: {
        struct lf_stage_name *v = *AT(struct lf_stage_name *, spec, o->to);
        for (size_t i = 0; v != NULL && i < n; i++)
            free(v[i].name);
        free(v);
        break;
    }
    case LF_STAGE_OPT_REGEX:
        pcre2_code_free(*AT(pcre2_code *, spec, o->to));
        break;
    case LF_STAGE_OPT_REGEXES: {
        pcre2_code **v = *AT(pcre2_code **, spec, o->to);
        for (size_t i = 0; v != NULL && i < n; i++)
            pcre2_code_free(v[i]);
        free(v);
        break;
    }
    case LF_STAGE_OPT_JSON:
    default:
        json_decref(*AT(json_t *, spec, o->to));
        break;
    }
}

void lf_stage__free_spec(void *spec)
{
    if (spec == NULL)
        return;
    const struct lf_stage_table *t = ((struct lf_stage_head *)spec)->table;
    if (t->release != NULL)
        t->release(spec);
    for (const struct lf_stage_opt *o = t->opts; o->name != NULL; o++)
        drop(o, spec);
    free(spec);
}

enum lf_err lf_stage__compile_table(const struct lf_stage_table *t,
                                    const struct lf_parser_conf *pc,
                                    void **spec,
                                    struct lf_errbuf *eb)
{
    void *sp = calloc(1, t->spec_size);
    if (sp == NULL)
        return LF_ENOMEM;
    ((struct lf_stage_head *)sp)->table = t;
    for (const struct lf_stage_opt *o = t->opts; o->name != NULL; o++) {
        if (o->kind == LF_STAGE_OPT_ESCAPED)
            lf_buf_init(AT(struct lf_buf, sp, o->to), SIZE_MAX);
    }
    enum lf_err err = LF_OK;
    for (const struct lf_stage_opt *o = t->opts; !err && o->name != NULL; o++)
        err = take(t, o, pc, sp, eb);
    if (!err && t->build != NULL)
        err = t->build(sp, pc, eb);
    if (err) {
        lf_stage__free_spec(sp);
        return err;
    }
    *spec = sp;
    return LF_OK;
}

enum lf_err lf_stage__compile(const struct lf_parser_conf *pc, void **spec, struct lf_errbuf *eb)
{
    const struct lf_stage_ops *ops = lf_stage__find(pc->kind);
    return lf_stage__compile_table(ops->table, pc, spec, eb);
}

void lf_stage__close(void *state)
{
    if (state == NULL)
        return;
    const struct lf_stage_table *t = ((struct lf_stage_head *)state)->table;
    if (t->close != NULL)
        t->close(state);
    for (const struct lf_stage_slot *s = t->slots; s != NULL && s->off != 0; s++) {
        if (s->kind == LF_STAGE_SLOT_BUF)
            lf_buf_release(AT(struct lf_buf, state, s->off));
        else
            free(*AT(void *, state, s->off));
    }
    free(state);
}

enum lf_err lf_stage__open(const void *spec, void **state)
{
    const struct lf_stage_table *t = ((const struct lf_stage_head *)spec)->table;
    void *st = calloc(1, t->state_size > 0 ? t->state_size : sizeof(struct lf_stage_head));
    if (st == NULL)
        return LF_ENOMEM;
    ((struct lf_stage_head *)st)->table = t;
    for (const struct lf_stage_slot *s = t->slots; s != NULL && s->off != 0; s++) {
        if (s->kind == LF_STAGE_SLOT_BUF)
            lf_buf_init(AT(struct lf_buf, st, s->off), SIZE_MAX);
    }
    enum lf_err err = t->open != NULL ? t->open(spec, st) : LF_OK;
    if (err) {
        lf_stage__close(st);
        return err;
    }
    *state = st;
    return LF_OK;
}
