/* console.c - the console output: events on stdout.
 *
 * format json writes the batch's NDJSON; format text writes each message and a '\n', the
 * batch's text as it was filled (lf_batch_text()). Either way a batch is one write(2) where the
 * pipe takes it, resumed after partial writes and EINTR. stdout is fd 1 as the process
 * sees it: tests redirect it with dup2(2). A failed write (EPIPE when the reader went away,
 * or any other error) makes send return LF_EIO after logging the reason, and done is not
 * called for that batch: stdout does not come back, so retrying is pointless. The process
 * is expected to ignore SIGPIPE so that EPIPE arrives as an error. */
#include "config.h"

#define LF_LOG_COMPONENT "output"

#include <stdlib.h>
#include <unistd.h>

#include "logferry/fsutil.h"
#include "logferry/log.h"
#include "output_int.h"

/* Nothing to keep: both forms are the batch's. */
static enum lf_err console_open(struct lf_output *out, struct lf_errbuf *eb)
{
    (void)out;
    (void)eb;
    return LF_OK;
}

static enum lf_err console_send(struct lf_output *out, struct lf_batch *b)
{
    const struct lf_output_conf *conf = lf_output_conf(out);
    struct lf_str data;
    enum lf_err err =
        conf->format == LF_CONSOLE_TEXT ? lf_batch_text(b, &data) : lf_batch_ndjson(b, &data);
    if (err) {
        lf_output_stats(out)->errors++;
        return err;
    }
    int e = lf_write_all(STDOUT_FILENO, data.ptr, data.len);
    if (e != 0) {
        lf_output_stats(out)->errors++;
        lf_error("output %s: write stdout: %s; events not shown", conf->name, lf_strerror(e));
        return LF_EIO;
    }
    lf_output_stats(out)->bytes_written += data.len;
    lf_output_done(out, b, LF_OK);
    return LF_OK;
}

static void console_close(struct lf_output *out)
{
    (void)out;
}

/* Text format prints raw messages, so its batches must keep them. */
static bool console_needs_messages(const struct lf_output *out)
{
    return lf_output_conf(out)->format == LF_CONSOLE_TEXT;
}

const struct lf_output_ops lf_output_console = {
    .name = "console",
    .open = console_open,
    .send = console_send,
    .flush = NULL,
    .close = console_close,
    .needs_messages = console_needs_messages,
};
