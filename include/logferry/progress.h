/* progress.h - the backfill's progress line on stderr: bytes done / total, rate, ETA.
 * Drawn only when the fd is a terminal, at most 5 times a second. One thread. */
#ifndef LF_PROGRESS_H
#define LF_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

struct lf_progress {
    int fd;             /* where to draw; -1 when not a terminal */
    uint64_t total;     /* bytes expected */
    uint64_t done;      /* bytes so far */
    int64_t start_ns;   /* when the work started */
    int64_t drawn_ns;   /* when the line was last drawn */
    bool drawn;         /* a line is on screen and needs clearing */
};

/* Starts counting towards total bytes; draws nothing unless fd is a terminal. */
void lf_progress_init(struct lf_progress *p, int fd, uint64_t total);

/* Counts n more bytes done and redraws if 200 ms have passed. */
void lf_progress_add(struct lf_progress *p, uint64_t n);

/* Formats the line for the current counts into buf (for tests and the drawing). */
void lf_progress_format(const struct lf_progress *p, int64_t now_ns, char *buf, unsigned size);

/* Draws the final state and ends the line. */
void lf_progress_done(struct lf_progress *p);

#endif
