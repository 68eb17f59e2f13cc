/* startup.h - what every mode does before it runs (--test-config, --preview, --once, the
 * daemon) and a SIGHUP reload again: load and validate the config, compile the inputs'
 * stages, check data_dir, open the registry. Main thread (the daemon's loop thread). */
#ifndef LF_STARTUP_H
#define LF_STARTUP_H

#include <stdbool.h>

#include "logferry/buf.h"
#include "logferry/config.h"
#include "logferry/err.h"

/* Loads and validates the config at path as --test-config, the start and a reload all do
 * (src/agent/startup.c): keys and values, each parser compiled, each output's own check.
 * data_dir, when not NULL, replaces the file's (--data-dir; a reload keeps the running one).
 * On success *out is a new config (free with lf_config_free()); else LF_ECONFIG (every
 * problem appended to errors as FILE:LINE:COL: message lines), LF_EIO or LF_ENOMEM. */
LF_MUST_CHECK enum lf_err lf_agent_load_config(const char *path,
                                               const char *data_dir,
                                               struct lf_config **out,
                                               struct lf_buf *errors);

struct lf_chain_spec;

/* Compiles every input's stage chain into *specs, a new array of cfg->n_inputs; free it
 * with lf_agent_free_chains(). A parser this build cannot run, or a pattern that does not
 * compile, is printed as the config's FILE:LINE:COL line (the first such parser of every
 * input): returns exit code 2 (and *specs is NULL); 1 out of memory; 0 when all compiled.
 * --test-config, --preview, --once and the daemon's start all call it. */
int lf_agent_compile_chains(const struct lf_config *cfg, struct lf_chain_spec ***specs);

/* Frees what lf_agent_compile_chains() made. NULL is a no-op. */
void lf_agent_free_chains(const struct lf_config *cfg, struct lf_chain_spec **specs);

/* Creates data_dir if missing and checks it is a writable directory; logs why not and
 * returns false if it is unusable. */
bool lf_agent_data_dir_ok(const struct lf_config *cfg);

/* --registry-reset-broken: when on, lf_agent_open_registry() moves a broken registry file
 * aside and starts empty instead of refusing to start. Off by default. */
void lf_agent_set_registry_reset(bool on);

struct lf_registry;

/* Opens cfg->data_dir's registry into *out for the daemon or --once, logging why not.
 * Returns 0, or 1 (the exit code) when the agent must not start. */
int lf_agent_open_registry(const struct lf_config *cfg, struct lf_registry **out);

#endif
