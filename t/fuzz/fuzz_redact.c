/* fuzz_redact.c - libFuzzer target for the redact stage: every built-in pattern, a user
 * regex, members named in fields (after ndjson), the replace template and the keyed hash.
 *
 * The input is a log file, run whole through chain_harness.h (every event must encode to
 * one JSON object that parses back, its message valid UTF-8: so a masked member's value
 * stays a valid JSON string); its first byte also picks one of the settings below. */
#include "chain_harness.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const configs[] = {
    "[{redact: {}}]",
    "[{redact: {replace: '<%{pattern}>'}}]",
    "[{ndjson: {}}, {redact: {fields: [message, msg, a.b, user.email]}}]",
    "[{ndjson: {target: j}}, {redact: {fields: [j.msg, j.password], patterns: [secret_kv, email,"
    " ipv6]}}]",
    "[{redact: {patterns: [credit_card, iban], regex: [{name: order, pattern: 'ORD-\\d+'},"
    " {name: any, pattern: '\\p{L}{3}'}]}}]",
    "[{redact: {hash: sha256, hash_key: fuzz-key}}]",
    "[{multiline: {pattern: '^-----BEGIN', negate: true, match: after}}, {redact: {}}]",
    "[{kv: {}}, {redact: {fields: [message, password, token], replace: ''}}]",
};

#define N_CONFIGS (sizeof(configs) / sizeof(configs[0]))

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct fuzz_chain_spec specs[N_CONFIGS];
    return fuzz_chain_input(configs, specs, N_CONFIGS, data, size);
}
