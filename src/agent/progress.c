/* progress.c - progress line for backfills (see progress.h). */
#include "config.h"

#include "logferry/progress.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "logferry/event.h"

#define LF_PROGRESS_EVERY_NS 200000000LL

void lf_progress_init(struct lf_progress *p, int fd, uint64_t total)
{
    memset(p, 0, sizeof(*p));
    p->fd = isatty(fd) ? fd : -1;
    p->total = total;
    p->start_ns = lf_now_ns();
}

static void human(double bytes, char *buf, size_t size)
{
    static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
    size_t u = 0;
    while (bytes >= 1024.0 && u + 1 < sizeof(units) / sizeof(units[0])) {
        bytes /= 1024.0;
        u++;
    }
    snprintf(buf, size, u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
}

void lf_progress_format(const struct lf_progress *p, int64_t now_ns, char *buf, unsigned size)
{
    char done[32];
    char total[32];
    human((double)p->done, done, sizeof(done));
    human((double)p->total, total, sizeof(total));
    double secs = (double)(now_ns - p->start_ns) / 1e9;
    double rate = secs > 0 ? (double)p->done / secs : 0.0; /* bytes per second */
    char eta[32] = "--:--";
    if (rate > 0 && p->total >= p->done) {
        unsigned long left = (unsigned long)((double)(p->total - p->done) / rate + 0.5);
        snprintf(eta, sizeof(eta), "%lu:%02lu:%02lu", left / 3600, left / 60 % 60, left % 60);
    }
    double pct = p->total > 0 ? 100.0 * (double)p->done / (double)p->total : 100.0;
    snprintf(buf, size, "%s / %s (%.0f%%)  %.1f MB/s  ETA %s", done, total, pct > 100 ? 100 : pct,
             rate / 1e6, eta);
}

static void draw(struct lf_progress *p, int64_t now_ns)
{
    char line[160];
    char out[200];
    lf_progress_format(p, now_ns, line, sizeof(line));
    int n = snprintf(out, sizeof(out), "\r\033[K%s", line);
    if (n > 0) {
        ssize_t w = write(p->fd, out, (size_t)n < sizeof(out) ? (size_t)n : sizeof(out) - 1);
        (void)w; /* a progress line that cannot be drawn is not worth an error */
    }
    p->drawn_ns = now_ns;
    p->drawn = true;
}

void lf_progress_add(struct lf_progress *p, uint64_t n)
{
    p->done += n;
    if (p->fd < 0)
        return;
    int64_t now = lf_now_ns();
    if (now - p->drawn_ns >= LF_PROGRESS_EVERY_NS)
        draw(p, now);
}

void lf_progress_done(struct lf_progress *p)
{
    if (p->fd < 0)
        return;
    draw(p, lf_now_ns());
    ssize_t w = write(p->fd, "\n", 1);
    (void)w;
}
