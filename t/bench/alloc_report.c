/* alloc_report.c - at exit, writes the process's allocation count (alloc_count.h) to the file
 * named by LF_ALLOC_REPORT: "calls bytes", or "n/a" when nothing was counted (ASan).
 *
 * Linked with src/main.c and alloc_count.c into t/bench/logferry_alloc, the agent whose
 * mallocs t/bench/journal_bench.py counts. Runs in a destructor, after main() has returned
 * and its threads have been joined; touches nothing of the agent's. */
#include "config.h"

#include "alloc_count.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

__attribute__((destructor)) static void alloc_report(void)
{
    const char *path = getenv("LF_ALLOC_REPORT");
    if (path == NULL || *path == '\0')
        return;
    struct lf_alloc_count c = lf_alloc_count_now(); /* before fopen() allocates */
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        perror("logferry_alloc: LF_ALLOC_REPORT");
        return;
    }
    if (lf_alloc_count_enabled())
        fprintf(f, "%" PRIu64 " %" PRIu64 "\n", c.calls, c.bytes);
    else
        fputs("n/a\n", f);
    fclose(f);
}
