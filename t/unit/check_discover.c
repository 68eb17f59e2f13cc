/* check_discover.c - glob expansion with `**`, symlinks, exclude_files, deduplication. */
#include "config.h"

#include <check.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "logferry/discover.h"

static char root[256];

struct seen {
    char paths[64][PATH_MAX];
    size_t n;
};

static int collect(void *arg, const char *path, const struct stat *st)
{
    struct seen *s = arg;
    (void)st;
    ck_assert_uint_lt(s->n, 64);
    snprintf(s->paths[s->n++], PATH_MAX, "%s", path + strlen(root));
    return 0;
}

static void touch(const char *rel)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s", root, rel);
    for (char *s = path + strlen(root) + 1; *s; s++) {
        if (*s == '/') {
            *s = '\0';
            mkdir(path, 0755);
            *s = '/';
        }
    }
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("x\n", f);
    fclose(f);
}

static void link_at(const char *target, const char *rel)
{
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "%s/%s", root, rel);
    ck_assert_int_eq(symlink(target, path), 0);
}

static void setup(void)
{
    snprintf(root, sizeof(root), "%s/lf-discover-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(root));
    touch("a.log");
    touch("b.txt");
    touch(".hidden.log");
    touch("app/one.log");
    touch("app/two.log.gz");
    touch("app/deep/er/three.log");
    touch("pods/ns_pod_uid/c/0.log");
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s/containers", root);
    ck_assert_int_eq(mkdir(dir, 0755), 0);
}

static void teardown(void)
{
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    ck_assert_int_eq(system(cmd), 0);
}

/* Scans with the given patterns and excludes; results relative to root. */
static void scan(struct seen *s, const char **pats, size_t n, char **excl, size_t n_excl)
{
    char *paths[8];
    char bufs[8][PATH_MAX];
    for (size_t i = 0; i < n; i++) {
        snprintf(bufs[i], PATH_MAX, "%s/%s", root, pats[i]);
        paths[i] = bufs[i];
    }
    struct lf_input_conf in = { .id = "t", .paths = paths, .n_paths = n,
                                .exclude_files = excl, .n_exclude_files = n_excl };
    struct lf_discover *d = NULL;
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(lf_discover_new(&in, &d, &eb), LF_OK);
    memset(s, 0, sizeof(*s));
    ck_assert_int_eq(lf_discover_scan(d, 0, collect, s), LF_OK);
    lf_discover_free(d);
}

START_TEST(star_matches_files_in_one_directory_but_not_hidden_ones)
{
    struct seen s;
    scan(&s, (const char *[]){ "*.log" }, 1, NULL, 0);
    ck_assert_uint_eq(s.n, 1);
    ck_assert_str_eq(s.paths[0], "/a.log");
}
END_TEST

START_TEST(globstar_matches_zero_or_more_directories)
{
    struct seen s;
    scan(&s, (const char *[]){ "**/*.log" }, 1, NULL, 0);
    ck_assert_uint_eq(s.n, 4);
    ck_assert_str_eq(s.paths[0], "/a.log");
    ck_assert_str_eq(s.paths[1], "/app/deep/er/three.log");
    ck_assert_str_eq(s.paths[2], "/app/one.log");
    ck_assert_str_eq(s.paths[3], "/pods/ns_pod_uid/c/0.log");
}
END_TEST

START_TEST(a_file_matched_by_two_patterns_is_reported_once)
{
    struct seen s;
    scan(&s, (const char *[]){ "*.log", "**/*.log", "a.log" }, 3, NULL, 0);
    ck_assert_uint_eq(s.n, 4);
    ck_assert_str_eq(s.paths[0], "/a.log");
}
END_TEST

START_TEST(exclude_files_regexes_drop_full_path_matches)
{
    struct seen s;
    char *excl[] = { "\\.gz$", "/deep/" };
    scan(&s, (const char *[]){ "app/**/*" }, 1, excl, 2);
    ck_assert_uint_eq(s.n, 1);
    ck_assert_str_eq(s.paths[0], "/app/one.log");
}
END_TEST

START_TEST(symlinked_files_are_followed_and_reported_once_under_the_first_path)
{
    char target[PATH_MAX];
    snprintf(target, sizeof(target), "%s/pods/ns_pod_uid/c/0.log", root);
    link_at(target, "containers/pod_ns_c-123.log");
    struct seen s;
    scan(&s, (const char *[]){ "containers/*.log", "pods/**/*.log" }, 2, NULL, 0);
    ck_assert_uint_eq(s.n, 1);
    ck_assert_str_eq(s.paths[0], "/containers/pod_ns_c-123.log");
}
END_TEST

START_TEST(a_symlink_cycle_under_globstar_terminates)
{
    link_at("..", "app/deep/loop");
    struct seen s;
    scan(&s, (const char *[]){ "app/**/*.log" }, 1, NULL, 0);
    ck_assert_uint_eq(s.n, 2);
    ck_assert_str_eq(s.paths[0], "/app/deep/er/three.log");
    ck_assert_str_eq(s.paths[1], "/app/one.log");
}
END_TEST

START_TEST(a_missing_directory_matches_nothing)
{
    struct seen s;
    scan(&s, (const char *[]){ "nope/*.log" }, 1, NULL, 0);
    ck_assert_uint_eq(s.n, 0);
}
END_TEST

START_TEST(a_bad_exclude_regex_is_a_config_error)
{
    char *paths[] = { "/tmp/*.log" };
    char *excl[] = { "(" };
    struct lf_input_conf in = { .id = "app", .paths = paths, .n_paths = 1,
                                .exclude_files = excl, .n_exclude_files = 1 };
    struct lf_discover *d = NULL;
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(lf_discover_new(&in, &d, &eb), LF_ECONFIG);
    ck_assert_str_eq(eb.msg, "input app: exclude_files[0]: missing closing parenthesis at offset 1");
}
END_TEST

START_TEST(glob_match_follows_the_scan_rules)
{
    ck_assert(lf_glob_match("/var/log/*.log", "/var/log/a.log"));
    ck_assert(!lf_glob_match("/var/log/*.log", "/var/log/x/a.log"));
    ck_assert(lf_glob_match("/var/log/**/*.log", "/var/log/a.log"));
    ck_assert(lf_glob_match("/var/log/**/*.log", "/var/log/x/y/z/a.log"));
    ck_assert(!lf_glob_match("/var/log/**/*.log", "/var/log/.git/a.log"));
    ck_assert(!lf_glob_match("/var/log/*.log", "/var/log/.a.log"));
    ck_assert(!lf_glob_match("/var/log/*.log", "var/log/a.log"));
    ck_assert(lf_glob_match("/var/log/containers/*_kube-system_*.log",
                            "/var/log/containers/p_kube-system_c-1.log"));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("discover");
    TCase *tc = tcase_create("scan");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, star_matches_files_in_one_directory_but_not_hidden_ones);
    tcase_add_test(tc, globstar_matches_zero_or_more_directories);
    tcase_add_test(tc, a_file_matched_by_two_patterns_is_reported_once);
    tcase_add_test(tc, exclude_files_regexes_drop_full_path_matches);
    tcase_add_test(tc, symlinked_files_are_followed_and_reported_once_under_the_first_path);
    tcase_add_test(tc, a_symlink_cycle_under_globstar_terminates);
    tcase_add_test(tc, a_missing_directory_matches_nothing);
    suite_add_tcase(s, tc);
    TCase *tm = tcase_create("match");
    tcase_add_test(tm, a_bad_exclude_regex_is_a_config_error);
    tcase_add_test(tm, glob_match_follows_the_scan_rules);
    suite_add_tcase(s, tm);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
