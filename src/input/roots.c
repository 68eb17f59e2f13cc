/* roots.c - the allowed_roots check on an open descriptor (see roots.h). */
#include "config.h"

#include "logferry/roots.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *lf_roots_kind_of(mode_t mode)
{
    if (S_ISDIR(mode))
        return "a directory";
    if (S_ISFIFO(mode))
        return "a FIFO";
    if (S_ISSOCK(mode))
        return "a socket";
    if (S_ISCHR(mode) || S_ISBLK(mode))
        return "a device";
    return "not a regular file";
}

/* True if real (absolute, no trailing slash) is root or lies below it. */
static bool inside(const char *real, const char *root, size_t root_len)
{
    while (root_len > 1 && root[root_len - 1] == '/')
        root_len--;
    if (root_len == 1 && root[0] == '/')
        return true;
    return strncmp(real, root, root_len) == 0 && (real[root_len] == '/' || real[root_len] == '\0');
}

/* True if real lies inside root as written or, when it exists, as resolved now: a root that
 * is a link (/var/log -> /data/log) holds what its target holds. */
static bool inside_root(const char *real, const char *root)
{
    if (inside(real, root, strlen(root)))
        return true;
    char resolved[PATH_MAX];
    if (realpath(root, resolved) == NULL)
        return false;
    return inside(real, resolved, strlen(resolved));
}

/* The real path of what fd refers to, as the kernel names it. */
static enum lf_err fd_path(int fd, const struct stat *st, char *real, size_t len,
                           struct lf_errbuf *eb)
{
    char link[64];
    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, real, len - 1);
    if (n < 0) {
        int e = errno;
        return lf_fail(eb, LF_EIO, "cannot learn its real path: readlink %s: %s (is /proc mounted?)",
                       link, lf_strerror(e));
    }
    if ((size_t)n == len - 1)
        return lf_fail(eb, LF_EIO, "cannot learn its real path: longer than %zu bytes", len - 2);
    real[n] = '\0';
    static const char deleted[] = " (deleted)";
    size_t dl = sizeof(deleted) - 1;
    if (st->st_nlink == 0 && (size_t)n > dl && strcmp(real + n - dl, deleted) == 0)
        real[n - dl] = '\0'; /* unlinked since the open: the kernel marks the name */
    return LF_OK;
}

static enum lf_err check_regular(int fd, struct stat *st, struct lf_errbuf *eb)
{
    if (fstat(fd, st) != 0) {
        int e = errno;
        return lf_fail(eb, LF_EIO, "fstat: %s", lf_strerror(e));
    }
    if (!S_ISREG(st->st_mode))
        return lf_fail(eb, LF_EREJECTED, "it is %s, not a regular file",
                       lf_roots_kind_of(st->st_mode));
    return LF_OK;
}

enum lf_err lf_roots_check_regular(int fd, struct lf_errbuf *eb)
{
    struct stat st;
    return check_regular(fd, &st, eb);
}

enum lf_err lf_roots_check(const struct lf_input_conf *in, int fd, struct lf_errbuf *eb)
{
    struct stat st;
    enum lf_err err = check_regular(fd, &st, eb);
    if (err)
        return err;
    char real[PATH_MAX + 1];
    err = fd_path(fd, &st, real, sizeof(real), eb);
    if (err)
        return err;
    for (size_t i = 0; i < in->n_allowed_roots; i++) {
        if (inside_root(real, in->allowed_roots[i]))
            return LF_OK;
    }
    char roots[512] = "";
    size_t o = 0;
    for (size_t i = 0; i < in->n_allowed_roots && o < sizeof(roots); i++) {
        int w = snprintf(roots + o, sizeof(roots) - o, "%s%s", i ? ", " : "", in->allowed_roots[i]);
        if (w > 0)
            o += (size_t)w;
    }
    return lf_fail(eb, LF_EREJECTED, "its real path %s is outside allowed_roots (%s)", real, roots);
}
