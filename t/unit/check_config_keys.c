/* check_config_keys.c - lf_config_free() frees every string and list a key table describes.
 *
 * Builds, from the loader's own key tables, a config that sets every key owning memory (the
 * root, one input running every parser, one output of every type), checks that each of those
 * keys came out set, then frees it. A key the freeing misses is a leak: LeakSanitizer reports
 * it in the sanitizer build; in the other builds glibc's count of bytes in use must come back
 * to what it was before the load. */
#include "config.h"

#include <check.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config_int.h"
#include "logferry/config.h"

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

/* Values for keys whose checks refuse the generic "x" and that have no default. */
static const char *const values[][2] = {
    { "address", "127.0.0.1:514" },
    { "brokers", "127.0.0.1:9092" },
    { "allowed_roots", "/var/log" },
    { "skip_if_exists", "/nonexistent" },
    { "directory", "/var/log/journal" },
    { "files", "/var/log/journal/*.journal" },
    { "matches", "_TRANSPORT=kernel" },
    { "include_fields", "_SYSTEMD_CGROUP" },
    { "exclude_fields", "_CMDLINE" },
    { "formats", "rfc3339" },
    { "rate", "10/s" }, /* throttle's; sample's is a count, written as a required row */
    { NULL, NULL },
};

static char yaml[1 << 16];
static size_t yaml_len;

static void put(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(yaml + yaml_len, sizeof(yaml) - yaml_len, fmt, ap);
    va_end(ap);
    ck_assert(n > 0 && (size_t)n < sizeof(yaml) - yaml_len);
    yaml_len += (size_t)n;
}

static bool owns(const struct lf_conf_key *k)
{
    switch (k->kind) {
    case LF_CONF_STRING:
    case LF_CONF_ENUM_STR:
    case LF_CONF_REGEX:
    case LF_CONF_JSON:
    case LF_CONF_STRLIST:
    case LF_CONF_REGEXLIST:
        return true;
    default:
        return false;
    }
}

/* A value the row's checks accept: a listed one, its default, its first name, or "x". */
static const char *value_of(const struct lf_conf_key *k)
{
    for (size_t i = 0; values[i][0] != NULL; i++) {
        if (strcmp(values[i][0], k->name) == 0)
            return values[i][1];
    }
    if (k->def != NULL && k->def[0] != '\0')
        return k->def;
    if (k->kind == LF_CONF_ENUM_STR)
        return ((const struct lf_conf_enum *)k->arg)->name;
    return "x";
}

/* The keys only a journald input takes (one of them, files, excludes another, directory):
 * the generated config has a second input of that type for them. */
static const char *const journald_only[] = { "directory", "units", "matches", "priority",
                                             "include_fields", "exclude_fields", NULL };

static bool journald_key(const char *name)
{
    for (size_t i = 0; journald_only[i] != NULL; i++) {
        if (strcmp(journald_only[i], name) == 0)
            return true;
    }
    return strcmp(name, "files") == 0;
}

/* Which input rows put_rows() writes. */
enum rows { ROWS_ALL, ROWS_FILE, ROWS_JOURNALD };
static enum rows rows_wanted = ROWS_ALL;

/* Writes every owning row of t (sections as nested mappings) at indent, except skip. */
static void put_rows(const struct lf_conf_key *t, int indent, const char *skip)
{
    for (; t->name != NULL; t++) {
        if (skip != NULL && strcmp(t->name, skip) == 0)
            continue;
        if ((rows_wanted == ROWS_FILE && journald_key(t->name)) ||
            (rows_wanted == ROWS_JOURNALD && !journald_key(t->name)))
            continue;
        if (t->kind == LF_CONF_SECTION) {
            put("%*s%s:\n", indent, "", t->name);
            put_rows(t->arg, indent + 2, skip);
        } else if (t->kind == LF_CONF_JSON && (t->flags & LF_CONF_LIST)) {
            put("%*s%s: [{name: a, pattern: b}]\n", indent, "", t->name); /* redact's regex */
        } else if (t->kind == LF_CONF_JSON) {
            put("%*s%s: {a: b}\n", indent, "", t->name);
        } else if (t->kind == LF_CONF_STRLIST || t->kind == LF_CONF_REGEXLIST) {
            put("%*s%s: [\"%s\"]\n", indent, "", t->name, value_of(t));
        } else if (owns(t)) {
            put("%*s%s: \"%s\"\n", indent, "", t->name, value_of(t));
        } else if (t->kind == LF_CONF_COUNT && (t->flags & LF_CONF_REQUIRED)) {
            put("%*s%s: 1\n", indent, "", t->name); /* a required number (sample's rate) */
        }
    }
}

/* The whole config: every parser once (multiline without its preset, which excludes a
 * pattern, and then once more with the preset only), every output type once. */
static void build_yaml(void)
{
    yaml_len = 0;
    put_rows(lf_conf__root_tables[0], 0, NULL);
    put("inputs:\n  -\n");
    rows_wanted = ROWS_FILE;
    put_rows(lf_conf__input_tables[0], 4, NULL);
    put("    parsers:\n");
    for (const struct lf_conf_key *p = lf_conf__parser_keys; p->name != NULL; p++) {
        const struct lf_conf_key row[] = { *p, { .name = NULL } };
        put("      -\n");
        put_rows(row, 8, "preset");
        /* `when`, every parser's but those that take none (drop needs it) */
        if (strcmp(p->name, "container") != 0 && strcmp(p->name, "multiline") != 0)
            put("        when: \"exists(x)\"\n");
    }
    put("      - multiline: {preset: java}\n");
    /* routes: their names, conditions and output lists are owned too */
    put("    routes:\n      - {name: r1, when: \"exists(x)\", outputs: [out-file], "
        "continue: true}\n      - {outputs: []}\n");
    put("  -\n    id: journal\n    type: journald\n");
    rows_wanted = ROWS_JOURNALD;
    put_rows(lf_conf__input_tables[0], 4, "files");
    rows_wanted = ROWS_ALL;
    put("  -\n    id: journal-files\n    type: journald\n    files: [\"/x.journal\"]\n");
    put("outputs:\n");
    for (const struct lf_conf_enum *e = lf_conf__output_types; e->name != NULL; e++) {
        const struct lf_conf_key *tables[4];
        lf_conf__output_tables(e->value, tables);
        put("  -\n    name: out-%s\n    type: %s\n", e->name, e->name);
        for (size_t i = 1; tables[i] != NULL; i++)
            put_rows(tables[i], 4, NULL);
    }
}

static struct lf_config *load_all(void)
{
    struct lf_buf eb;
    lf_buf_init(&eb, 1 << 20);
    struct lf_config *cfg = NULL;
    enum lf_err err = lf_config_load_mem("all.yml", yaml, yaml_len, &cfg, &eb);
    ck_assert_msg(err == LF_OK, "%s\n%.*s", yaml, (int)eb.len, eb.ptr != NULL ? eb.ptr : "");
    lf_buf_release(&eb);
    return cfg;
}

static bool row_set(const void *base, const struct lf_conf_key *k)
{
    const char *at = (const char *)base + k->off;
    if (k->kind == LF_CONF_STRLIST || k->kind == LF_CONF_REGEXLIST)
        return *(const size_t *)((const char *)base + k->off_n) > 0;
    return *(char *const *)at != NULL;
}

/* Asserts every owning row of t is set in at least one of the n structs at bases. */
static void
assert_set(const void *const *bases, size_t n, const struct lf_conf_key *t, const char *where)
{
    for (; t->name != NULL; t++) {
        char path[256];
        snprintf(path, sizeof(path), "%s.%s", where, t->name);
        if (t->kind == LF_CONF_SECTION) {
            assert_set(bases, n, t->arg, path);
            continue;
        }
        bool set = !owns(t);
        for (size_t i = 0; !set && i < n; i++)
            set = row_set(bases[i], t);
        ck_assert_msg(set, "%s was not set by the generated config", path);
    }
}

START_TEST(the_generated_config_sets_every_key_that_owns_memory)
{
    build_yaml();
    struct lf_config *cfg = load_all();
    const void *root[] = { cfg };
    assert_set(root, 1, lf_conf__root_tables[0], "");
    ck_assert_uint_eq(cfg->n_inputs, 3);
    const struct lf_input_conf *in = &cfg->inputs[0];
    const void *input[] = { in, &cfg->inputs[1], &cfg->inputs[2] };
    assert_set(input, 3, lf_conf__input_tables[0], "inputs[]");
    size_t i = 0;
    for (const struct lf_conf_key *p = lf_conf__parser_keys; p->name != NULL; p++, i++) {
        const void *same_kind[4];
        size_t n = 0;
        for (size_t j = 0; j < in->n_parsers && n < 4; j++) {
            if (in->parsers[j].kind == in->parsers[i].kind)
                same_kind[n++] = &in->parsers[j];
        }
        const struct lf_conf_key row[] = { *p, { .name = NULL } };
        assert_set(same_kind, n, row, "parsers[]");
    }
    ck_assert_uint_eq(in->n_parsers, i + 1);
    size_t o = 0;
    for (const struct lf_conf_enum *e = lf_conf__output_types; e->name != NULL; e++, o++) {
        const struct lf_conf_key *tables[4];
        lf_conf__output_tables(e->value, tables);
        const void *output[] = { &cfg->outputs[o] };
        for (size_t t = 0; tables[t] != NULL; t++)
            assert_set(output, 1, tables[t], e->name);
    }
    ck_assert_uint_eq(cfg->n_outputs, o);
    lf_config_free(cfg);
}
END_TEST

START_TEST(freeing_the_config_gives_back_every_byte)
{
    build_yaml();
    lf_config_free(load_all()); /* first: libraries' lazy caches (iconv, time zones) fill */
#ifdef UNDER_ASAN
    lf_config_free(load_all()); /* a leak is LeakSanitizer's report at exit */
#else
    size_t before = mallinfo2().uordblks;
    lf_config_free(load_all());
    size_t after = mallinfo2().uordblks;
    ck_assert_msg(after == before, "%zu bytes in use before the load, %zu after the free", before,
                  after);
#endif
}
END_TEST

int main(int argc, char **argv)
{
#ifndef UNDER_ASAN
    /* glibc's per-thread cache keeps freed chunks counted as in use, and not the same ones
     * from one load to the next: without it, the bytes in use after a free are exact. */
    const char *tunables = getenv("GLIBC_TUNABLES");
    if (argc > 0 && (tunables == NULL || strstr(tunables, "tcache_count=0") == NULL)) {
        char set[512];
        snprintf(set, sizeof(set), "%s%sglibc.malloc.tcache_count=0", tunables ? tunables : "",
                 tunables ? ":" : "");
        setenv("GLIBC_TUNABLES", set, 1);
        execv("/proc/self/exe", argv);
        perror("execv /proc/self/exe");
        return EXIT_FAILURE;
    }
#else
    (void)argc;
    (void)argv;
#endif
    Suite *s = suite_create("config_keys");
    TCase *tc = tcase_create("free");
    tcase_add_test(tc, the_generated_config_sets_every_key_that_owns_memory);
    tcase_add_test(tc, freeing_the_config_gives_back_every_byte);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
