/* fuzz_container.c - libFuzzer target for the container stage: CRI and Docker json-file
 * lines, runtime partials joined across lines and streams, times, malformed lines.
 *
 * The input is a container log file, run whole through chain_harness.h; its first byte also
 * picks one of the settings below. */
#include "chain_harness.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const configs[] = {
    "[{container: {}}]",
    "[{container: {format: cri}}]",
    "[{container: {format: docker}}]",
    "[{container: {format: auto, stream: stderr}}]",
    "[{container: {format: cri, stream: stdout}}]",
};

#define N_CONFIGS (sizeof(configs) / sizeof(configs[0]))

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct fuzz_chain_spec specs[N_CONFIGS];
    return fuzz_chain_input(configs, specs, N_CONFIGS, data, size);
}
