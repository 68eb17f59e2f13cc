/* check_roots.c - allowed_roots on open descriptors: links, linked roots, FIFOs, deleted
 * files, and roots that are only a prefix of a name (issue 7, security 6). */
#include "config.h"

#include <check.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "logferry/roots.h"

static char dir[PATH_MAX];
static char *roots[3];
static struct lf_input_conf in;
static struct lf_errbuf eb;

/* dir/rel as a new string (free() it). */
static char *at(const char *rel)
{
    char *p = malloc(strlen(dir) + strlen(rel) + 2);
    ck_assert_ptr_nonnull(p);
    sprintf(p, "%s/%s", dir, rel);
    return p;
}

static void put(const char *rel)
{
    char *p = at(rel);
    FILE *f = fopen(p, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(fputs("line\n", f) >= 0, 1);
    ck_assert_int_eq(fclose(f), 0);
    free(p);
}

static void link_to(const char *target_rel, const char *rel)
{
    char *t = at(target_rel);
    char *p = at(rel);
    ck_assert_int_eq(symlink(t, p), 0);
    free(t);
    free(p);
}

static void mkd(const char *rel)
{
    char *p = at(rel);
    ck_assert_int_eq(mkdir(p, 0700), 0);
    free(p);
}

/* Opens dir/rel as the agent does and checks it against the roots. */
static enum lf_err check(const char *rel)
{
    char *p = at(rel);
    int fd = open(p, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    free(p);
    ck_assert_int_ge(fd, 0);
    eb.msg[0] = '\0';
    enum lf_err err = lf_roots_check(&in, fd, &eb);
    close(fd);
    return err;
}

static void setup(void)
{
    const char *tmp = getenv("TMPDIR");
    char made[256];
    snprintf(made, sizeof(made), "%s/check_roots.XXXXXX", tmp != NULL ? tmp : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(made));
    char real[PATH_MAX];
    ck_assert_ptr_nonnull(realpath(made, real)); /* TMPDIR may itself be a link */
    snprintf(dir, sizeof(dir), "%s", real);
    mkd("logs");
    mkd("logs2");
    mkd("outside");
    roots[0] = at("logs");
    in = (struct lf_input_conf){ .id = "app", .allowed_roots = roots, .n_allowed_roots = 1 };
}

static void teardown(void)
{
    char cmd[PATH_MAX + 20];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
    for (size_t i = 0; i < 3; i++) {
        free(roots[i]);
        roots[i] = NULL;
    }
}

START_TEST(a_file_inside_a_root_and_a_link_to_one_are_allowed)
{
    put("logs/a.log");
    link_to("logs/a.log", "logs/b.log");
    ck_assert_int_eq(check("logs/a.log"), LF_OK);
    ck_assert_int_eq(check("logs/b.log"), LF_OK);
}
END_TEST

START_TEST(a_link_out_of_the_roots_is_refused_naming_its_real_path)
{
    put("outside/shadow");
    link_to("outside/shadow", "logs/evil.log");
    ck_assert_int_eq(check("logs/evil.log"), LF_EREJECTED);
    char want[3 * PATH_MAX];
    snprintf(want, sizeof(want), "its real path %s/outside/shadow is outside allowed_roots (%s)",
             dir, roots[0]);
    ck_assert_str_eq(eb.msg, want);
}
END_TEST

START_TEST(a_linked_directory_on_the_path_is_seen_through)
{
    put("outside/x.log");
    link_to("outside", "logs/dir");
    ck_assert_int_eq(check("logs/dir/x.log"), LF_EREJECTED);
}
END_TEST

START_TEST(a_root_that_is_only_a_prefix_of_a_name_does_not_match)
{
    put("logs2/a.log");
    link_to("logs2/a.log", "logs/a.log");
    ck_assert_int_eq(check("logs/a.log"), LF_EREJECTED);
}
END_TEST

START_TEST(a_root_that_is_a_link_holds_what_its_target_holds)
{
    put("outside/a.log");
    link_to("outside", "linked-root");
    free(roots[0]);
    roots[0] = at("linked-root");
    ck_assert_int_eq(check("outside/a.log"), LF_OK);
}
END_TEST

START_TEST(slash_as_a_root_allows_everything_and_later_roots_count)
{
    put("outside/a.log");
    roots[1] = strdup("/");
    in.n_allowed_roots = 2;
    ck_assert_int_eq(check("outside/a.log"), LF_OK);
}
END_TEST

START_TEST(a_fifo_is_refused_without_blocking)
{
    char *p = at("logs/pipe.log");
    ck_assert_int_eq(mkfifo(p, 0600), 0);
    free(p);
    ck_assert_int_eq(check("logs/pipe.log"), LF_EREJECTED);
    ck_assert_str_eq(eb.msg, "it is a FIFO, not a regular file");
}
END_TEST

START_TEST(a_file_deleted_after_the_open_is_still_judged_by_its_directory)
{
    put("logs/gone.log");
    char *p = at("logs/gone.log");
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(unlink(p), 0);
    free(p);
    ck_assert_int_eq(lf_roots_check(&in, fd, &eb), LF_OK);
    close(fd);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("roots");
    TCase *tc = tcase_create("allowed_roots");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, a_file_inside_a_root_and_a_link_to_one_are_allowed);
    tcase_add_test(tc, a_link_out_of_the_roots_is_refused_naming_its_real_path);
    tcase_add_test(tc, a_linked_directory_on_the_path_is_seen_through);
    tcase_add_test(tc, a_root_that_is_only_a_prefix_of_a_name_does_not_match);
    tcase_add_test(tc, a_root_that_is_a_link_holds_what_its_target_holds);
    tcase_add_test(tc, slash_as_a_root_allows_everything_and_later_roots_count);
    tcase_add_test(tc, a_fifo_is_refused_without_blocking);
    tcase_add_test(tc, a_file_deleted_after_the_open_is_still_judged_by_its_directory);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
