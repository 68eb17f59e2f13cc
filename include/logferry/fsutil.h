/* fsutil.h - small filesystem and system helpers several modules share. */
#ifndef LF_FSUTIL_H
#define LF_FSUTIL_H

#include <sys/types.h>

/* mkdir -p: creates dir and its missing parents with mode; existing directories are fine.
 * Returns 0, or the errno value of the step that failed (ENOTDIR if dir is a file, ENOENT
 * for ""). */
int lf_mkdir_p(const char *dir, mode_t mode);

/* Whether lf_mkdir_p(dir) could succeed and files be made in dir, changing nothing: dir is a
 * directory this process may write and search, or the nearest of its parents that exists
 * is. 0, or an errno value (ENOTDIR: dir or that parent is no directory; EACCES). */
int lf_dir_writable(const char *dir);

/* Writes all n bytes to fd, resuming after partial writes and EINTR (and, on a non-blocking
 * fd, waiting in poll() until it takes more). Returns 0, or the errno of the failing
 * write(2). */
int lf_write_all(int fd, const void *p, size_t n);

/* CPUs this process may run on: its affinity mask (taskset, a container's cpuset, systemd's
 * CPUAffinity), else the CPUs online; at least 1. */
size_t lf_usable_cpus(void);

#endif
