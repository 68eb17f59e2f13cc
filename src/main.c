/* main.c - command line and lifecycle (SPEC.md "Command line").
 *
 * Parses the options, loads the config (every error is one FILE:LINE:COL line, exit 2),
 * then runs one of: --test-config, --preview, --status (also `logferry status`), the
 * backfill (--once) or the daemon. */
#include "config.h"

#define LF_LOG_COMPONENT "main"
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "logferry/buf.h"
#include "logferry/config.h"
#include "logferry/daemon.h"
#include "logferry/log.h"
#include "logferry/once.h"
#include "logferry/preview.h"
#include "logferry/startup.h"
#include "logferry/status.h"
#include "logferry/output.h"

#define LF_DEFAULT_CONFIG "/etc/logferry/logferry.yml"

enum exit_code {
    EXIT_OK = 0,
    EXIT_RUNTIME = 1,
    EXIT_USAGE = 2,
};

struct cli {
    const char *config_path;
    const char *data_dir;
    const char *log_level;
    const char *preview_input;
    const char *preview_path;
    bool once;
    bool test_config;
    bool status;
    bool registry_reset_broken;
};

static void usage(FILE *f)
{
    fputs("Usage: logferry [-c FILE] [--once] [--data-dir DIR] [--log-level LEVEL]\n"
          "                [--registry-reset-broken]\n"
          "       logferry -c FILE --test-config\n"
          "       logferry -c FILE --preview INPUT_ID [PATH]\n"
          "       logferry status [-c FILE]\n"
          "       logferry --version | --help\n"
          "\n"
          "A log-file tailing and forwarding agent.\n"
          "\n"
          "  -c, --config FILE     YAML config (default " LF_DEFAULT_CONFIG ")\n"
          "      --once            backfill: read every matching file to its end, deliver\n"
          "                        every event, then exit\n"
          "  -t, --test-config     check the config, print \"config OK\" and exit 0, or print\n"
          "                        each problem as FILE:LINE:COL: message and exit 2\n"
          "      --preview ID PATH run input ID's reader and stages over PATH and print the\n"
          "                        events as NDJSON on stdout; touches no output (a journald\n"
          "                        input without PATH: its own journal)\n"
          "      --status          print how the running agent's inputs and outputs are\n"
          "                        doing (GET /status at metrics.listen) as a table; with no\n"
          "                        agent answering, each file of the registry (also:\n"
          "                        `logferry status`)\n"
          "      --data-dir DIR    override data_dir\n"
          "      --log-level LEVEL error, warn, info (default) or debug\n"
          "      --registry-reset-broken\n"
          "                        if DATA_DIR/registry is torn or corrupt, move it aside to\n"
          "                        registry.broken-<UTC time> and start with an empty registry\n"
          "                        (files not yet known are read as new) instead of refusing\n"
          "                        to start\n"
          "  -V, --version         print the version and exit\n"
          "  -h, --help            print this help and exit\n"
          "\n"
          "Exit status: 0 success, 1 runtime failure, 2 usage or config error.\n",
          f);
}

/* Parses argv into *cli. Returns -1 to go on, else the exit code. */
static int parse_args(int argc, char **argv, struct cli *cli)
{
    enum {
        OPT_ONCE = 256,
        OPT_DATA_DIR,
        OPT_LOG_LEVEL,
        OPT_PREVIEW,
        OPT_REGISTRY_RESET,
        OPT_STATUS
    };
    static const struct option longopts[] = {
        { "config", required_argument, NULL, 'c' },
        { "once", no_argument, NULL, OPT_ONCE },
        { "test-config", no_argument, NULL, 't' },
        { "status", no_argument, NULL, OPT_STATUS },
        { "preview", required_argument, NULL, OPT_PREVIEW },
        { "data-dir", required_argument, NULL, OPT_DATA_DIR },
        { "log-level", required_argument, NULL, OPT_LOG_LEVEL },
        { "registry-reset-broken", no_argument, NULL, OPT_REGISTRY_RESET },
        { "version", no_argument, NULL, 'V' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    int c;
    while ((c = getopt_long(argc, argv, "c:tVh", longopts, NULL)) != -1) {
        switch (c) {
        case 'c':
            cli->config_path = optarg;
            break;
        case OPT_ONCE:
            cli->once = true;
            break;
        case 't':
            cli->test_config = true;
            break;
        case OPT_STATUS:
            cli->status = true;
            break;
        case OPT_PREVIEW:
            cli->preview_input = optarg;
            /* PATH: required for a file input, optional for a journald one (checked once the
             * config says which) */
            if (optind < argc && argv[optind][0] != '-')
                cli->preview_path = argv[optind++];
            break;
        case OPT_DATA_DIR:
            if (optarg[0] == '\0') {
                fprintf(stderr, "logferry: --data-dir needs a directory, not an empty string\n");
                return EXIT_USAGE;
            }
            cli->data_dir = optarg;
            break;
        case OPT_LOG_LEVEL:
            cli->log_level = optarg;
            break;
        case OPT_REGISTRY_RESET:
            cli->registry_reset_broken = true;
            break;
        case 'V':
            puts(PACKAGE_STRING);
            /* Not linked: an output that needs one loads it (src/output/netlib.c). */
            puts("loads on demand: " LF_SONAME_CURL
                 " (http, elasticsearch, loki, splunk_hec, otlp, kubernetes), " LF_SONAME_RDKAFKA " (kafka), " LF_SONAME_SSL
                 " (syslog tls)");
            return EXIT_OK;
        case 'h':
            usage(stdout);
            return EXIT_OK;
        default:
            fprintf(stderr, "Try 'logferry --help' for more information.\n");
            return EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "logferry: unexpected argument '%s'\n", argv[optind]);
        fprintf(stderr, "Try 'logferry --help' for more information.\n");
        return EXIT_USAGE;
    }
    return -1;
}

/* Applies the logging settings: --log-level wins over the config's logging.level. */
static int setup_logging(const struct cli *cli, const struct lf_config *cfg)
{
    enum lf_log_level level = LF_LOG_INFO;
    const char *name = cli->log_level != NULL ? cli->log_level
                       : cfg != NULL          ? cfg->logging.level
                                              : NULL;
    if (name != NULL && !lf_log_level_parse(name, &level)) {
        fprintf(stderr, "logferry: --log-level: unknown level '%s' (error, warn, info, debug)\n",
                name);
        return EXIT_USAGE;
    }
    lf_log_set_level(level);
    if (cfg != NULL && cfg->logging.format != NULL && strcmp(cfg->logging.format, "json") == 0)
        lf_log_set_format(LF_LOG_JSON);
    return -1;
}

static int load_config(const struct cli *cli, struct lf_config **cfg)
{
    struct lf_buf errors;
    lf_buf_init(&errors, 1u << 20);
    enum lf_err err = lf_agent_load_config(cli->config_path, cli->data_dir, cfg, &errors);
    if (err) {
        if (errors.len > 0)
            fwrite(errors.ptr, 1, errors.len, stderr);
        else
            fprintf(stderr, "%s: %s\n", cli->config_path, lf_err_str(err));
        lf_buf_release(&errors);
        return err == LF_ENOMEM ? EXIT_RUNTIME : EXIT_USAGE;
    }
    lf_buf_release(&errors);
    return -1;
}

int main(int argc, char **argv)
{
    struct cli cli = { .config_path = LF_DEFAULT_CONFIG };
    /* A closed stdout or peer, or a file past RLIMIT_FSIZE, is an error returned by
     * write(2) and handled where it happens (retried), not a signal that kills us. */
    signal(SIGPIPE, SIG_IGN);
    signal(SIGXFSZ, SIG_IGN);
    lf_output_preinit(); /* before any thread */
    char status_opt[] = "--status";
    if (argc > 1 && strcmp(argv[1], "status") == 0)
        argv[1] = status_opt; /* `logferry status [-c FILE]` */
    int rc = parse_args(argc, argv, &cli);
    if (rc >= 0)
        return rc;
    rc = setup_logging(&cli, NULL);
    if (rc >= 0)
        return rc;

    struct lf_config *cfg = NULL;
    rc = load_config(&cli, &cfg);
    if (rc >= 0)
        return rc;
    rc = setup_logging(&cli, cfg);
    if (rc >= 0)
        goto out;

    if (cli.test_config) {
        /* load_config() ran the validation the start and a reload run. Then the libraries
         * the outputs load: one missing would stop the start (exit 1, not a config error). */
        rc = EXIT_OK;
        for (size_t i = 0; i < cfg->n_outputs; i++) {
            struct lf_errbuf eb = { "" };
            if (lf_output_load_library(&cfg->outputs[i], &eb) != LF_OK) {
                fprintf(stderr, "%s: %s\n", cfg->path, eb.msg);
                rc = EXIT_RUNTIME;
            }
        }
        if (rc == EXIT_OK)
            puts("config OK");
    } else if (cli.status) {
        rc = lf_status_run(cfg);
    } else if (cli.preview_input != NULL) {
        rc = lf_preview_run(cfg, cli.preview_input, cli.preview_path);
    } else if (cli.once) {
        lf_agent_set_registry_reset(cli.registry_reset_broken);
        rc = lf_once_run(cfg);
    } else {
        lf_agent_set_registry_reset(cli.registry_reset_broken);
        rc = lf_daemon_run(cfg);
    }
out:
    lf_config_free(cfg);
    return rc;
}
