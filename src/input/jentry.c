/* jentry.c - one journal entry's data items to the message and the "journald" member (see
 * jentry.h and docs/journald.md).
 *
 * An item is classified by its name: MESSAGE, one of the fifteen mapped fields (a switch on
 * the name's length, then at most one memcmp), an address field ("__..."), or any other
 * field, which matters only when include_fields is set. Each mapped field keeps the last
 * four values it saw and their rendered members, so a unit, boot id or hostname seen lately
 * costs a memcmp or two. Other field names are interned in a small hash table
 * with their include/exclude decision and their custom name; custom names are interned in a
 * second one holding the rendered key ("container_name":) and the stamp of the last entry
 * that used it, so a name two fields give keeps the first.
 *
 * Owns all its buffers and tables; the lf_input_conf is borrowed. One thread at a time. */
#include "config.h"

#include "logferry/jentry.h"

#include <stdlib.h>
#include <string.h>

#include "logferry/event.h"
#include "logferry/utf8.h"

/* The mapped fields, in the order their members are written. */
enum field {
    F_PRIORITY,
    F_FACILITY,
    F_UNIT,
    F_USER_UNIT,
    F_PID,
    F_UID,
    F_GID,
    F_COMM,
    F_EXE,
    F_CMDLINE,
    F_HOSTNAME,
    F_BOOT_ID,
    F_MACHINE_ID,
    F_TRANSPORT,
    F_IDENTIFIER,
    F_MAPPED, /* how many there are */
    F_MESSAGE = F_MAPPED,
    F_ADDRESS, /* "__CURSOR" and the like: never in the event */
    F_OTHER,
};

struct mapped_field {
    const char *name;   /* the journal's */
    const char *member; /* `"name":` as rendered */
};

static const struct mapped_field mapped[F_MAPPED] = {
    [F_PRIORITY] = { "PRIORITY", "\"priority\":" },
    [F_FACILITY] = { "SYSLOG_FACILITY", "\"facility\":" },
    [F_UNIT] = { "_SYSTEMD_UNIT", "\"unit\":" },
    [F_USER_UNIT] = { "_SYSTEMD_USER_UNIT", "\"user_unit\":" },
    [F_PID] = { "_PID", "\"pid\":" },
    [F_UID] = { "_UID", "\"uid\":" },
    [F_GID] = { "_GID", "\"gid\":" },
    [F_COMM] = { "_COMM", "\"comm\":" },
    [F_EXE] = { "_EXE", "\"exe\":" },
    [F_CMDLINE] = { "_CMDLINE", "\"cmdline\":" },
    [F_HOSTNAME] = { "_HOSTNAME", "\"hostname\":" },
    [F_BOOT_ID] = { "_BOOT_ID", "\"boot_id\":" },
    [F_MACHINE_ID] = { "_MACHINE_ID", "\"machine_id\":" },
    [F_TRANSPORT] = { "_TRANSPORT", "\"transport\":" },
    [F_IDENTIFIER] = { "SYSLOG_IDENTIFIER", "\"syslog_identifier\":" },
};

static const char *const priority_names[8] = { "emerg",   "alert",  "crit", "err",
                                               "warning", "notice", "info", "debug" };

static const char *const facility_names[24] = {
    "kern",   "user",   "mail",     "daemon", "auth",   "syslog",   "lpr",     "news",
    "uucp",   "cron",   "authpriv", "ftp",    "ntp",    "security", "console", "solaris-cron",
    "local0", "local1", "local2",   "local3", "local4", "local5",   "local6",  "local7",
};

static const char replacement[3] = { '\xEF', '\xBF', '\xBD' }; /* U+FFFD */

/* One value of a mapped field and its member. */
struct way {
    struct lf_buf raw;    /* the value */
    struct lf_buf member; /* `"unit":"ssh.service"` for it */
    bool valid;           /* raw and member hold a value */
};

/* A mapped field's last few values and their members, kept across entries: entries of a
 * handful of services interleave, so one value would miss most of the time. */
#define WAYS 4
struct slot {
    struct way ways[WAYS];
    unsigned next;  /* the way the next new value replaces (round robin) */
    unsigned cur;   /* the way the current entry's value is in */
    uint64_t stamp; /* == lf_jentry.gen: the current entry has the field */
};

/* The key of an interned name: its bytes are names.ptr[off, off + len). */
struct ikey {
    uint32_t hash;
    uint32_t off;
    uint32_t len;
};

/* A field name other than the mapped ones, MESSAGE and the address fields. */
struct fname {
    struct ikey k;
    uint32_t custom; /* index in cnames + 1, or 0: not under journald.custom */
};

/* A custom name (field name lower-cased without its leading underscores). */
struct cname {
    struct ikey k;
    uint32_t key_off; /* names.ptr[key_off, key_off + key_len): `"name":` */
    uint32_t key_len;
    uint64_t stamp; /* == lf_jentry.gen: the current entry has the member already */
};

/* Open addressing over an array of entries that each start with a struct ikey. */
struct itab {
    uint32_t *slots; /* owned; 0 empty, else an entry's index + 1 */
    size_t mask;     /* slots - 1 (a power of two) */
    size_t n;        /* entries */
};

#define ITAB_FIRST     64
#define NAMES_MAX      4096              /* interned field names kept across entries */
#define ARENA_MAX      ((size_t)1 << 20) /* their bytes */
#define BUF_MAX        (SIZE_MAX / 4)
#define NAME_MAX_BYTES 256 /* longer field names (journald allows 64) are left out */

struct lf_jentry {
    const struct lf_input_conf *in; /* borrowed */
    uint64_t gen;                   /* the current entry's number */
    uint32_t excluded;              /* a bit per mapped field in exclude_fields */
    bool custom_any;                /* include_fields is not empty */
    bool custom_all;                /* include_fields has "*" */
    struct slot slots[F_MAPPED];

    /* The current entry. */
    int64_t timestamp_ns;
    bool have_message;
    bool over;
    uint64_t invalid;
    uint64_t bytes;
    struct lf_buf message; /* MESSAGE as UTF-8, at most max_line_bytes */
    struct lf_buf custom;  /* the custom members so far, comma-separated */
    struct lf_buf extra;   /* the rendered "journald" member */

    /* The interned names, kept across entries up to NAMES_MAX / ARENA_MAX. */
    struct lf_buf names; /* key bytes and rendered keys */
    struct lf_buf scratch;
    struct fname *fnames; /* owned */
    size_t fnames_cap;
    struct itab ftab;
    struct cname *cnames; /* owned */
    size_t cnames_cap;
    struct itab ctab;
};

/* A constant length, so the compiler compares in a few loads, no call. */
#define IS(lit) (memcmp(n, lit, sizeof(lit) - 1) == 0)

/* Which field n[0, len) is: at most one memcmp for a mapped one. */
static enum field classify(const char *n, size_t len)
{
    enum field f = F_OTHER;
    switch (len) {
    case 4:
        if (n[0] == '_' && n[2] == 'I' && n[3] == 'D')
            f = n[1] == 'P' ? F_PID : n[1] == 'U' ? F_UID : n[1] == 'G' ? F_GID : F_OTHER;
        else if (IS("_EXE"))
            f = F_EXE;
        break;
    case 5:
        f = IS("_COMM") ? F_COMM : F_OTHER;
        break;
    case 7:
        f = IS("MESSAGE") ? F_MESSAGE : F_OTHER;
        break;
    case 8:
        if (n[1] == 'R')
            f = IS("PRIORITY") ? F_PRIORITY : F_OTHER;
        else if (n[1] == 'C')
            f = IS("_CMDLINE") ? F_CMDLINE : F_OTHER;
        else if (n[1] == 'B')
            f = IS("_BOOT_ID") ? F_BOOT_ID : F_OTHER;
        break;
    case 9:
        f = IS("_HOSTNAME") ? F_HOSTNAME : F_OTHER;
        break;
    case 10:
        f = IS("_TRANSPORT") ? F_TRANSPORT : F_OTHER;
        break;
    case 11:
        f = IS("_MACHINE_ID") ? F_MACHINE_ID : F_OTHER;
        break;
    case 13:
        f = IS("_SYSTEMD_UNIT") ? F_UNIT : F_OTHER;
        break;
    case 15:
        f = IS("SYSLOG_FACILITY") ? F_FACILITY : F_OTHER;
        break;
    case 17:
        f = IS("SYSLOG_IDENTIFIER") ? F_IDENTIFIER : F_OTHER;
        break;
    case 18:
        f = IS("_SYSTEMD_USER_UNIT") ? F_USER_UNIT : F_OTHER;
        break;
    default:
        break;
    }
    if (f == F_OTHER && len >= 2 && n[0] == '_' && n[1] == '_')
        f = F_ADDRESS;
    return f;
}

#undef IS

/* FNV-1a. */
static uint32_t hash_bytes(const char *p, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)p[i]) * 16777619u;
    return h;
}

/* ---- intern tables ---- */

static const struct ikey *ikey_at(const void *entries, size_t stride, uint32_t slot)
{
    return (const struct ikey *)((const char *)entries + (size_t)(slot - 1) * stride);
}

/* The slot holding the key p[0, n) (hash h), or the empty slot where it would go. */
static uint32_t *itab_find(const struct itab *t,
                           const char *arena,
                           const void *entries,
                           size_t stride,
                           const char *p,
                           size_t n,
                           uint32_t h)
{
    size_t i = h & t->mask;
    for (;;) {
        uint32_t *s = &t->slots[i];
        if (*s == 0)
            return s;
        const struct ikey *k = ikey_at(entries, stride, *s);
        if (k->hash == h && k->len == n && memcmp(arena + k->off, p, n) == 0)
            return s;
        i = (i + 1) & t->mask;
    }
}

/* Makes room for one more entry (load at most one half), rehashing into twice the slots. */
static enum lf_err itab_reserve(struct itab *t, const void *entries, size_t stride)
{
    if (t->slots != NULL && (t->n + 1) * 2 <= t->mask + 1)
        return LF_OK;
    size_t count = t->slots == NULL ? ITAB_FIRST : (t->mask + 1) * 2;
    uint32_t *slots = calloc(count, sizeof(*slots));
    if (slots == NULL)
        return LF_ENOMEM;
    for (size_t e = 0; e < t->n; e++) {
        size_t i = ikey_at(entries, stride, (uint32_t)e + 1)->hash & (count - 1);
        while (slots[i] != 0)
            i = (i + 1) & (count - 1);
        slots[i] = (uint32_t)e + 1;
    }
    free(t->slots);
    t->slots = slots;
    t->mask = count - 1;
    return LF_OK;
}

static void itab_clear(struct itab *t)
{
    if (t->slots != NULL)
        memset(t->slots, 0, (t->mask + 1) * sizeof(*t->slots));
    t->n = 0;
}

/* Copies p[0, n) into the arena as the key k. */
static enum lf_err
arena_key(struct lf_jentry *j, const char *p, size_t n, uint32_t h, struct ikey *k)
{
    k->hash = h;
    k->off = (uint32_t)j->names.len;
    k->len = (uint32_t)n;
    return lf_buf_append(&j->names, p, n);
}

/* ---- custom names ---- */

/* True when the name holds a control character: no journal's field name does, and a JSON key
 * with one (\u0000 above all) trips many readers. */
static bool has_control(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)p[i] < 0x20 || p[i] == 0x7F)
            return true;
    return false;
}

static bool listed(char *const *list, size_t n, const char *p, size_t len)
{
    for (size_t i = 0; i < n; i++)
        if (strlen(list[i]) == len && memcmp(list[i], p, len) == 0)
            return true;
    return false;
}

/* The custom name of field p[0, n) into j->scratch: lower-cased, leading underscores
 * dropped, made UTF-8 (so two names that render alike are one). */
static enum lf_err custom_name(struct lf_jentry *j, const char *p, size_t n)
{
    while (n > 0 && *p == '_') {
        p++;
        n--;
    }
    lf_buf_reset(&j->scratch);
    size_t i = 0;
    while (i < n) {
        size_t run = lf_utf8_valid_len(p + i, n - i);
        enum lf_err err = lf_buf_grow(&j->scratch, run + 3);
        if (err)
            return err;
        for (size_t k = i; k < i + run; k++) {
            char c = p[k];
            if (c >= 'A' && c <= 'Z')
                c = (char)(c - 'A' + 'a');
            j->scratch.ptr[j->scratch.len++] = c;
        }
        i += run;
        if (i < n) {
            memcpy(j->scratch.ptr + j->scratch.len, replacement, sizeof(replacement));
            j->scratch.len += sizeof(replacement);
            i++;
        }
    }
    return LF_OK;
}

/* Interns the custom name of field p[0, n); *idx its index + 1, or 0 when the name is
 * empty (a field named "_" only). */
static enum lf_err intern_custom(struct lf_jentry *j, const char *p, size_t n, uint32_t *idx)
{
    *idx = 0;
    enum lf_err err = custom_name(j, p, n);
    if (err || j->scratch.len == 0)
        return err;
    n = j->scratch.len;
    const char *name = j->scratch.ptr;
    uint32_t h = hash_bytes(name, n);
    err = itab_reserve(&j->ctab, j->cnames, sizeof(*j->cnames));
    if (err)
        return err;
    uint32_t *s = itab_find(&j->ctab, j->names.ptr, j->cnames, sizeof(*j->cnames), name, n, h);
    if (*s != 0) {
        *idx = *s;
        return LF_OK;
    }
    err = lf_array_grow(&j->cnames, &j->cnames_cap, j->ctab.n, sizeof(*j->cnames), 16);
    if (err)
        return err;
    struct cname *c = &j->cnames[j->ctab.n];
    size_t start = j->names.len;
    err = arena_key(j, name, n, h, &c->k);
    if (!err)
        err = lf_buf_append(&j->names, "\"", 1);
    if (!err)
        err = lf_json_escape(&j->names, lf_str_make(name, n));
    if (!err)
        err = lf_buf_append(&j->names, "\":", 2);
    if (err) {
        j->names.len = start;
        return err;
    }
    c->key_off = c->k.off + c->k.len;
    c->key_len = (uint32_t)(j->names.len - c->key_off);
    c->stamp = 0;
    *s = (uint32_t)++j->ctab.n;
    *idx = *s;
    return LF_OK;
}

/* The custom name index + 1 field p[0, n) goes under, 0 for none; interned on first sight. */
static enum lf_err custom_of(struct lf_jentry *j, const char *p, size_t n, uint32_t *idx)
{
    *idx = 0;
    if (n > NAME_MAX_BYTES)
        return LF_OK;
    enum lf_err err = itab_reserve(&j->ftab, j->fnames, sizeof(*j->fnames));
    if (err)
        return err;
    uint32_t h = hash_bytes(p, n);
    uint32_t *s = itab_find(&j->ftab, j->names.ptr, j->fnames, sizeof(*j->fnames), p, n, h);
    if (*s != 0) {
        *idx = j->fnames[*s - 1].custom;
        return LF_OK;
    }
    const struct lf_input_conf *in = j->in;
    uint32_t custom = 0;
    if (!has_control(p, n) && !listed(in->exclude_fields, in->n_exclude_fields, p, n) &&
        (j->custom_all || listed(in->include_fields, in->n_include_fields, p, n)))
        err = intern_custom(j, p, n, &custom);
    if (!err)
        err = lf_array_grow(&j->fnames, &j->fnames_cap, j->ftab.n, sizeof(*j->fnames), 16);
    if (!err)
        err = arena_key(j, p, n, h, &j->fnames[j->ftab.n].k);
    if (err)
        return err;
    j->fnames[j->ftab.n].custom = custom;
    *s = (uint32_t)++j->ftab.n;
    *idx = custom;
    return LF_OK;
}

static enum lf_err add_custom(
    struct lf_jentry *j, const char *name, size_t name_len, const char *value, size_t value_len)
{
    uint32_t idx = 0;
    enum lf_err err = custom_of(j, name, name_len, &idx);
    if (err || idx == 0)
        return err;
    struct cname *c = &j->cnames[idx - 1];
    if (c->stamp == j->gen)
        return LF_OK; /* a field with this name came first */
    size_t start = j->custom.len;
    if (start > 0)
        err = lf_buf_append(&j->custom, ",", 1);
    if (!err)
        err = lf_buf_append(&j->custom, j->names.ptr + c->key_off, c->key_len);
    if (!err)
        err = lf_buf_append(&j->custom, "\"", 1);
    if (!err)
        err = lf_json_escape_lossy(&j->custom, lf_str_make(value, value_len));
    if (!err)
        err = lf_buf_append(&j->custom, "\"", 1);
    if (err) {
        j->custom.len = start;
        return err;
    }
    c->stamp = j->gen;
    return LF_OK;
}

/* ---- mapped fields ---- */

/* v[0, n) as a number when it is 1-19 ASCII digits worth at most INT64_MAX: what a 64-bit
 * integer reader (Elasticsearch's long, jansson) takes without overflowing. */
static bool as_number(const char *v, size_t n, uint64_t *num)
{
    if (n == 0 || n > 19)
        return false;
    uint64_t x = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned d = (unsigned char)v[i] - '0';
        if (d > 9)
            return false;
        x = x * 10 + d; /* 19 digits cannot wrap a uint64_t */
    }
    if (x > (uint64_t)INT64_MAX)
        return false;
    *num = x;
    return true;
}

/* Appends the value: a JSON number (without leading zeros) for 1-19 digits up to INT64_MAX,
 * else a string;
 * *num is the number, or UINT64_MAX for a string. */
static enum lf_err
render_value(struct lf_buf *out, const char *v, size_t n, bool numeric, uint64_t *num)
{
    *num = UINT64_MAX;
    if (numeric && as_number(v, n, num)) {
        size_t z = 0;
        while (z + 1 < n && v[z] == '0')
            z++;
        return lf_buf_append(out, v + z, n - z);
    }
    enum lf_err err = lf_buf_append(out, "\"", 1);
    if (!err)
        err = lf_json_escape_lossy(out, lf_str_make(v, n));
    if (!err)
        err = lf_buf_append(out, "\"", 1);
    return err;
}

/* Renders field f's member (two for priority and facility) into s->member. */
static enum lf_err render_member(struct way *s, enum field f, const char *v, size_t n)
{
    bool numeric = f == F_PRIORITY || f == F_FACILITY || f == F_PID || f == F_UID || f == F_GID;
    uint64_t num;
    lf_buf_reset(&s->member);
    enum lf_err err = lf_buf_append_cstr(&s->member, mapped[f].member);
    if (!err)
        err = render_value(&s->member, v, n, numeric, &num);
    if (err)
        return err;
    const char *key = NULL;
    const char *name = NULL;
    if (f == F_PRIORITY && num < 8) {
        key = ",\"priority_name\":\"";
        name = priority_names[num];
    } else if (f == F_FACILITY && num < 24) {
        key = ",\"facility_name\":\"";
        name = facility_names[num];
    }
    if (name == NULL)
        return LF_OK;
    err = lf_buf_append_cstr(&s->member, key);
    if (!err)
        err = lf_buf_append_cstr(&s->member, name);
    if (!err)
        err = lf_buf_append(&s->member, "\"", 1);
    return err;
}

static enum lf_err add_mapped(struct lf_jentry *j, enum field f, const char *v, size_t n)
{
    struct slot *s = &j->slots[f];
    if (s->stamp == j->gen || (j->excluded & (1u << f)))
        return LF_OK;
    unsigned w = 0;
    while (w < WAYS && !(s->ways[w].valid && s->ways[w].raw.len == n &&
                         (n == 0 || memcmp(s->ways[w].raw.ptr, v, n) == 0)))
        w++;
    if (w == WAYS) {
        w = s->next;
        s->next = (w + 1) % WAYS;
        struct way *way = &s->ways[w];
        way->valid = false;
        lf_buf_reset(&way->raw);
        enum lf_err err = lf_buf_append(&way->raw, v, n);
        if (!err)
            err = render_member(way, f, v, n);
        if (err)
            return err;
        way->valid = true;
    }
    s->cur = w;
    s->stamp = j->gen;
    return LF_OK;
}

/* ---- the message ---- */

/* Appends p[0, n) (whole characters) to the message, cutting before the first character
 * that would take it past max_line_bytes (then j->over). */
static enum lf_err put(struct lf_jentry *j, const char *p, size_t n)
{
    size_t room = j->in->max_line_bytes - j->message.len;
    if (n > room) {
        while (room > 0 && ((unsigned char)p[room] & 0xC0) == 0x80)
            room--;
        n = room;
        j->over = true;
    }
    return lf_buf_append(&j->message, p, n);
}

static enum lf_err add_message(struct lf_jentry *j, const char *v, size_t n)
{
    j->have_message = true;
    j->bytes = n;
    lf_buf_reset(&j->message);
    size_t i = 0;
    while (i < n && !j->over) {
        size_t run = lf_utf8_valid_len(v + i, n - i);
        enum lf_err err = put(j, v + i, run);
        i += run;
        if (err)
            return err;
        if (i == n || j->over)
            break;
        j->invalid++;
        err = put(j, replacement, sizeof(replacement));
        if (err)
            return err;
        i++;
    }
    return LF_OK;
}

/* ---- the API ---- */

enum lf_err lf_jentry_new(const struct lf_input_conf *in, struct lf_jentry **out)
{
    struct lf_jentry *j = calloc(1, sizeof(*j));
    if (j == NULL)
        return LF_ENOMEM;
    j->in = in;
    for (size_t i = 0; i < F_MAPPED; i++) {
        for (size_t w = 0; w < WAYS; w++) {
            lf_buf_init(&j->slots[i].ways[w].raw, BUF_MAX);
            lf_buf_init(&j->slots[i].ways[w].member, BUF_MAX);
        }
    }
    lf_buf_init(&j->message, BUF_MAX);
    lf_buf_init(&j->custom, BUF_MAX);
    lf_buf_init(&j->extra, BUF_MAX);
    lf_buf_init(&j->names, BUF_MAX);
    lf_buf_init(&j->scratch, BUF_MAX);
    for (size_t i = 0; i < in->n_exclude_fields; i++) {
        const char *x = in->exclude_fields[i];
        enum field f = classify(x, strlen(x));
        if (f < F_MAPPED)
            j->excluded |= 1u << f;
    }
    for (size_t i = 0; i < in->n_include_fields; i++)
        if (strcmp(in->include_fields[i], "*") == 0)
            j->custom_all = true;
    j->custom_any = in->n_include_fields > 0;
    *out = j;
    return LF_OK;
}

void lf_jentry_free(struct lf_jentry *j)
{
    if (j == NULL)
        return;
    for (size_t i = 0; i < F_MAPPED; i++) {
        for (size_t w = 0; w < WAYS; w++) {
            lf_buf_release(&j->slots[i].ways[w].raw);
            lf_buf_release(&j->slots[i].ways[w].member);
        }
    }
    lf_buf_release(&j->message);
    lf_buf_release(&j->custom);
    lf_buf_release(&j->extra);
    lf_buf_release(&j->names);
    lf_buf_release(&j->scratch);
    free(j->fnames);
    free(j->ftab.slots);
    free(j->cnames);
    free(j->ctab.slots);
    free(j);
}

void lf_jentry_begin(struct lf_jentry *j, uint64_t realtime_usec)
{
    j->gen++;
    j->timestamp_ns =
        realtime_usec > (uint64_t)INT64_MAX / 1000 ? INT64_MAX : (int64_t)realtime_usec * 1000;
    j->have_message = false;
    j->over = false;
    j->invalid = 0;
    j->bytes = 0;
    lf_buf_reset(&j->message);
    lf_buf_reset(&j->custom);
    lf_buf_reset(&j->extra);
    if (j->ftab.n > NAMES_MAX || j->names.len > ARENA_MAX) {
        /* Too many distinct names (not a real journal's): start the tables over. */
        itab_clear(&j->ftab);
        itab_clear(&j->ctab);
        lf_buf_reset(&j->names);
    }
}

enum lf_err lf_jentry_add(struct lf_jentry *j, const void *item, size_t len)
{
    const char *p = item;
    const char *eq = len > 0 ? memchr(p, '=', len) : NULL;
    if (eq == NULL || eq == p)
        return LF_OK;
    size_t name_len = (size_t)(eq - p);
    const char *v = eq + 1;
    size_t n = len - name_len - 1;
    enum field f = classify(p, name_len);
    if (f < F_MAPPED)
        return add_mapped(j, f, v, n);
    if (f == F_MESSAGE)
        return j->have_message ? LF_OK : add_message(j, v, n);
    if (f == F_OTHER && j->custom_any)
        return add_custom(j, p, name_len, v, n);
    return LF_OK;
}

static enum lf_err render_extra(struct lf_jentry *j)
{
    struct lf_buf *x = &j->extra;
    enum lf_err err = LF_OK;
    for (size_t f = 0; f < F_MAPPED && !err; f++) {
        const struct slot *s = &j->slots[f];
        if (s->stamp != j->gen)
            continue;
        err = lf_buf_append(x, x->len == 0 ? "\"journald\":{" : ",", x->len == 0 ? 12 : 1);
        if (!err)
            err = lf_buf_append_str(x, lf_buf_str(&s->ways[s->cur].member));
    }
    if (!err && j->custom.len > 0) {
        err = lf_buf_append(x, x->len == 0 ? "\"journald\":{" : ",", x->len == 0 ? 12 : 1);
        if (!err)
            err = lf_buf_append(x, "\"custom\":{", 10);
        if (!err)
            err = lf_buf_append_str(x, lf_buf_str(&j->custom));
        if (!err)
            err = lf_buf_append(x, "}", 1);
    }
    if (!err && x->len > 0)
        err = lf_buf_append(x, "}", 1);
    return err;
}

enum lf_err lf_jentry_end(struct lf_jentry *j, struct lf_jentry_out *out)
{
    lf_buf_reset(&j->extra);
    enum lf_err err = render_extra(j);
    if (err) {
        lf_buf_reset(&j->extra);
        return err;
    }
    bool skip = j->over && j->in->line_overflow == LF_OVERFLOW_SKIP;
    out->message = skip || j->message.len == 0 ? lf_str_make("", 0) : lf_buf_str(&j->message);
    out->extra = j->extra.len == 0 ? lf_str_make("", 0) : lf_buf_str(&j->extra);
    out->timestamp_ns = j->timestamp_ns;
    out->truncated = j->over && !skip;
    out->skip = skip;
    out->invalid = j->invalid;
    out->bytes = j->bytes;
    return LF_OK;
}
