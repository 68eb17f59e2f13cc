/* fuzz_syslog.c - libFuzzer target for the syslog stage: RFC 3164 and RFC 5424 lines in
 * every format setting, members at the root or under a target, the whole line kept, and
 * syslog behind the container stage (syslog text inside CRI lines).
 *
 * The input is a log file, run whole through chain_harness.h; its first byte also picks
 * one of the settings below. */
#include "chain_harness.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const configs[] = {
    "[{syslog: {}}]",
    "[{syslog: {format: rfc3164, keep_original: true}}]",
    "[{syslog: {format: rfc5424, target: syslog}}]",
    "[{ndjson: {}}, {syslog: {keep_original: true}}]",
    "[{container: {}}, {syslog: {target: sl}}]",
    "[{syslog: {}}, {syslog: {target: again}}]",
};

#define N_CONFIGS (sizeof(configs) / sizeof(configs[0]))

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct fuzz_chain_spec specs[N_CONFIGS];
    return fuzz_chain_input(configs, specs, N_CONFIGS, data, size);
}
