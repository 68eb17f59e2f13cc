/* preview.c - --preview INPUT_ID PATH: one input's reader over one file, events as NDJSON
 * on stdout, nothing else touched (see preview.h). */
#include "config.h"

#define LF_LOG_COMPONENT "preview"
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <unistd.h>

#include "logferry/buf.h"
#include "logferry/event.h"
#include "logferry/harvest.h"
#include "logferry/log.h"
#include "logferry/preview.h"
#include "logferry/roots.h"
#include "logferry/stage.h"

struct preview {
    struct lf_buf out;
    bool closed; /* stdout's reader went away (EPIPE): a normal end, as for `| head` */
};

static enum lf_err emit(void *arg, const struct lf_event *ev)
{
    struct preview *pv = arg;
    lf_buf_reset(&pv->out);
    enum lf_err err = lf_event_encode(&pv->out, ev);
    if (err)
        return err;
    if (fwrite(pv->out.ptr, 1, pv->out.len, stdout) != pv->out.len) {
        pv->closed = errno == EPIPE;
        return LF_EIO; /* ends the harvest either way */
    }
    return LF_OK;
}

int lf_preview_run(const struct lf_config *cfg, const char *input_id, const char *path)
{
    const struct lf_input_conf *in = lf_config_input(cfg, input_id);
    if (in == NULL) {
        fprintf(stderr, "logferry: --preview: %s has no input with id \"%s\"\n", cfg->path,
                input_id);
        return 2;
    }
    size_t idx = (size_t)(in - cfg->inputs);
    struct lf_chain_spec *spec = NULL;
    struct lf_errbuf ceb = { "" };
    size_t failed = 0;
    enum lf_err cerr = lf_chain_spec_new(in, idx, &spec, &failed, &ceb);
    if (cerr) {
        if (cerr == LF_ECONFIG) {
            const struct lf_parser_conf *pc = &in->parsers[failed];
            fprintf(stderr, "%s:%u:%u: %s\n", cfg->path, pc->pos.line, pc->pos.col, ceb.msg);
            return 2;
        }
        return 1;
    }
    /* O_NONBLOCK: a FIFO must not hang the open; it is refused just below. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        int e = errno;
        fprintf(stderr, "logferry: --preview: cannot open %s: %s\n", path, lf_strerror(e));
        lf_chain_spec_free(spec);
        return 1;
    }
    struct lf_errbuf reb = { "" };
    if (lf_roots_check_regular(fd, &reb)) {
        fprintf(stderr, "logferry: --preview: refusing %s: %s\n", path, reb.msg);
        close(fd);
        lf_chain_spec_free(spec);
        return 1;
    }
    char host[256];
    if (gethostname(host, sizeof(host)) != 0)
        snprintf(host, sizeof(host), "localhost");
    host[sizeof(host) - 1] = '\0';
    struct lf_source *src = NULL;
    if (lf_source_new(path, in->id, host, in->fields_json, in->fields_under_root, &src)) {
        close(fd);
        lf_chain_spec_free(spec);
        return 1;
    }
    struct preview pv = { .closed = false };
    lf_buf_init(&pv.out, SIZE_MAX);
    struct lf_harvest_sink sink = { emit, NULL, &pv };
    struct lf_harvest_stats stats = { 0 };
    struct lf_errbuf eb = { "" };
    enum lf_err err = lf_harvest_fd(in, spec, fd, 0, src, &sink, &stats, &eb);
    close(fd);
    if (!pv.closed && fflush(stdout) != 0 && !err) {
        pv.closed = errno == EPIPE;
        err = LF_EIO;
    }
    lf_buf_release(&pv.out);
    lf_source_free(src);
    lf_chain_spec_free(spec);
    if (pv.closed)
        return 0; /* the reader has what it wanted; exit's flush fails quietly */
    if (err) {
        fprintf(stderr, "logferry: --preview %s: %s\n", path, eb.msg[0] ? eb.msg : lf_err_str(err));
        return 1;
    }
    return 0;
}
