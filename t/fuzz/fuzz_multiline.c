/* fuzz_multiline.c - libFuzzer target for the multiline stage: presets, negate/match,
 * flush_pattern, count, while_pattern, max_lines and max_bytes, timeouts mid-input, and
 * multiline behind the container stage.
 *
 * The input is a log file, run whole through chain_harness.h; its first byte also
 * picks one of the settings below. */
#include "chain_harness.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const configs[] = {
    "[{multiline: {preset: java}}]",
    "[{multiline: {preset: python}}]",
    "[{multiline: {preset: go, max_lines: 4}}]",
    "[{multiline: {preset: ruby, max_bytes: 100}}]",
    "[{multiline: {pattern: '^\\[', negate: true, match: after, max_lines: 5}}]",
    "[{multiline: {pattern: '\\\\$', match: before, timeout: 2s}}]",
    "[{multiline: {type: count, count_lines: 3, max_bytes: 64}}]",
    "[{multiline: {type: while_pattern, pattern: '^\\s', flush_pattern: 'END$'}}]",
    "[{multiline: {pattern: '^\\d{4}-', negate: true, match: after, flush_pattern: '^$'}}]",
    "[{container: {}}, {multiline: {preset: java}}]",
};

#define N_CONFIGS (sizeof(configs) / sizeof(configs[0]))

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct fuzz_chain_spec specs[N_CONFIGS];
    return fuzz_chain_input(configs, specs, N_CONFIGS, data, size);
}
