/* check_identity.c - file identity: fingerprints, prefixes, inode reuse, links, renames. */
#include "config.h"

#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "logferry/identity.h"

static char dir[256];

static void setup(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof(dir), "%s/check_identity.XXXXXX", tmp != NULL ? tmp : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

static char *path_of(const char *name)
{
    static char p[512];
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    return p;
}

/* Creates (or truncates) name with n bytes of data and returns an O_RDWR fd on it. */
static int make_file(const char *name, const void *data, size_t n)
{
    int fd = open(path_of(name), O_RDWR | O_CREAT | O_TRUNC, 0644);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, data, n), (ssize_t)n);
    return fd;
}

static void append(int fd, const void *data, size_t n)
{
    ck_assert_int_eq(pwrite(fd, data, n, lseek(fd, 0, SEEK_END)), (ssize_t)n);
}

static struct lf_file_id id_of(int fd)
{
    struct stat st;
    ck_assert_int_eq(fstat(fd, &st), 0);
    struct lf_file_id id;
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(lf_file_id_read(fd, &st, &id, &eb), LF_OK);
    ck_assert_uint_eq(id.dev, (uint64_t)st.st_dev);
    ck_assert_uint_eq(id.ino, (uint64_t)st.st_ino);
    return id;
}

static enum lf_id_match match(const struct lf_file_id *stored, int fd)
{
    struct lf_file_id now = id_of(fd);
    enum lf_id_match m = LF_ID_SAME;
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(lf_file_id_match(stored, fd, &now, &m, &eb), LF_OK);
    return m;
}

static void fill(char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (char)('a' + (i * 7 + seed) % 26);
}

START_TEST(hash_is_fnv1a_64)
{
    ck_assert_uint_eq(lf_file_id_hash("", 0), 0xcbf29ce484222325ull);
    ck_assert_uint_eq(lf_file_id_hash("a", 1), 0xaf63dc4c8601ec8cull);
    ck_assert_uint_eq(lf_file_id_hash("foobar", 6), 0x85944171f73967e8ull);
}
END_TEST

START_TEST(empty_file_has_an_empty_fingerprint)
{
    int fd = make_file("empty", "", 0);
    struct lf_file_id id = id_of(fd);
    ck_assert_uint_eq(id.fp_len, 0);
    ck_assert_uint_eq(id.fp_hash, lf_file_id_hash("", 0));
    close(fd);
}
END_TEST

START_TEST(ten_byte_file_fingerprints_all_ten_bytes)
{
    int fd = make_file("ten", "0123456789", 10);
    struct lf_file_id id = id_of(fd);
    ck_assert_uint_eq(id.fp_len, 10);
    ck_assert_uint_eq(id.fp_hash, lf_file_id_hash("0123456789", 10));
    close(fd);
}
END_TEST

START_TEST(fingerprint_stops_at_one_kib_and_keeps_the_file_offset)
{
    static const size_t sizes[] = { 1024, 5 * 1024 };
    char data[5 * 1024];
    fill(data, sizeof(data), 3);
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        int fd = make_file("big", data, sizes[i]);
        ck_assert_int_eq(lseek(fd, 7, SEEK_SET), 7);
        struct lf_file_id id = id_of(fd);
        ck_assert_uint_eq(id.fp_len, LF_FINGERPRINT_MAX);
        ck_assert_uint_eq(id.fp_hash, lf_file_id_hash(data, 1024));
        ck_assert_int_eq(lseek(fd, 0, SEEK_CUR), 7);
        close(fd);
    }
}
END_TEST

START_TEST(short_file_that_grows_still_matches_its_prefix)
{
    char more[3000];
    fill(more, sizeof(more), 11);
    int fd = make_file("grow", "first line\n", 11);
    struct lf_file_id stored = id_of(fd);
    ck_assert_uint_eq(stored.fp_len, 11);
    append(fd, more, 400); /* still under 1 KiB */
    ck_assert_int_eq(match(&stored, fd), LF_ID_SAME);
    struct lf_file_id mid = id_of(fd);
    ck_assert_uint_eq(mid.fp_len, 411);
    append(fd, more, sizeof(more)); /* past 1 KiB */
    ck_assert_int_eq(match(&stored, fd), LF_ID_SAME);
    ck_assert_int_eq(match(&mid, fd), LF_ID_SAME);
    ck_assert_uint_eq(id_of(fd).fp_len, 1024);
    close(fd);
}
END_TEST

START_TEST(same_inode_rewritten_with_other_content_is_different)
{
    int fd = make_file("reuse", "hello world\n", 12);
    struct lf_file_id stored = id_of(fd);
    /* Same length, other bytes. */
    ck_assert_int_eq(ftruncate(fd, 0), 0);
    append(fd, "other text!\n", 12);
    ck_assert_int_eq(match(&stored, fd), LF_ID_DIFFERENT);
    /* Longer, with a different head: the re-hashed prefix tells them apart. */
    ck_assert_int_eq(ftruncate(fd, 0), 0);
    append(fd, "hello_world\nand more after it\n", 30);
    ck_assert_int_eq(match(&stored, fd), LF_ID_DIFFERENT);
    /* Truncated below the stored fingerprint (copytruncate). */
    ck_assert_int_eq(ftruncate(fd, 0), 0);
    append(fd, "hello", 5);
    ck_assert_int_eq(match(&stored, fd), LF_ID_DIFFERENT);
    close(fd);
}
END_TEST

START_TEST(same_head_tells_growth_from_content_written_again)
{
    char a[2048];
    fill(a, sizeof(a), 1);
    int fd = make_file("head", a, 1500);
    struct lf_file_id stored = id_of(fd);
    ck_assert_uint_eq(stored.fp_len, LF_FINGERPRINT_MAX);
    struct lf_errbuf eb = { "" };
    bool same = false;
    /* Growth keeps the head. */
    append(fd, a + 1500, 500);
    ck_assert_int_eq(lf_file_id_same_head(&stored, fd, 2000, &same, &eb), LF_OK);
    ck_assert(same);
    /* Truncated and written again past the old size at once: the size says "grew", the
     * head says otherwise. One byte differing in the first KiB is enough. */
    char b[2048];
    memcpy(b, a, sizeof(b));
    b[LF_FINGERPRINT_MAX - 1] ^= 1;
    ck_assert_int_eq(ftruncate(fd, 0), 0);
    append(fd, b, 2048);
    ck_assert_int_eq(lf_file_id_same_head(&stored, fd, 2048, &same, &eb), LF_OK);
    ck_assert(!same);
    /* Bytes past the fingerprint do not matter. */
    ck_assert_int_eq(ftruncate(fd, 0), 0);
    b[LF_FINGERPRINT_MAX - 1] ^= 1;
    b[LF_FINGERPRINT_MAX] ^= 1;
    append(fd, b, 2048);
    ck_assert_int_eq(lf_file_id_same_head(&stored, fd, 2048, &same, &eb), LF_OK);
    ck_assert(same);
    /* Shorter than the fingerprint: not the same head; an empty fingerprint: any head. */
    ck_assert_int_eq(lf_file_id_same_head(&stored, fd, 1000, &same, &eb), LF_OK);
    ck_assert(!same);
    struct lf_file_id none = stored;
    none.fp_len = 0;
    ck_assert_int_eq(lf_file_id_same_head(&none, fd, 0, &same, &eb), LF_OK);
    ck_assert(same);
    close(fd);
}
END_TEST

START_TEST(identical_small_files_have_different_identities)
{
    int a = make_file("a.log", "same first line\n", 16);
    int b = make_file("b.log", "same first line\n", 16);
    struct lf_file_id ia = id_of(a);
    struct lf_file_id ib = id_of(b);
    ck_assert_uint_eq(ia.fp_hash, ib.fp_hash);
    ck_assert_uint_ne(ia.ino, ib.ino);
    ck_assert_int_eq(match(&ia, b), LF_ID_DIFFERENT);
    ck_assert_int_eq(match(&ib, a), LF_ID_DIFFERENT);
    ck_assert_int_eq(match(&ia, a), LF_ID_SAME);
    close(a);
    close(b);
}
END_TEST

START_TEST(empty_stored_fingerprint_matches_any_content_on_the_same_inode)
{
    int fd = make_file("late", "", 0);
    struct lf_file_id stored = id_of(fd);
    append(fd, "now there is text\n", 18);
    ck_assert_int_eq(match(&stored, fd), LF_ID_SAME);
    int other = make_file("other", "now there is text\n", 18);
    ck_assert_int_eq(match(&stored, other), LF_ID_DIFFERENT);
    close(fd);
    close(other);
}
END_TEST

START_TEST(hard_link_and_rename_keep_the_identity)
{
    int fd = make_file("app.log", "line one\nline two\n", 18);
    struct lf_file_id stored = id_of(fd);
    close(fd);
    char from[512];
    snprintf(from, sizeof(from), "%s", path_of("app.log"));
    ck_assert_int_eq(link(from, path_of("app.log.link")), 0);
    ck_assert_int_eq(rename(from, path_of("app.log.1")), 0);
    static const char *const names[] = { "app.log.link", "app.log.1" };
    for (size_t i = 0; i < 2; i++) {
        fd = open(path_of(names[i]), O_RDONLY);
        ck_assert_int_ge(fd, 0);
        struct lf_file_id now = id_of(fd);
        ck_assert_uint_eq(now.ino, stored.ino);
        ck_assert_uint_eq(now.fp_len, stored.fp_len);
        ck_assert_uint_eq(now.fp_hash, stored.fp_hash);
        ck_assert_int_eq(match(&stored, fd), LF_ID_SAME);
        close(fd);
    }
}
END_TEST

/* The same bytes under another device or another inode are another file: the registry's
 * entry of a file on another file system (or another inode) never gives its offset. */
START_TEST(same_content_on_another_device_or_inode_is_different)
{
    int fd = make_file("app.log", "line one\nline two\n", 18);
    struct lf_file_id stored = id_of(fd);
    ck_assert_int_eq(match(&stored, fd), LF_ID_SAME);
    struct lf_file_id other_dev = stored;
    other_dev.dev ^= 1;
    ck_assert_int_eq(match(&other_dev, fd), LF_ID_DIFFERENT);
    struct lf_file_id other_ino = stored;
    other_ino.ino ^= 1;
    ck_assert_int_eq(match(&other_ino, fd), LF_ID_DIFFERENT);
    other_ino.fp_len = 0; /* not even an empty fingerprint matches another inode */
    ck_assert_int_eq(match(&other_ino, fd), LF_ID_DIFFERENT);
    close(fd);
}
END_TEST

START_TEST(unreadable_fd_is_an_io_error_with_a_message)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    ck_assert_int_ge(fd, 0);
    struct stat st;
    ck_assert_int_eq(fstat(fd, &st), 0);
    st.st_size = 100; /* a directory's size varies by file system: force a read */
    struct lf_file_id id;
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(lf_file_id_read(fd, &st, &id, &eb), LF_EIO);
    ck_assert_str_eq(eb.msg, "read fingerprint at offset 0: Is a directory");
    close(fd);
}
END_TEST

static Suite *identity_suite(void)
{
    Suite *s = suite_create("identity");
    TCase *tc = tcase_create("fingerprint");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, hash_is_fnv1a_64);
    tcase_add_test(tc, empty_file_has_an_empty_fingerprint);
    tcase_add_test(tc, ten_byte_file_fingerprints_all_ten_bytes);
    tcase_add_test(tc, fingerprint_stops_at_one_kib_and_keeps_the_file_offset);
    tcase_add_test(tc, unreadable_fd_is_an_io_error_with_a_message);
    suite_add_tcase(s, tc);

    tc = tcase_create("matching");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, short_file_that_grows_still_matches_its_prefix);
    tcase_add_test(tc, same_inode_rewritten_with_other_content_is_different);
    tcase_add_test(tc, same_head_tells_growth_from_content_written_again);
    tcase_add_test(tc, identical_small_files_have_different_identities);
    tcase_add_test(tc, empty_stored_fingerprint_matches_any_content_on_the_same_inode);
    tcase_add_test(tc, hard_link_and_rename_keep_the_identity);
    tcase_add_test(tc, same_content_on_another_device_or_inode_is_different);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(identity_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
