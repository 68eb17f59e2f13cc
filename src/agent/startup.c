/* startup.c - what every mode does before it runs (see startup.h): the one validation of
 * a config file, the inputs' stages compiled, data_dir checked. Main thread.
 *
 * --test-config, the start (daemon, --once, --preview) and a SIGHUP reload all load through
 * lf_agent_load_config(), so what one accepts the others accept. The loader checks keys,
 * types and values; through struct lf_config_checks it also asks the stages to compile each
 * parser and each output type to check what only it knows (lf_output_check(): the library it
 * loads, URLs, header values, files it reads or writes, librdkafka's options). Every problem
 * is one FILE:LINE:COL line, all of them in one pass. Messages carry the component "agent":
 * they are the daemon's as much as the backfill's. (The registry is opened in
 * registry_open.c.) */
#include "config.h"

#define LF_LOG_COMPONENT "agent"
#include "logferry/startup.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "logferry/fsutil.h"
#include "logferry/log.h"
#include "logferry/output.h"
#include "logferry/stage.h"

static void check_parser(const struct lf_input_conf *in, size_t i, struct lf_config_report *rep)
{
    struct lf_errbuf eb = { "" };
    if (lf_chain_parser_check(in, i, &eb))
        lf_config_report(rep, NULL, "%s", eb.msg[0] ? eb.msg : "out of memory");
}

static const struct lf_config_checks checks = {
    .parser = check_parser,
    .output = lf_output_check,
};

enum lf_err lf_agent_load_config(const char *path,
                                 const char *data_dir,
                                 struct lf_config **out,
                                 struct lf_buf *errors)
{
    enum lf_err err = lf_config_load_checked(path, &checks, out, errors);
    if (err || data_dir == NULL)
        return err;
    err = lf_config_set_data_dir(*out, data_dir);
    if (err) {
        lf_config_free(*out);
        *out = NULL;
    }
    return err;
}

int lf_agent_compile_chains(const struct lf_config *cfg, struct lf_chain_spec ***out)
{
    *out = NULL;
    struct lf_chain_spec **specs = calloc(cfg->n_inputs ? cfg->n_inputs : 1, sizeof(*specs));
    if (specs == NULL)
        return 1;
    int rc = 0;
    for (size_t i = 0; i < cfg->n_inputs; i++) {
        const struct lf_input_conf *in = &cfg->inputs[i];
        struct lf_errbuf eb = { "" };
        size_t failed = 0;
        enum lf_err err = lf_chain_spec_new(in, i, &specs[i], &failed, &eb);
        if (err && err != LF_ECONFIG) {
            lf_agent_free_chains(cfg, specs);
            return 1;
        }
        if (err) { /* go on: every input's problem is reported, as the loader does */
            const struct lf_parser_conf *pc = &in->parsers[failed];
            fprintf(stderr, "%s:%u:%u: %s\n", cfg->path, pc->pos.line, pc->pos.col, eb.msg);
            rc = 2;
        }
    }
    if (rc) {
        lf_agent_free_chains(cfg, specs);
        return rc;
    }
    *out = specs;
    return 0;
}

void lf_agent_free_chains(const struct lf_config *cfg, struct lf_chain_spec **specs)
{
    if (specs == NULL)
        return;
    for (size_t i = 0; i < cfg->n_inputs; i++)
        lf_chain_spec_free(specs[i]);
    free(specs);
}

bool lf_agent_data_dir_ok(const struct lf_config *cfg)
{
    int e = lf_mkdir_p(cfg->data_dir, 0700); /* offsets and paths are nobody else's business */
    if (e == 0 && access(cfg->data_dir, W_OK | X_OK) != 0)
        e = errno;
    if (e)
        lf_error("data_dir %s is not usable: %s", cfg->data_dir, lf_strerror(e));
    return e == 0;
}
