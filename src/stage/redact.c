/* redact.c - the redact stage: masks secrets and personal data in the message and in named
 * members, in one pass over each.
 *
 *   redact: {patterns: [credit_card, email], fields: [message, user.note],
 *            regex: [{name: order, pattern: 'ORD-\d{8}'}], replace: "[REDACTED:%{pattern}]"}
 *
 * The built-in patterns are found by hand-written matchers, each started only at a byte that
 * can begin (or, for e-mail, key-value pairs, IPv6, IBANs and JWTs, sit inside) a match:
 * digits, @ : = - J A B b. Those are found 16 bytes at a time (SSE2), and the compiled
 * spec's table from byte to matchers says which to try, so a run of plain words costs a
 * few vector operations per 16 bytes. A matcher checks what the text must be (a Luhn sum,
 * an IBAN's mod-97 and length, octets <= 255, a JWT header that decodes to JSON with "alg")
 * before it claims the bytes; matches never overlap, the first one from the left wins. The
 * user's regexes (PCRE2, JIT) then run over the whole text, and keep the matches that do
 * not overlap a built-in's.
 *
 * A match becomes the replace text (with %{pattern} its pattern's name), or with hash:
 * sha256 `[pattern:` and the first 16 hex digits of the HMAC-SHA256 of the match under
 * hash_key `]`: one value always gives one token, which does not give the value back.
 *
 * Members are found by dotted path in the event's extra; a string one is unescaped, scanned,
 * and written back JSON-escaped in place of the old value. An event where nothing matched
 * is emitted as it came, without a copy. The state's buffers and span list grow to the
 * largest event and are reused, so there is no allocation per event once they have.
 *
 * Counts: one atomic counter per pattern in the spec, shared by the chains of an input,
 * read by the metrics exporter through lf_chain_spec_redactions(). Threads: as every stage
 * (stage.h); the counters may be read from any thread. */
#include "config.h"

#include <jansson.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../output/netlib_int.h"
#include "../output/sigv4_int.h"
#include "stage_int.h"

enum builtin {
    P_CARD,
    P_IBAN,
    P_EMAIL,
    P_IPV4,
    P_IPV6,
    P_JWT,
    P_KV,
    P_AWS,
    P_BEARER,
    P_PEM,
    N_BUILTIN
};

static const char *const builtin_names[N_BUILTIN] = {
    "credit_card", "iban",      "email",          "ipv4",         "ipv6",
    "jwt",         "secret_kv", "aws_access_key", "bearer_token", "private_key",
};

/* Trigger bits: what a byte may start. */
enum {
    T_DIGIT = 1 << 0,  /* card, ipv4; an IBAN's check digits after its country */
    T_AT = 1 << 1,     /* email: the '@', the local part is read backwards */
    T_SEP = 1 << 2,    /* '=' or ':': a secret key-value pair, ':' also ipv6 */
    T_J = 1 << 3,      /* the J of a JWT's eyJ */
    T_DASH = 1 << 4,   /* the first - of -----BEGIN */
    T_A = 1 << 5,      /* AKIA/ASIA */
    T_BEARER = 1 << 6, /* B or b */
};

#define HASH_HEX 16 /* hex digits of the HMAC kept in a token */
#define MAX_USER 64 /* user regexes at most */

struct user_re {
    char *name;     /* owned */
    pcre2_code *re; /* owned */
    bool jit;
};

struct redact_spec {
    struct lf_stage_head head;
    unsigned on;            /* a bit per enum builtin */
    unsigned char cls[256]; /* trigger bits per byte, of the patterns on */
    struct user_re *res;    /* owned */
    size_t n_res;
    struct lf_stage_name *paths; /* owned; the members scanned, JSON-escaped */
    size_t n_paths;
    bool message;                     /* the message is scanned */
    char *repl[N_BUILTIN + MAX_USER]; /* owned; per pattern, the replace text */
    size_t repl_len[N_BUILTIN + MAX_USER];
    bool hash;
    SHA256_CTX inner, outer; /* HMAC states after hash_key */
    /* owned; matches per pattern (built-ins, then the user's), from every chain of the
     * spec: the one thing in a spec that changes after compiling */
    _Atomic uint64_t *counts;
};

struct span {
    size_t start, end;
    unsigned pattern;
};

/* Where a member's new value goes: the value at [at, at + len) of the old extra. */
struct fix {
    size_t at, len;
    size_t from, n; /* its text in vals */
};

struct redact_state {
    struct lf_stage_head head;
    pcre2_match_data *md; /* one pair: the whole match */
    struct span *spans;   /* of the text being scanned */
    size_t n_spans, cap;
    struct fix *fixes;
    size_t n_fixes, fix_cap;
    struct lf_buf msg;   /* the masked message */
    struct lf_buf raw;   /* a member's value, unescaped */
    struct lf_buf tmp;   /* a member's value, masked */
    struct lf_buf vals;  /* the new values, escaped and quoted */
    struct lf_buf extra; /* the new members */
};

/* ---- bytes ---- */

static inline bool is_digit(unsigned char c)
{
    return (unsigned)(c - '0') < 10u;
}
static inline bool is_upper(unsigned char c)
{
    return (unsigned)(c - 'A') < 26u;
}
static inline bool is_alpha(unsigned char c)
{
    return (unsigned)((c | 0x20) - 'a') < 26u;
}
static inline char lower(unsigned char c)
{
    return (char)(is_upper(c) ? c | 0x20 : c);
}
static inline bool is_alnum(unsigned char c)
{
    return is_digit(c) || is_alpha(c);
}
static inline bool is_hex(unsigned char c)
{
    return is_digit(c) || (unsigned)((c | 0x20) - 'a') < 6u;
}
static inline bool is_b64url(unsigned char c)
{
    return is_alnum(c) || c == '-' || c == '_';
}
/* s[i - 1] is no letter or digit (or there is none). */
static inline bool word_start(const char *s, size_t i)
{
    return i == 0 || !is_alnum((unsigned char)s[i - 1]);
}
/* s[i] is no letter or digit (or i is the end). */
static inline bool word_end(const char *s, size_t n, size_t i)
{
    return i >= n || !is_alnum((unsigned char)s[i]);
}

/* ---- the matchers: each returns the match's end (> its start in *start) or 0 ---- */

static bool luhn(const char *s, size_t from, size_t to)
{
    unsigned sum = 0;
    bool dbl = false;
    for (size_t i = to; i-- > from;) {
        if (!is_digit((unsigned char)s[i]))
            continue;
        unsigned d = (unsigned)(s[i] - '0');
        if (dbl)
            d = d * 2 > 9 ? d * 2 - 9 : d * 2;
        sum += d;
        dbl = !dbl;
    }
    return sum % 10 == 0;
}

/* The issuers' number ranges, by the first two digits: Visa 4, Mastercard 51-55 and
 * 22-27, American Express 34 and 37, Diners 30, 36, 38, 39, JCB 35, Discover, UnionPay and
 * Maestro 6. The digit at s[i] starts the number; s holds n bytes. */
static inline bool card_prefix(const char *s, size_t n, size_t i)
{
    int a = s[i] - '0';
    int b = i + 1 < n && is_digit((unsigned char)s[i + 1]) ? s[i + 1] - '0' : -1;
    switch (a) {
    case 2:
        return b >= 2 && b <= 7;
    case 3:
        return b == 0 || (b >= 4 && b <= 9);
    case 4:
    case 6:
        return true;
    case 5:
        return b >= 0 && b <= 5;
    default:
        return false;
    }
}

/* 13 to 19 digits, in groups joined by one space or one dash (the same all along), of a
 * known issuer and Luhn-valid; not part of a longer run of digits or letters. */
static size_t match_card(const char *s, size_t n, size_t i)
{
    if (!word_start(s, i) || !card_prefix(s, n, i))
        return 0;
    size_t ends[20];
    unsigned counts[20];
    size_t ng = 0;
    unsigned digits = 0;
    char sep = 0;
    size_t j = i;
    for (;;) {
        size_t k = j;
        while (k < n && is_digit((unsigned char)s[k]))
            k++;
        if (digits + (k - j) > 19)
            break;
        digits += (unsigned)(k - j);
        ends[ng] = k;
        counts[ng++] = digits;
        if (k + 1 < n && (s[k] == ' ' || s[k] == '-') && (sep == 0 || s[k] == sep) &&
            is_digit((unsigned char)s[k + 1])) {
            sep = s[k];
            j = k + 1;
            continue;
        }
        break;
    }
    if (ng == 0 || is_digit((unsigned char)(ends[0] < n ? s[ends[0]] : 'x')))
        return 0; /* the first group alone is longer than a card */
    for (size_t g = ng; g-- > 0;) {
        if (counts[g] >= 13 && word_end(s, n, ends[g]) && luhn(s, i, ends[g]))
            return ends[g];
    }
    return 0;
}

/* Four octets 0-255 joined by dots; not after a letter, digit or dot, and not followed by a
 * dot and a digit (1.2.3.4.5) or a letter. */
static size_t match_ipv4(const char *s, size_t n, size_t i)
{
    if (!word_start(s, i) || (i > 0 && s[i - 1] == '.'))
        return 0;
    size_t j = i;
    for (int k = 0; k < 4; k++) {
        unsigned v = 0;
        size_t d = 0;
        while (j < n && is_digit((unsigned char)s[j]) && d < 4) {
            v = v * 10 + (unsigned)(s[j] - '0');
            j++;
            d++;
        }
        if (d == 0 || d > 3 || v > 255)
            return 0;
        if (k < 3) {
            if (j >= n || s[j] != '.')
                return 0;
            j++;
        }
    }
    if (j < n && (is_alnum((unsigned char)s[j]) ||
                  (s[j] == '.' && j + 1 < n && is_digit((unsigned char)s[j + 1]))))
        return 0;
    return j;
}

/* Eight groups of 1-4 hex digits joined by ':', or fewer with one '::'; found from a ':'
 * (c) by going back over hex digits and colons to lo at most. */
static size_t match_ipv6(const char *s, size_t n, size_t c, size_t lo, size_t *start)
{
    size_t b = c;
    while (b > lo && (is_hex((unsigned char)s[b - 1]) || s[b - 1] == ':'))
        b--;
    if (b > 0 && (is_alnum((unsigned char)s[b - 1]) || s[b - 1] == '.' || s[b - 1] == ':'))
        return 0;
    size_t j = b;
    unsigned groups = 0;
    bool dbl = false;
    if (j + 1 < n && s[j] == ':' && s[j + 1] == ':') {
        dbl = true;
        j += 2;
    } else if (s[j] == ':') {
        return 0;
    }
    for (;;) {
        size_t h = 0;
        while (j + h < n && is_hex((unsigned char)s[j + h]))
            h++;
        if (h == 0)
            break;
        if (h > 4)
            return 0;
        groups++;
        j += h;
        if (j + 1 < n && s[j] == ':' && s[j + 1] == ':') {
            if (dbl)
                return 0;
            dbl = true;
            j += 2;
        } else if (j + 1 < n && s[j] == ':' && is_hex((unsigned char)s[j + 1])) {
            j++;
        } else {
            break;
        }
    }
    if (groups == 0 || groups > 8 || (dbl ? groups > 7 : groups != 8) || j <= c)
        return 0;
    if (j < n && (is_alnum((unsigned char)s[j]) ||
                  (s[j] == '.' && j + 1 < n && is_digit((unsigned char)s[j + 1]))))
        return 0;
    *start = b;
    return j;
}

static bool email_local(unsigned char c)
{
    return is_alnum(c) || c == '.' || c == '_' || c == '%' || c == '+' || c == '-';
}

/* local@domain.tld: found from the '@' (c), the local part read back to lo at most; the
 * domain has two labels or more, the last one of two letters or more. */
static size_t match_email(const char *s, size_t n, size_t c, size_t lo, size_t *start)
{
    size_t b = c;
    while (b > lo && email_local((unsigned char)s[b - 1]))
        b--;
    while (b < c && (s[b] == '.' || s[b] == '-'))
        b++;
    if (b == c)
        return 0;
    size_t j = c + 1;
    size_t labels = 0;
    size_t last = 0; /* start of the last label */
    size_t end = 0;
    for (;;) {
        size_t k = j;
        while (k < n && (is_alnum((unsigned char)s[k]) || s[k] == '-'))
            k++;
        if (k == j)
            break;
        labels++;
        last = j;
        end = k;
        if (k + 1 < n && s[k] == '.' && is_alnum((unsigned char)s[k + 1])) {
            j = k + 1;
            continue;
        }
        break;
    }
    if (labels < 2 || end - last < 2)
        return 0;
    for (size_t k = last; k < end; k++) {
        if (!is_alpha((unsigned char)s[k]))
            return 0;
    }
    *start = b;
    return end;
}

static int b64url_val(unsigned char c)
{
    if (is_upper(c))
        return c - 'A';
    if ((unsigned)(c - 'a') < 26u)
        return c - 'a' + 26;
    if (is_digit(c))
        return c - '0' + 52;
    return c == '-' ? 62 : c == '_' ? 63 : -1;
}

/* Three base64url parts joined by dots, the first decoding to a JSON object with "alg". */
static size_t match_jwt(const char *s, size_t n, size_t i)
{
    if (i + 3 > n || memcmp(s + i, "eyJ", 3) != 0 ||
        (i > 0 && (is_b64url((unsigned char)s[i - 1]) || s[i - 1] == '.')))
        return 0;
    size_t ends[3];
    size_t j = i;
    for (int p = 0; p < 3; p++) {
        size_t k = j;
        while (k < n && is_b64url((unsigned char)s[k]))
            k++;
        if (p < 2 && (k - j < 4 || k >= n || s[k] != '.'))
            return 0;
        ends[p] = k;
        j = k + 1;
    }
    size_t end = ends[2];
    if (end < n && s[end] == '.')
        return 0;
    /* The header: enough of it to see "alg" and the object's start. */
    char head[256];
    size_t h = 0;
    unsigned acc = 0;
    int bits = 0;
    for (size_t k = i; k < ends[0] && h < sizeof(head); k++) {
        acc = (acc << 6) | (unsigned)b64url_val((unsigned char)s[k]);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            head[h++] = (char)((acc >> bits) & 0xff);
        }
    }
    if (h < 8 || head[0] != '{')
        return 0;
    for (size_t k = 0; k + 5 <= h; k++) {
        if (memcmp(head + k, "\"alg\"", 5) == 0)
            return end;
    }
    return 0;
}

/* AKIA or ASIA and 16 upper-case letters or digits, a word of its own. */
static size_t match_aws(const char *s, size_t n, size_t i)
{
    if (i + 20 > n || !word_start(s, i) ||
        (memcmp(s + i, "AKIA", 4) != 0 && memcmp(s + i, "ASIA", 4) != 0))
        return 0;
    for (size_t k = i + 4; k < i + 20; k++) {
        if (!is_upper((unsigned char)s[k]) && !is_digit((unsigned char)s[k]))
            return 0;
    }
    return word_end(s, n, i + 20) ? i + 20 : 0;
}

/* IBAN lengths by country (the registry's), as "CCnn". */
static const char iban_lengths[] =
    "AD24AE23AL28AT20AZ28BA20BE16BG22BH22BR29BY28CH21CR22CY28CZ24DE22DK18DO28EE20EG29ES24"
    "FI18FO18FR27GB22GE22GI23GL18GR27GT28HR21HU28IE22IL23IQ23IS26IT27JO30KW30KZ20LB28LC32"
    "LI21LT20LU20LV21MC27MD24ME22MK19MR27MT31MU30NL18NO15PK24PL28PS29PT25QA29RO24RS22SA24"
    "SC31SE24SI19SK24SM27ST25SV28TL23TN24TR26UA29VA22VG24XK20";

static unsigned iban_length(const char *cc)
{
    for (size_t k = 0; k + 4 <= sizeof(iban_lengths) - 1; k += 4) {
        if (iban_lengths[k] == cc[0] && iban_lengths[k + 1] == cc[1])
            return (unsigned)((iban_lengths[k + 2] - '0') * 10 + (iban_lengths[k + 3] - '0'));
    }
    return 0;
}

/* A country's IBAN length of upper-case letters and digits (two letters, two check digits,
 * then the account), printed whole or in groups of four joined by one space; mod 97 is 1. */
static size_t match_iban(const char *s, size_t n, size_t i)
{
    if (i + 15 > n || !word_start(s, i) || !is_upper((unsigned char)s[i + 1]) ||
        !is_digit((unsigned char)s[i + 2]) || !is_digit((unsigned char)s[i + 3]))
        return 0;
    unsigned want = iban_length(s + i);
    if (want == 0)
        return 0;
    char v[34];
    unsigned got = 0;
    size_t j = i;
    while (got < want && j < n) {
        unsigned char c = (unsigned char)s[j];
        if (c == ' ' && got % 4 == 0 && got > 0 && j + 1 < n && s[j - 1] != ' ') {
            j++;
            continue;
        }
        if (!is_upper(c) && !is_digit(c))
            return 0;
        v[got++] = (char)c;
        j++;
    }
    if (got < want || !word_end(s, n, j))
        return 0;
    /* The first four moved to the end, letters as 10-35, the number mod 97. */
    unsigned r = 0;
    for (unsigned k = 0; k < want; k++) {
        unsigned char c = (unsigned char)v[(k + 4) % want];
        if (is_digit(c))
            r = (r * 10 + (unsigned)(c - '0')) % 97;
        else
            r = (r * 100 + (unsigned)(c - 'A' + 10)) % 97;
    }
    return r == 1 ? j : 0;
}

/* "Bearer" (any case) as a word, blanks, then a token of 8 or more characters with a digit
 * or a punctuation mark in it: the token is the match. */
static size_t match_bearer(const char *s, size_t n, size_t i, size_t *start)
{
    static const char word[] = "bearer";
    if (i + 7 > n || !word_start(s, i))
        return 0;
    for (size_t k = 0; k < 6; k++) {
        if (lower((unsigned char)s[i + k]) != word[k])
            return 0;
    }
    size_t j = i + 6;
    if (s[j] != ' ' && s[j] != '\t')
        return 0;
    while (j < n && (s[j] == ' ' || s[j] == '\t'))
        j++;
    size_t b = j;
    bool mixed = false;
    while (j < n && (is_alnum((unsigned char)s[j]) || strchr("-._~+/", s[j]) != NULL)) {
        mixed = mixed || !is_alpha((unsigned char)s[j]);
        j++;
    }
    while (j < n && s[j] == '=')
        j++;
    if (j - b < 8 || !mixed)
        return 0;
    *start = b;
    return j;
}

/* The keys whose value is a secret, lower-case; a key matches when it is one of these or
 * ends with one after a non-letter (db_password, X-Api-Key, client_secret). */
static const struct lf_str secret_keys[] = {
    LF_STR_LIT("password"),    LF_STR_LIT("passwd"),     LF_STR_LIT("pwd"),
    LF_STR_LIT("secret"),      LF_STR_LIT("token"),      LF_STR_LIT("api_key"),
    LF_STR_LIT("apikey"),      LF_STR_LIT("api-key"),    LF_STR_LIT("access_key"),
    LF_STR_LIT("private_key"), LF_STR_LIT("passphrase"), LF_STR_LIT("credentials"),
};

static bool key_char(unsigned char c)
{
    return is_alnum(c) || c == '_' || c == '-' || c == '.';
}

static bool secret_key(const char *k, size_t len)
{
    for (size_t i = 0; i < sizeof(secret_keys) / sizeof(secret_keys[0]); i++) {
        size_t m = secret_keys[i].len;
        if (m > len || (m < len && is_alpha((unsigned char)k[len - m - 1])))
            continue;
        size_t x = 0;
        while (x < m && lower((unsigned char)k[len - m + x]) == secret_keys[i].ptr[x])
            x++;
        if (x == m)
            return true;
    }
    return false;
}

/* key=value or key: value (the key maybe quoted, as in JSON) from the separator at c, the
 * key read back to lo at most: the value is the match, the key and quotes stay. A quoted
 * value runs to its closing quote (backslash escapes skipped); a bare one to a blank or
 * one of , ; & ) ] } " '. */
static size_t match_kv(const char *s, size_t n, size_t c, size_t lo, size_t *start)
{
    if (c + 1 < n && s[c + 1] == s[c])
        return 0; /* :: and == */
    size_t k = c;
    while (k > lo && (s[k - 1] == ' ' || s[k - 1] == '\t'))
        k--;
    if (k > lo && (s[k - 1] == '"' || s[k - 1] == '\''))
        k--;
    size_t ke = k;
    while (k > lo && key_char((unsigned char)s[k - 1]))
        k--;
    if (ke - k < 3 || !secret_key(s + k, ke - k))
        return 0;
    size_t v = c + 1;
    while (v < n && (s[v] == ' ' || s[v] == '\t'))
        v++;
    if (v >= n)
        return 0;
    if (s[v] == '"' || s[v] == '\'') {
        char q = s[v];
        size_t j = v + 1;
        while (j < n && s[j] != q)
            j += s[j] == '\\' && j + 1 < n ? 2 : 1;
        if (j > n)
            j = n;
        if (j == v + 1)
            return 0;
        *start = v + 1;
        return j;
    }
    size_t j = v;
    while (j < n && strchr(" \t\r\n,;&)]}\"'", s[j]) == NULL)
        j++;
    if (j == v)
        return 0;
    *start = v;
    return j;
}

/* -----BEGIN ... PRIVATE KEY----- through its -----END ...-----, or to the end of the text
 * when the END is missing (a key cut short is a secret still). */
static size_t match_pem(const char *s, size_t n, size_t i)
{
    static const char begin[] = "-----BEGIN ";
    static const char tail[] = "PRIVATE KEY-----";
    if (n - i < sizeof(begin) - 1 + sizeof(tail) - 1 ||
        memcmp(s + i, begin, sizeof(begin) - 1) != 0)
        return 0;
    const char *p = s + i + sizeof(begin) - 1;
    const char *nl = memchr(p, '\n', n - (size_t)(p - s));
    const char *line_end = nl != NULL ? nl : s + n;
    const char *t = memmem(p, (size_t)(line_end - p), tail, sizeof(tail) - 1);
    if (t == NULL)
        return 0;
    p = t + sizeof(tail) - 1;
    const char *e = memmem(p, n - (size_t)(p - s), "-----END ", 9);
    if (e == NULL)
        return n;
    const char *f = memmem(e + 9, n - (size_t)(e + 9 - s), "-----", 5);
    return f != NULL ? (size_t)(f + 5 - s) : n;
}

/* ---- the scan ---- */

static enum lf_err
add_span(struct redact_state *st, size_t at, size_t start, size_t end, unsigned pattern)
{
    if (st->n_spans == st->cap) {
        size_t cap = st->cap ? st->cap * 2 : 16;
        struct span *v = realloc(st->spans, cap * sizeof(*v));
        if (v == NULL)
            return LF_ENOMEM;
        st->spans = v;
        st->cap = cap;
    }
    memmove(&st->spans[at + 1], &st->spans[at], (st->n_spans - at) * sizeof(*st->spans));
    st->spans[at] = (struct span){ start, end, pattern };
    st->n_spans++;
    return LF_OK;
}

/* The built-in matchers a byte with trigger bits t starts at i; *start gets the match's
 * start (i but for the matchers that read back). */
static __attribute__((noinline)) size_t try_at(const struct redact_spec *sp,
                                               const char *s,
                                               size_t n,
                                               size_t i,
                                               unsigned t,
                                               size_t lo,
                                               size_t *start,
                                               unsigned *pattern)
{
    unsigned on = sp->on;
    size_t e = 0;
    *start = i;
    if (t & T_DIGIT) {
        if ((on & (1u << P_IBAN)) && i >= lo + 2 && is_upper((unsigned char)s[i - 1]) &&
            is_upper((unsigned char)s[i - 2]) && (e = match_iban(s, n, i - 2)) != 0) {
            *start = i - 2;
            return *pattern = P_IBAN, e;
        }
        if ((on & (1u << P_CARD)) && (e = match_card(s, n, i)) != 0)
            return *pattern = P_CARD, e;
        if ((on & (1u << P_IPV4)) && (e = match_ipv4(s, n, i)) != 0)
            return *pattern = P_IPV4, e;
    }
    if ((t & T_A) && (on & (1u << P_AWS)) && (e = match_aws(s, n, i)) != 0)
        return *pattern = P_AWS, e;
    if ((t & T_BEARER) && (on & (1u << P_BEARER)) && (e = match_bearer(s, n, i, start)) != 0)
        return *pattern = P_BEARER, e;
    if ((t & T_J) && (on & (1u << P_JWT)) && i >= lo + 2 && (e = match_jwt(s, n, i - 2)) != 0) {
        *start = i - 2;
        return *pattern = P_JWT, e;
    }
    if ((t & T_AT) && (on & (1u << P_EMAIL)) && (e = match_email(s, n, i, lo, start)) != 0)
        return *pattern = P_EMAIL, e;
    if (t & T_SEP) {
        if ((on & (1u << P_KV)) && (e = match_kv(s, n, i, lo, start)) != 0)
            return *pattern = P_KV, e;
        if ((on & (1u << P_IPV6)) && s[i] == ':' && (e = match_ipv6(s, n, i, lo, start)) != 0)
            return *pattern = P_IPV6, e;
    }
    if ((t & T_DASH) && (on & (1u << P_PEM)) && (e = match_pem(s, n, i)) != 0)
        return *pattern = P_PEM, e;
    *start = i;
    return 0;
}

/* The user's regexes over s, keeping the matches that overlap no span found before. */
static enum lf_err
scan_user(const struct redact_spec *sp, struct redact_state *st, const char *s, size_t n)
{
    for (size_t r = 0; r < sp->n_res; r++) {
        size_t off = 0;
        size_t at = 0; /* spans before it end at or before off */
        while (off <= n) {
            int rc = sp->res[r].jit
                         ? pcre2_jit_match(sp->res[r].re, (PCRE2_SPTR)s, n, off, 0, st->md, NULL)
                         : pcre2_match(sp->res[r].re, (PCRE2_SPTR)s, n, off, 0, st->md, NULL);
            if (rc < 0)
                break;
            const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(st->md);
            size_t b = ov[0];
            size_t e = ov[1];
            if (e <= b) {
                off = b + 1;
                continue;
            }
            while (at < st->n_spans && st->spans[at].end <= b)
                at++;
            if (at == st->n_spans || st->spans[at].start >= e) {
                enum lf_err err = add_span(st, at, b, e, (unsigned)(N_BUILTIN + r));
                if (err)
                    return err;
                at++;
            }
            off = e;
        }
    }
    return LF_OK;
}

/* The trigger bytes of the built-ins: digits, @ : = - J A B b. A scan keeps the bits of the
 * 16 bytes last looked at, so that the next trigger in them costs no second look. */
struct triggers {
    size_t base;   /* where the bits start */
    unsigned bits; /* bit k: s[base + k] is a trigger byte; base + 16 and on not known */
};

#ifdef __SSE2__
static inline unsigned trigger_bits(const char *p)
{
    const __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
    const __m128i d = _mm_sub_epi8(v, _mm_set1_epi8('0'));
    __m128i m = _mm_cmpeq_epi8(_mm_min_epu8(d, _mm_set1_epi8(9)), d); /* the digits */
    m = _mm_or_si128(m, _mm_cmpeq_epi8(v, _mm_set1_epi8('@')));
    m = _mm_or_si128(m, _mm_cmpeq_epi8(v, _mm_set1_epi8(':')));
    m = _mm_or_si128(m, _mm_cmpeq_epi8(v, _mm_set1_epi8('=')));
    m = _mm_or_si128(m, _mm_cmpeq_epi8(v, _mm_set1_epi8('-')));
    m = _mm_or_si128(m, _mm_cmpeq_epi8(v, _mm_set1_epi8('J')));
    m = _mm_or_si128(m, _mm_cmpeq_epi8(v, _mm_set1_epi8('A')));
    m = _mm_or_si128(m, _mm_cmpeq_epi8(v, _mm_set1_epi8('B')));
    m = _mm_or_si128(m, _mm_cmpeq_epi8(v, _mm_set1_epi8('b')));
    return (unsigned)_mm_movemask_epi8(m);
}
#endif

/* The first byte at or after i that may start a match of any built-in (cls says which, if
 * any, of those on), n when none: 16 bytes a step with SSE2. A tail under 16 bytes is
 * tested with the 16 that end at n when the text holds that many. */
static inline size_t
next_trigger(struct triggers *tr, const unsigned char *cls, const char *s, size_t i, size_t n)
{
#ifdef __SSE2__
    if (i >= tr->base && i < tr->base + 16) {
        unsigned bits = tr->bits & (~0u << (i - tr->base));
        if (bits != 0)
            return tr->base + (size_t)__builtin_ctz(bits);
        i = tr->base + 16;
    }
    for (; i + 16 <= n; i += 16) {
        tr->base = i;
        tr->bits = trigger_bits(s + i);
        if (tr->bits != 0)
            return i + (size_t)__builtin_ctz(tr->bits);
    }
    if (i < n && n >= 16) {
        tr->base = i;
        tr->bits = (trigger_bits(s + n - 16) >> (16 - (n - i))) & 0xffffu;
        return tr->bits != 0 ? i + (size_t)__builtin_ctz(tr->bits) : n;
    }
#else
    (void)tr;
#endif
    while (i < n && cls[(unsigned char)s[i]] == 0)
        i++;
    return i;
}

/* Whether the run of hex digits and colons around the ':' at i (back to lo at most, as
 * match_ipv6() reads it) holds a "::" or seven colons, as every address it takes does: a
 * time of day (12:00:01) has neither. */
static inline bool ipv6_possible(const char *s, size_t n, size_t i, size_t lo)
{
    size_t b = i;
    while (b > lo && (is_hex((unsigned char)s[b - 1]) || s[b - 1] == ':'))
        b--;
    unsigned colons = 0;
    for (size_t k = b; k < n && (is_hex((unsigned char)s[k]) || s[k] == ':'); k++) {
        if (s[k] != ':')
            continue;
        if (k + 1 < n && s[k + 1] == ':')
            return true;
        if (++colons == 7)
            return true;
    }
    return false;
}

#define SUFFIX3(a, b, c) ((uint32_t)(a) << 16 | (uint32_t)(b) << 8 | (uint32_t)(c))

/* What must hold around a trigger byte at i for any matcher to take it, tested before the
 * call: most of a line's digits, dashes, = and : start nothing, and this rules them out
 * in a few comparisons. False means no matcher would match there; then *run is the length
 * of the run of digits at i (1 for other bytes), which starts nothing either. */
static inline bool
worth_trying(const char *s, size_t n, size_t i, unsigned t, size_t lo, size_t *run)
{
    *run = 1;
    if (t == T_DIGIT) {
        if (i >= 2 && is_upper((unsigned char)s[i - 1]) && is_upper((unsigned char)s[i - 2]))
            return true; /* an IBAN's check digits */
        size_t r = 1;
        while (i + r < n && is_digit((unsigned char)s[i + r]))
            r++;
        *run = r;
        unsigned char after = i + r < n ? (unsigned char)s[i + r] : 0;
        if (r <= 3 && after == '.') {
            /* an IPv4 address: its second group ends at a dot too (a time's 01.005 not) */
            size_t j = i + r + 1;
            while (j < n && j < i + r + 4 && is_digit((unsigned char)s[j]))
                j++;
            return j > i + r + 1 && j < n && s[j] == '.';
        }
        return card_prefix(s, n, i) &&
               (r >= 13 || (r >= 3 && (after == ' ' || after == '-') && i + r + 1 < n &&
                            is_digit((unsigned char)s[i + r + 1])));
    }
    if (t == T_DASH)
        return i + 1 < n && s[i + 1] == '-';
    if ((t & T_SEP) && !(s[i] == ':' &&
                         ((i > lo && (is_hex((unsigned char)s[i - 1]) || s[i - 1] == ':')) ||
                          (i + 1 < n && s[i + 1] == ':')) &&
                         ipv6_possible(s, n, i, lo))) {
        /* No IPv6 around it: worth it only after a key ending as a secret key does. */
        size_t k = i;
        while (k > lo && (s[k - 1] == ' ' || s[k - 1] == '\t'))
            k--;
        if (k > lo && (s[k - 1] == '"' || s[k - 1] == '\''))
            k--;
        if (k < lo + 3)
            return false;
        switch (SUFFIX3(lower((unsigned char)s[k - 3]), lower((unsigned char)s[k - 2]),
                        lower((unsigned char)s[k - 1]))) {
        case SUFFIX3('o', 'r', 'd'): /* password */
        case SUFFIX3('s', 'w', 'd'): /* passwd */
        case SUFFIX3('p', 'w', 'd'):
        case SUFFIX3('r', 'e', 't'): /* secret */
        case SUFFIX3('k', 'e', 'n'): /* token */
        case SUFFIX3('k', 'e', 'y'): /* api_key, apikey, access_key, private_key */
        case SUFFIX3('a', 's', 'e'): /* passphrase */
        case SUFFIX3('a', 'l', 's'): /* credentials */
            return true;
        default:
            return false;
        }
    }
    return true;
}

/* Finds the matches in s[0..n) into st->spans, in order, not overlapping. */
static enum lf_err
scan(const struct redact_spec *sp, struct redact_state *st, const char *s, size_t n)
{
    st->n_spans = 0;
    size_t lo = 0; /* the end of the last match: nothing before it is looked at again */
    const unsigned char *cls = sp->cls;
    struct triggers tr = { SIZE_MAX, 0 };
    for (size_t i = next_trigger(&tr, cls, s, 0, n); i < n;
         i = next_trigger(&tr, cls, s, i + 1, n)) {
        unsigned char c = (unsigned char)s[i];
        unsigned t = cls[c];
        if (t == 0)
            continue;
        /* Inside a word nothing starts but at an IBAN's check digits (its third byte) and
         * at the J of a JWT's eyJ: every other match of a letter or digit begins a word.
         * From the third byte on, the rest of the word is passed over at once. */
        if (is_alnum(c) && i > 0 && is_alnum((unsigned char)s[i - 1]) &&
            !(is_digit(c) && i >= 2 && is_upper((unsigned char)s[i - 1]) &&
              is_upper((unsigned char)s[i - 2])) &&
            !(c == 'J' && i >= 2 && s[i - 1] == 'y' && s[i - 2] == 'e')) {
            if (i >= 2 && is_alnum((unsigned char)s[i - 2]))
                while (i + 1 < n && is_alnum((unsigned char)s[i + 1]))
                    i++;
            continue;
        }
        size_t run;
        if (!worth_trying(s, n, i, t, lo, &run)) {
            i += run - 1; /* the rest of a run of digits starts nothing */
            continue;
        }
        size_t start;
        unsigned pattern;
        size_t e = try_at(sp, s, n, i, t, lo, &start, &pattern);
        if (e == 0) {
            if (t == T_DIGIT) /* the rest of a run of digits starts nothing */
                while (i + 1 < n && is_digit((unsigned char)s[i + 1]))
                    i++;
            continue;
        }
        enum lf_err err = add_span(st, st->n_spans, start, e, pattern);
        if (err)
            return err;
        lo = e;
        i = e - 1;
    }
    return sp->n_res > 0 ? scan_user(sp, st, s, n) : LF_OK;
}

/* Appends s with st->spans masked to out; counts them. */
static enum lf_err mask(const struct redact_spec *sp,
                        const struct redact_state *st,
                        const char *s,
                        size_t n,
                        struct lf_buf *out)
{
    size_t at = 0;
    enum lf_err err = LF_OK;
    for (size_t k = 0; k < st->n_spans && !err; k++) {
        const struct span *m = &st->spans[k];
        atomic_fetch_add_explicit(&sp->counts[m->pattern], 1, memory_order_relaxed);
        err = lf_buf_append(out, s + at, m->start - at);
        if (!err && sp->hash) {
            static const char hex[] = "0123456789abcdef";
            unsigned char mac[32];
            char tok[HASH_HEX + 2];
            lf_sigv4_hmac_from(&sp->inner, &sp->outer, s + m->start, m->end - m->start, mac);
            tok[0] = ':';
            for (size_t b = 0; b < HASH_HEX / 2; b++) {
                tok[1 + 2 * b] = hex[mac[b] >> 4];
                tok[2 + 2 * b] = hex[mac[b] & 15];
            }
            tok[HASH_HEX + 1] = ']';
            const char *name = m->pattern < N_BUILTIN ? builtin_names[m->pattern]
                                                      : sp->res[m->pattern - N_BUILTIN].name;
            err = lf_buf_append(out, "[", 1);
            err = err ? err : lf_buf_append_cstr(out, name);
            err = err ? err : lf_buf_append(out, tok, sizeof(tok));
        } else if (!err) {
            err = lf_buf_append(out, sp->repl[m->pattern], sp->repl_len[m->pattern]);
        }
        at = m->end;
    }
    return err ? err : lf_buf_append(out, s + at, n - at);
}

/* ---- members ---- */

static enum lf_err add_fix(struct redact_state *st, struct fix f)
{
    if (st->n_fixes == st->fix_cap) {
        size_t cap = st->fix_cap ? st->fix_cap * 2 : 8;
        struct fix *v = realloc(st->fixes, cap * sizeof(*v));
        if (v == NULL)
            return LF_ENOMEM;
        st->fixes = v;
        st->fix_cap = cap;
    }
    size_t k = st->n_fixes++;
    while (k > 0 && st->fixes[k - 1].at > f.at) { /* in the order of the members */
        st->fixes[k] = st->fixes[k - 1];
        k--;
    }
    st->fixes[k] = f;
    return LF_OK;
}

/* Scans the string member at path; a masked value is added to st->vals and st->fixes. */
static enum lf_err redact_member(const struct redact_spec *sp,
                                 struct redact_state *st,
                                 struct lf_str extra,
                                 struct lf_str path)
{
    struct lf_str m;
    struct lf_str v;
    if (!lf_stage__json_find(extra, path, &m, &v) || v.len < 2 || v.ptr[0] != '"')
        return LF_OK;
    lf_buf_reset(&st->raw);
    if (!lf_stage__json_unescape(lf_str_make(v.ptr + 1, v.len - 2), &st->raw))
        return LF_OK; /* a bad escape (no stage writes one): left as it is */
    if (st->raw.ptr == NULL)
        return LF_OK; /* "" */
    enum lf_err err = scan(sp, st, st->raw.ptr, st->raw.len);
    if (err || st->n_spans == 0)
        return err;
    lf_buf_reset(&st->tmp);
    err = mask(sp, st, st->raw.ptr, st->raw.len, &st->tmp);
    size_t from = st->vals.len;
    err = err ? err : lf_buf_append(&st->vals, "\"", 1);
    err = err ? err : lf_json_escape(&st->vals, lf_buf_str(&st->tmp));
    err = err ? err : lf_buf_append(&st->vals, "\"", 1);
    if (err)
        return err;
    return add_fix(st,
                   (struct fix){ (size_t)(v.ptr - extra.ptr), v.len, from, st->vals.len - from });
}

static enum lf_err process(const void *spec,
                           void *state,
                           const struct lf_event *ev,
                           int64_t now_ms,
                           const struct lf_stage_out *out)
{
    const struct redact_spec *sp = spec;
    struct redact_state *st = state;
    (void)now_ms;
    struct lf_event e = *ev;
    enum lf_err err = LF_OK;
    if (sp->message && ev->message.len > 0) {
        err = scan(sp, st, ev->message.ptr, ev->message.len);
        if (!err && st->n_spans > 0) {
            lf_buf_reset(&st->msg);
            err = mask(sp, st, ev->message.ptr, ev->message.len, &st->msg);
            e.message = lf_buf_str(&st->msg);
        }
    }
    st->n_fixes = 0;
    lf_buf_reset(&st->vals);
    for (size_t p = 0; p < sp->n_paths && !err && ev->extra.len > 0; p++)
        err = redact_member(sp, st, ev->extra, lf_str_make(sp->paths[p].name, sp->paths[p].len));
    if (!err && st->n_fixes > 0) {
        lf_buf_reset(&st->extra);
        size_t at = 0;
        for (size_t k = 0; k < st->n_fixes && !err; k++) {
            const struct fix *f = &st->fixes[k];
            err = lf_buf_append(&st->extra, ev->extra.ptr + at, f->at - at);
            err = err ? err : lf_buf_append(&st->extra, st->vals.ptr + f->from, f->n);
            at = f->at + f->len;
        }
        err = err ? err : lf_buf_append(&st->extra, ev->extra.ptr + at, ev->extra.len - at);
        e.extra = lf_buf_str(&st->extra);
    }
    return err ? err : out->emit(out->arg, &e);
}

/* ---- compiling ---- */

static void release(void *spec)
{
    struct redact_spec *sp = spec;
    for (size_t i = 0; sp->res != NULL && i < sp->n_res; i++) {
        free(sp->res[i].name);
        pcre2_code_free(sp->res[i].re);
    }
    free(sp->res);
    for (size_t i = 0; sp->paths != NULL && i < sp->n_paths; i++)
        free(sp->paths[i].name);
    free(sp->paths);
    free(sp->counts);
    for (size_t i = 0; i < N_BUILTIN + MAX_USER; i++)
        free(sp->repl[i]);
    explicit_bzero(&sp->inner, sizeof(sp->inner));
    explicit_bzero(&sp->outer, sizeof(sp->outer));
}

static enum lf_err
take_patterns(struct redact_spec *sp, const struct lf_parser_conf *pc, struct lf_errbuf *eb)
{
    if (pc->u.redact.n_patterns == 0) {
        sp->on = (1u << N_BUILTIN) - 1;
        return LF_OK;
    }
    for (size_t i = 0; i < pc->u.redact.n_patterns; i++) {
        const char *name = pc->u.redact.patterns[i];
        size_t b = 0;
        while (b < N_BUILTIN && strcmp(builtin_names[b], name) != 0)
            b++;
        if (b == N_BUILTIN)
            return lf_fail(eb, LF_ECONFIG,
                           "redact: unknown pattern \"%s\": expected credit_card, iban, email, "
                           "ipv4, ipv6, jwt, secret_kv, aws_access_key, bearer_token or "
                           "private_key (regex: for your own)",
                           name);
        sp->on |= 1u << b;
    }
    return LF_OK;
}

static enum lf_err take_regexes(struct redact_spec *sp, const char *text, struct lf_errbuf *eb)
{
    json_error_t je;
    json_t *list = json_loads(text, JSON_DECODE_ANY, &je);
    enum lf_err err = LF_OK;
    if (list == NULL || !json_is_array(list) || json_array_size(list) > MAX_USER) {
        json_decref(list);
        return lf_fail(eb, LF_ECONFIG,
                       "redact: regex must be a list of at most %d {name: ..., pattern: ...}",
                       MAX_USER);
    }
    sp->res = calloc(json_array_size(list) + 1, sizeof(*sp->res));
    if (sp->res == NULL)
        err = LF_ENOMEM;
    for (size_t i = 0; !err && i < json_array_size(list); i++) {
        json_t *item = json_array_get(list, i);
        const char *name = json_string_value(json_object_get(item, "name"));
        const char *pattern = json_string_value(json_object_get(item, "pattern"));
        if (!json_is_object(item) || json_object_size(item) != 2 || name == NULL ||
            pattern == NULL || name[0] == '\0' || pattern[0] == '\0') {
            err = lf_fail(eb, LF_ECONFIG,
                          "redact: regex[%zu]: expected {name: ..., pattern: ...}, both "
                          "non-empty strings",
                          i);
            break;
        }
        bool plain = strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789_") == strlen(name);
        for (size_t b = 0; plain && b < N_BUILTIN; b++)
            plain = strcmp(builtin_names[b], name) != 0;
        for (size_t r = 0; plain && r < sp->n_res; r++)
            plain = strcmp(sp->res[r].name, name) != 0;
        if (!plain) {
            err = lf_fail(eb, LF_ECONFIG,
                          "redact: regex[%zu]: name \"%s\": expected lower-case letters, "
                          "digits and _, and no name used already",
                          i, name);
            break;
        }
        char why[256];
        size_t off = 0;
        struct user_re *u = &sp->res[sp->n_res];
        u->re =
            lf_stage__pcre2(pattern, strlen(pattern), PCRE2_UTF, &u->jit, why, sizeof(why), &off);
        if (u->re == NULL) {
            err = lf_fail(eb, LF_ECONFIG, "redact: regex %s: %s at offset %zu of \"%s\"", name, why,
                          off, pattern);
            break;
        }
        u->name = strdup(name);
        sp->n_res++;
        if (u->name == NULL)
            err = LF_ENOMEM;
    }
    json_decref(list);
    return err;
}

/* The replace text of pattern name: tmpl with each %{pattern} its name. */
static enum lf_err replacement(const char *tmpl, const char *name, char **out, size_t *len)
{
    struct lf_buf b;
    lf_buf_init(&b, SIZE_MAX);
    enum lf_err err = LF_OK;
    for (const char *p = tmpl; *p != '\0' && !err;) {
        const char *h = strstr(p, "%{pattern}");
        size_t k = h != NULL ? (size_t)(h - p) : strlen(p);
        err = lf_buf_append(&b, p, k);
        if (!err && h != NULL)
            err = lf_buf_append_cstr(&b, name);
        p += k + (h != NULL ? 10 : 0);
    }
    err = err ? err : lf_buf_append(&b, "", 1);
    if (err) {
        lf_buf_release(&b);
        return LF_ENOMEM;
    }
    *out = b.ptr;
    *len = b.len - 1;
    return LF_OK;
}

static enum lf_err take_fields(struct redact_spec *sp, const struct lf_parser_conf *pc)
{
    size_t n = pc->u.redact.n_fields;
    sp->message = n == 0;
    sp->paths = calloc(n + 1, sizeof(*sp->paths));
    if (sp->paths == NULL)
        return LF_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        const char *f = pc->u.redact.fields[i];
        if (strcmp(f, "message") == 0) {
            sp->message = true;
            continue;
        }
        struct lf_buf b;
        lf_buf_init(&b, SIZE_MAX);
        enum lf_err err = lf_json_escape(&b, lf_str_make(f, strlen(f)));
        err = err ? err : lf_buf_append(&b, "", 1);
        if (err) {
            lf_buf_release(&b);
            return LF_ENOMEM;
        }
        sp->paths[sp->n_paths++] = (struct lf_stage_name){ b.ptr, b.len - 1 };
    }
    return LF_OK;
}

static enum lf_err build(void *spec, const struct lf_parser_conf *pc, struct lf_errbuf *eb)
{
    struct redact_spec *sp = spec;
    const bool hash = pc->u.redact.hash == LF_REDACT_HASH_SHA256;
    if (hash && pc->u.redact.replace != NULL)
        return lf_fail(eb, LF_ECONFIG, "redact: give replace or hash, not both");
    if (hash && pc->u.redact.hash_key == NULL)
        return lf_fail(eb, LF_ECONFIG,
                       "redact: hash: sha256 needs hash_key (a secret, such as ${REDACT_KEY})");
    if (!hash && pc->u.redact.hash_key != NULL)
        return lf_fail(eb, LF_ECONFIG, "redact: hash_key is for hash: sha256");
    sp->counts = calloc(N_BUILTIN + MAX_USER, sizeof(*sp->counts));
    if (sp->counts == NULL)
        return LF_ENOMEM;
    enum lf_err err = take_patterns(sp, pc, eb);
    err = err ? err : take_fields(sp, pc);
    if (!err && pc->u.redact.regex_json != NULL)
        err = take_regexes(sp, pc->u.redact.regex_json, eb);
    const char *tmpl = pc->u.redact.replace != NULL ? pc->u.redact.replace : "[REDACTED]";
    for (size_t i = 0; !err && i < N_BUILTIN + sp->n_res; i++)
        err = replacement(tmpl, i < N_BUILTIN ? builtin_names[i] : sp->res[i - N_BUILTIN].name,
                          &sp->repl[i], &sp->repl_len[i]);
    if (!err && hash) {
        /* A config problem for the loader and the reload, which report only those: the
         * library's message says which file is missing. */
        struct lf_errbuf why = { "" };
        err = lf_netlib_load(LF_NETLIB_SSL, "redact: hash: sha256", &why);
        if (err == LF_EIO) {
            err = lf_fail(eb, LF_ECONFIG, "%s", why.msg);
        } else if (!err) {
            const char *key = pc->u.redact.hash_key;
            lf_sigv4_hmac_key(&sp->inner, &sp->outer, key, strlen(key));
            sp->hash = true;
        }
    }
    /* The bytes each pattern on may start at. */
    for (unsigned c = 0; c < 256; c++) {
        unsigned t = 0;
        if (is_digit((unsigned char)c) &&
            (sp->on & ((1u << P_CARD) | (1u << P_IPV4) | (1u << P_IBAN))))
            t |= T_DIGIT;
        if (c == '@' && (sp->on & (1u << P_EMAIL)))
            t |= T_AT;
        if ((c == '=' && (sp->on & (1u << P_KV))) ||
            (c == ':' && (sp->on & ((1u << P_KV) | (1u << P_IPV6)))))
            t |= T_SEP;
        if (c == 'J' && (sp->on & (1u << P_JWT)))
            t |= T_J;
        if (c == '-' && (sp->on & (1u << P_PEM)))
            t |= T_DASH;
        if (c == 'A' && (sp->on & (1u << P_AWS)))
            t |= T_A;
        if ((c == 'B' || c == 'b') && (sp->on & (1u << P_BEARER)))
            t |= T_BEARER;
        sp->cls[c] = (unsigned char)t;
    }
    return err;
}

static enum lf_err open_state(const void *spec, void *state)
{
    (void)spec;
    struct redact_state *st = state;
    st->md = pcre2_match_data_create(1, NULL);
    return st->md != NULL ? LF_OK : LF_ENOMEM;
}

static void close_state(void *state)
{
    struct redact_state *st = state;
    pcre2_match_data_free(st->md);
}

bool lf_stage__redact_count(const void *spec, size_t i, const char **name, uint64_t *n)
{
    const struct redact_spec *sp = spec;
    for (size_t b = 0; b < N_BUILTIN; b++) {
        if (!(sp->on & (1u << b)))
            continue;
        if (i-- == 0) {
            *name = builtin_names[b];
            *n = atomic_load_explicit(&sp->counts[b], memory_order_relaxed);
            return true;
        }
    }
    if (i >= sp->n_res)
        return false;
    *name = sp->res[i].name;
    *n = atomic_load_explicit(&sp->counts[N_BUILTIN + i], memory_order_relaxed);
    return true;
}

static const struct lf_stage_opt opts[] = {
    LF_STAGE_OPT_END,
};
#define B(f) LF_STAGE_BUF(struct redact_state, f)
static const struct lf_stage_slot slots[] = {
    B(msg),
    B(raw),
    B(tmp),
    B(vals),
    B(extra),
    LF_STAGE_FREE(struct redact_state, spans),
    LF_STAGE_FREE(struct redact_state, fixes),
    LF_STAGE_SLOT_END,
};
#undef B
static const struct lf_stage_table table = {
    .name = "redact",
    .opts = opts,
    .spec_size = sizeof(struct redact_spec),
    .build = build,
    .release = release,
    .state_size = sizeof(struct redact_state),
    .slots = slots,
    .open = open_state,
    .close = close_state,
};

const struct lf_stage_ops lf_stage_redact = {
    .kind = LF_PARSER_REDACT,
    LF_STAGE_TABLE_OPS(table),
    .process = process,
};
