/* spool_faults.h - stand-ins for write(), fdatasync() and fsync() that fail with EIO on
 * demand, for the suites that drive the spool into a failing disk.
 *
 * A definition in the test program wins over libc's for every caller, the static library
 * and shared libraries alike, so each stand-in passes anything it is not told to fail
 * straight to the system call. Only spool files fail: segment files (*.spool) for write()
 * and fdatasync(), the directory holding them for fsync(); a count set to N fails the next N
 * such calls. Any thread. Include from one .c file only. */
#ifndef LF_SPOOL_FAULTS_H
#define LF_SPOOL_FAULTS_H

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static int fail_writes;    /* writes to a segment still to fail */
static int fail_syncs;     /* fdatasyncs of a segment still to fail */
static int fail_dir_syncs; /* fsyncs of a directory still to fail */
static int good_syncs;     /* fdatasyncs of a segment that succeeded */

/* Sets one of the counts above (any thread). */
static void fault_set(int *count, int n)
{
    __atomic_store_n(count, n, __ATOMIC_SEQ_CST);
}

/* Takes one failure from *count; false when none is left. */
static bool fault_take(int *count)
{
    int n = __atomic_load_n(count, __ATOMIC_SEQ_CST);
    while (n > 0) {
        if (__atomic_compare_exchange_n(count, &n, n - 1, false, __ATOMIC_SEQ_CST,
                                        __ATOMIC_SEQ_CST))
            return true;
    }
    return false;
}

/* True when fd is open on a spool segment file. */
static bool fault_is_segment(int fd)
{
    char link[64];
    char path[PATH_MAX];
    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof(path) - 1);
    return n > 6 && memcmp(path + n - 6, ".spool", 6) == 0;
}

ssize_t write(int fd, const void *p, size_t n)
{
    if (__atomic_load_n(&fail_writes, __ATOMIC_SEQ_CST) > 0 && fault_is_segment(fd) &&
        fault_take(&fail_writes)) {
        errno = EIO;
        return -1;
    }
    return (ssize_t)syscall(SYS_write, fd, p, n);
}

int fdatasync(int fd)
{
    if (fault_is_segment(fd)) {
        if (fault_take(&fail_syncs)) {
            errno = EIO;
            return -1;
        }
        __atomic_add_fetch(&good_syncs, 1, __ATOMIC_SEQ_CST);
    }
    return (int)syscall(SYS_fdatasync, fd);
}

int fsync(int fd)
{
    struct stat st;
    if (__atomic_load_n(&fail_dir_syncs, __ATOMIC_SEQ_CST) > 0 && fstat(fd, &st) == 0 &&
        S_ISDIR(st.st_mode) && fault_take(&fail_dir_syncs)) {
        errno = EIO;
        return -1;
    }
    return (int)syscall(SYS_fsync, fd);
}

#endif
