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
 * thread that owns the scratch, allocating nothing in the steady state. */
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
    enum test_op op;
    struct lit *lits; /* owned; one, or the `in` list */
    size_t n_lits;
    pcre2_code *re; /* owned; OP_MATCH, OP_NMATCH */
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

struct lf_cond {
    struct ins *code; /* owned */
    size_t n_code;
    size_t cap_code;
    struct test *tests; /* owned */
    size_t n_tests;
    size_t cap_tests;
};

struct lf_cond_scratch {
    pcre2_match_data *md; /* owned */
    struct lf_buf buf;    /* escaped JSON strings, unescaped */
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
    (void)pcre2_jit_compile(t->re, PCRE2_JIT_COMPLETE);
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
    free(c);
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
    /* An object or a list: every quote and bracket of a 16-byte block from one load, a
     * string's brackets passed over while inside it. */
    int depth = 0;
    const char *str = NULL; /* the opening quote of the string we are in, or NULL */
    for (const char *blk = p; blk < end; blk += 16) {
        size_t n = end - blk >= 16 ? 16 : (size_t)(end - blk);
        unsigned bits = 0;
#ifdef __SSE2__
        if (n == 16) {
            __m128i v = _mm_loadu_si128((const __m128i *)(const void *)blk);
            __m128i m =
                _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')),
                                          _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('{')),
                                                       _mm_cmpeq_epi8(v, _mm_set1_epi8('}')))),
                             _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('[')),
                                          _mm_cmpeq_epi8(v, _mm_set1_epi8(']'))));
            bits = (unsigned)_mm_movemask_epi8(m);
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

/* The value of t's field in ev: false when the event has none. */
static bool lookup(const struct test *t, const struct lf_event *ev, struct val *v)
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
    if (!source_first && find_path(ev->extra, t->path, t->path_len, &value)) {
        classify(value, v);
        return true;
    }
    const struct lf_source *src = ev->source;
    if (src == NULL || (t->source_flag != 0 && !source_first))
        return false;
    /* Other names are in the tail only under fields_under_root: members after "fields". */
    if (t->source_flag == 0 && src->tail_at[3] + 2 >= src->tail.len)
        return false;
    if (!find_path(tail_members(src), t->path, t->path_len, &value))
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

static bool run_test(const struct test *t, const struct lf_event *ev, struct lf_cond_scratch *s)
{
    struct val v;
    if (!lookup(t, ev, &v))
        return false;
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
    /* Messages are valid UTF-8 (the reader sees to it); paths and members are checked. */
    uint32_t opts = t->field == FIELD_MESSAGE ? PCRE2_NO_UTF_CHECK : 0;
    int rc = pcre2_match(t->re, (PCRE2_SPTR)subject.ptr, subject.len, 0, opts, s->md, NULL);
    if (t->op == OP_MATCH)
        return rc >= 0;
    return rc == PCRE2_ERROR_NOMATCH;
}

bool lf_cond_eval(const struct lf_cond *c, const struct lf_event *ev, struct lf_cond_scratch *s)
{
    bool acc = false;
    size_t pc = 0;
    while (pc < c->n_code) {
        const struct ins *in = &c->code[pc];
        switch (in->op) {
        case INS_TEST:
            acc = run_test(&c->tests[in->arg], ev, s);
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
