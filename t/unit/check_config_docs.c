/* check_config_docs.c - every key the config loader knows is in docs/configuration.md.
 *
 * Walks the loader's own key tables (root, inputs, every parser, every output type, nested
 * sections), so a key added to a table without a line in the reference fails here, named
 * with its place in the file. */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_int.h"

static char *docs;

static void load_docs(void)
{
    const char *path = LF_TOP_SRCDIR "/docs/configuration.md";
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    docs = buf;
}

/* A key is documented when the reference names it in backquotes: `name`, `name:` as in a
 * YAML example, or as a part of a dotted path (`batch.max_events`). */
static bool documented(const char *name)
{
    char needle[128];
    const char *forms[] = { "`%s`", "`%s:", ".%s`", "`%s." };
    for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
        snprintf(needle, sizeof(needle), forms[i], name);
        if (strstr(docs, needle) != NULL)
            return true;
    }
    return false;
}

static size_t missing;
static char missing_list[8192];

static void walk(const struct lf_conf_key *t, const char *where)
{
    for (; t->name != NULL; t++) {
        char path[256];
        snprintf(path, sizeof(path), "%s%s%s", where, where[0] ? "." : "", t->name);
        if (!documented(t->name)) {
            missing++;
            size_t len = strlen(missing_list);
            snprintf(missing_list + len, sizeof(missing_list) - len, " %s", path);
        }
        if (t->kind == LF_CONF_SECTION && t->arg != NULL)
            walk(t->arg, path);
    }
}

START_TEST(every_key_the_loader_knows_is_in_the_reference)
{
    load_docs();
    for (size_t i = 0; lf_conf__root_tables[i] != NULL; i++)
        walk(lf_conf__root_tables[i], "");
    for (size_t i = 0; lf_conf__input_tables[i] != NULL; i++)
        walk(lf_conf__input_tables[i], "inputs[]");
    walk(lf_conf__parser_keys, "inputs[].parsers[]");
    for (size_t i = 0; lf_conf__output_types[i].name != NULL; i++) {
        const struct lf_conf_key *tables[8];
        lf_conf__output_tables(lf_conf__output_types[i].value, tables);
        char where[64];
        snprintf(where, sizeof(where), "outputs[type=%s]", lf_conf__output_types[i].name);
        for (size_t k = 0; tables[k] != NULL; k++)
            walk(tables[k], where);
    }
    ck_assert_msg(missing == 0, "%zu keys missing from docs/configuration.md:%s", missing,
                  missing_list);
}
END_TEST

START_TEST(the_check_notices_a_key_the_reference_lacks)
{
    load_docs();
    ck_assert(documented("data_dir"));
    ck_assert(!documented("no_such_key_anywhere"));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("config_docs");
    TCase *tc = tcase_create("reference");
    tcase_add_test(tc, every_key_the_loader_knows_is_in_the_reference);
    tcase_add_test(tc, the_check_notices_a_key_the_reference_lacks);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
