/* fuzz_ndjson.c - libFuzzer target for the ndjson stage: objects merged at the root or
 * under a target, overwrite_keys both ways, message_key, decode errors with and without
 * error.message, and ndjson behind the container stage (Docker's escaped JSON in JSON).
 *
 * The input is an NDJSON file, run whole through chain_harness.h; its first byte also
 * picks one of the settings below. */
#include "chain_harness.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const configs[] = {
    "[{ndjson: {}}]",
    "[{ndjson: {target: json, overwrite_keys: true}}]",
    "[{ndjson: {overwrite_keys: true, message_key: msg}}]",
    "[{ndjson: {add_error_key: false, message_key: log}}]",
    "[{container: {}}, {ndjson: {overwrite_keys: true}}]",
    "[{ndjson: {target: doc, add_error_key: false}}]",
};

#define N_CONFIGS (sizeof(configs) / sizeof(configs[0]))

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct fuzz_chain_spec specs[N_CONFIGS];
    return fuzz_chain_input(configs, specs, N_CONFIGS, data, size);
}
