/* fsutil.c - filesystem and system helpers (see fsutil.h). */
#include "config.h"

#include "logferry/fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int lf_dir_writable(const char *dir)
{
    if (dir[0] == '\0')
        return ENOENT;
    char *p = strdup(dir);
    if (p == NULL)
        return ENOMEM;
    int e = 0;
    for (;;) {
        struct stat st;
        if (stat(p, &st) == 0) {
            if (!S_ISDIR(st.st_mode))
                e = ENOTDIR;
            else if (faccessat(AT_FDCWD, p, W_OK | X_OK, AT_EACCESS) != 0)
                e = errno;
            break;
        }
        if (errno != ENOENT) {
            e = errno;
            break;
        }
        char *slash = strrchr(p, '/');
        if (slash == NULL) {
            memcpy(p, ".", 2); /* a relative name's parent; p holds at least 2 bytes */
            continue;
        }
        while (slash > p && slash[-1] == '/')
            slash--;
        *(slash == p ? slash + 1 : slash) = '\0'; /* "/x" -> "/" */
    }
    free(p);
    return e;
}

int lf_mkdir_p(const char *dir, mode_t mode)
{
    if (dir[0] == '\0')
        return ENOENT; /* as mkdir("") says; the walk below starts after the first byte */
    char *p = strdup(dir);
    if (p == NULL)
        return ENOMEM;
    int e = 0;
    for (char *s = p + 1;; s++) {
        if (*s != '/' && *s != '\0')
            continue;
        char c = *s;
        *s = '\0';
        if (mkdir(p, mode) != 0 && errno != EEXIST) {
            e = errno;
            break;
        }
        *s = c;
        if (c == '\0')
            break;
    }
    free(p);
    if (e == 0) {
        struct stat st;
        if (stat(dir, &st) != 0)
            e = errno;
        else if (!S_ISDIR(st.st_mode))
            e = ENOTDIR;
    }
    return e;
}

int lf_write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n > 0) {
        ssize_t w = write(fd, c, n);
        if (w < 0) {
            int e = errno;
            if (e == EINTR)
                continue;
            if (e == EAGAIN || e == EWOULDBLOCK) {
                /* A non-blocking fd (stdout shared with a libuv pipe): wait until it drains. */
                struct pollfd pfd = { .fd = fd, .events = POLLOUT };
                if (poll(&pfd, 1, -1) >= 0 || errno == EINTR)
                    continue;
                return errno;
            }
            return e;
        }
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

size_t lf_usable_cpus(void)
{
#ifdef __linux__
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
        return (size_t)CPU_COUNT(&set);
#endif
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (size_t)n : 1;
}
