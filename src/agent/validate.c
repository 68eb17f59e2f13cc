/* validate.c - the one validation of a config file: --test-config, the start (daemon,
 * --once, --preview) and a SIGHUP reload all load through lf_agent_load_config(), so what
 * one accepts the others accept.
 *
 * The loader checks keys, types and values; through struct lf_config_checks it also asks
 * the stages to compile each parser and each output type to check what only it knows
 * (lf_output_check(): the library it loads, URLs, header values, files it reads or writes,
 * librdkafka's options). Every problem is one FILE:LINE:COL line, all of them in one pass. */
#include "config.h"

#include "logferry/once.h"

#include <stdio.h>

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
