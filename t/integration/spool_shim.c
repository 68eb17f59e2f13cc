/* spool_shim.c - preloaded into the daemon (LD_PRELOAD) by spool_disk.py: write() and
 * fdatasync() on spool segment files (*.spool) fail with EIO when the test says so, and
 * every fdatasync of a segment that succeeds is logged with the file's size then, so the
 * test knows what a power loss would leave of each segment.
 *
 * $LF_SHIM_CONTROL names a file the test replaces (write and rename) to arm a failure:
 * "GENERATION PASS_WRITES FAIL_WRITES FAIL_SYNCS DELAY_MS": of the segment writes after it
 * is read, PASS_WRITES succeed, then FAIL_WRITES fail; FAIL_SYNCS fdatasyncs fail, counted
 * from the first failed write when FAIL_WRITES > 0, else from at once; the first segment
 * write sleeps DELAY_MS first (so batches queue up behind it). A new GENERATION re-arms.
 * $LF_SHIM_LOG names the log: "synced PATH SIZE", "failed-sync PATH", "failed-write PATH".
 * Every other call goes straight to the system call. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static long generation = -1;
static long pass_writes;
static long fail_writes;
static long fail_syncs;
static long delay_ms;
static bool syncs_armed; /* fail_syncs counts: no write failure was asked for, or one came */

/* The segment file fd is open on, in path; false for any other file. */
static bool segment_path(int fd, char *path, size_t cap)
{
    char link[64];
    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, cap - 1);
    if (n <= 6 || memcmp(path + n - 6, ".spool", 6) != 0)
        return false;
    path[n] = '\0';
    return true;
}

/* Reads the control file; a new generation replaces the counts. Called with mu held. */
static void load_control(void)
{
    const char *ctl = getenv("LF_SHIM_CONTROL");
    FILE *f = ctl != NULL ? fopen(ctl, "r") : NULL;
    if (f == NULL)
        return;
    long g, pw, fw, fs, d;
    if (fscanf(f, "%ld %ld %ld %ld %ld", &g, &pw, &fw, &fs, &d) == 5 && g != generation) {
        generation = g;
        pass_writes = pw;
        fail_writes = fw;
        fail_syncs = fs;
        delay_ms = d;
        syncs_armed = fw == 0;
    }
    fclose(f);
}

static void log_line(const char *what, const char *path, long long size)
{
    const char *name = getenv("LF_SHIM_LOG");
    if (name == NULL)
        return;
    char line[PATH_MAX + 64];
    int n = size >= 0 ? snprintf(line, sizeof(line), "%s %s %lld\n", what, path, size)
                      : snprintf(line, sizeof(line), "%s %s\n", what, path);
    int fd = open(name, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd >= 0) {
        if (syscall(SYS_write, fd, line, (size_t)n) != n)
            fprintf(stderr, "spool_shim: cannot write %s\n", name);
        close(fd);
    }
}

ssize_t write(int fd, const void *p, size_t n)
{
    char path[PATH_MAX];
    if (!segment_path(fd, path, sizeof(path)))
        return (ssize_t)syscall(SYS_write, fd, p, n);
    pthread_mutex_lock(&mu);
    load_control();
    long delay = delay_ms;
    delay_ms = 0;
    bool fail = false;
    if (pass_writes > 0) {
        pass_writes--;
    } else if (fail_writes > 0) {
        fail_writes--;
        syncs_armed = true;
        fail = true;
    }
    pthread_mutex_unlock(&mu);
    if (delay > 0) {
        struct timespec ts = { delay / 1000, (delay % 1000) * 1000000 };
        nanosleep(&ts, NULL);
    }
    if (fail) {
        log_line("failed-write", path, -1);
        errno = EIO;
        return -1;
    }
    return (ssize_t)syscall(SYS_write, fd, p, n);
}

int fdatasync(int fd)
{
    char path[PATH_MAX];
    if (!segment_path(fd, path, sizeof(path)))
        return (int)syscall(SYS_fdatasync, fd);
    pthread_mutex_lock(&mu);
    load_control();
    bool fail = syncs_armed && fail_syncs > 0;
    if (fail)
        fail_syncs--;
    pthread_mutex_unlock(&mu);
    if (fail) {
        log_line("failed-sync", path, -1);
        errno = EIO;
        return -1;
    }
    int r = (int)syscall(SYS_fdatasync, fd);
    struct stat st;
    if (r == 0 && fstat(fd, &st) == 0)
        log_line("synced", path, (long long)st.st_size);
    return r;
}
