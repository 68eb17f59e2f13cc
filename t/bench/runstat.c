/* runstat.c - runs a command and writes its CPU seconds, wall seconds, peak RSS and exit
 * status to a file: `runstat OUT CMD [ARGS...]` -> OUT holds
 * "cpu wall maxrss_kib status user sys" (cpu = user + sys, the seconds of wait4's rusage).
 *
 * Benchmarks measure children through this small program rather than from a large parent
 * (such as a Python interpreter), because the kernel counts the memory a child inherited
 * before exec(2) in its peak RSS. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: runstat OUT CMD [ARGS...]\n");
        return 2;
    }
    struct timespec t0;
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pid_t pid = fork();
    if (pid < 0) {
        perror("runstat: fork");
        return 1;
    }
    if (pid == 0) {
        execvp(argv[2], argv + 2);
        perror("runstat: exec");
        _exit(127);
    }
    int status = 0;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) < 0) {
        perror("runstat: wait4");
        return 1;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double user = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6;
    double sys = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
    double wall = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    FILE *out = fopen(argv[1], "w");
    if (out == NULL) {
        perror("runstat: open output");
        return 1;
    }
    fprintf(out, "%.6f %.6f %ld %d %.6f %.6f\n", user + sys, wall, ru.ru_maxrss,
            WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), user, sys);
    fclose(out);
    return 0;
}
