/* check_config.c - the config loader: every problem reported as FILE:LINE:COL, defaults,
 * the SPEC example, ${VAR} expansion, sizes and durations. */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "logferry/config.h"

struct bad_case {
    const char *name;
    const char *yaml;
    enum lf_err rc;
    const char *errors; /* every expected line, in order */
};

static const struct bad_case bad_cases[] = {
    { "unknown_top_key_suggests",
      "inptus: []\n"
      "inputs:\n"
      "  - {id: app, paths: [/var/log/a.log]}\n"
      "outputs:\n"
      "  - {name: local, type: file, path: /tmp/out}\n",
      LF_ECONFIG, "t.yml:1:1: unknown key \"inptus\" (did you mean \"inputs\"?)\n" },
    { "unknown_input_key_suggests",
      "inputs:\n"
      "  - id: app\n"
      "    pahts: [/x]\n"
      "    paths: [/x]\n"
      "outputs:\n"
      "  - {name: local, type: file, path: /tmp/out}\n",
      LF_ECONFIG, "t.yml:3:5: inputs[0]: unknown key \"pahts\" (did you mean \"paths\"?)\n" },
    { "unknown_key_without_suggestion",
      "inputs:\n"
      "  - {id: app, paths: [/var/log/a.log]}\n"
      "outputs:\n"
      "  - {name: local, type: file, path: /tmp/out}\n"
      "zzz: 1\n",
      LF_ECONFIG, "t.yml:5:1: unknown key \"zzz\"\n" },
    { "kafka_acks_and_brokers_are_checked",
      "inputs:\n"
      "  - {id: app, paths: [/var/log/a.log]}\n"
      "outputs:\n"
      "  - {name: bus, type: kafka, brokers: [kafka1], topic: t, acks: \"0\"}\n",
      LF_ECONFIG,
      "t.yml:4:40: outputs[0].brokers[0]: invalid value \"kafka1\": expected HOST:PORT, such as 127.0.0.1:5066 or [::1]:5066\n"
      "t.yml:4:65: outputs[0].acks: invalid value \"0\": expected all or 1\n" },
    { "bad_size_suffix",
      "inputs:\n"
      "  - id: app\n"
      "    paths: [/x]\n"
      "    max_line_bytes: 12XB\n"
      "outputs:\n"
      "  - {name: local, type: file, path: /tmp/out}\n",
      LF_ECONFIG,
      "t.yml:4:21: inputs[0].max_line_bytes: invalid size \"12XB\": expected bytes with an optional KiB, MiB or GiB suffix\n" },
    { "decimal_size_suffix_is_rejected",
      "inputs:\n"
      "  - id: app\n"
      "    paths: [/x]\n"
      "    buffer_size: 64KB\n"
      "outputs:\n"
      "  - {name: local, type: file, path: /tmp/out}\n",
      LF_ECONFIG,
      "t.yml:4:18: inputs[0].buffer_size: invalid size \"64KB\": expected bytes with an optional KiB, MiB or GiB suffix\n" },
    { "size_overflow",
      "inputs:\n"
      "  - id: app\n"
      "    paths: [/x]\n"
      "    max_line_bytes: 99999999999999GiB\n"
      "outputs:\n"
      "  - {name: local, type: file, path: /tmp/out}\n",
      LF_ECONFIG,
      "t.yml:4:21: inputs[0].max_line_bytes: size \"99999999999999GiB\" is too large\n" },
    { "buffer_size_too_small",
      "inputs:\n"
      "  - id: app\n"
      "    paths: [/x]\n"
      "    buffer_size: 8\n"
      "outputs:\n"
      "  - {name: local, type: file, path: /tmp/out}\n",
      LF_ECONFIG,
      "t.yml:4:18: inputs[0].buffer_size: 8 is too small: must be at least 16 bytes\n" },
    { "max_line_bytes_zero",
      "inputs:\n"
      "  - id: app\n"
      "    paths: [/x]\n"
      "    max_line_bytes: 0\n"
      "outputs:\n"
      "  - {name: local, type: file, path: /tmp/out}\n",
      LF_ECONFIG,
      "t.yml:4:21: inputs[0].max_line_bytes: 0 is too small: must be at least 4 bytes\n" },
    { "negative_size",
      "inputs:\n"
      "  - id: app\n"
      "    paths: [/x]\n"
      "    max_line_bytes: -5\n"
      "outputs:\n"
      "  - {name: local, type: file, path: /tmp/out}\n",
      LF_ECONFIG,
      "t.yml:4:21: inputs[0].max_line_bytes: invalid size \"-5\": expected bytes with an optional KiB, MiB or GiB suffix\n" },
    { "duration_without_unit",
      "shutdown_timeout: 10\n"
      "inputs:\n"
      "  - {id: app, paths: [/var/log/a.log]}\n"
      "outputs:\n"
      "  - {name: local, type: file, path: /tmp/out}\n",
      LF_ECONFIG,
      "t.yml:1:19: shutdown_timeout: invalid duration \"10\": expected a whole number with a unit ms, s, m or h, or 0\n" },
    { "duration_bad_unit",
      "inputs:\n"
      "  - {id: app, paths: [/var/log/a.log]}\n"
      "outputs:\n"
      "  - {name: local, type: file, path: /tmp/out}\n"
      "registry:\n"
      "  flush_interval: 1d\n",
      LF_ECONFIG,
      "t.yml:6:19: registry.flush_interval: invalid duration \"1d\": expected a whole number with a unit ms, s, m or h, or 0\n" },
    { "bad_bool",
      "inputs:\n"
      "  - id: app\n"
      "    paths: [/x]\n"
      "    skip_empty_lines: maybe\n"
      "outputs:\n"
      "  - {name: local, type: file, path: /tmp/out}\n",
      LF_ECONFIG,
      "t.yml:4:23: inputs[0].skip_empty_lines: invalid boolean \"maybe\": expected true or false\n" },
    { "bad_enum_start_at",
      "inputs:\n"
      "  - id: app\n"
      "    paths: [/x]\n"
      "    start_at: middle\n"
      "outputs:\n"
      "  - {name: local, type: file, path: /tmp/out}\n",
      LF_ECONFIG,
      "t.yml:4:15: inputs[0].start_at: invalid value \"middle\": expected beginning or end\n" },
    { "bad_enum_line_overflow",
      "inputs:\n"
      "  - id: app\n"
      "    paths: [/x]\n"
      "    line_overflow: wrap\n"
      "outputs:\n"
      "  - {name: local, type: file, path: /tmp/out}\n",
      LF_ECONFIG,
      "t.yml:4:20: inputs[0].line_overflow: invalid value \"wrap\": expected truncate or skip\n" },
    { "unknown_encoding",
      "inputs:\n"
      "  - id: app\n"
      "    paths: [/x]\n"
      "    encoding: klingon-8\n"
      "outputs:\n"
      "  - {name: local, type: file, path: /tmp/out}\n",
      LF_ECONFIG,
      "t.yml:4:15: inputs[0].encoding: invalid value \"klingon-8\": expected an encoding iconv knows, such as utf-8, utf-16le or iso-8859-1\n" },
    { "bad_exclude_regex",
      "inputs:\n"
      "  - id: app\n"
      "    paths: [/x]\n"
      "    exclude_files: ['ok', '(']\n"
      "outputs:\n"
      "  - {name: local, type: file, path: /tmp/out}\n",
      LF_ECONFIG,
      "t.yml:4:27: inputs[0].exclude_files[1]: invalid regex \"(\": missing closing parenthesis at offset 1\n" },
    { "missing_input_id",
      "inputs:\n"
      "  - paths: [/x]\n"
      "outputs:\n"
      "  - {name: local, type: file, path: /tmp/out}\n",
      LF_ECONFIG, "t.yml:2:5: inputs[0]: missing required key \"id\"\n" },
    { "missing_paths_for_file",
      "inputs:\n"
      "  - id: app\n"
      "outputs:\n"
      "  - {name: local, type: file, path: /tmp/out}\n",
      LF_ECONFIG, "t.yml:2:5: inputs[0]: missing required key \"paths\" (needed for type file)\n" },
    { "empty_paths_list",
      "inputs:\n"
      "  - id: app\n"
      "    paths: []\n"
      "outputs:\n"
      "  - {name: local, type: file, path: /tmp/out}\n",
      LF_ECONFIG, "t.yml:3:12: inputs[0].paths: expected at least one path\n" },
    { "paths_on_stdin",
      "inputs:\n"
      "  - id: app\n"
      "    type: stdin\n"
      "    paths: [/x]\n"
      "outputs:\n"
      "  - {name: local, type: file, path: /tmp/out}\n",
      LF_ECONFIG, "t.yml:4:12: inputs[0].paths: not used by type stdin: remove it\n" },
    { "duplicate_input_id",
      "inputs:\n"
      "  - id: app\n"
      "    paths: [/x]\n"
      "  - id: app\n"
      "    paths: [/y]\n"
      "outputs:\n"
      "  - {name: local, type: file, path: /tmp/out}\n",
      LF_ECONFIG, "t.yml:4:9: inputs[1].id: duplicate input id \"app\" (first defined at 2:9)\n" },
    { "duplicate_output_name",
      "inputs:\n"
      "  - {id: app, paths: [/var/log/a.log]}\n"
      "outputs:\n"
      "  - {name: local, type: file, path: /a}\n"
      "  - {name: local, type: console}\n",
      LF_ECONFIG,
      "t.yml:5:12: outputs[1].name: duplicate output name \"local\" (first defined at 4:12)\n" },
    { "route_to_missing_output",
      "inputs:\n"
      "  - id: app\n"
      "    paths: [/x]\n"
      "    outputs: [local, remote]\n"
      "outputs:\n"
      "  - {name: local, type: file, path: /tmp/out}\n",
      LF_ECONFIG, "t.yml:4:22: inputs[0].outputs[1]: no output named \"remote\"\n" },
    { "no_inputs",
      "inputs: []\n"
      "outputs:\n"
      "  - {name: local, type: file, path: /tmp/out}\n",
      LF_ECONFIG, "t.yml:1:9: inputs: expected at least one input\n" },
    { "no_outputs_key",
      "inputs:\n"
      "  - {id: app, paths: [/var/log/a.log]}\n",
      LF_ECONFIG, "t.yml:1:1: missing required key \"outputs\"\n" },
    { "missing_output_name",
      "inputs:\n"
      "  - {id: app, paths: [/var/log/a.log]}\n"
      "outputs:\n"
      "  - {type: console}\n",
      LF_ECONFIG, "t.yml:4:5: outputs[0]: missing required key \"name\"\n" },
    { "missing_output_type",
      "inputs:\n"
      "  - {id: app, paths: [/var/log/a.log]}\n"
      "outputs:\n"
      "  - {name: local}\n",
      LF_ECONFIG, "t.yml:4:5: outputs[0]: missing required key \"type\"\n" },
    { "unknown_output_type",
      "inputs:\n"
      "  - {id: app, paths: [/var/log/a.log]}\n"
      "outputs:\n"
      "  - {name: local, type: gcs}\n",
      LF_ECONFIG,
      "t.yml:4:25: outputs[0].type: invalid value \"gcs\": expected file, console, http, elasticsearch, loki, kafka, syslog, splunk_hec, otlp, or s3\n" },
    { "missing_file_output_path",
      "inputs:\n"
      "  - {id: app, paths: [/var/log/a.log]}\n"
      "outputs:\n"
      "  - {name: local, type: file}\n",
      LF_ECONFIG, "t.yml:4:5: outputs[0]: missing required key \"path\"\n" },
    { "http_output_checks_method_and_auth",
      "inputs:\n"
      "  - {id: app, paths: [/var/log/a.log]}\n"
      "outputs:\n"
      "  - {name: local, type: file, path: /tmp/out}\n"
      "  - name: collector\n"
      "    type: http\n"
      "    url: http://127.0.0.1:8080/ingest\n"
      "    method: post\n"
      "    auth: {user: u}\n"
      "    tls: {verify: maybe}\n",
      LF_ECONFIG,
      "t.yml:8:13: outputs[1].method: invalid value \"post\": expected an HTTP method in upper case, such as POST or PUT\n"
      "t.yml:9:11: outputs[1].auth: missing required key \"password\"\n"
      "t.yml:10:19: outputs[1].tls.verify: invalid boolean \"maybe\": expected true or false\n" },
    { "syslog_bad_protocol",
      "inputs:\n"
      "  - {id: app, paths: [/var/log/a.log]}\n"
      "outputs:\n"
      "  - {name: local, type: file, path: /tmp/out}\n"
      "  - {name: relay, type: syslog, address: 'h:514', protocol: sctp}\n",
      LF_ECONFIG,
      "t.yml:5:61: outputs[1].protocol: invalid value \"sctp\": expected tcp, udp, or tls\n" },
    { "syslog_bad_facility_severity_and_app_name",
      "inputs:\n"
      "  - {id: app, paths: [/var/log/a.log]}\n"
      "outputs:\n"
      "  - name: relay\n"
      "    type: syslog\n"
      "    address: h:514\n"
      "    facility: local9\n"
      "    severity: loud\n"
      "    app_name: my app\n"
      "    max_message_bytes: 100\n",
      LF_ECONFIG,
      "t.yml:7:15: outputs[0].facility: invalid value \"local9\": expected kern, user, mail, "
      "daemon, auth, syslog, lpr, news, uucp, cron, authpriv, ftp, local0, local1, local2, "
      "local3, local4, local5, local6, local7, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, "
      "14, 15, 16, 17, 18, 19, 20, 21, 22, or 23\n"
      "t.yml:8:15: outputs[0].severity: invalid value \"loud\": expected emerg, alert, crit, "
      "err, error, warning, warn, notice, info, debug, 0, 1, 2, 3, 4, 5, 6, or 7\n"
      "t.yml:9:15: outputs[0].app_name: invalid value \"my app\": expected 1-48 printable "
      "ASCII characters, no spaces\n"
      "t.yml:10:24: outputs[0].max_message_bytes: 100 is too small: must be at least 480 bytes\n" },
    { "file_output_rejects_gzip",
      "inputs:\n"
      "  - {id: app, paths: [/var/log/a.log]}\n"
      "outputs:\n"
      "  - {name: local, type: file, path: /o, compression: gzip}\n",
      LF_ECONFIG,
      "t.yml:4:54: outputs[0].compression: invalid value \"gzip\": expected zstd or none\n" },
    { "console_bad_format",
      "inputs:\n"
      "  - {id: app, paths: [/var/log/a.log]}\n"
      "outputs:\n"
      "  - {name: s, type: console, format: xml}\n",
      LF_ECONFIG, "t.yml:4:38: outputs[0].format: invalid value \"xml\": expected json or text\n" },
    { "zstd_level_out_of_range",
      "inputs:\n"
      "  - {id: app, paths: [/var/log/a.log]}\n"
      "outputs:\n"
      "  - {name: local, type: file, path: /o, level: 30}\n",
      LF_ECONFIG, "t.yml:4:48: outputs[0].level: 30 is out of range: expected 1 to 22\n" },
    { "mapping_where_scalar_wanted",
      "data_dir: {a: 1}\n"
      "inputs:\n"
      "  - {id: app, paths: [/var/log/a.log]}\n"
      "outputs:\n"
      "  - {name: local, type: file, path: /tmp/out}\n",
      LF_ECONFIG, "t.yml:1:11: data_dir: expected a scalar value, got a mapping\n" },
    { "mapping_where_list_wanted",
      "inputs:\n"
      "  - id: app\n"
      "    paths: {a: 1}\n"
      "outputs:\n"
      "  - {name: local, type: file, path: /tmp/out}\n",
      LF_ECONFIG, "t.yml:3:12: inputs[0].paths: expected a list of strings, got a mapping\n" },
    { "scalar_where_mapping_wanted",
      "inputs:\n"
      "  - {id: app, paths: [/var/log/a.log]}\n"
      "outputs:\n"
      "  - {name: local, type: file, path: /tmp/out}\n"
      "queue: big\n",
      LF_ECONFIG, "t.yml:5:8: queue: expected a mapping, got a scalar\n" },
    { "input_item_not_mapping",
      "inputs:\n"
      "  - app\n"
      "outputs:\n"
      "  - {name: local, type: file, path: /tmp/out}\n",
      LF_ECONFIG, "t.yml:2:5: inputs[0]: expected a mapping, got a scalar\n" },
    { "yaml_syntax_error",
      "inputs:\n"
      "  - id: app\n"
      "   paths: [/x\n",
      LF_ECONFIG,
      "t.yml:3:4: YAML syntax error: did not find expected '-' indicator while parsing a block collection\n" },
    { "yaml_bad_indentation",
      "a: b\n"
      " c: d\n",
      LF_ECONFIG,
      "t.yml:2:3: YAML syntax error: mapping values are not allowed in this context\n" },
    { "empty_document", "", LF_ECONFIG,
      "t.yml:1:1: the config is empty: expected inputs and outputs\n" },
    { "top_level_list",
      "- a\n"
      "- b\n",
      LF_ECONFIG,
      "t.yml:1:1: expected a mapping of keys (inputs, outputs, ...) at the top, got a list\n" },
    { "two_documents",
      "inputs:\n"
      "  - {id: app, paths: [/var/log/a.log]}\n"
      "outputs:\n"
      "  - {name: local, type: file, path: /tmp/out}\n"
      "---\n"
      "x: 1\n",
      LF_ECONFIG, "t.yml:6:1: expected one YAML document, found a second one\n" },
    { "duplicate_key",
      "inputs:\n"
      "  - id: app\n"
      "    paths: [/x]\n"
      "    id: web\n"
      "outputs:\n"
      "  - {name: local, type: file, path: /tmp/out}\n",
      LF_ECONFIG, "t.yml:4:5: inputs[0]: duplicate key \"id\" (first at 2:5)\n" },
    { "unset_env_var",
      "data_dir: ${LF_TEST_SURELY_UNSET}\n"
      "inputs:\n"
      "  - {id: app, paths: [/var/log/a.log]}\n"
      "outputs:\n"
      "  - {name: local, type: file, path: /tmp/out}\n",
      LF_ECONFIG,
      "t.yml:1:11: data_dir: environment variable LF_TEST_SURELY_UNSET is not set (write ${LF_TEST_SURELY_UNSET:-default} to give a default)\n" },
    { "bad_env_syntax",
      "data_dir: ${1X}\n"
      "inputs:\n"
      "  - {id: app, paths: [/var/log/a.log]}\n"
      "outputs:\n"
      "  - {name: local, type: file, path: /tmp/out}\n",
      LF_ECONFIG,
      "t.yml:1:11: data_dir: invalid ${...}: expected a variable name of letters, digits and _\n" },
    { "unterminated_env",
      "data_dir: /a/${HOME\n"
      "inputs:\n"
      "  - {id: app, paths: [/var/log/a.log]}\n"
      "outputs:\n"
      "  - {name: local, type: file, path: /tmp/out}\n",
      LF_ECONFIG, "t.yml:1:11: data_dir: invalid ${HOME: expected } or :-default}\n" },
    { "unknown_parser",
      "inputs:\n"
      "  - id: app\n"
      "    paths: [/x]\n"
      "    parsers:\n"
      "      - multilin: {pattern: x}\n"
      "outputs:\n"
      "  - {name: local, type: file, path: /tmp/out}\n",
      LF_ECONFIG,
      "t.yml:5:9: inputs[0].parsers[0]: unknown parser \"multilin\" (did you mean \"multiline\"?)\n" },
    { "two_parsers_in_one_item",
      "inputs:\n"
      "  - id: app\n"
      "    paths: [/x]\n"
      "    parsers:\n"
      "      - container: {}\n"
      "        ndjson: {}\n"
      "outputs:\n"
      "  - {name: local, type: file, path: /tmp/out}\n",
      LF_ECONFIG,
      "t.yml:6:9: inputs[0].parsers[0]: one parser per list item: start a new item with \"- \"\n" },
    { "multiline_without_pattern",
      "inputs:\n"
      "  - id: app\n"
      "    paths: [/x]\n"
      "    parsers:\n"
      "      - multiline: {negate: true}\n"
      "outputs:\n"
      "  - {name: local, type: file, path: /tmp/out}\n",
      LF_ECONFIG,
      "t.yml:5:9: inputs[0].parsers[0].multiline: missing required key \"pattern\" (needed for type pattern, unless a preset is given)\n" },
    { "multiline_count_without_count_lines",
      "inputs:\n"
      "  - id: app\n"
      "    paths: [/x]\n"
      "    parsers:\n"
      "      - multiline: {type: count}\n"
      "outputs:\n"
      "  - {name: local, type: file, path: /tmp/out}\n",
      LF_ECONFIG,
      "t.yml:5:9: inputs[0].parsers[0].multiline: missing required key \"count_lines\" (needed for type count)\n" },
    { "multiline_bad_regex",
      "inputs:\n"
      "  - id: app\n"
      "    paths: [/x]\n"
      "    parsers:\n"
      "      - multiline: {pattern: 'a[b'}\n"
      "outputs:\n"
      "  - {name: local, type: file, path: /tmp/out}\n",
      LF_ECONFIG,
      "t.yml:5:30: inputs[0].parsers[0].multiline.pattern: invalid regex \"a[b\": missing terminating ] for character class at offset 3\n" },
    { "multiline_bad_preset",
      "inputs:\n"
      "  - id: app\n"
      "    paths: [/x]\n"
      "    parsers:\n"
      "      - multiline: {preset: cobol}\n"
      "outputs:\n"
      "  - {name: local, type: file, path: /tmp/out}\n",
      LF_ECONFIG,
      "t.yml:5:29: inputs[0].parsers[0].multiline.preset: invalid value \"cobol\": expected java, python, go, or ruby\n" },
    { "container_bad_stream",
      "inputs:\n"
      "  - id: app\n"
      "    paths: [/x]\n"
      "    parsers:\n"
      "      - container: {stream: stdin}\n"
      "outputs:\n"
      "  - {name: local, type: file, path: /tmp/out}\n",
      LF_ECONFIG,
      "t.yml:5:29: inputs[0].parsers[0].container.stream: invalid value \"stdin\": expected all, stdout, or stderr\n" },
    { "ndjson_unknown_key",
      "inputs:\n"
      "  - id: app\n"
      "    paths: [/x]\n"
      "    parsers:\n"
      "      - ndjson: {targte: x}\n"
      "outputs:\n"
      "  - {name: local, type: file, path: /tmp/out}\n",
      LF_ECONFIG,
      "t.yml:5:18: inputs[0].parsers[0].ndjson: unknown key \"targte\" (did you mean \"target\"?)\n" },
    { "bad_log_level",
      "inputs:\n"
      "  - {id: app, paths: [/var/log/a.log]}\n"
      "outputs:\n"
      "  - {name: local, type: file, path: /tmp/out}\n"
      "logging: {level: verbose, format: xml}\n",
      LF_ECONFIG,
      "t.yml:5:18: logging.level: invalid value \"verbose\": expected error, warn, info, or debug\n"
      "t.yml:5:35: logging.format: invalid value \"xml\": expected text or json\n" },
    { "bad_metrics_listen",
      "inputs:\n"
      "  - {id: app, paths: [/var/log/a.log]}\n"
      "outputs:\n"
      "  - {name: local, type: file, path: /tmp/out}\n"
      "metrics:\n"
      "  listen: localhost\n",
      LF_ECONFIG,
      "t.yml:6:11: metrics.listen: invalid value \"localhost\": expected HOST:PORT, such as 127.0.0.1:5066 or [::1]:5066\n" },
    { "metrics_port_out_of_range",
      "inputs:\n"
      "  - {id: app, paths: [/var/log/a.log]}\n"
      "outputs:\n"
      "  - {name: local, type: file, path: /tmp/out}\n"
      "metrics:\n"
      "  listen: 127.0.0.1:70000\n",
      LF_ECONFIG,
      "t.yml:6:11: metrics.listen: invalid value \"127.0.0.1:70000\": expected HOST:PORT, such as 127.0.0.1:5066 or [::1]:5066\n" },
    { "fields_not_mapping",
      "inputs:\n"
      "  - id: app\n"
      "    paths: [/x]\n"
      "    fields: [a, b]\n"
      "outputs:\n"
      "  - {name: local, type: file, path: /tmp/out}\n",
      LF_ECONFIG, "t.yml:4:13: inputs[0].fields: expected a mapping, got a list\n" },
    { "max_open_files_not_number",
      "inputs:\n"
      "  - id: app\n"
      "    paths: [/x]\n"
      "    max_open_files: many\n"
      "outputs:\n"
      "  - {name: local, type: file, path: /tmp/out}\n",
      LF_ECONFIG,
      "t.yml:4:21: inputs[0].max_open_files: invalid number \"many\": expected a whole number >= 0\n" },
    { "several_problems",
      "inputs:\n"
      "  - id: app\n"
      "    pahts: [/x]\n"
      "    max_line_bytes: 12XB\n"
      "  - id: app\n"
      "    paths: [/y]\n"
      "    outputs: [remote]\n"
      "outputs:\n"
      "  - name: local\n"
      "    type: file\n"
      "    path: /o\n"
      "  - name: es\n"
      "    type: elasticsearch\n"
      "    url: http://es:9200\n"
      "    idnex: x\n",
      LF_ECONFIG,
      "t.yml:2:5: inputs[0]: missing required key \"paths\" (needed for type file)\n"
      "t.yml:3:5: inputs[0]: unknown key \"pahts\" (did you mean \"paths\"?)\n"
      "t.yml:4:21: inputs[0].max_line_bytes: invalid size \"12XB\": expected bytes with an optional KiB, MiB or GiB suffix\n"
      "t.yml:5:9: inputs[1].id: duplicate input id \"app\" (first defined at 2:9)\n"
      "t.yml:7:15: inputs[1].outputs[0]: no output named \"remote\"\n"
      "t.yml:15:5: outputs[1]: unknown key \"idnex\" (did you mean \"index\"?)\n" },
};

#define N_BAD_CASES ((int)(sizeof(bad_cases) / sizeof(bad_cases[0])))

/* Loads yaml as "t.yml"; returns the code and leaves the messages in *errors (a C string). */
static enum lf_err load(const char *yaml, struct lf_config **cfg, char **errors)
{
    struct lf_buf eb;
    lf_buf_init(&eb, 1 << 20);
    enum lf_err err = lf_config_load_mem("t.yml", yaml, strlen(yaml), cfg, &eb);
    ck_assert_int_eq(lf_buf_append(&eb, "", 1), LF_OK);
    *errors = eb.ptr;
    return err;
}

/* Loads yaml that must be valid. */
static struct lf_config *load_ok(const char *yaml)
{
    struct lf_config *cfg = NULL;
    char *errors = NULL;
    enum lf_err err = load(yaml, &cfg, &errors);
    ck_assert_str_eq(errors, "");
    ck_assert_int_eq(err, LF_OK);
    ck_assert_ptr_nonnull(cfg);
    free(errors);
    return cfg;
}

START_TEST(bad_config_reports_every_problem_with_its_position)
{
    const struct bad_case *bc = &bad_cases[_i];
    struct lf_config *cfg = (struct lf_config *)1;
    char *errors = NULL;
    enum lf_err err = load(bc->yaml, &cfg, &errors);
    char got[4096];
    char want[4096];
    snprintf(got, sizeof(got), "%s: %s", bc->name, errors);
    snprintf(want, sizeof(want), "%s: %s", bc->name, bc->errors);
    ck_assert_str_eq(got, want);
    ck_assert_int_eq(err, bc->rc);
    ck_assert_ptr_null(cfg);
    free(errors);
}
END_TEST

START_TEST(bad_case_table_has_at_least_thirty_cases)
{
    ck_assert_int_ge(N_BAD_CASES, 30);
}
END_TEST

START_TEST(unreadable_file_is_one_line_and_eio)
{
    struct lf_buf eb;
    lf_buf_init(&eb, 4096);
    struct lf_config *cfg = (struct lf_config *)1;
    enum lf_err err = lf_config_load("/nonexistent/logferry.yml", &cfg, &eb);
    ck_assert_int_eq(err, LF_EIO);
    ck_assert_ptr_null(cfg);
    const char want[] = "/nonexistent/logferry.yml: cannot read: No such file or directory\n";
    ck_assert_uint_eq(eb.len, strlen(want));
    ck_assert_mem_eq(eb.ptr, want, eb.len);
    lf_buf_release(&eb);
}
END_TEST

static char *fixture(const char *name)
{
    const char *dir = getenv("LF_TEST_DATA");
    char *path = NULL;
    ck_assert_int_ge(asprintf(&path, "%s/config/%s", dir != NULL ? dir : "t/data", name), 0);
    return path;
}

static void assert_spec_input(const struct lf_input_conf *in)
{
    ck_assert_str_eq(in->id, "app");
    ck_assert_int_eq(in->type, LF_INPUT_FILE);
    ck_assert_uint_eq(in->n_paths, 2);
    ck_assert_str_eq(in->paths[0], "/var/log/app/*.log");
    ck_assert_str_eq(in->paths[1], "/var/log/**/*.log");
    ck_assert_uint_eq(in->n_exclude_files, 1);
    ck_assert_str_eq(in->exclude_files[0], "\\.gz$");
    ck_assert_int_eq(in->start_at, LF_START_BEGINNING);
    ck_assert_str_eq(in->encoding, "utf-8");
    ck_assert_uint_eq(in->max_line_bytes, 1024 * 1024);
    ck_assert_int_eq(in->line_overflow, LF_OVERFLOW_TRUNCATE);
    ck_assert_uint_eq(in->buffer_size, 64 * 1024);
    ck_assert_uint_eq(in->scan_interval_ms, 10000);
    ck_assert_uint_eq(in->close_inactive_ms, 300000);
    ck_assert_uint_eq(in->ignore_older_ms, 0);
    ck_assert_uint_eq(in->max_open_files, 1024);
    ck_assert(!in->skip_empty_lines);
    ck_assert_str_eq(in->fields_json, "{\"env\":\"prod\"}");
    ck_assert(!in->fields_under_root);
    ck_assert_uint_eq(in->n_outputs, 1);
    ck_assert_uint_eq(in->outputs[0], 0);
}

static void assert_spec_parsers(const struct lf_input_conf *in)
{
    ck_assert_uint_eq(in->n_parsers, 8);
    const struct lf_parser_conf *p = in->parsers;
    ck_assert_int_eq(p[0].kind, LF_PARSER_CONTAINER);
    ck_assert_int_eq(p[0].u.container.format, LF_CONTAINER_AUTO);
    ck_assert_int_eq(p[0].u.container.stream, LF_STREAM_ALL);
    ck_assert_uint_eq(p[0].pos.line, 24);
    ck_assert_uint_eq(p[0].pos.col, 9);
    ck_assert_int_eq(p[1].kind, LF_PARSER_MULTILINE);
    ck_assert_int_eq(p[1].u.multiline.type, LF_MULTILINE_PATTERN);
    ck_assert_str_eq(p[1].u.multiline.pattern, "^\\[");
    ck_assert(p[1].u.multiline.negate);
    ck_assert_int_eq(p[1].u.multiline.match, LF_MATCH_AFTER);
    ck_assert_uint_eq(p[1].u.multiline.max_lines, 500);
    ck_assert_uint_eq(p[1].u.multiline.max_bytes, 10 * 1024 * 1024);
    ck_assert_uint_eq(p[1].u.multiline.timeout_ms, 5000);
    ck_assert_int_eq(p[2].u.multiline.type, LF_MULTILINE_COUNT);
    ck_assert_uint_eq(p[2].u.multiline.count_lines, 3);
    ck_assert_int_eq(p[3].u.multiline.type, LF_MULTILINE_WHILE_PATTERN);
    ck_assert_str_eq(p[3].u.multiline.pattern, "^\\s");
    ck_assert_str_eq(p[4].u.multiline.preset, "java");
    ck_assert_ptr_null(p[4].u.multiline.pattern);
    ck_assert_int_eq(p[5].kind, LF_PARSER_INCLUDE_LINES);
    ck_assert_uint_eq(p[5].u.lines.n_patterns, 2);
    ck_assert_str_eq(p[5].u.lines.patterns[0], "ERR");
    ck_assert_str_eq(p[5].u.lines.patterns[1], "WARN");
    ck_assert_int_eq(p[6].kind, LF_PARSER_EXCLUDE_LINES);
    ck_assert_uint_eq(p[6].u.lines.n_patterns, 1);
    ck_assert_str_eq(p[6].u.lines.patterns[0], "^DBG");
    ck_assert_int_eq(p[7].kind, LF_PARSER_NDJSON);
    ck_assert_str_eq(p[7].u.ndjson.target, "");
    ck_assert(!p[7].u.ndjson.overwrite_keys);
    ck_assert(p[7].u.ndjson.add_error_key);
    ck_assert_str_eq(p[7].u.ndjson.message_key, "message");
}

START_TEST(spec_example_loads_with_every_value)
{
    char *path = fixture("spec-example.yml");
    struct lf_buf eb;
    lf_buf_init(&eb, 1 << 20);
    struct lf_config *cfg = NULL;
    ck_assert_int_eq(lf_config_load(path, &cfg, &eb), LF_OK);
    ck_assert_uint_eq(eb.len, 0);
    ck_assert_str_eq(cfg->path, path);
    ck_assert_str_eq(cfg->data_dir, "/var/lib/logferry");
    ck_assert_uint_eq(cfg->shutdown_timeout_ms, 10000);
    ck_assert_uint_eq(cfg->n_inputs, 1);
    assert_spec_input(&cfg->inputs[0]);
    assert_spec_parsers(&cfg->inputs[0]);
    ck_assert_ptr_eq(lf_config_input(cfg, "app"), &cfg->inputs[0]);
    ck_assert_ptr_null(lf_config_input(cfg, "web"));
    ck_assert_uint_eq(cfg->n_outputs, 2);
    ck_assert_str_eq(cfg->outputs[0].name, "local");
    ck_assert_int_eq(cfg->outputs[0].type, LF_OUTPUT_FILE);
    ck_assert_str_eq(cfg->outputs[0].path, "/var/lib/logferry/out");
    ck_assert_int_eq(cfg->outputs[0].compression, LF_COMPRESS_ZSTD);
    ck_assert_int_eq(cfg->outputs[0].compression_level, 1);
    ck_assert_uint_eq(cfg->outputs[0].rotate_bytes, 64 * 1024 * 1024);
    ck_assert_uint_eq(cfg->outputs[0].pos.line, 35);
    ck_assert_uint_eq(cfg->outputs[0].pos.col, 5);
    ck_assert_str_eq(cfg->outputs[1].name, "screen");
    ck_assert_int_eq(cfg->outputs[1].type, LF_OUTPUT_CONSOLE);
    ck_assert_int_eq(cfg->outputs[1].format, LF_CONSOLE_JSON);
    ck_assert_uint_eq(cfg->queue.max_bytes, 8 * 1024 * 1024);
    ck_assert_uint_eq(cfg->queue.batch_max_events, 4096);
    ck_assert_uint_eq(cfg->queue.batch_max_bytes, 1024 * 1024);
    ck_assert_uint_eq(cfg->queue.batch_flush_interval_ms, 1000);
    ck_assert(!cfg->queue.spool_enabled);
    ck_assert_uint_eq(cfg->queue.spool_max_bytes, 1024ull * 1024 * 1024);
    ck_assert_uint_eq(cfg->registry.flush_interval_ms, 1000);
    ck_assert(cfg->registry.clean_removed);
    ck_assert_str_eq(cfg->metrics.listen, "127.0.0.1:5066");
    ck_assert_str_eq(cfg->logging.level, "info");
    ck_assert_str_eq(cfg->logging.format, "text");
    lf_config_free(cfg);
    lf_buf_release(&eb);
    free(path);
}
END_TEST

START_TEST(spec_example_with_every_output_type_loads)
{
    char *path = fixture("spec-full.yml");
    struct lf_buf eb;
    lf_buf_init(&eb, 1 << 20);
    struct lf_config *cfg = NULL;
    ck_assert_int_eq(lf_config_load(path, &cfg, &eb), LF_OK);
    ck_assert_uint_eq(eb.len, 0);
    ck_assert_uint_eq(cfg->n_outputs, 7);
    static const enum lf_output_type want[] = { LF_OUTPUT_FILE, LF_OUTPUT_CONSOLE, LF_OUTPUT_HTTP,
                                                LF_OUTPUT_ELASTICSEARCH, LF_OUTPUT_LOKI,
                                                LF_OUTPUT_KAFKA, LF_OUTPUT_SYSLOG };
    for (size_t i = 0; i < 7; i++)
        ck_assert_int_eq(cfg->outputs[i].type, want[i]);
    ck_assert_str_eq(cfg->outputs[6].address, "127.0.0.1:6514");
    ck_assert_uint_eq(cfg->outputs[6].timeout_ms, 10000);
    lf_config_free(cfg);
    lf_buf_release(&eb);
    free(path);
}
END_TEST

static const char minimal[] = "inputs:\n"
                              "  - id: app\n"
                              "    paths: /var/log/app.log\n"
                              "  - id: in\n"
                              "    type: stdin\n"
                              "outputs:\n"
                              "  - {name: local, type: file, path: /o}\n"
                              "  - {name: screen, type: console}\n";

START_TEST(absent_keys_take_their_documented_defaults)
{
    struct lf_config *cfg = load_ok(minimal);
    const struct lf_input_conf *in = &cfg->inputs[0];
    ck_assert_str_eq(cfg->data_dir, "/var/lib/logferry");
    ck_assert_uint_eq(cfg->shutdown_timeout_ms, 10000);
    ck_assert_uint_eq(in->n_paths, 1); /* a lone scalar is a list of one */
    ck_assert_str_eq(in->paths[0], "/var/log/app.log");
    ck_assert_uint_eq(in->n_exclude_files, 0);
    ck_assert_int_eq(in->start_at, LF_START_BEGINNING);
    ck_assert_str_eq(in->encoding, "utf-8");
    ck_assert_uint_eq(in->max_line_bytes, 1048576);
    ck_assert_int_eq(in->line_overflow, LF_OVERFLOW_TRUNCATE);
    ck_assert_uint_eq(in->buffer_size, 65536);
    ck_assert_uint_eq(in->scan_interval_ms, 10000);
    ck_assert_uint_eq(in->close_inactive_ms, 300000);
    ck_assert_uint_eq(in->ignore_older_ms, 0);
    ck_assert_uint_eq(in->max_open_files, 1024);
    ck_assert_ptr_null(in->fields_json);
    ck_assert_uint_eq(in->n_parsers, 0);
    ck_assert_int_eq(cfg->inputs[1].type, LF_INPUT_STDIN);
    ck_assert_uint_eq(cfg->inputs[1].n_paths, 0);
    ck_assert_int_eq(cfg->outputs[0].compression, LF_COMPRESS_ZSTD);
    ck_assert_int_eq(cfg->outputs[0].compression_level, 1);
    ck_assert_uint_eq(cfg->outputs[0].rotate_bytes, 67108864);
    ck_assert_int_eq(cfg->outputs[1].format, LF_CONSOLE_JSON);
    ck_assert_uint_eq(cfg->queue.max_bytes, 8388608);
    ck_assert_uint_eq(cfg->queue.batch_max_events, 4096);
    ck_assert_uint_eq(cfg->queue.batch_max_bytes, 1048576);
    ck_assert_uint_eq(cfg->queue.batch_flush_interval_ms, 1000);
    ck_assert(!cfg->queue.spool_enabled);
    ck_assert_uint_eq(cfg->queue.spool_max_bytes, 1073741824);
    ck_assert_uint_eq(cfg->registry.flush_interval_ms, 1000);
    ck_assert(cfg->registry.clean_removed);
    ck_assert_str_eq(cfg->metrics.listen, "127.0.0.1:5066");
    ck_assert_str_eq(cfg->logging.level, "info");
    ck_assert_str_eq(cfg->logging.format, "text");
    lf_config_free(cfg);
}
END_TEST

START_TEST(syslog_keys_take_their_documented_defaults)
{
    struct lf_config *cfg = load_ok("inputs:\n"
                                    "  - {id: app, paths: /var/log/app.log}\n"
                                    "outputs:\n"
                                    "  - {name: relay, type: syslog, address: 'h:514'}\n");
    const struct lf_output_conf *sl = &cfg->outputs[0];
    ck_assert_int_eq(sl->protocol, LF_SYSLOG_TCP);
    ck_assert_int_eq(sl->syslog_facility, 1); /* user */
    ck_assert_int_eq(sl->syslog_severity, 6); /* info */
    ck_assert_ptr_null(sl->syslog_severity_field);
    ck_assert_str_eq(sl->syslog_app_name, "logferry");
    ck_assert_ptr_null(sl->syslog_app_name_field);
    ck_assert_ptr_null(sl->syslog_hostname);
    ck_assert_int_eq(sl->syslog_format, LF_SYSLOG_MESSAGE);
    ck_assert_uint_eq(sl->syslog_max_message_bytes, 2048);
    ck_assert_uint_eq(sl->syslog_settle_ms, 100);
    ck_assert_ptr_null(sl->tls_ca_file);
    ck_assert(sl->tls_verify);
    ck_assert_uint_eq(sl->timeout_ms, 30000);
    lf_config_free(cfg);
}
END_TEST

/* issue 7: allowed_roots left out are each glob's fixed directory part, plus /var/log. */
START_TEST(allowed_roots_default_to_the_globs_fixed_directories_and_var_log)
{
    char cwd[4096];
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof(cwd)));
    struct lf_config *cfg = load_ok("inputs:\n"
                                    "  - id: app\n"
                                    "    paths: ['logs/**/*.log', /srv/app/current.log,\n"
                                    "            '/var/log/x/*/a.log', /srv/app/*.log, '/**/*.log']\n"
                                    "  - id: own\n"
                                    "    paths: /a/*.log\n"
                                    "    allowed_roots: /b\n"
                                    "outputs:\n"
                                    "  - {name: local, type: file, path: /o}\n");
    const struct lf_input_conf *in = &cfg->inputs[0];
    char logs[4200];
    snprintf(logs, sizeof(logs), "%s/logs", strcmp(cwd, "/") == 0 ? "" : cwd);
    ck_assert_uint_eq(in->n_allowed_roots, 5);
    ck_assert_str_eq(in->allowed_roots[0], logs);
    ck_assert_str_eq(in->allowed_roots[1], "/srv/app");
    ck_assert_str_eq(in->allowed_roots[2], "/var/log/x");
    ck_assert_str_eq(in->allowed_roots[3], "/");
    ck_assert_str_eq(in->allowed_roots[4], "/var/log");
    ck_assert_uint_eq(cfg->inputs[1].n_allowed_roots, 1);
    ck_assert_str_eq(cfg->inputs[1].allowed_roots[0], "/b");
    lf_config_free(cfg);
}
END_TEST

START_TEST(input_without_outputs_routes_to_every_output)
{
    struct lf_config *cfg = load_ok(minimal);
    for (size_t i = 0; i < 2; i++) {
        ck_assert_uint_eq(cfg->inputs[i].n_outputs, 2);
        ck_assert_uint_eq(cfg->inputs[i].outputs[0], 0);
        ck_assert_uint_eq(cfg->inputs[i].outputs[1], 1);
    }
    lf_config_free(cfg);
}
END_TEST

START_TEST(input_outputs_list_maps_names_to_indexes)
{
    struct lf_config *cfg = load_ok("inputs:\n"
                                    "  - {id: a, paths: [/x], outputs: [screen, local]}\n"
                                    "  - {id: b, paths: [/y], outputs: screen}\n"
                                    "outputs:\n"
                                    "  - {name: local, type: file, path: /o}\n"
                                    "  - {name: screen, type: console, format: text}\n");
    ck_assert_uint_eq(cfg->inputs[0].n_outputs, 2);
    ck_assert_uint_eq(cfg->inputs[0].outputs[0], 1);
    ck_assert_uint_eq(cfg->inputs[0].outputs[1], 0);
    ck_assert_uint_eq(cfg->inputs[1].n_outputs, 1);
    ck_assert_uint_eq(cfg->inputs[1].outputs[0], 1);
    ck_assert_int_eq(cfg->outputs[1].format, LF_CONSOLE_TEXT);
    lf_config_free(cfg);
}
END_TEST

START_TEST(fields_render_once_as_compact_json)
{
    struct lf_config *cfg = load_ok("inputs:\n"
                                    "  - id: app\n"
                                    "    paths: [/x]\n"
                                    "    fields_under_root: true\n"
                                    "    fields:\n"
                                    "      env: prod\n"
                                    "      n: 3\n"
                                    "      q: \"3\"\n"
                                    "      f: -1.5e3\n"
                                    "      lead: 007\n"
                                    "      t: true\n"
                                    "      nul: null\n"
                                    "      tilde: ~\n"
                                    "      e:\n"
                                    "      nested: {a: [1, \"x\\\"y\", 'z'], b: {c: yes}}\n"
                                    "      ctl: \"a\\tb\\u0001\"\n"
                                    "      utf: \"h\\u00e9\"\n"
                                    "outputs:\n"
                                    "  - {name: local, type: file, path: /o}\n");
    ck_assert_str_eq(cfg->inputs[0].fields_json,
                     "{\"env\":\"prod\",\"n\":3,\"q\":\"3\",\"f\":-1.5e3,\"lead\":\"007\","
                     "\"t\":true,\"nul\":null,\"tilde\":null,\"e\":null,"
                     "\"nested\":{\"a\":[1,\"x\\\"y\",\"z\"],\"b\":{\"c\":\"yes\"}},"
                     "\"ctl\":\"a\\tb\\u0001\",\"utf\":\"h\xc3\xa9\"}");
    ck_assert(cfg->inputs[0].fields_under_root);
    lf_config_free(cfg);
}
END_TEST

START_TEST(fields_aliasing_themselves_are_cut_at_a_depth_limit)
{
    struct lf_config *cfg = (struct lf_config *)1;
    char *errors = NULL;
    enum lf_err err = load("inputs:\n"
                           "  - id: app\n"
                           "    paths: [/x]\n"
                           "    fields: &f {a: *f}\n"
                           "outputs:\n"
                           "  - {name: local, type: file, path: /o}\n",
                           &cfg, &errors);
    ck_assert_int_eq(err, LF_ECONFIG);
    ck_assert_ptr_null(cfg);
    ck_assert_str_eq(errors, "t.yml:4:13: inputs[0].fields.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a."
                             "a.a.a.a.a.a.a.a.a.a.a.a.a: nested deeper than 32 levels\n");
    free(errors);
}
END_TEST

START_TEST(env_vars_expand_in_scalar_values)
{
    ck_assert_int_eq(setenv("LF_T_DIR", "/srv/lf", 1), 0);
    ck_assert_int_eq(setenv("LF_T_EMPTY", "", 1), 0);
    ck_assert_int_eq(setenv("LF_T_ENV", "staging", 1), 0);
    ck_assert_int_eq(unsetenv("LF_T_UNSET"), 0);
    struct lf_config *cfg = load_ok("data_dir: ${LF_T_DIR}/data\n"
                                    "shutdown_timeout: ${LF_T_UNSET:-3s}\n"
                                    "metrics: {listen: \"${LF_T_EMPTY:-0.0.0.0:9000}\"}\n"
                                    "inputs:\n"
                                    "  - id: app-${LF_T_ENV}\n"
                                    "    paths: ['${LF_T_DIR}/*.log', '/price/$$5', '/a$b']\n"
                                    "    exclude_files: ['\\.gz$']\n"
                                    "    fields: {env: '${LF_T_ENV}', lit: '$${LF_T_ENV}'}\n"
                                    "outputs:\n"
                                    "  - {name: local, type: file, path: '${LF_T_EMPTY}/o'}\n");
    ck_assert_str_eq(cfg->data_dir, "/srv/lf/data");
    ck_assert_uint_eq(cfg->shutdown_timeout_ms, 3000);
    ck_assert_str_eq(cfg->metrics.listen, "0.0.0.0:9000");
    ck_assert_str_eq(cfg->inputs[0].id, "app-staging");
    ck_assert_str_eq(cfg->inputs[0].paths[0], "/srv/lf/*.log");
    ck_assert_str_eq(cfg->inputs[0].paths[1], "/price/$5");
    ck_assert_str_eq(cfg->inputs[0].paths[2], "/a$b");
    ck_assert_str_eq(cfg->inputs[0].exclude_files[0], "\\.gz$");
    ck_assert_str_eq(cfg->inputs[0].fields_json, "{\"env\":\"staging\",\"lit\":\"${LF_T_ENV}\"}");
    ck_assert_str_eq(cfg->outputs[0].path, "/o");
    lf_config_free(cfg);
}
END_TEST

/* issue 7: a value from the environment may be a secret; errors name the variable. */
START_TEST(env_values_never_appear_in_errors)
{
    ck_assert_int_eq(setenv("LF_T_SECRET", "hunter2", 1), 0);
    ck_assert_int_eq(setenv("LF_T_SMALL", "8", 1), 0);
    struct lf_config *cfg = NULL;
    char *errors = NULL;
    enum lf_err err = load("inputs:\n"
                           "  - id: app\n"
                           "    paths: [/a/*.log]\n"
                           "    start_at: ${LF_T_SECRET}\n"
                           "    max_line_bytes: ${LF_T_SECRET}\n"
                           "    buffer_size: ${LF_T_SMALL:-0}\n"
                           "    scan_interval: x${LF_T_SECRET}\n"
                           "    skip_empty_lines: ${LF_T_SECRET}\n"
                           "    max_open_files: ${LF_T_SECRET}\n"
                           "    encoding: ${LF_T_SECRET}\n"
                           "    exclude_files: ['(${LF_T_SECRET}']\n"
                           "    allowed_roots: ['${LF_T_SECRET}']\n"
                           "    outputs: ['${LF_T_SECRET}']\n"
                           "outputs:\n"
                           "  - {name: local, type: file, path: /o, level: '${LF_T_SMALL}00'}\n",
                           &cfg, &errors);
    ck_assert_int_eq(err, LF_ECONFIG);
    ck_assert_ptr_null(strstr(errors, "hunter2"));
    ck_assert_str_eq(
        errors,
        "t.yml:4:15: inputs[0].start_at: invalid value from ${LF_T_SECRET}: expected beginning or end\n"
        "t.yml:5:21: inputs[0].max_line_bytes: invalid size from ${LF_T_SECRET}: expected bytes with an optional KiB, MiB or GiB suffix\n"
        "t.yml:6:18: inputs[0].buffer_size: the value from ${LF_T_SMALL:-0} is too small: must be at least 16 bytes\n"
        "t.yml:7:20: inputs[0].scan_interval: invalid duration from x${LF_T_SECRET}: expected a whole number with a unit ms, s, m or h, or 0\n"
        "t.yml:8:23: inputs[0].skip_empty_lines: invalid boolean from ${LF_T_SECRET}: expected true or false\n"
        "t.yml:9:21: inputs[0].max_open_files: invalid number from ${LF_T_SECRET}: expected a whole number >= 0\n"
        "t.yml:10:15: inputs[0].encoding: invalid value from ${LF_T_SECRET}: expected an encoding iconv knows, such as utf-8, utf-16le or iso-8859-1\n"
        "t.yml:11:21: inputs[0].exclude_files[0]: invalid regex from (${LF_T_SECRET}: missing closing parenthesis at offset 8\n"
        "t.yml:12:21: inputs[0].allowed_roots[0]: invalid value from ${LF_T_SECRET}: expected an absolute path (starting with /)\n"
        "t.yml:13:15: inputs[0].outputs[0]: no output named from ${LF_T_SECRET}\n"
        "t.yml:15:48: outputs[0].level: the value from ${LF_T_SMALL}00 is out of range: expected 1 to 22\n");
    free(errors);
}
END_TEST

/* Library text may quote a configured value: each output scrubs it of every value the
 * environment gave the config, longest first, short ones left. */
START_TEST(library_text_is_scrubbed_of_env_values)
{
    ck_assert_int_eq(setenv("LF_T_MECH", "Zq9Secret", 1), 0);
    ck_assert_int_eq(setenv("LF_T_URL", "http://u:Zq9Secret@h:9200", 1), 0);
    ck_assert_int_eq(setenv("LF_T_SMALL", "8", 1), 0);
    struct lf_config *cfg = load_ok("inputs:\n"
                                    "  - {id: app, paths: [/a/*.log], max_open_files: '${LF_T_SMALL}'}\n"
                                    "outputs:\n"
                                    "  - {name: es, type: elasticsearch, url: '${LF_T_URL}',\n"
                                    "     headers: {X-Mech: '${LF_T_MECH}'}}\n");
    ck_assert_uint_eq(cfg->env.n, 3);
    ck_assert_uint_eq(cfg->outputs[0].env.n, 3);
    ck_assert_ptr_ne(cfg->outputs[0].env.v, cfg->env.v); /* a copy of its own */
    char text[128] = "bad Zq9Secret; at http://u:Zq9Secret@h:9200 (8 tries)";
    lf_config_scrub(&cfg->outputs[0].env, text, sizeof(text));
    ck_assert_str_eq(text, "bad ${LF_T_MECH}; at ${LF_T_URL} (8 tries)");
    char small[12] = "x Zq9Secret";
    lf_config_scrub(&cfg->env, small, sizeof(small));
    ck_assert_str_eq(small, "x ${LF_T_ME");
    lf_config_free(cfg);
}
END_TEST

/* Stand-ins for the agent's checks: a parser whose dissect tokenizer is "bad", an output
 * whose url is "bad", reported at nested keys and at the item. */
static void fake_parser_check(const struct lf_input_conf *in, size_t i,
                              struct lf_config_report *rep)
{
    const struct lf_parser_conf *p = &in->parsers[i];
    if (p->kind == LF_PARSER_DISSECT && strcmp(p->u.dissect.tokenizer, "bad") == 0)
        lf_config_report(rep, NULL, "dissect: bad tokenizer");
}

static void fake_output_check(const struct lf_output_conf *o, struct lf_config_report *rep)
{
    if (o->url == NULL || strcmp(o->url, "bad") != 0)
        return;
    lf_config_report(rep, "url", "bad url");
    lf_config_report(rep, "tls.ca_file", "cannot read the file");
    lf_config_report(rep, "headers.X-A.b", "two lines");
    lf_config_report(rep, NULL, "the whole output");
}

/* One pass reports key errors, parser and output checks together, in file order, each at
 * the key it names; an item with a key error is not checked again (no second message). */
START_TEST(checks_report_with_key_errors_in_one_pass)
{
    static const struct lf_config_checks checks = { fake_parser_check, fake_output_check };
    const char *yaml = "inputs:\n"
                       "  - id: app\n"
                       "    paths: [/a/*.log]\n"
                       "    scan_interval: often\n"
                       "    parsers:\n"
                       "      - dissect: {tokenizer: bad}\n"
                       "      - dissect: {tokenizer: bad, trim_values: sideways}\n"
                       "outputs:\n"
                       "  - name: web\n"
                       "    type: http\n"
                       "    url: bad\n"
                       "    tls: {ca_file: /x}\n"
                       "    headers: {X-A.b: 'v'}\n"
                       "  - {name: es, type: elasticsearch, url: bad, timeout: never}\n";
    struct lf_buf eb;
    lf_buf_init(&eb, 1 << 20);
    struct lf_config *cfg = NULL;
    enum lf_err err = lf_config_load_mem_checked("t.yml", yaml, strlen(yaml), &checks, &cfg, &eb);
    ck_assert_int_eq(lf_buf_append(&eb, "", 1), LF_OK);
    ck_assert_int_eq(err, LF_ECONFIG);
    ck_assert_ptr_null(cfg);
    ck_assert_str_eq(
        eb.ptr,
        "t.yml:4:20: inputs[0].scan_interval: invalid duration \"often\": expected a whole number with a unit ms, s, m or h, or 0\n"
        "t.yml:6:9: inputs[0].parsers[0]: dissect: bad tokenizer\n"
        "t.yml:7:48: inputs[0].parsers[1].dissect.trim_values: invalid value \"sideways\": expected none, left, right, or both\n"
        "t.yml:10:11: outputs[0]: the whole output\n"
        "t.yml:11:10: outputs[0].url: bad url\n"
        "t.yml:12:20: outputs[0].tls.ca_file: cannot read the file\n"
        "t.yml:13:22: outputs[0].headers.X-A.b: two lines\n"
        "t.yml:14:56: outputs[1].timeout: invalid duration \"never\": expected a whole number with a unit ms, s, m or h, or 0\n");
    lf_buf_release(&eb);
}
END_TEST

START_TEST(env_default_may_be_empty_and_unset_var_names_the_key)
{
    ck_assert_int_eq(unsetenv("LF_T_UNSET"), 0);
    struct lf_config *cfg = (struct lf_config *)1;
    char *errors = NULL;
    enum lf_err err = load("data_dir: /d${LF_T_UNSET:-}\n"
                           "inputs:\n"
                           "  - {id: app, paths: [/x, '${LF_T_UNSET}']}\n"
                           "outputs:\n"
                           "  - {name: local, type: file, path: /o}\n",
                           &cfg, &errors);
    ck_assert_int_eq(err, LF_ECONFIG);
    ck_assert_str_eq(errors, "t.yml:3:27: inputs[0].paths[1]: environment variable LF_T_UNSET is "
                             "not set (write ${LF_T_UNSET:-default} to give a default)\n");
    free(errors);
}
END_TEST

struct size_case {
    const char *text;
    bool ok;
    size_t value;
};

static const struct size_case size_cases[] = {
    { "0", true, 0 },
    { "512", true, 512 },
    { "64KiB", true, 65536 },
    { "1MiB", true, 1048576 },
    { "2GiB", true, 2147483648u },
    { "18446744073709551615", true, SIZE_MAX },
    { "17179869183GiB", true, 17179869183ull << 30 },
    { "17179869184GiB", false, 0 },
    { "18446744073709551616", false, 0 },
    { "64KB", false, 0 },
    { "1kib", false, 0 },
    { "1 KiB", false, 0 },
    { "1.5MiB", false, 0 },
    { "-1", false, 0 },
    { "KiB", false, 0 },
    { "", false, 0 },
    { "12XB", false, 0 },
};

START_TEST(sizes_parse_bytes_and_binary_suffixes_only)
{
    const struct size_case *sc = &size_cases[_i];
    size_t v = 7;
    char got[128];
    char want[128];
    bool ok = lf_parse_size(sc->text, &v);
    snprintf(got, sizeof(got), "%s -> %d %zu", sc->text, ok, ok ? v : 0);
    snprintf(want, sizeof(want), "%s -> %d %zu", sc->text, sc->ok, sc->value);
    ck_assert_str_eq(got, want);
}
END_TEST

struct duration_case {
    const char *text;
    bool ok;
    uint64_t ms;
};

static const struct duration_case duration_cases[] = {
    { "0", true, 0 },
    { "250ms", true, 250 },
    { "5s", true, 5000 },
    { "10m", true, 600000 },
    { "1h", true, 3600000 },
    { "0s", true, 0 },
    { "5124095576030h", true, 5124095576030ull * 3600000 },
    { "5124095576031h", false, 0 },
    { "99999999999999999999ms", false, 0 },
    { "10", false, 0 },
    { "1d", false, 0 },
    { "1.5s", false, 0 },
    { "-1s", false, 0 },
    { "s", false, 0 },
    { "", false, 0 },
    { "5 s", false, 0 },
    { "1h30m", false, 0 },
};

START_TEST(durations_parse_ms_s_m_h_and_bare_zero)
{
    const struct duration_case *dc = &duration_cases[_i];
    uint64_t v = 7;
    char got[128];
    char want[128];
    bool ok = lf_parse_duration_ms(dc->text, &v);
    snprintf(got, sizeof(got), "%s -> %d %llu", dc->text, ok, ok ? (unsigned long long)v : 0ull);
    snprintf(want, sizeof(want), "%s -> %d %llu", dc->text, dc->ok, (unsigned long long)dc->ms);
    ck_assert_str_eq(got, want);
}
END_TEST

#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

START_TEST(items_compare_equal_only_when_their_settings_are_the_same)
{
    setenv("LF_TEST_RELOAD_DIR", "/srv", 1);
    struct lf_config *a = load_ok("inputs:\n"
                                  "  - {id: x, paths: [/var/log/x.log], max_line_bytes: 1KiB}\n"
                                  "  - {id: y, paths: ['${LF_TEST_RELOAD_DIR}/y.log']}\n"
                                  "outputs: [{name: o, type: console}]\n");
    struct lf_config *b = load_ok("# a comment, other spacing\n"
                                  "inputs:\n"
                                  "  - id: x\n"
                                  "    paths: [/var/log/x.log]\n"
                                  "    max_line_bytes: 1KiB\n"
                                  "  - {id: y, paths: [/srv/y.log], encoding: latin1}\n"
                                  "outputs: [{name: o, type: console, format: text}]\n");
    ck_assert(lf_config_input_same(&a->inputs[0], &b->inputs[0]));
    ck_assert(!lf_config_input_same(&a->inputs[1], &b->inputs[1]));
    ck_assert(!lf_config_output_same(&a->outputs[0], &b->outputs[0]));
    ck_assert(lf_config_output_same(&a->outputs[0], &a->outputs[0]));
    unsetenv("LF_TEST_RELOAD_DIR");
    lf_config_free(a);
    lf_config_free(b);
}
END_TEST

START_TEST(kafka_output_reads_key_acks_and_client_options)
{
    struct lf_config *cfg = load_ok("inputs:\n"
                                    "  - {id: app, paths: [/var/log/a.log]}\n"
                                    "outputs:\n"
                                    "  - name: bus\n"
                                    "    type: kafka\n"
                                    "    brokers: [\"k1:9092\", \"k2:9092\"]\n"
                                    "    topic: \"logs-%{input.id}\"\n"
                                    "    key: \"%{log.file.path}\"\n"
                                    "    compression: gzip\n"
                                    "    librdkafka: {linger.ms: 20, security.protocol: sasl_ssl}\n"
                                    "  - {name: plain, type: kafka, brokers: k3:9092, topic: t}\n");
    const struct lf_output_conf *o = &cfg->outputs[0];
    ck_assert_int_eq(o->type, LF_OUTPUT_KAFKA);
    ck_assert_uint_eq(o->n_brokers, 2);
    ck_assert_str_eq(o->brokers[1], "k2:9092");
    ck_assert_str_eq(o->topic, "logs-%{input.id}");
    ck_assert_str_eq(o->key, "%{log.file.path}");
    ck_assert_str_eq(o->acks, "all");
    ck_assert_int_eq(o->compression, LF_COMPRESS_GZIP);
    ck_assert_str_eq(o->librdkafka_json, "{\"linger.ms\":20,\"security.protocol\":\"sasl_ssl\"}");
    o = &cfg->outputs[1];
    ck_assert_ptr_null(o->key);
    ck_assert_ptr_null(o->librdkafka_json);
    ck_assert_int_eq(o->compression, LF_COMPRESS_ZSTD);
    lf_config_free(cfg);
}
END_TEST

START_TEST(splunk_hec_output_reads_its_keys_and_defaults)
{
    setenv("LF_TEST_HEC_TOKEN", "0000-hec-token", 1);
    struct lf_config *cfg = load_ok("inputs:\n"
                                    "  - {id: app, paths: [/var/log/a.log]}\n"
                                    "outputs:\n"
                                    "  - name: splunk\n"
                                    "    type: splunk_hec\n"
                                    "    url: https://splunk:8088\n"
                                    "    token: ${LF_TEST_HEC_TOKEN}\n"
                                    "    index: \"app-%{input.id}\"\n"
                                    "    sourcetype: logferry\n"
                                    "    fields: [kubernetes.namespace, log.level]\n"
                                    "    ack: true\n"
                                    "    ack_interval: 250ms\n"
                                    "  - {name: plain, type: splunk_hec, url: \"http://h:8088\", "
                                    "token: t}\n");
    const struct lf_output_conf *o = &cfg->outputs[0];
    ck_assert_int_eq(o->type, LF_OUTPUT_SPLUNK_HEC);
    ck_assert_str_eq(o->hec_token, "0000-hec-token");
    ck_assert_str_eq(o->index, "app-%{input.id}");
    ck_assert_str_eq(o->hec_sourcetype, "logferry");
    ck_assert_ptr_null(o->hec_source);
    ck_assert_str_eq(o->hec_host, "%{host.name}");
    ck_assert_uint_eq(o->n_hec_fields, 2);
    ck_assert_str_eq(o->hec_fields[1], "log.level");
    ck_assert(o->hec_ack);
    ck_assert_uint_eq(o->hec_ack_interval_ms, 250);
    ck_assert_uint_eq(o->hec_ack_timeout_ms, 60000);
    o = &cfg->outputs[1];
    ck_assert_ptr_null(o->index); /* the token's default, not elasticsearch's */
    ck_assert(!o->hec_ack);
    ck_assert_uint_eq(o->hec_ack_interval_ms, 1000);
    ck_assert_int_eq(o->compression, LF_COMPRESS_GZIP);
    ck_assert_int_eq(o->max_in_flight, 4);
    lf_config_free(cfg);
    unsetenv("LF_TEST_HEC_TOKEN");
}
END_TEST

static Suite *config_suite(void)
{
    Suite *s = suite_create("config");
    TCase *bad = tcase_create("rejects");
    tcase_add_loop_test(bad, bad_config_reports_every_problem_with_its_position, 0, N_BAD_CASES);
    tcase_add_test(bad, bad_case_table_has_at_least_thirty_cases);
    tcase_add_test(bad, unreadable_file_is_one_line_and_eio);
    tcase_add_test(bad, fields_aliasing_themselves_are_cut_at_a_depth_limit);
    tcase_add_test(bad, checks_report_with_key_errors_in_one_pass);
    suite_add_tcase(s, bad);
    TCase *good = tcase_create("loads");
    tcase_add_test(good, spec_example_loads_with_every_value);
    tcase_add_test(good, spec_example_with_every_output_type_loads);
    tcase_add_test(good, absent_keys_take_their_documented_defaults);
    tcase_add_test(good, syslog_keys_take_their_documented_defaults);
    tcase_add_test(good, input_without_outputs_routes_to_every_output);
    tcase_add_test(good, allowed_roots_default_to_the_globs_fixed_directories_and_var_log);
    tcase_add_test(good, input_outputs_list_maps_names_to_indexes);
    tcase_add_test(good, fields_render_once_as_compact_json);
    tcase_add_test(good, items_compare_equal_only_when_their_settings_are_the_same);
    tcase_add_test(good, kafka_output_reads_key_acks_and_client_options);
    tcase_add_test(good, splunk_hec_output_reads_its_keys_and_defaults);
    suite_add_tcase(s, good);
    TCase *env = tcase_create("env");
    tcase_add_test(env, env_vars_expand_in_scalar_values);
    tcase_add_test(env, env_default_may_be_empty_and_unset_var_names_the_key);
    tcase_add_test(env, env_values_never_appear_in_errors);
    tcase_add_test(env, library_text_is_scrubbed_of_env_values);
    suite_add_tcase(s, env);
    TCase *units = tcase_create("units");
    tcase_add_loop_test(units, sizes_parse_bytes_and_binary_suffixes_only, 0, N_OF(size_cases));
    tcase_add_loop_test(units, durations_parse_ms_s_m_h_and_bare_zero, 0, N_OF(duration_cases));
    suite_add_tcase(s, units);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(config_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
