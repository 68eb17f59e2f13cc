/* cond.c - the condition language (include/logferry/cond.h): a recursive-descent parser
 * that emits a flat program, and its evaluator.
 *
 * The program is a list of instructions over one boolean accumulator:
 *   TEST i     acc = test i on the event (a comparison, `in`, exists(), a regex)
 *   JF  to     if acc is false, jump to `to` (acc kept)
 *   JT  to     if acc is true, jump to `to`
 *   NOT        acc = !acc
 * `a and b` is a, JF end, b; `a or b` is a, JT end, b: the right side runs only when it can
 * change the answer, with no stack. Built at config load (any thread); evaluated on the
 * thread that owns the scratch, allocating nothing in the steady state.
 *
 * The member paths the tests read (up to COND_MAX_SLOTS distinct ones) are indexed: each
 * gets a slot, and a tree of their dotted segments says which members to enter. The first
 * test that needs a slot walks the event's members from where the last walk stopped,
 * filling every slot it passes, so one walk serves all the tests and a test on a field
 * already passed reads its slot. */
#include "config.h"

#include "logferry/cond.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stage_int.h"

#define COND_MAX_DEPTH   64 /* nested parentheses and `not`: the parser recurses on them */
#define COND_SCRATCH_MAX (64u * 1024 * 1024)
#define COND_MAX_SLOTS   64 /* indexed paths: one bit each in a uint64_t */
#define COND_NO_SLOT     UINT32_MAX
#define COND_NO_NODE     UINT32_MAX

bool lf_stage__cond_no_index;

enum lit_type {
    LIT_STR = 0,
    LIT_NUM,
    LIT_TRUE,
    LIT_FALSE,
    LIT_NULL
};

struct lit {
    enum lit_type type;
    char *s; /* owned; LIT_STR: the bytes, escapes undone */
    size_t len;
    double num; /* LIT_NUM */
};

enum field_kind {
    FIELD_JSON = 0,
    FIELD_MESSAGE,
    FIELD_LOG_PATH,
    FIELD_LOG_OFFSET
};

enum test_op {
    OP_EQ = 0,
    OP_NE,
    OP_LT,
    OP_LE,
    OP_GT,
    OP_GE,
    OP_IN,
    OP_EXISTS,
    OP_MATCH,
    OP_NMATCH
};

struct test {
    enum field_kind field;
    char *path; /* owned; FIELD_JSON: the dotted path */
    size_t path_len;
    size_t top_len;       /* its first segment */
    unsigned source_flag; /* input, host, fields: the LF_EVENT_OWN_* flag of that name */
    uint32_t slot;        /* FIELD_JSON: its path's slot, or COND_NO_SLOT (looked up alone) */
    enum test_op op;
    struct lit *lits; /* owned; one, or the `in` list */
    size_t n_lits;
    pcre2_code *re; /* owned; OP_MATCH, OP_NMATCH */
    bool jit;       /* re is JIT-compiled */
    bool literal;   /* re is plain text (no metacharacter): searched for as bytes */
    bool all_str;   /* every literal is a string: an escaped value is unescaped once */
};

enum ins_op {
    INS_TEST = 0,
    INS_JF,
    INS_JT,
    INS_NOT
};

struct ins {
    enum ins_op op;
    size_t arg; /* INS_TEST: the test; jumps: the target */
};

/* A segment of the indexed paths: `http.response.status_code` and `http.method` are the
 * nodes http (children response, method) and response (child status_code). */
struct node {
    const char *seg; /* borrowed from a test's path */
    size_t len;
    char seg16[16]; /* seg, zero-padded, when len <= 16: compared 16 bytes at once */
    uint32_t slot;  /* the path that ends here, or COND_NO_SLOT */
    uint32_t child; /* the first node one level down, or COND_NO_NODE */
    uint32_t next;  /* the next node at this level, or COND_NO_NODE */
    uint64_t mask;  /* the slots of this node and every node under it */
    uint64_t own;   /* the bit of slot, 0 for none */
};

struct lf_cond {
    struct ins *code; /* owned */
    size_t n_code;
    size_t cap_code;
    struct test *tests; /* owned */
    size_t n_tests;
    size_t cap_tests;
    struct node *nodes; /* owned; the top level starts at nodes[0] (when n_nodes > 0) */
    size_t n_nodes;
    size_t cap_nodes;
    size_t n_slots;
};

/* One list of members walked for one evaluation: the event's (extra) or its source's. A
 * slot is resolved once the walk has passed where its member would be: found, or absent. */
struct walk {
    bool started;
    const char *pos; /* where the walk stopped: a member's start, at the top level */
    const char *end;
    uint64_t resolved;
    uint64_t found;
    struct lf_str val[COND_MAX_SLOTS]; /* found slots' values */
};

struct lf_cond_scratch {
    pcre2_match_data *md; /* owned */
    struct lf_buf buf;    /* escaped JSON strings, unescaped */
    struct walk walks[2]; /* ev->extra, the source's tail */
};

/* ---- tokens ---- */

enum tok_type {
    TOK_END = 0,
    TOK_FIELD, /* a name: field, or a keyword (and, or, not, in, exists, true, false, null) */
    TOK_STR,
    TOK_NUM,
    TOK_OP, /* == != < <= > >= =~ !~ */
    TOK_LPAREN,
    TOK_RPAREN,
    TOK_LBRACKET,
    TOK_RBRACKET,
    TOK_COMMA,
    TOK_BAD,
};

struct tok {
    enum tok_type type;
    size_t at; /* byte offset into the text */
    size_t len;
};

struct parser {
    const char *text;
    size_t len;
    size_t pos;
    struct tok tok; /* the current token */
    struct lf_cond *c;
    struct lf_errbuf *eb;
    size_t err_at;
    enum lf_err err;
    unsigned depth;
};

static bool is_name_start(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_' || ch == '@';
}

static bool is_name_char(char ch)
{
    return is_name_start(ch) || (ch >= '0' && ch <= '9') || ch == '.' || ch == '-';
}

static bool is_digit(char ch)
{
    return ch >= '0' && ch <= '9';
}

/* Length of the JSON number at the start of p[0..n), 0 for none. */
static size_t number_len(const char *p, size_t n)
{
    size_t i = 0;
    if (i < n && p[i] == '-')
        i++;
    if (i >= n || !is_digit(p[i]))
        return 0;
    if (p[i] == '0')
        i++;
    else
        while (i < n && is_digit(p[i]))
            i++;
    if (i < n && p[i] == '.') {
        if (i + 1 >= n || !is_digit(p[i + 1]))
            return 0;
        i++;
        while (i < n && is_digit(p[i]))
            i++;
    }
    if (i < n && (p[i] == 'e' || p[i] == 'E')) {
        size_t j = i + 1;
        if (j < n && (p[j] == '+' || p[j] == '-'))
            j++;
        if (j >= n || !is_digit(p[j]))
            return 0;
        while (j < n && is_digit(p[j]))
            j++;
        i = j;
    }
    return i;
}

/* The value of the whole of s as a JSON number: false when s is not one. No allocation:
 * numbers longer than 63 bytes are not numbers here. */
static bool parse_number(struct lf_str s, double *out)
{
    /* The usual case, a whole number of up to 15 digits, is exact in a double: no strtod. */
    size_t neg = s.len > 0 && s.ptr[0] == '-';
    if (s.len > neg && s.len - neg <= 15 && (s.ptr[neg] != '0' || s.len - neg == 1)) {
        int64_t v = 0;
        size_t i = neg;
        while (i < s.len && is_digit(s.ptr[i]))
            v = v * 10 + (s.ptr[i++] - '0');
        if (i == s.len) {
            *out = neg ? -(double)v : (double)v;
            return true;
        }
    }
    char tmp[64];
    if (s.len == 0 || s.len >= sizeof(tmp) || number_len(s.ptr, s.len) != s.len)
        return false;
    memcpy(tmp, s.ptr, s.len);
    tmp[s.len] = '\0';
    *out = strtod(tmp, NULL);
    return true;
}

static void next(struct parser *p)
{
    const char *t = p->text;
    while (p->pos < p->len &&
           (t[p->pos] == ' ' || t[p->pos] == '\t' || t[p->pos] == '\n' || t[p->pos] == '\r'))
        p->pos++;
    struct tok k = { TOK_END, p->pos, 0 };
    size_t i = p->pos;
    size_t rest = p->len - i;
    if (rest == 0) {
        p->tok = k;
        return;
    }
    char ch = t[i];
    if (is_name_start(ch)) {
        size_t j = i + 1;
        while (j < p->len && is_name_char(t[j]))
            j++;
        k.type = TOK_FIELD;
        k.len = j - i;
    } else if (ch == '"' || ch == '\'') {
        size_t j = i + 1;
        while (j < p->len && t[j] != ch) {
            if (t[j] == '\\' && j + 1 < p->len)
                j++;
            j++;
        }
        k.type = j < p->len ? TOK_STR : TOK_BAD;
        k.len = j < p->len ? j + 1 - i : p->len - i;
    } else if (is_digit(ch) || (ch == '-' && rest > 1 && is_digit(t[i + 1]))) {
        k.len = number_len(t + i, rest);
        k.type =
            k.len > 0 && (i + k.len == p->len || !is_name_char(t[i + k.len])) ? TOK_NUM : TOK_BAD;
        if (k.type == TOK_BAD) {
            size_t j = i + 1;
            while (j < p->len && is_name_char(t[j]))
                j++;
            k.len = j - i;
        }
    } else if (rest >= 2 && (ch == '=' || ch == '!' || ch == '<' || ch == '>') &&
               (t[i + 1] == '=' || ((ch == '=' || ch == '!') && t[i + 1] == '~'))) {
        k.type = TOK_OP;
        k.len = 2;
    } else if (ch == '<' || ch == '>') {
        k.type = TOK_OP;
        k.len = 1;
    } else {
        static const char punct[] = "()[],";
        static const enum tok_type types[] = { TOK_LPAREN, TOK_RPAREN, TOK_LBRACKET, TOK_RBRACKET,
                                               TOK_COMMA };
        const char *at = memchr(punct, ch, sizeof(punct) - 1);
        k.type = at != NULL ? types[at - punct] : TOK_BAD;
        k.len = 1;
    }
    p->pos = i + k.len;
    p->tok = k;
}

static bool tok_is(const struct parser *p, const char *word)
{
    size_t n = strlen(word);
    return p->tok.type == TOK_FIELD && p->tok.len == n && memcmp(p->text + p->tok.at, word, n) == 0;
}

static bool is_keyword(const struct parser *p)
{
    static const char *const words[] = {
        "and", "or", "not", "in", "exists", "true", "false", "null"
    };
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
        if (tok_is(p, words[i]))
            return true;
    }
    return false;
}

/* Reports a problem at the current token: `expected WHAT, got "TOKEN"`. */
static bool fail_expected(struct parser *p, const char *what)
{
    if (p->err)
        return false;
    char got[48];
    if (p->tok.type == TOK_END) {
        snprintf(got, sizeof(got), "the end");
    } else {
        size_t n = p->tok.len < 32 ? p->tok.len : 32;
        char shown[40];
        size_t o = 0;
        for (size_t i = 0; i < n; i++) {
            char ch = p->text[p->tok.at + i];
            if ((unsigned char)ch < 0x20 || ch == 0x7f)
                ch = '?';
            shown[o++] = ch;
        }
        shown[o] = '\0';
        snprintf(got, sizeof(got), "\"%s%s\"", shown, p->tok.len > n ? "..." : "");
    }
    if (p->tok.type == TOK_BAD && p->tok.len > 0 &&
        (p->text[p->tok.at] == '"' || p->text[p->tok.at] == '\''))
        p->err = lf_fail(p->eb, LF_ECONFIG, "string not closed: expected %c before the end",
                         p->text[p->tok.at]);
    else
        p->err = lf_fail(p->eb, LF_ECONFIG, "expected %s, got %s", what, got);
    p->err_at = p->tok.at;
    return false;
}

static bool oom(struct parser *p)
{
    if (!p->err)
        p->err = LF_ENOMEM;
    return false;
}

static bool emit(struct parser *p, enum ins_op op, size_t arg, size_t *at)
{
    struct lf_cond *c = p->c;
    if (lf_array_grow(&c->code, &c->cap_code, c->n_code, sizeof(*c->code), 16))
        return oom(p);
    if (at != NULL)
        *at = c->n_code;
    c->code[c->n_code++] = (struct ins){ op, arg };
    return true;
}

/* The literal at the current token into *l (and past it). */
static bool parse_lit(struct parser *p, struct lit *l)
{
    const char *s = p->text + p->tok.at;
    size_t n = p->tok.len;
    if (p->tok.type == TOK_NUM) {
        char tmp[128];
        if (n >= sizeof(tmp))
            return fail_expected(p, "a number of at most 127 characters");
        memcpy(tmp, s, n);
        tmp[n] = '\0';
        l->type = LIT_NUM;
        l->num = strtod(tmp, NULL);
    } else if (p->tok.type == TOK_STR) {
        l->type = LIT_STR;
        l->s = malloc(n); /* never longer than the quoted text */
        if (l->s == NULL)
            return oom(p);
        char q = s[0];
        size_t o = 0;
        for (size_t i = 1; i + 1 < n; i++) {
            char ch = s[i];
            if (ch != '\\') {
                l->s[o++] = ch;
                continue;
            }
            char e = s[i + 1];
            if (q == '\'') { /* '...' is raw: only \' stands for a quote */
                if (e == '\'')
                    i++;
                l->s[o++] = e == '\'' ? '\'' : '\\';
                continue;
            }
            i++;
            static const char escapes[] = "\"\\/bfnrt";
            static const char bytes[] = "\"\\/\b\f\n\r\t";
            const char *from = strchr(escapes, e);
            if (e != '\0' && from != NULL) {
                l->s[o++] = bytes[from - escapes];
                continue;
            }
            if (e == 'u' && i + 4 < n) {
                unsigned cp = 0;
                bool ok = true;
                for (size_t k = 1; k <= 4; k++) {
                    int v = lf_stage__hexval(s[i + k]);
                    ok = ok && v >= 0;
                    cp = cp * 16 + (unsigned)(v < 0 ? 0 : v);
                }
                if (ok && (cp < 0xD800 || cp > 0xDFFF)) {
                    i += 4;
                    if (cp < 0x80) {
                        l->s[o++] = (char)cp;
                    } else if (cp < 0x800) {
                        l->s[o++] = (char)(0xC0 | (cp >> 6));
                        l->s[o++] = (char)(0x80 | (cp & 0x3F));
                    } else {
                        l->s[o++] = (char)(0xE0 | (cp >> 12));
                        l->s[o++] = (char)(0x80 | ((cp >> 6) & 0x3F));
                        l->s[o++] = (char)(0x80 | (cp & 0x3F));
                    }
                    continue;
                }
            }
            p->tok.at += i - 1;
            p->tok.len = 2;
            free(l->s);
            l->s = NULL;
            return fail_expected(p, "an escape: \\\" \\\\ \\/ \\b \\f \\n \\r \\t or \\u "
                                    "and 4 hex digits (no surrogates)");
        }
        l->len = o;
    } else if (tok_is(p, "true")) {
        l->type = LIT_TRUE;
    } else if (tok_is(p, "false")) {
        l->type = LIT_FALSE;
    } else if (tok_is(p, "null")) {
        l->type = LIT_NULL;
    } else {
        return fail_expected(p, "a value: a \"string\", a number, true, false or null");
    }
    next(p);
    return true;
}

/* The field name at the current token into t (and past it). */
static bool parse_field(struct parser *p, struct test *t)
{
    if (p->tok.type != TOK_FIELD || is_keyword(p))
        return fail_expected(p, "a field name (message, log.file.path, fields.x, ...)");
    const char *s = p->text + p->tok.at;
    size_t n = p->tok.len;
    if (s[n - 1] == '.' || memmem(s, n, "..", 2) != NULL)
        return fail_expected(p, "a field name with no empty part between dots");
    if (n == 10 && memcmp(s, "@timestamp", 10) == 0)
        return fail_expected(p, "a field: @timestamp is set when the event is sent, not "
                                "tested; test the member it was parsed from");
    static const struct {
        const char *name;
        enum field_kind kind;
    } own[] = {
        { "message", FIELD_MESSAGE },
        { "log.file.path", FIELD_LOG_PATH },
        { "log.offset", FIELD_LOG_OFFSET },
    };
    t->field = FIELD_JSON;
    for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++) {
        if (strlen(own[i].name) == n && memcmp(own[i].name, s, n) == 0)
            t->field = own[i].kind;
    }
    t->path = malloc(n + 1);
    if (t->path == NULL)
        return oom(p);
    memcpy(t->path, s, n);
    t->path[n] = '\0';
    t->path_len = n;
    const char *dot = memchr(s, '.', n);
    t->top_len = dot != NULL ? (size_t)(dot - s) : n;
    static const struct {
        const char *name;
        unsigned flag;
    } source_keys[] = {
        { "input", LF_EVENT_OWN_INPUT },
        { "host", LF_EVENT_OWN_HOST },
        { "fields", LF_EVENT_OWN_FIELDS },
    };
    for (size_t i = 0; i < sizeof(source_keys) / sizeof(source_keys[0]); i++) {
        if (strlen(source_keys[i].name) == t->top_len &&
            memcmp(source_keys[i].name, s, t->top_len) == 0)
            t->source_flag = source_keys[i].flag;
    }
    next(p);
    return true;
}

static bool compile_regex(struct parser *p, struct test *t, size_t at)
{
    int code;
    PCRE2_SIZE off;
    const struct lit *l = &t->lits[0];
    t->re = pcre2_compile((PCRE2_SPTR)l->s, l->len, PCRE2_UTF, &code, &off, NULL);
    if (t->re == NULL) {
        PCRE2_UCHAR msg[160];
        pcre2_get_error_message(code, msg, sizeof(msg));
        p->err = lf_fail(p->eb, LF_ECONFIG, "bad regex at its character %zu: %s", (size_t)off + 1,
                         (const char *)msg);
        p->err_at = at;
        return false;
    }
    /* Without JIT (an arch or a kernel that forbids it) pcre2_match() interprets. */
    t->jit = pcre2_jit_compile(t->re, PCRE2_JIT_COMPLETE) == 0;
    /* `message =~ 'timeout'`: a search for the bytes, with none of PCRE2's set-up. */
    t->literal = l->len > 0;
    for (size_t i = 0; i < l->len && t->literal; i++)
        t->literal = l->s[i] != '\0' && strchr("\\^$.|?*+()[]{}", l->s[i]) == NULL;
    return true;
}

/* One test: `field OP literal`, `field in [...]`, `field =~ 'regex'`, exists(field). */
static bool parse_test(struct parser *p)
{
    struct lf_cond *c = p->c;
    if (lf_array_grow(&c->tests, &c->cap_tests, c->n_tests, sizeof(*c->tests), 4))
        return oom(p);
    struct test *t = &c->tests[c->n_tests];
    memset(t, 0, sizeof(*t));
    c->n_tests++; /* freed with the condition even when half made */
    if (tok_is(p, "exists")) {
        next(p);
        if (p->tok.type != TOK_LPAREN)
            return fail_expected(p, "\"(\" after exists");
        next(p);
        if (!parse_field(p, t))
            return false;
        if (p->tok.type != TOK_RPAREN)
            return fail_expected(p, "\")\" after the field of exists(");
        next(p);
        t->op = OP_EXISTS;
        return emit(p, INS_TEST, c->n_tests - 1, NULL);
    }
    if (!parse_field(p, t))
        return false;
    if (tok_is(p, "in")) {
        next(p);
        if (p->tok.type != TOK_LBRACKET)
            return fail_expected(p, "\"[\" after in");
        next(p);
        t->op = OP_IN;
        size_t cap = 0;
        for (;;) {
            if (lf_array_grow(&t->lits, &cap, t->n_lits, sizeof(*t->lits), 4))
                return oom(p);
            memset(&t->lits[t->n_lits], 0, sizeof(*t->lits));
            t->n_lits++;
            if (!parse_lit(p, &t->lits[t->n_lits - 1]))
                return false;
            if (p->tok.type == TOK_RBRACKET)
                break;
            if (p->tok.type != TOK_COMMA)
                return fail_expected(p, "\",\" or \"]\" in the list after in");
            next(p);
        }
        next(p);
        return emit(p, INS_TEST, c->n_tests - 1, NULL);
    }
    if (p->tok.type != TOK_OP)
        return fail_expected(p, "==, !=, <, <=, >, >=, =~, !~ or in after the field");
    static const char *const ops[] = { "==", "!=", "<", "<=", ">", ">=", "=~", "!~" };
    static const enum test_op codes[] = { OP_EQ, OP_NE, OP_LT,    OP_LE,
                                          OP_GT, OP_GE, OP_MATCH, OP_NMATCH };
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
        if (strlen(ops[i]) == p->tok.len && memcmp(ops[i], p->text + p->tok.at, p->tok.len) == 0)
            t->op = codes[i];
    }
    next(p);
    size_t lit_at = p->tok.at;
    t->lits = calloc(1, sizeof(*t->lits));
    if (t->lits == NULL)
        return oom(p);
    t->n_lits = 1;
    if ((t->op == OP_MATCH || t->op == OP_NMATCH) && p->tok.type != TOK_STR)
        return fail_expected(p, "a regex in quotes after =~ or !~");
    if (!parse_lit(p, &t->lits[0]))
        return false;
    if (t->op == OP_MATCH || t->op == OP_NMATCH) {
        if (!compile_regex(p, t, lit_at))
            return false;
    } else if (t->op >= OP_LT && t->op <= OP_GE && t->lits[0].type != LIT_STR &&
               t->lits[0].type != LIT_NUM) {
        p->tok.at = lit_at;
        p->tok.len = p->pos - lit_at;
        p->tok.type = TOK_FIELD;
        return fail_expected(p, "a number or a string to order by");
    }
    return emit(p, INS_TEST, c->n_tests - 1, NULL);
}

static bool parse_or(struct parser *p);

/* not X | ( X ) | test */
static bool parse_unary(struct parser *p)
{
    if (++p->depth > COND_MAX_DEPTH)
        return fail_expected(p, "at most 64 nested parentheses and nots");
    bool ok;
    if (tok_is(p, "not")) {
        next(p);
        ok = parse_unary(p) && emit(p, INS_NOT, 0, NULL);
    } else if (p->tok.type == TOK_LPAREN) {
        next(p);
        ok = parse_or(p);
        if (ok && p->tok.type != TOK_RPAREN)
            ok = fail_expected(p, "\")\", \"and\" or \"or\"");
        if (ok)
            next(p);
    } else if (p->tok.type == TOK_FIELD && !is_keyword(p)) {
        ok = parse_test(p);
    } else if (tok_is(p, "exists")) {
        ok = parse_test(p);
    } else {
        ok = fail_expected(p, "a test (field == value, exists(field), ...), \"not\" or \"(\"");
    }
    p->depth--;
    return ok;
}

/* Parses terms joined by word (and/or): each but the last followed by a jump (JF for and,
 * JT for or) to the end, patched once the end is known. */
static bool
parse_chain(struct parser *p, const char *word, enum ins_op jump, bool (*term)(struct parser *))
{
    size_t first_jump = p->c->n_code;
    if (!term(p))
        return false;
    while (tok_is(p, word)) {
        next(p);
        if (!emit(p, jump, 0, NULL) || !term(p))
            return false;
    }
    /* Only this level's jumps still hold 0 as their target: inner levels patched theirs. */
    for (size_t i = first_jump; i < p->c->n_code; i++) {
        struct ins *in = &p->c->code[i];
        if (in->op == jump && in->arg == 0)
            in->arg = p->c->n_code;
    }
    return true;
}

static bool parse_and(struct parser *p)
{
    return parse_chain(p, "and", INS_JF, parse_unary);
}

static bool parse_or(struct parser *p)
{
    return parse_chain(p, "or", INS_JT, parse_and);
}

void lf_cond_free(struct lf_cond *c)
{
    if (c == NULL)
        return;
    for (size_t i = 0; i < c->n_tests; i++) {
        struct test *t = &c->tests[i];
        free(t->path);
        for (size_t j = 0; j < t->n_lits; j++)
            free(t->lits[j].s);
        free(t->lits);
        pcre2_code_free(t->re);
    }
    free(c->tests);
    free(c->code);
    free(c->nodes);
    free(c);
}

/* The node for seg one level under parent (COND_NO_NODE: the top level), a new one at the
 * level's end if none: COND_NO_NODE when out of memory. Links are indexes, not pointers:
 * the array moves as it grows. */
static uint32_t node_at(struct lf_cond *c, uint32_t parent, const char *seg, size_t len)
{
    uint32_t first = parent != COND_NO_NODE ? c->nodes[parent].child
                     : c->n_nodes > 0       ? 0
                                            : COND_NO_NODE;
    uint32_t last = COND_NO_NODE;
    for (uint32_t i = first; i != COND_NO_NODE; i = c->nodes[i].next) {
        if (c->nodes[i].len == len && memcmp(c->nodes[i].seg, seg, len) == 0)
            return i;
        last = i;
    }
    if (c->n_nodes >= COND_NO_NODE - 1 ||
        lf_array_grow(&c->nodes, &c->cap_nodes, c->n_nodes, sizeof(*c->nodes), 8))
        return COND_NO_NODE;
    uint32_t n = (uint32_t)c->n_nodes++;
    c->nodes[n] = (struct node){ seg, len, { 0 }, COND_NO_SLOT, COND_NO_NODE, COND_NO_NODE, 0, 0 };
    if (len <= sizeof(c->nodes[n].seg16))
        memcpy(c->nodes[n].seg16, seg, len);
    if (last != COND_NO_NODE)
        c->nodes[last].next = n;
    else if (parent != COND_NO_NODE)
        c->nodes[parent].child = n;
    return n;
}

/* Gives each distinct member path of c's tests a slot (the first COND_MAX_SLOTS of them)
 * and builds the tree of their segments. LF_ENOMEM. */
static enum lf_err build_index(struct lf_cond *c)
{
    for (size_t i = 0; i < c->n_tests; i++) {
        struct test *t = &c->tests[i];
        t->slot = COND_NO_SLOT;
        if (t->field != FIELD_JSON)
            continue;
        for (size_t j = 0; j < i && t->slot == COND_NO_SLOT; j++) {
            const struct test *u = &c->tests[j];
            if (u->field == FIELD_JSON && u->path_len == t->path_len &&
                memcmp(u->path, t->path, t->path_len) == 0)
                t->slot = u->slot;
        }
        if (t->slot != COND_NO_SLOT || c->n_slots == COND_MAX_SLOTS)
            continue;
        uint32_t slot = (uint32_t)c->n_slots++;
        uint64_t bit = (uint64_t)1 << slot;
        uint32_t n = COND_NO_NODE;
        const char *seg = t->path;
        const char *path_end = t->path + t->path_len;
        for (;;) {
            const char *dot = memchr(seg, '.', (size_t)(path_end - seg));
            size_t len = (size_t)((dot != NULL ? dot : path_end) - seg);
            n = node_at(c, n, seg, len);
            if (n == COND_NO_NODE)
                return LF_ENOMEM;
            c->nodes[n].mask |= bit;
            if (dot == NULL)
                break;
            seg = dot + 1;
        }
        c->nodes[n].slot = slot;
        c->nodes[n].own = bit;
        t->slot = slot;
    }
    for (size_t i = 0; i < c->n_tests; i++) {
        struct test *t = &c->tests[i];
        t->all_str = t->op != OP_MATCH && t->op != OP_NMATCH && t->n_lits > 0;
        for (size_t j = 0; j < t->n_lits; j++)
            t->all_str = t->all_str && t->lits[j].type == LIT_STR;
    }
    return LF_OK;
}

enum lf_err lf_cond_compile(
    const char *text, size_t len, struct lf_cond **out, size_t *err_at, struct lf_errbuf *eb)
{
    struct lf_cond *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return LF_ENOMEM;
    struct parser p = { .text = text, .len = len, .c = c, .eb = eb };
    next(&p);
    if (p.tok.type == TOK_END)
        fail_expected(&p, "a condition");
    else if (parse_or(&p) && p.tok.type != TOK_END)
        fail_expected(&p, tok_is(&p, "and") || tok_is(&p, "or") ? "a test after it"
                                                                : "\"and\", \"or\" or the end");
    if (!p.err && build_index(c))
        p.err = LF_ENOMEM;
    if (p.err) {
        lf_cond_free(c);
        if (err_at != NULL)
            *err_at = p.err_at;
        return p.err;
    }
    *out = c;
    return LF_OK;
}

enum lf_err lf_cond_scratch_new(struct lf_cond_scratch **out)
{
    struct lf_cond_scratch *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return LF_ENOMEM;
    lf_buf_init(&s->buf, COND_SCRATCH_MAX);
    s->md = pcre2_match_data_create(1, NULL);
    if (s->md == NULL || lf_buf_grow(&s->buf, 256)) {
        lf_cond_scratch_free(s);
        return LF_ENOMEM;
    }
    *out = s;
    return LF_OK;
}

void lf_cond_scratch_free(struct lf_cond_scratch *s)
{
    if (s == NULL)
        return;
    pcre2_match_data_free(s->md);
    lf_buf_release(&s->buf);
    free(s);
}

/* ---- evaluation ---- */

enum val_type {
    VAL_STR = 0,
    VAL_JSTR,
    VAL_NUM,
    VAL_JNUM,
    VAL_TRUE,
    VAL_FALSE,
    VAL_NULL,
    VAL_OTHER
};

struct val {
    enum val_type type;
    struct lf_str text; /* VAL_STR: bytes; VAL_JSTR: the escaped body; VAL_JNUM: its text */
    double num;         /* VAL_NUM */
};

/* The members of a source's tail (`},"input":{...},...}` and a newline: the '}' closing
 * "log", the members, the event's '}') as a list. */
static struct lf_str tail_members(const struct lf_source *src)
{
    struct lf_str t = lf_str_make(src->tail.ptr, src->tail.len);
    if (t.len > 0 && t.ptr[t.len - 1] == '\n')
        t.len--;
    if (t.len > 0 && t.ptr[t.len - 1] == '}')
        t.len--;
    size_t skip = t.len >= 2 && t.ptr[0] == '}' && t.ptr[1] == ',' ? 2 : 0;
    return lf_str_make(t.ptr + skip, t.len - skip);
}

static void classify(struct lf_str v, struct val *out)
{
    out->text = v;
    switch (v.len > 0 ? v.ptr[0] : '\0') {
    case '"':
        out->type = VAL_JSTR;
        out->text = lf_str_make(v.ptr + 1, v.len >= 2 ? v.len - 2 : 0);
        break;
    case 't':
        out->type = VAL_TRUE;
        break;
    case 'f':
        out->type = VAL_FALSE;
        break;
    case 'n':
        out->type = VAL_NULL;
        break;
    case '{':
    case '[':
    case '\0':
        out->type = VAL_OTHER;
        break;
    default:
        out->type = VAL_JNUM;
        break;
    }
}

/* Past the JSON string whose opening quote is at p; NULL when it does not end. */
static const char *string_end(const char *p, const char *end)
{
    const char *s = p + 1;
    for (;;) {
        const char *q = lf_stage__find_quote(s, p, end);
        if (q == NULL)
            return NULL;
        const char *b = q;
        while (b > p + 1 && b[-1] == '\\')
            b--;
        if (((q - b) & 1) == 0) /* not escaped */
            return q + 1;
        s = q + 1;
    }
}

/* Past the bracket that closes the depth objects and lists open at p (p outside any
 * string; depth 0: p is at the value's opening bracket); NULL when it does not end. Every
 * quote and bracket of a 16-byte block from one load, a string's brackets passed over while
 * inside it. */
static const char *skip_nested(const char *p, const char *end, int depth)
{
    const char *str = NULL; /* the opening quote of the string we are in, or NULL */
    for (const char *blk = p; blk < end; blk += 16) {
        size_t n = end - blk >= 16 ? 16 : (size_t)(end - blk);
        unsigned bits = 0;
#ifdef __SSE2__
        /* A last block under 16 bytes: the 16 that end at end, when p's value holds them. */
        if (n == 16 || end - p >= 16) {
            __m128i v =
                _mm_loadu_si128((const __m128i *)(const void *)(end - blk >= 16 ? blk : end - 16));
            __m128i m =
                _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')),
                                          _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('{')),
                                                       _mm_cmpeq_epi8(v, _mm_set1_epi8('}')))),
                             _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('[')),
                                          _mm_cmpeq_epi8(v, _mm_set1_epi8(']'))));
            bits = (unsigned)_mm_movemask_epi8(m) >> (16 - n);
        } else
#endif
        {
            for (size_t i = 0; i < n; i++) {
                char ch = blk[i];
                if (ch == '"' || ch == '{' || ch == '}' || ch == '[' || ch == ']')
                    bits |= 1u << i;
            }
        }
        for (; bits != 0; bits &= bits - 1) {
            const char *at = blk + __builtin_ctz(bits);
            char ch = *at;
            if (str != NULL) {
                if (ch != '"')
                    continue;
                const char *b = at;
                while (b > str + 1 && b[-1] == '\\')
                    b--;
                if (((at - b) & 1) == 0) /* not escaped */
                    str = NULL;
            } else if (ch == '"') {
                str = at;
            } else if (ch == '{' || ch == '[') {
                depth++;
            } else if (--depth == 0) {
                return at + 1;
            }
        }
    }
    return NULL;
}

/* Past the JSON value at p (a scalar runs to the next ',', '}' or ']'); NULL when it does
 * not end. Objects and lists: from bracket to bracket, strings jumped. */
static const char *value_end(const char *p, const char *end)
{
    if (p < end && *p == '"')
        return string_end(p, end);
    if (p < end && *p != '{' && *p != '[') {
        while (p < end && *p != ',' && *p != '}' && *p != ']')
            p++;
        return p;
    }
    return skip_nested(p, end, 0);
}

static bool is_blank(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n';
}

/* The value at the dotted path in list (JSON members, no braces), in one pass: a member
 * whose key is the path's next part is entered, never skipped first, and only the members
 * before it are skipped. The first member of a name counts (as the encoder's readers take
 * it). Keys compare as written (escaped). */
static bool find_path(struct lf_str list, const char *path, size_t path_len, struct lf_str *value)
{
    const char *p = list.ptr;
    const char *end = list.ptr + list.len;
    const char *seg = path;
    const char *path_end = path + path_len;
    for (;;) {
        const char *dot = memchr(seg, '.', (size_t)(path_end - seg));
        size_t seg_len = (size_t)((dot != NULL ? dot : path_end) - seg);
        for (;;) {
            while (p < end && (is_blank(*p) || *p == ','))
                p++;
            if (p >= end || *p != '"') /* the end, or the '}' of the object entered */
                return false;
            const char *k = p + 1;
            const char *ke = string_end(p, end);
            if (ke == NULL)
                return false;
            const char *v = ke;
            while (v < end && (is_blank(*v) || *v == ':'))
                v++;
            if ((size_t)(ke - 1 - k) == seg_len && memcmp(k, seg, seg_len) == 0) {
                p = v;
                break;
            }
            p = value_end(v, end);
            if (p == NULL)
                return false;
        }
        if (dot == NULL) {
            const char *ve = value_end(p, end);
            if (ve == NULL)
                return false;
            while (ve > p && is_blank(ve[-1]))
                ve--;
            *value = lf_str_make(p, (size_t)(ve - p));
            return true;
        }
        if (p >= end || *p != '{')
            return false;
        p++;
        seg = dot + 1;
    }
}

enum step {
    STEP_MEMBER = 0, /* one member passed */
    STEP_CLOSE,      /* no member at p: the end of the list, or the '}' of the object */
    STEP_BAD         /* a member that does not end */
};

/* Passes the member at *pp (after blanks and commas) in the list or object whose indexed
 * segments start at node first, filling the slots it holds, and moves *pp past it. Only
 * the first member of a name counts: a name whose slots are all resolved is skipped. As
 * find_path() reads a member, so that both agree on any bytes. */
static enum step walk_member(
    const struct lf_cond *c, uint32_t first, const char **pp, const char *end, struct walk *w)
{
    const char *p = *pp;
    if (p < end && *p == ',') /* the usual: a comma, then the key's quote */
        p++;
    if (p >= end || *p != '"') {
        while (p < end && (is_blank(*p) || *p == ','))
            p++;
        *pp = p;
        if (p >= end || *p != '"')
            return STEP_CLOSE;
    }
    const char *k = p + 1;
    const char *ke = NULL; /* past the key's closing quote */
    const struct node *n = NULL;
#ifdef __SSE2__
    if (end - k >= 16) {
        /* The usual key: under 16 bytes, no escape. Its closing quote and the segment it
         * names found from one load. */
        __m128i b = _mm_loadu_si128((const __m128i *)(const void *)k);
        unsigned q = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(b, _mm_set1_epi8('"')));
        unsigned esc = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(b, _mm_set1_epi8('\\')));
        unsigned in_key = (q & (0u - q)) - 1; /* the bits before the first quote */
        if (q != 0 && (esc & in_key) == 0) {
            size_t klen = (size_t)__builtin_ctz(q);
            ke = k + klen + 1;
            for (uint32_t i = first; i != COND_NO_NODE; i = c->nodes[i].next) {
                const struct node *m = &c->nodes[i];
                __m128i seg = _mm_loadu_si128((const __m128i *)(const void *)m->seg16);
                if (m->len == klen &&
                    ((unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(b, seg)) & in_key) == in_key) {
                    n = m;
                    break;
                }
            }
        }
    }
#endif
    if (ke == NULL) {
        ke = string_end(p, end);
        if (ke == NULL)
            return STEP_BAD;
        size_t klen = (size_t)(ke - 1 - k);
        for (uint32_t i = first; i != COND_NO_NODE && n == NULL; i = c->nodes[i].next) {
            const struct node *m = &c->nodes[i];
            if (m->len == klen && memcmp(m->seg, k, klen) == 0)
                n = m;
        }
    }
    const char *v = ke;
    if (v < end && *v == ':') /* the usual: a colon, then the value */
        v++;
    while (v < end && (is_blank(*v) || *v == ':'))
        v++;
    const char *ve = NULL;
    if (n != NULL && (w->resolved & n->mask) != n->mask) {
        enum step st = STEP_MEMBER;
        if (n->child != COND_NO_NODE && v < end && *v == '{') {
            /* Entered: its members until the slots under n are resolved, the rest skipped. */
            const char *q = v + 1;
            while (st == STEP_MEMBER && (w->resolved & n->mask & ~n->own) != (n->mask & ~n->own))
                st = walk_member(c, n->child, &q, end, w);
            if (st != STEP_BAD && n->slot == COND_NO_SLOT)
                ve = q < end && *q == '}' ? q + 1 : skip_nested(q, end, 1);
        }
        if (n->slot != COND_NO_SLOT && (ve = value_end(v, end)) != NULL) {
            const char *vt = ve;
            while (vt > v && is_blank(vt[-1]))
                vt--;
            w->val[n->slot] = lf_str_make(v, (size_t)(vt - v));
            w->found |= n->own;
        }
        w->resolved |= n->mask; /* the first member of the name counts */
        if (st == STEP_BAD)
            return STEP_BAD;
    }
    if (ve == NULL)
        ve = value_end(v, end);
    if (ve == NULL)
        return STEP_BAD;
    *pp = ve;
    return STEP_MEMBER;
}

/* The value of the indexed slot in list (walk i of s): walks list from where it stopped
 * until the slot is resolved. false when the list has no such member. */
static inline bool slot_value(const struct lf_cond *c,
                              uint32_t slot,
                              struct lf_str list,
                              struct walk *w,
                              struct lf_str *value)
{
    uint64_t bit = (uint64_t)1 << slot;
    if (!w->started) {
        w->started = true;
        w->pos = list.ptr;
        w->end = list.ptr + list.len;
        w->resolved = 0;
        w->found = 0;
    }
    while (!(w->resolved & bit)) {
        if (walk_member(c, 0, &w->pos, w->end, w) != STEP_MEMBER)
            w->resolved = ~(uint64_t)0; /* the end (or bytes that are no member): the rest absent */
    }
    if (!(w->found & bit))
        return false;
    *value = w->val[slot];
    return true;
}

/* The value at t's path in list i of ev (0: its members, 1: its source's): by its slot,
 * or looked up alone. */
static inline bool path_value(const struct lf_cond *c,
                              const struct test *t,
                              struct lf_str list,
                              struct walk *w,
                              struct lf_str *value)
{
    if (t->slot == COND_NO_SLOT || lf_stage__cond_no_index)
        return find_path(list, t->path, t->path_len, value);
    return slot_value(c, t->slot, list, w, value);
}

/* The value of t's field in ev: false when the event has none. */
static bool lookup(const struct lf_cond *c,
                   const struct test *t,
                   const struct lf_event *ev,
                   struct lf_cond_scratch *s,
                   struct val *v)
{
    switch (t->field) {
    case FIELD_MESSAGE:
        v->type = VAL_STR;
        v->text = ev->message;
        return true;
    case FIELD_LOG_PATH:
        if (ev->source == NULL || ev->source->path == NULL)
            return false;
        v->type = VAL_STR;
        v->text = lf_str_make(ev->source->path, strlen(ev->source->path));
        return true;
    case FIELD_LOG_OFFSET:
        v->type = VAL_NUM;
        v->num = (double)ev->offset;
        return true;
    case FIELD_JSON:
        break;
    }
    struct lf_str value;
    /* input, host and fields are the source's, unless the event has its own (an ndjson
     * event's with overwrite_keys): extra holds them only then (event.h). */
    bool source_first = t->source_flag != 0 && !(ev->flags & t->source_flag);
    if (!source_first && path_value(c, t, ev->extra, &s->walks[0], &value)) {
        classify(value, v);
        return true;
    }
    const struct lf_source *src = ev->source;
    if (src == NULL || (t->source_flag != 0 && !source_first))
        return false;
    /* Other names are in the tail only under fields_under_root: members after "fields". */
    if (t->source_flag == 0 && src->tail_at[3] + 2 >= src->tail.len)
        return false;
    if (!path_value(c, t, tail_members(src), &s->walks[1], &value))
        return false;
    classify(value, v);
    return true;
}

/* The bytes of a string value (escapes undone, in s's buffer); false for other types. */
static bool string_of(const struct val *v, struct lf_cond_scratch *s, struct lf_str *out)
{
    if (v->type == VAL_STR ||
        (v->type == VAL_JSTR && memchr(v->text.ptr, '\\', v->text.len) == NULL)) {
        *out = v->text;
        return true;
    }
    if (v->type != VAL_JSTR)
        return false;
    lf_buf_reset(&s->buf);
    if (!lf_stage__json_unescape(v->text, &s->buf)) {
        *out = v->text; /* out of memory: compared as written */
        return true;
    }
    *out = lf_str_make(s->buf.ptr, s->buf.len);
    return true;
}

/* The value as a number: a JSON number, or a string that is wholly one ("500"). */
static bool number_of(const struct val *v, double *out)
{
    if (v->type == VAL_NUM) {
        *out = v->num;
        return true;
    }
    if (v->type == VAL_JNUM || v->type == VAL_STR || v->type == VAL_JSTR)
        return parse_number(v->text, out);
    return false;
}

/* <0, 0, >0 comparing v with l; false when they cannot be compared (types). */
static bool compare(const struct val *v, const struct lit *l, struct lf_cond_scratch *s, int *cmp)
{
    switch (l->type) {
    case LIT_STR: {
        struct lf_str b;
        if (!string_of(v, s, &b))
            return false;
        size_t n = b.len < l->len ? b.len : l->len;
        int r = n > 0 ? memcmp(b.ptr, l->s, n) : 0;
        *cmp = r != 0 ? r : (b.len > l->len) - (b.len < l->len);
        return true;
    }
    case LIT_NUM: {
        double d;
        if (!number_of(v, &d))
            return false;
        *cmp = (d > l->num) - (d < l->num);
        return d == d; /* NaN compares with nothing */
    }
    case LIT_TRUE:
        *cmp = v->type == VAL_TRUE ? 0 : 1;
        return true;
    case LIT_FALSE:
        *cmp = v->type == VAL_FALSE ? 0 : 1;
        return true;
    case LIT_NULL:
        *cmp = v->type == VAL_NULL ? 0 : 1;
        return true;
    }
    return false;
}

/* True when hay holds the m >= 1 bytes at needle. With SSE2, 16 starts a step: those whose
 * first and last bytes match the needle's (two loads), then compared whole. */
static bool has_literal(struct lf_str hay, const char *needle, size_t m)
{
    size_t n = hay.len;
    if (m > n)
        return false;
#ifdef __SSE2__
    if (m >= 2 && n - m + 1 >= 16) {
        const __m128i first = _mm_set1_epi8(needle[0]);
        const __m128i last = _mm_set1_epi8(needle[m - 1]);
        size_t starts = n - m + 1; /* the positions a match may start at */
        for (size_t i = 0; i < starts; i += 16) {
            if (i + 16 > starts)
                i = starts - 16; /* the last block overlaps the one before */
            __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(hay.ptr + i));
            __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(hay.ptr + i + m - 1));
            unsigned bits = (unsigned)_mm_movemask_epi8(
                _mm_and_si128(_mm_cmpeq_epi8(a, first), _mm_cmpeq_epi8(b, last)));
            for (; bits != 0; bits &= bits - 1) {
                const char *at = hay.ptr + i + __builtin_ctz(bits);
                if (memcmp(at + 1, needle + 1, m - 2) == 0)
                    return true;
            }
        }
        return false;
    }
#endif
    return memmem(hay.ptr, n, needle, m) != NULL;
}

static bool run_test(const struct lf_cond *c,
                     const struct test *t,
                     const struct lf_event *ev,
                     struct lf_cond_scratch *s)
{
    struct val v;
    if (!lookup(c, t, ev, s, &v))
        return false;
    if (t->all_str && v.type == VAL_JSTR) { /* once, not once per literal of an `in` */
        string_of(&v, s, &v.text);
        v.type = VAL_STR;
    }
    int cmp = 0;
    switch (t->op) {
    case OP_EXISTS:
        return true;
    case OP_EQ:
        return compare(&v, &t->lits[0], s, &cmp) && cmp == 0;
    case OP_NE:
        return !compare(&v, &t->lits[0], s, &cmp) || cmp != 0;
    case OP_LT:
        return compare(&v, &t->lits[0], s, &cmp) && cmp < 0;
    case OP_LE:
        return compare(&v, &t->lits[0], s, &cmp) && cmp <= 0;
    case OP_GT:
        return compare(&v, &t->lits[0], s, &cmp) && cmp > 0;
    case OP_GE:
        return compare(&v, &t->lits[0], s, &cmp) && cmp >= 0;
    case OP_IN:
        for (size_t i = 0; i < t->n_lits; i++) {
            if (compare(&v, &t->lits[i], s, &cmp) && cmp == 0)
                return true;
        }
        return false;
    case OP_MATCH:
    case OP_NMATCH:
        break;
    }
    /* A regex reads a string's bytes, or the text of a number, true, false or null. */
    if (v.type == VAL_OTHER)
        return false;
    struct lf_str subject = v.text;
    if ((v.type == VAL_STR || v.type == VAL_JSTR) && !string_of(&v, s, &subject))
        return false;
    char num[32];
    if (v.type == VAL_NUM) {
        int n = snprintf(num, sizeof(num), "%.17g", v.num);
        subject = lf_str_make(num, n > 0 ? (size_t)n : 0);
    }
    /* Messages are valid UTF-8 (the reader sees to it); paths and members are checked, so
     * only a message is searched without PCRE2 (a literal) or with its JIT code alone. */
    int rc;
    if (t->field == FIELD_MESSAGE && t->literal)
        rc = has_literal(subject, t->lits[0].s, t->lits[0].len) ? 1 : PCRE2_ERROR_NOMATCH;
    else if (t->field == FIELD_MESSAGE && t->jit)
        rc = pcre2_jit_match(t->re, (PCRE2_SPTR)subject.ptr, subject.len, 0, 0, s->md, NULL);
    else
        rc = pcre2_match(t->re, (PCRE2_SPTR)subject.ptr, subject.len, 0,
                         t->field == FIELD_MESSAGE ? PCRE2_NO_UTF_CHECK : 0, s->md, NULL);
    if (t->op == OP_MATCH)
        return rc >= 0;
    return rc == PCRE2_ERROR_NOMATCH;
}

bool lf_cond_eval(const struct lf_cond *c, const struct lf_event *ev, struct lf_cond_scratch *s)
{
    bool acc = false;
    size_t pc = 0;
    s->walks[0].started = false;
    s->walks[1].started = false;
    while (pc < c->n_code) {
        const struct ins *in = &c->code[pc];
        switch (in->op) {
        case INS_TEST:
            acc = run_test(c, &c->tests[in->arg], ev, s);
            pc++;
            break;
        case INS_JF:
            pc = acc ? pc + 1 : in->arg;
            break;
        case INS_JT:
            pc = acc ? in->arg : pc + 1;
            break;
        case INS_NOT:
            acc = !acc;
            pc++;
            break;
        }
    }
    return acc;
}
