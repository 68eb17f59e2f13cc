/* daemon_journal.c - the loop thread's side of the journald inputs: it polls duplicates of
 * the journals' inotify descriptors, which the tail thread hands over whenever the set
 * changes (lf_daemon__on_journal_fds()), and tells the tail thread when one is readable
 * (lf_tail_journal_ready()). A readable descriptor stops being polled until the tail thread
 * has read the journals (lf_daemon__on_journal_wait()), so a journal that keeps changing
 * costs one wake-up per turn, not a busy loop.
 *
 * The hooks run on the tail thread and touch only the fields under dirs_mu; everything else
 * is the loop thread's. */
#include "config.h"

#define LF_LOG_COMPONENT "daemon"
#include "daemon_int.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "logferry/log.h"

struct jpoll {
    uv_poll_t handle;
    int fd; /* owned */
    struct daemon *d;
};

static void free_jpoll(uv_handle_t *h)
{
    struct jpoll *p = h->data;
    close(p->fd);
    free(p);
}

static void on_journal_poll(uv_poll_t *h, int status, int events)
{
    (void)status;
    (void)events;
    struct jpoll *p = h->data;
    uv_poll_stop(h); /* until the tail thread read what there is */
    lf_tail_journal_ready(p->d->tail);
}

void lf_daemon__on_journal_fds(void *arg, const int *fds, size_t n)
{
    struct daemon *d = arg;
    int *copy = malloc((n ? n : 1) * sizeof(*copy));
    uv_mutex_lock(&d->dirs_mu);
    for (size_t i = 0; i < d->n_journal_fds; i++)
        close(d->journal_fds[i]); /* handed over before, never taken */
    free(d->journal_fds);
    d->journal_fds = copy;
    d->n_journal_fds = copy != NULL ? n : 0;
    if (copy != NULL)
        memcpy(copy, fds, n * sizeof(*fds));
    d->journal_fds_new = true;
    uv_mutex_unlock(&d->dirs_mu);
    if (copy == NULL) {
        for (size_t i = 0; i < n; i++)
            close(fds[i]); /* the tail thread's once-a-second check still finds entries */
    }
    uv_async_send(&d->journal_async);
}

void lf_daemon__on_journal_wait(void *arg)
{
    struct daemon *d = arg;
    uv_mutex_lock(&d->dirs_mu);
    d->journal_rearm = true;
    uv_mutex_unlock(&d->dirs_mu);
    uv_async_send(&d->journal_async);
}

static void drop_polls(struct daemon *d)
{
    for (size_t i = 0; i < d->n_jpolls; i++)
        uv_close((uv_handle_t *)&d->jpolls[i]->handle, free_jpoll);
    free(d->jpolls);
    d->jpolls = NULL;
    d->n_jpolls = 0;
}

/* Polls fds (owned from now on) instead of the descriptors polled so far. */
static void replace_polls(struct daemon *d, int *fds, size_t n)
{
    drop_polls(d);
    d->jpolls = calloc(n ? n : 1, sizeof(*d->jpolls));
    for (size_t i = 0; i < n; i++) {
        struct jpoll *p = d->jpolls != NULL ? calloc(1, sizeof(*p)) : NULL;
        if (p == NULL || uv_poll_init(&d->loop, &p->handle, fds[i]) != 0) {
            lf_warn("cannot poll a journal's descriptor; its new entries are found every "
                    "second");
            free(p);
            close(fds[i]);
            continue;
        }
        p->fd = fds[i];
        p->d = d;
        p->handle.data = p;
        d->jpolls[d->n_jpolls++] = p;
    }
    free(fds);
}

static void on_journal_async(uv_async_t *a)
{
    struct daemon *d = a->data;
    uv_mutex_lock(&d->dirs_mu);
    int *fds = d->journal_fds_new ? d->journal_fds : NULL;
    size_t n = d->n_journal_fds;
    bool renew = d->journal_fds_new;
    bool rearm = d->journal_rearm || renew;
    if (renew) {
        d->journal_fds = NULL;
        d->n_journal_fds = 0;
    }
    d->journal_fds_new = false;
    d->journal_rearm = false;
    uv_mutex_unlock(&d->dirs_mu);
    if (d->stopping) {
        for (size_t i = 0; renew && i < n; i++)
            close(fds[i]);
        if (renew)
            free(fds);
        return;
    }
    if (renew)
        replace_polls(d, fds, n);
    for (size_t i = 0; rearm && i < d->n_jpolls; i++)
        uv_poll_start(&d->jpolls[i]->handle, UV_READABLE, on_journal_poll);
}

void lf_daemon__journal_init(struct daemon *d)
{
    uv_async_init(&d->loop, &d->journal_async, on_journal_async);
    d->journal_async.data = d;
}

void lf_daemon__journal_close(struct daemon *d)
{
    uv_close((uv_handle_t *)&d->journal_async, NULL);
    drop_polls(d);
    uv_mutex_lock(&d->dirs_mu);
    for (size_t i = 0; i < d->n_journal_fds; i++)
        close(d->journal_fds[i]);
    free(d->journal_fds);
    d->journal_fds = NULL;
    d->n_journal_fds = 0;
    uv_mutex_unlock(&d->dirs_mu);
}
