/* fields.c - the fields stage: renames, drops and adds members, addressed by dotted paths.
 *
 *   fields: {rename: {lvl: log_level}, drop: [http.request.referrer], add: {env: prod}}
 *
 * Works on the event's extra as text (the JSON members list earlier stages built): a path
 * `a.b` is member b of object member a. Per event the edits run in a fixed order - every
 * rename, then every drop, then every add, each in config order - and each one copies the
 * members into the next of three buffers the state reuses, so no allocation per event once
 * they have grown; a member added (or renamed) at the end of the list is appended to the
 * buffer the list is in, when it is one of those, instead.
 *
 *   rename from: to   from missing: nothing. to present already: nothing (the member there
 *                     keeps its value, as ndjson's without overwrite_keys does, and from
 *                     stays). Else from moves to to; to's missing parents are created.
 *                     to "message": a string member replaces the message.
 *   drop path         removes the member; missing: nothing. A parent left empty stays {}.
 *   add path: value   present already: nothing (the earlier value wins). Else added, with
 *                     its missing parents; value is any JSON value from the config.
 *
 * A path whose parent is not an object (add a.b when a is a string) is left alone. Paths
 * at the agent's own keys (@timestamp, log, input, host, fields) and at message (but as a
 * rename's destination) are config errors: they are not members a stage edits. */
#include "config.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stage_int.h"

enum fop_kind {
    OP_RENAME,
    OP_DROP,
    OP_ADD
};

struct fop {
    enum fop_kind kind;
    char *path; /* owned; escaped dotted path */
    size_t path_len;
    char *arg; /* owned; rename: the escaped destination path; add: the JSON value */
    size_t arg_len;
    bool to_message; /* rename to the message */
};

struct fields_spec {
    struct lf_stage_head head;
    json_t *add;     /* owned; {path: value}, or NULL */
    json_t *rename;  /* owned; {path: new path}, or NULL */
    struct fop *ops; /* owned; renames, drops, adds */
    size_t n_ops;
};

struct fields_state {
    struct lf_stage_head head;
    struct lf_buf bufs[3]; /* the members, edited from one into the next */
    struct lf_buf message; /* a message set by a rename */
};

/* Frees what build() made. */
static void release(void *spec)
{
    struct fields_spec *sp = spec;
    for (size_t i = 0; sp->ops != NULL && i < sp->n_ops; i++) {
        free(sp->ops[i].path);
        free(sp->ops[i].arg);
    }
    free(sp->ops);
}

/* Checks a dotted path from the config: what, for the message, names the setting. */
static enum lf_err
check_path(const char *what, const char *p, bool message_ok, struct lf_errbuf *eb)
{
    size_t n = strlen(p);
    bool control = false;
    for (size_t i = 0; i < n; i++)
        control = control || (unsigned char)p[i] < 0x20;
    if (n == 0 || control || p[0] == '.' || p[n - 1] == '.' || strstr(p, "..") != NULL)
        return lf_fail(eb, LF_ECONFIG, "fields: %s \"%s\": expected a dotted path such as a.b",
                       what, p);
    const char *dot = strchr(p, '.');
    size_t first = dot != NULL ? (size_t)(dot - p) : n;
    if (lf_stage__is_encoder_key(p, first) ||
        (first == 7 && memcmp(p, "message", 7) == 0 && !(message_ok && dot == NULL)))
        return lf_fail(eb, LF_ECONFIG,
                       "fields: %s \"%s\": the agent writes that key itself; it is no member", what,
                       p);
    return LF_OK;
}

/* *out = p JSON-escaped (dots stay dots), owned. */
static enum lf_err escaped(const char *p, char **out, size_t *len)
{
    struct lf_buf b;
    lf_buf_init(&b, SIZE_MAX);
    enum lf_err err = lf_json_escape(&b, lf_str_make(p, strlen(p)));
    if (!err)
        err = lf_buf_append(&b, "", 1);
    if (err) {
        lf_buf_release(&b);
        return LF_ENOMEM;
    }
    *out = b.ptr;
    *len = b.len - 1;
    return LF_OK;
}

static enum lf_err add_op(
    struct fields_spec *sp, enum fop_kind kind, const char *path, const char *arg, bool arg_is_path)
{
    struct fop *op = &sp->ops[sp->n_ops++];
    op->kind = kind;
    enum lf_err err = escaped(path, &op->path, &op->path_len);
    if (!err && arg != NULL && arg_is_path) {
        err = escaped(arg, &op->arg, &op->arg_len);
        op->to_message = strcmp(arg, "message") == 0;
    } else if (!err && arg != NULL) {
        op->arg = strdup(arg);
        op->arg_len = strlen(arg);
        err = op->arg != NULL ? LF_OK : LF_ENOMEM;
    }
    return err;
}

static enum lf_err fill(struct fields_spec *sp,
                        const struct lf_parser_conf *pc,
                        json_t *add,
                        json_t *rename,
                        struct lf_errbuf *eb)
{
    const char *key;
    json_t *v;
    enum lf_err err = LF_OK;
    json_object_foreach(rename, key, v)
    {
        const char *to = json_string_value(v);
        if (to == NULL)
            return lf_fail(eb, LF_ECONFIG, "fields: rename \"%s\": the new name must be a string",
                           key);
        err = check_path("rename", key, false, eb);
        err = err ? err : check_path("rename to", to, true, eb);
        err = err ? err : add_op(sp, OP_RENAME, key, to, true);
        if (err)
            return err;
    }
    for (size_t i = 0; i < pc->u.fields.n_drop && !err; i++) {
        err = check_path("drop", pc->u.fields.drop[i], false, eb);
        err = err ? err : add_op(sp, OP_DROP, pc->u.fields.drop[i], NULL, false);
    }
    json_object_foreach(add, key, v)
    {
        if (err)
            break;
        err = check_path("add", key, false, eb);
        char *text = err ? NULL : json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        if (!err && text == NULL)
            err = LF_ENOMEM;
        err = err ? err : add_op(sp, OP_ADD, key, text, false);
        free(text);
    }
    return err;
}

/* Turns the options into the list of edits, after the rows. */
static enum lf_err build(void *spec, const struct lf_parser_conf *pc, struct lf_errbuf *eb)
{
    struct fields_spec *sp = spec;
    size_t n = (sp->add != NULL ? json_object_size(sp->add) : 0) +
               (sp->rename != NULL ? json_object_size(sp->rename) : 0) + pc->u.fields.n_drop;
    if (n == 0)
        return lf_fail(eb, LF_ECONFIG, "fields: give at least one of add, drop or rename");
    sp->ops = calloc(n + 1, sizeof(*sp->ops));
    return sp->ops != NULL ? fill(sp, pc, sp->add, sp->rename, eb) : LF_ENOMEM;
}

#define S struct fields_spec
static const struct lf_stage_opt opts[] = {
    LF_STAGE_TEXT("add", LF_STAGE_OPT_JSON, S, add, u.fields.add_json, NULL,
                  "add must be a mapping of paths"),
    LF_STAGE_TEXT("rename", LF_STAGE_OPT_JSON, S, rename, u.fields.rename_json, NULL,
                  "rename must be a mapping of paths"),
    LF_STAGE_OPT_END,
};
#undef S
#define B(f) LF_STAGE_BUF(struct fields_state, f)
static const struct lf_stage_slot slots[] = {
    B(bufs[0]), B(bufs[1]), B(bufs[2]), B(message), LF_STAGE_SLOT_END,
};
#undef B
static const struct lf_stage_table table = {
    .name = "fields",
    .opts = opts,
    .spec_size = sizeof(struct fields_spec),
    .build = build,
    .release = release,
    .state_size = sizeof(struct fields_state),
    .slots = slots,
};

/* ---- edits on a members list: each writes cur, edited, into dst ---- */

static bool is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* cur without member (a slice of it), and the comma that joined it to its neighbours. */
static enum lf_err remove_member(struct lf_str cur, struct lf_str member, struct lf_buf *dst)
{
    size_t s = (size_t)(member.ptr - cur.ptr);
    size_t e = s + member.len;
    size_t i = s;
    while (i > 0 && is_ws(cur.ptr[i - 1]))
        i--;
    if (i > 0 && cur.ptr[i - 1] == ',') {
        s = i - 1;
    } else {
        size_t j = e;
        while (j < cur.len && is_ws(cur.ptr[j]))
            j++;
        if (j < cur.len && cur.ptr[j] == ',')
            e = j + 1;
    }
    lf_buf_reset(dst);
    enum lf_err err = lf_buf_append(dst, cur.ptr, s);
    return err ? err : lf_buf_append(dst, cur.ptr + e, cur.len - e);
}

/* True when the list (or object body) from..to holds anything but blanks. */
static bool has_members(const char *from, const char *to)
{
    for (; from < to; from++) {
        if (!is_ws(*from))
            return true;
    }
    return false;
}

/* cur, where path is known to be missing, with value added at path. cur is the bytes of
 * holds (NULL: of no buffer of ours); when the new member goes at its end, it is appended
 * to holds in place, else cur is copied into dst with it. Returns the buffer that has the
 * result; NULL (nothing written) when a parent in the way is not an object. */
static struct lf_buf *insert_absent(struct lf_str cur,
                                    struct lf_buf *holds,
                                    struct lf_str path,
                                    struct lf_str value,
                                    struct lf_buf *dst,
                                    enum lf_err *err)
{
    struct lf_str m;
    struct lf_str v;
    size_t at = cur.len; /* where the new member goes */
    bool comma = has_members(cur.ptr, cur.ptr + cur.len);
    struct lf_str rest = path; /* the segments to create */
    for (size_t k = path.len; k > 0; k--) {
        if (path.ptr[k - 1] != '.')
            continue;
        if (!lf_stage__json_find(cur, lf_str_make(path.ptr, k - 1), &m, &v))
            continue;
        if (v.len < 2 || v.ptr[0] != '{')
            return NULL;
        at = (size_t)(v.ptr + v.len - 1 - cur.ptr);
        comma = has_members(v.ptr + 1, v.ptr + v.len - 1);
        rest = lf_str_make(path.ptr + k, path.len - k);
        break;
    }
    if (holds != NULL && at == cur.len) {
        dst = holds; /* cur is its bytes already */
        *err = LF_OK;
    } else {
        lf_buf_reset(dst);
        *err = lf_buf_append(dst, cur.ptr, at);
    }
    if (!*err && comma)
        *err = lf_buf_append(dst, ",", 1);
    size_t depth = 0;
    while (!*err) {
        const char *dot = memchr(rest.ptr, '.', rest.len);
        size_t seg = dot != NULL ? (size_t)(dot - rest.ptr) : rest.len;
        bool first = true;
        *err = lf_stage__append_key(dst, &first, rest.ptr, seg);
        if (dot == NULL)
            break;
        if (!*err)
            *err = lf_buf_append(dst, "{", 1);
        depth++;
        rest = lf_str_make(dot + 1, rest.len - seg - 1);
    }
    if (!*err)
        *err = lf_buf_append_str(dst, value);
    while (!*err && depth-- > 0)
        *err = lf_buf_append(dst, "}", 1);
    if (!*err)
        *err = lf_buf_append(dst, cur.ptr + at, cur.len - at);
    return dst;
}

/* insert_absent(), when path is not there already (else NULL). */
static struct lf_buf *insert_member(struct lf_str cur,
                                    struct lf_buf *holds,
                                    struct lf_str path,
                                    struct lf_str value,
                                    struct lf_buf *dst,
                                    enum lf_err *err)
{
    struct lf_str m;
    struct lf_str v;
    if (lf_stage__json_find(cur, path, &m, &v))
        return NULL;
    return insert_absent(cur, holds, path, value, dst, err);
}

/* The three buffers: cur is the members so far, the others are free. */
struct edit {
    struct fields_state *st;
    struct lf_str cur;
    size_t at; /* index of the buffer cur lies in; 3 while cur is the event's own */
};

static struct lf_buf *spare(struct edit *ed, size_t skip)
{
    for (size_t i = 0; i < 3; i++) {
        if (i != ed->at && i != skip)
            return &ed->st->bufs[i];
    }
    return NULL;
}

/* b's bytes; never a NULL pointer (a buffer that has not grown yet has none). */
static struct lf_str text_of(const struct lf_buf *b)
{
    return b->ptr != NULL ? lf_buf_str(b) : lf_str_make("", 0);
}

static void take(struct edit *ed, struct lf_buf *b)
{
    ed->at = (size_t)(b - ed->st->bufs);
    ed->cur = text_of(b);
}

static enum lf_err
rename_member(struct edit *ed, const struct fop *op, struct lf_event *e, const char **why)
{
    struct lf_str m;
    struct lf_str v;
    if (!lf_stage__json_find(ed->cur, lf_str_make(op->path, op->path_len), &m, &v))
        return LF_OK;
    struct fields_state *st = ed->st;
    struct lf_buf *removed = spare(ed, 3);
    enum lf_err err = LF_OK;
    if (op->to_message) {
        lf_buf_reset(&st->message);
        if (v.len < 2 || v.ptr[0] != '"' ||
            !lf_stage__json_unescape(lf_str_make(v.ptr + 1, v.len - 2), &st->message)) {
            *why = "fields: only a string member can become the message";
            return LF_OK;
        }
        e->message = lf_buf_str(&st->message);
        if (e->message.ptr == NULL)
            e->message = lf_str_make("", 0);
        err = remove_member(ed->cur, m, removed);
        if (!err)
            take(ed, removed);
        return err;
    }
    struct lf_str dm; /* not m, v: a lookup that fails part-way leaves the parent there */
    struct lf_str dv;
    if (lf_stage__json_find(ed->cur, lf_str_make(op->arg, op->arg_len), &dm, &dv))
        return LF_OK; /* the destination keeps its value */
    err = remove_member(ed->cur, m, removed);
    struct lf_buf *moved = spare(ed, (size_t)(removed - st->bufs));
    /* The destination was missing, and taking from away does not add it. v stays valid: it
     * lies in cur, which neither removed nor moved is. */
    struct lf_buf *got = NULL;
    if (!err)
        got = insert_absent(text_of(removed), removed, lf_str_make(op->arg, op->arg_len), v,
                            moved, &err);
    if (!err && got != NULL)
        take(ed, got);
    return err;
}

static enum lf_err
run(const struct fields_spec *sp, struct edit *ed, struct lf_event *e, const char **why)
{
    enum lf_err err = LF_OK;
    for (size_t i = 0; i < sp->n_ops && !err; i++) {
        const struct fop *op = &sp->ops[i];
        struct lf_str path = lf_str_make(op->path, op->path_len);
        struct lf_buf *dst = spare(ed, 3);
        struct lf_str m;
        struct lf_str v;
        if (op->kind == OP_RENAME) {
            err = rename_member(ed, op, e, why);
        } else if (op->kind == OP_DROP) {
            if (lf_stage__json_find(ed->cur, path, &m, &v)) {
                err = remove_member(ed->cur, m, dst);
                if (!err)
                    take(ed, dst);
            }
        } else {
            struct lf_buf *holds = ed->at < 3 ? &ed->st->bufs[ed->at] : NULL;
            struct lf_buf *got = insert_member(ed->cur, holds, path,
                                               lf_str_make(op->arg, op->arg_len), dst, &err);
            if (!err && got != NULL)
                take(ed, got);
        }
    }
    return err;
}

static enum lf_err process(const void *spec,
                           void *state,
                           const struct lf_event *ev,
                           int64_t now_ms,
                           const struct lf_stage_out *out)
{
    const struct fields_spec *sp = spec;
    struct fields_state *st = state;
    (void)now_ms;
    struct lf_event e = *ev;
    const char *why = NULL;
    struct edit ed = { st, ev->extra.ptr != NULL ? ev->extra : lf_str_make("", 0), 3 };
    enum lf_err err = run(sp, &ed, &e, &why);
    if (!err && why != NULL && !lf_stage__extra_has(ed.cur, "error", 5)) {
        struct lf_buf *dst = spare(&ed, 3);
        lf_buf_reset(dst);
        err = lf_buf_append_str(dst, ed.cur);
        if (!err)
            err = lf_stage__append_error(dst, why);
        if (!err)
            take(&ed, dst);
    }
    e.extra = ed.cur;
    return err ? err : out->emit(out->arg, &e);
}

const struct lf_stage_ops lf_stage_fields = {
    .kind = LF_PARSER_FIELDS,
    LF_STAGE_TABLE_OPS(table),
    .process = process,
};
