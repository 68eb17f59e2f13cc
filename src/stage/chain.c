/* chain.c - runs an input's stages in config order (see stage.h).
 *
 *   process(ev) ─► stage 0 ─out─► stage 1 ─out─► ... ─out─► sink
 *
 * Each stage's out points at a link {chain, next index}; emitting into the link runs the
 * next stage, or the sink after the last. A dropped event (a filter said no) skips the
 * stages after it and goes straight to the sink, so its offsets are acknowledged - unless
 * a later stage holds an unfinished event: then the dropped event is discarded, because
 * acknowledging its offset would pass the held lines (it is counted all the same, and the
 * held event's own acknowledgement covers the offsets before it).
 *
 * A stage with a `when` (include/logferry/cond.h) sees only the events its condition
 * matches; the others go on to the next stage unchanged, as if it were not there.
 *
 * An input's `routes:` are the chain's last step: each event leaves with the bits of the
 * routes it matched in ev->routes (the first match, or every match up to one without
 * `continue`), which the pipeline turns into outputs; an event whose routes all name no
 * output leaves dropped, so its offsets are still acknowledged. */
#include "config.h"

#include "logferry/stage.h"

#include "logferry/cond.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stage_int.h"

/* The stage types built so far. */
static const struct lf_stage_ops *const stage_types[] = {
    &lf_stage_include_lines, &lf_stage_exclude_lines, &lf_stage_multiline,  &lf_stage_container,
    &lf_stage_ndjson,        &lf_stage_dissect,       &lf_stage_kv,         &lf_stage_syslog,
    &lf_stage_timestamp,     &lf_stage_regex,         &lf_stage_access_log, &lf_stage_fields,
    &lf_stage_throttle,      &lf_stage_sample,        &lf_stage_redact,     &lf_stage_drop,
};

static const char *const kind_names[] = {
    [LF_PARSER_CONTAINER] = "container",
    [LF_PARSER_MULTILINE] = "multiline",
    [LF_PARSER_INCLUDE_LINES] = "include_lines",
    [LF_PARSER_EXCLUDE_LINES] = "exclude_lines",
    [LF_PARSER_NDJSON] = "ndjson",
    [LF_PARSER_DISSECT] = "dissect",
    [LF_PARSER_KV] = "kv",
    [LF_PARSER_SYSLOG] = "syslog",
    [LF_PARSER_TIMESTAMP] = "timestamp",
    [LF_PARSER_REGEX] = "regex",
    [LF_PARSER_ACCESS_LOG] = "access_log",
    [LF_PARSER_FIELDS] = "fields",
    [LF_PARSER_THROTTLE] = "throttle",
    [LF_PARSER_SAMPLE] = "sample",
    [LF_PARSER_REDACT] = "redact",
    [LF_PARSER_DROP] = "drop",
};

struct spec_stage {
    const struct lf_stage_ops *ops;
    void *spec;           /* owned by ops */
    struct lf_cond *when; /* owned; NULL: the stage takes every event */
};

struct spec_route {
    char *name;           /* owned; a copy: the spec outlives the config across reloads */
    struct lf_cond *when; /* owned; NULL: every event */
    bool cont;            /* `continue:` */
    bool drops;           /* names no output */
};

struct lf_chain_spec {
    struct spec_stage *stages; /* owned */
    size_t n;
    bool has_when;             /* some stage or route has a `when`: chains need a scratch */
    struct spec_route *routes; /* owned; the input's `routes:` */
    size_t n_routes;
    uint64_t *route_events; /* owned; per route, then the default: events matched (atomic) */
};

struct link {
    struct lf_chain *chain;
    size_t next; /* index of the stage this link feeds; n = the sink */
};

struct lf_chain {
    const struct lf_chain_spec *spec; /* borrowed */
    const struct lf_stage_out *sink;  /* borrowed */
    void **states;                    /* owned; per stage */
    struct link *links;               /* owned; links[i] feeds stage i */
    struct lf_stage_out *outs;        /* owned; outs[i] is stage i's out: links[i + 1] */
    struct lf_chain_stats stats;
    int64_t now_ms;                  /* of the call in progress, for the stages it reaches */
    struct lf_cond_scratch *scratch; /* owned; NULL when no stage has a `when` */
};

const struct lf_stage_ops *lf_stage__find(enum lf_parser_kind kind)
{
    for (size_t i = 0; i < sizeof(stage_types) / sizeof(stage_types[0]); i++) {
        if (stage_types[i]->kind == kind)
            return stage_types[i];
    }
    return NULL;
}

/* True when st is a redact stage counting pattern name; *n (when not NULL) gets its count. */
static bool redact_has(const struct spec_stage *st, const char *name, uint64_t *n)
{
    const char *other;
    uint64_t c;
    for (size_t p = 0;
         st->ops->kind == LF_PARSER_REDACT && lf_stage__redact_count(st->spec, p, &other, &c);
         p++) {
        if (strcmp(other, name) == 0) {
            if (n != NULL)
                *n = c;
            return true;
        }
    }
    return false;
}

/* Compiles parser i of in into *spec with *ops, its stage; LF_ECONFIG with eb saying why. */
static enum lf_err compile_one(const struct lf_input_conf *in,
                               size_t i,
                               const struct lf_stage_ops **ops,
                               void **spec,
                               struct lf_errbuf *eb)
{
    const struct lf_parser_conf *pc = &in->parsers[i];
    *ops = lf_stage__find(pc->kind);
    if (*ops == NULL)
        return lf_fail(eb, LF_ECONFIG, "%s is not yet supported", kind_names[pc->kind]);
    return pc->kind == LF_PARSER_CONTAINER
               ? lf_stage__container_compile(pc, in->max_line_bytes, spec, eb)
               : (*ops)->compile(pc, spec, eb);
}

enum lf_err lf_chain_parser_check(const struct lf_input_conf *in, size_t i, struct lf_errbuf *eb)
{
    const struct lf_stage_ops *ops = NULL;
    void *spec = NULL;
    enum lf_err err = compile_one(in, i, &ops, &spec, eb);
    if (!err)
        ops->free_spec(spec);
    return err;
}

/* Compiles in's routes into s (conditions were checked at load; this cannot fail but for
 * memory). */
static enum lf_err compile_routes(struct lf_chain_spec *s,
                                  const struct lf_input_conf *in,
                                  size_t input_idx,
                                  struct lf_errbuf *eb)
{
    if (in->n_routes == 0)
        return LF_OK;
    s->routes = calloc(in->n_routes, sizeof(*s->routes));
    s->route_events = calloc(in->n_routes + 1, sizeof(*s->route_events));
    if (s->routes == NULL || s->route_events == NULL)
        return LF_ENOMEM;
    for (size_t r = 0; r < in->n_routes; r++) {
        const struct lf_route_conf *rc = &in->routes[r];
        struct spec_route *sr = &s->routes[r];
        s->n_routes = r + 1;
        sr->cont = rc->cont;
        sr->drops = rc->n_outputs == 0;
        sr->name = strdup(rc->name != NULL ? rc->name : "");
        if (sr->name == NULL)
            return LF_ENOMEM;
        if (rc->when == NULL)
            continue;
        struct lf_errbuf sub = { "" };
        enum lf_err err = lf_cond_compile(rc->when, strlen(rc->when), &sr->when, NULL, &sub);
        if (err)
            return lf_fail(eb, err, "inputs[%zu].routes[%zu].when: %s", input_idx, r, sub.msg);
        s->has_when = true;
    }
    return LF_OK;
}

enum lf_err lf_chain_spec_new(const struct lf_input_conf *in,
                              size_t input_idx,
                              struct lf_chain_spec **out,
                              size_t *failed,
                              struct lf_errbuf *eb)
{
    struct lf_chain_spec *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return LF_ENOMEM;
    s->stages = calloc(in->n_parsers ? in->n_parsers : 1, sizeof(*s->stages));
    if (s->stages == NULL) {
        free(s);
        return LF_ENOMEM;
    }
    for (size_t i = 0; i < in->n_parsers; i++) {
        const struct lf_stage_ops *ops = NULL;
        if (failed != NULL)
            *failed = i;
        struct lf_errbuf sub = { "" };
        enum lf_err err = compile_one(in, i, &ops, &s->stages[i].spec, &sub);
        if (err) {
            lf_chain_spec_free(s);
            return lf_fail(eb, err, "inputs[%zu].parsers[%zu]: %s", input_idx, i, sub.msg);
        }
        s->stages[i].ops = ops;
        s->n = i + 1;
        const char *when = in->parsers[i].when;
        if (when != NULL) {
            err = lf_cond_compile(when, strlen(when), &s->stages[i].when, NULL, &sub);
            if (err) {
                lf_chain_spec_free(s);
                return lf_fail(eb, err, "inputs[%zu].parsers[%zu].when: %s", input_idx, i, sub.msg);
            }
            s->has_when = true;
        }
    }
    enum lf_err err = compile_routes(s, in, input_idx, eb);
    if (err) {
        lf_chain_spec_free(s);
        return err;
    }
    *out = s;
    return LF_OK;
}

void lf_chain_spec_free(struct lf_chain_spec *spec)
{
    if (spec == NULL)
        return;
    for (size_t i = 0; i < spec->n; i++) {
        spec->stages[i].ops->free_spec(spec->stages[i].spec);
        lf_cond_free(spec->stages[i].when);
    }
    for (size_t i = 0; i < spec->n_routes; i++) {
        free(spec->routes[i].name);
        lf_cond_free(spec->routes[i].when);
    }
    free(spec->routes);
    free(spec->route_events);
    free(spec->stages);
    free(spec);
}

enum lf_err lf_chain_spec_routes(const struct lf_chain_spec *spec,
                                 enum lf_err (*fn)(void *arg, const char *route, uint64_t n),
                                 void *arg)
{
    enum lf_err err = LF_OK;
    for (size_t r = 0; r < spec->n_routes + (spec->n_routes > 0) && !err; r++)
        err = fn(arg, r < spec->n_routes ? spec->routes[r].name : "default",
                 __atomic_load_n(&spec->route_events[r], __ATOMIC_RELAXED));
    return err;
}

const char *lf_chain_spec_route_names(const struct lf_chain_spec *spec,
                                      uint64_t routes,
                                      char *dst,
                                      size_t dst_len)
{
    size_t at = 0;
    snprintf(dst, dst_len, "%s", routes == 0 ? "default" : "");
    for (size_t r = 0; r < spec->n_routes && at < dst_len; r++) {
        if (routes & (UINT64_C(1) << r)) {
            int n = snprintf(dst + at, dst_len - at, "%s%s", at ? "," : "", spec->routes[r].name);
            at += n > 0 ? (size_t)n : 0;
        }
    }
    return dst;
}

enum lf_err lf_chain_spec_redactions(const struct lf_chain_spec *spec,
                                     enum lf_err (*fn)(void *arg, const char *pattern, uint64_t n),
                                     void *arg)
{
    enum lf_err err = LF_OK;
    for (size_t s = 0; s < spec->n && !err; s++) {
        const struct spec_stage *st = &spec->stages[s];
        const char *name;
        uint64_t n;
        for (size_t p = 0; !err && st->ops->kind == LF_PARSER_REDACT &&
                           lf_stage__redact_count(st->spec, p, &name, &n);
             p++) {
            /* Two redact stages may name one pattern: the first one's row carries both. */
            bool seen = false;
            for (size_t t = 0; t < s && !seen; t++)
                seen = redact_has(&spec->stages[t], name, NULL);
            for (size_t t = s + 1; t < spec->n && !seen; t++) {
                uint64_t more = 0;
                if (redact_has(&spec->stages[t], name, &more))
                    n += more;
            }
            if (!seen)
                err = fn(arg, name, n);
        }
    }
    return err;
}

static bool holding_from(const struct lf_chain *c, size_t from)
{
    for (size_t i = from; i < c->spec->n; i++) {
        const struct spec_stage *st = &c->spec->stages[i];
        if (st->ops->holding != NULL && st->ops->holding(c->states[i]))
            return true;
    }
    return false;
}

/* The last step of an input with routes: ev leaves with the routes it matched. */
static enum lf_err route(struct lf_chain *c, const struct lf_event *ev)
{
    const struct lf_chain_spec *s = c->spec;
    struct lf_event routed = *ev;
    bool sent = false;
    routed.routes = 0;
    for (size_t r = 0; r < s->n_routes; r++) {
        const struct spec_route *sr = &s->routes[r];
        if (sr->when != NULL && !lf_cond_eval(sr->when, ev, c->scratch))
            continue;
        routed.routes |= UINT64_C(1) << r;
        __atomic_fetch_add(&s->route_events[r], 1, __ATOMIC_RELAXED);
        sent |= !sr->drops;
        if (!sr->cont)
            break;
    }
    if (routed.routes == 0) {
        __atomic_fetch_add(&s->route_events[s->n_routes], 1, __ATOMIC_RELAXED);
        sent = true; /* the input's outputs: at least one */
    }
    if (!sent) {
        routed.flags |= LF_EVENT_DROPPED; /* its offsets are acknowledged all the same */
        c->stats.events_filtered++;
    } else {
        c->stats.events_out++;
    }
    return c->sink->emit(c->sink->arg, &routed);
}

/* Feeds ev to stage l->next, or to the sink after the last stage. */
static enum lf_err link_emit(void *arg, const struct lf_event *ev)
{
    struct link *l = arg;
    struct lf_chain *c = l->chain;
    size_t i = l->next;
    if (ev->flags & LF_EVENT_DROPPED) {
        c->stats.events_filtered++;
        if (holding_from(c, i))
            return LF_OK;
        return c->sink->emit(c->sink->arg, ev);
    }
    if (i == c->spec->n) {
        if (c->spec->n_routes > 0)
            return route(c, ev);
        c->stats.events_out++;
        return c->sink->emit(c->sink->arg, ev);
    }
    const struct spec_stage *st = &c->spec->stages[i];
    if (st->when != NULL && !lf_cond_eval(st->when, ev, c->scratch))
        return link_emit(&c->links[i + 1], ev); /* not for this stage: passed on as it is */
    return st->ops->process(st->spec, c->states[i], ev, c->now_ms, &c->outs[i]);
}

enum lf_err lf_chain_new(const struct lf_chain_spec *spec,
                         const struct lf_stage_out *sink,
                         struct lf_chain **out)
{
    struct lf_chain *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return LF_ENOMEM;
    c->spec = spec;
    c->sink = sink;
    c->states = calloc(spec->n + 1, sizeof(*c->states));
    c->links = calloc(spec->n + 1, sizeof(*c->links));
    c->outs = calloc(spec->n + 1, sizeof(*c->outs));
    if (c->states == NULL || c->links == NULL || c->outs == NULL ||
        (spec->has_when && lf_cond_scratch_new(&c->scratch))) {
        lf_chain_free(c);
        return LF_ENOMEM;
    }
    for (size_t i = 0; i <= spec->n; i++)
        c->links[i] = (struct link){ c, i };
    for (size_t i = 0; i < spec->n; i++) {
        c->outs[i] = (struct lf_stage_out){ link_emit, &c->links[i + 1] };
        const struct spec_stage *st = &spec->stages[i];
        if (st->ops->open != NULL && st->ops->open(st->spec, &c->states[i])) {
            lf_chain_free(c);
            return LF_ENOMEM;
        }
    }
    *out = c;
    return LF_OK;
}

void lf_chain_free(struct lf_chain *c)
{
    if (c == NULL)
        return;
    if (c->states != NULL) {
        for (size_t i = 0; i < c->spec->n; i++) {
            const struct spec_stage *st = &c->spec->stages[i];
            if (st->ops->close != NULL && c->states[i] != NULL)
                st->ops->close(c->states[i]);
        }
    }
    free(c->states);
    free(c->links);
    free(c->outs);
    lf_cond_scratch_free(c->scratch);
    free(c);
}

enum lf_err lf_chain_process(struct lf_chain *c, const struct lf_event *ev, int64_t now_ms)
{
    c->stats.events_in++;
    c->now_ms = now_ms;
    return link_emit(&c->links[0], ev);
}

enum lf_err lf_chain_tick(struct lf_chain *c, int64_t now_ms, int64_t *next_ms)
{
    *next_ms = INT64_MAX;
    c->now_ms = now_ms;
    for (size_t i = 0; i < c->spec->n; i++) {
        const struct spec_stage *st = &c->spec->stages[i];
        if (st->ops->tick == NULL)
            continue;
        int64_t next = INT64_MAX;
        enum lf_err err = st->ops->tick(st->spec, c->states[i], now_ms, &c->outs[i], &next);
        if (err)
            return err;
        if (next < *next_ms)
            *next_ms = next;
    }
    return LF_OK;
}

enum lf_err lf_chain_flush(struct lf_chain *c)
{
    for (size_t i = 0; i < c->spec->n; i++) {
        const struct spec_stage *st = &c->spec->stages[i];
        if (st->ops->flush == NULL)
            continue;
        enum lf_err err = st->ops->flush(st->spec, c->states[i], &c->outs[i]);
        if (err)
            return err;
    }
    return LF_OK;
}

bool lf_chain_holding(const struct lf_chain *c)
{
    return holding_from(c, 0);
}

enum lf_err lf_stage__append_error(struct lf_buf *b, const char *why)
{
    enum lf_err err = b->len > 0 ? lf_buf_append(b, ",", 1) : LF_OK;
    if (!err)
        err = lf_buf_append_cstr(b, "\"error\":{\"message\":\"");
    if (!err)
        err = lf_buf_append_cstr(b, why);
    if (!err)
        err = lf_buf_append_cstr(b, "\"}");
    return err;
}

bool lf_stage__extra_has(struct lf_str extra, const char *key, size_t len)
{
    struct lf_str k;
    struct lf_str m;
    while (lf_stage__json_next_member(&extra, &k, &m)) {
        if (k.len == len && memcmp(k.ptr, key, len) == 0)
            return true;
    }
    return false;
}

uint64_t lf_chain_held_offset(const struct lf_chain *c)
{
    uint64_t held = UINT64_MAX;
    for (size_t i = 0; i < c->spec->n; i++) {
        const struct spec_stage *st = &c->spec->stages[i];
        if (st->ops->held_offset == NULL)
            continue;
        uint64_t off = st->ops->held_offset(c->states[i]);
        if (off < held)
            held = off;
    }
    return held;
}

const struct lf_chain_stats *lf_chain_stats(const struct lf_chain *c)
{
    return &c->stats;
}
