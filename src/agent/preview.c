/* preview.c - --preview INPUT_ID PATH: one input's reader and stages over one file, through
 * the engine's harvester (lf_tail_read_file()), or a journald input's journal
 * (lf_tail_read_journal()), events as NDJSON on stdout; no output, no
 * registry touched (see preview.h). Main thread. */
#include "config.h"

#define LF_LOG_COMPONENT "preview"
#include "logferry/preview.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>

#include "logferry/buf.h"
#include "logferry/event.h"
#include "logferry/log.h"
#include "logferry/stage.h"
#include "logferry/startup.h"
#include "logferry/tail.h"

struct preview {
    struct lf_buf out;
    bool closed; /* stdout's reader went away (EPIPE): a normal end, as for `| head` */
    const struct lf_config *cfg;      /* borrowed */
    size_t input_idx;                 /* the input previewed, in cfg */
    const struct lf_chain_spec *spec; /* borrowed; its spec (with its routes) */
};

/* An input with routes: which routes the event took and the outputs they name, one line on
 * stderr (stdout stays NDJSON). */
static void show_routes(const struct preview *pv, const struct lf_event *ev)
{
    const struct lf_input_conf *in = &pv->cfg->inputs[pv->input_idx];
    if (in->n_routes == 0 || ((ev->flags & LF_EVENT_DROPPED) && ev->routes == 0))
        return; /* no routes, or dropped by a stage before them */
    char names[256];
    fprintf(stderr, "logferry: --preview: the event at offset %llu takes route %s: ",
            (unsigned long long)ev->offset,
            lf_chain_spec_route_names(pv->spec, ev->routes, names, sizeof(names)));
    const char *sep = "outputs ";
    for (size_t r = 0; r < in->n_routes + 1; r++) {
        bool taken = r < in->n_routes ? (ev->routes & (UINT64_C(1) << r)) != 0 : ev->routes == 0;
        const size_t *to = r < in->n_routes ? in->routes[r].outputs : in->outputs;
        size_t n = r < in->n_routes ? in->routes[r].n_outputs : in->n_outputs;
        for (size_t k = 0; taken && k < n; k++) {
            bool shown = false; /* two routes that name one output: shown once */
            for (size_t q = 0; q < r && !shown; q++) {
                for (size_t m = 0; (ev->routes & (UINT64_C(1) << q)) && m < in->routes[q].n_outputs;
                     m++)
                    shown |= in->routes[q].outputs[m] == to[k];
            }
            if (!shown)
                fprintf(stderr, "%s%s", sep, pv->cfg->outputs[to[k]].name);
            sep = shown ? sep : ", ";
        }
    }
    fputs(sep[0] == 'o' ? "no output (dropped)\n" : "\n", stderr);
}

/* A dropped event (include_lines, exclude_lines, drop, throttle ...) sends nothing, yet the
 * person trying stages wants to see it go: one line on stderr, stdout staying NDJSON. */
static void show_dropped(const struct lf_event *ev)
{
    size_t n = ev->message.len > 200 ? 200 : ev->message.len;
    fprintf(stderr, "logferry: --preview: dropped the event at offset %llu: ",
            (unsigned long long)ev->offset);
    for (size_t i = 0; i < n; i++) { /* one line per event: a joined event's newlines too */
        unsigned char ch = (unsigned char)ev->message.ptr[i];
        fputc(ch < 0x20 || ch == 0x7f ? ' ' : ch, stderr);
    }
    fputs(n < ev->message.len ? "...\n" : "\n", stderr);
}

static enum lf_err emit(void *arg, const struct lf_event *ev)
{
    struct preview *pv = arg;
    show_routes(pv, ev);
    if (ev->flags & LF_EVENT_DROPPED) {
        show_dropped(ev);
        return LF_OK;
    }
    lf_buf_reset(&pv->out);
    enum lf_err err = lf_event_encode(&pv->out, ev);
    if (err)
        return err;
    if (fwrite(pv->out.ptr, 1, pv->out.len, stdout) != pv->out.len) {
        pv->closed = errno == EPIPE;
        return LF_EIO; /* ends the read either way */
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
    if (path == NULL && in->type != LF_INPUT_JOURNALD) {
        fprintf(stderr, "logferry: --preview needs INPUT_ID and PATH (only a journald input "
                        "reads its own journal without one)\n");
        return 2;
    }
    struct lf_chain_spec **specs = NULL;
    int rc = lf_agent_compile_chains(cfg, &specs);
    if (rc)
        return rc;
    size_t idx = (size_t)(in - cfg->inputs);
    struct preview pv = { .closed = false, .cfg = cfg, .input_idx = idx, .spec = specs[idx] };
    lf_buf_init(&pv.out, SIZE_MAX);
    struct lf_stage_out sink = { emit, &pv };
    struct lf_errbuf eb = { "" };
    enum lf_err err = in->type == LF_INPUT_JOURNALD
                          ? lf_tail_read_journal(cfg, specs, idx, path, &sink, &eb)
                          : lf_tail_read_file(cfg, specs, idx, path, &sink, &eb);
    if (!pv.closed && fflush(stdout) != 0 && !err) {
        pv.closed = errno == EPIPE;
        err = LF_EIO;
    }
    lf_buf_release(&pv.out);
    lf_agent_free_chains(cfg, specs);
    if (pv.closed)
        return 0; /* the reader has what it wanted; exit's flush fails quietly */
    if (err) {
        fprintf(stderr, "logferry: --preview: %s\n", eb.msg[0] ? eb.msg : lf_err_str(err));
        return 1;
    }
    return 0;
}
