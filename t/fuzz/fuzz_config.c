/* fuzz_config.c - libFuzzer target: any bytes through lf_config_load_mem(). */
#include "config.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "logferry/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct lf_buf errors;
    lf_buf_init(&errors, 64 * 1024);
    struct lf_config *cfg = NULL;
    enum lf_err err = lf_config_load_mem("fuzz.yml", (const char *)data, size, &cfg, &errors);
    if (err == LF_OK) {
        /* A loaded config is complete: every input routes somewhere. */
        for (size_t i = 0; i < cfg->n_inputs; i++) {
            if (cfg->inputs[i].n_outputs == 0 || cfg->inputs[i].id == NULL)
                abort();
        }
        if (errors.len != 0)
            abort();
    } else if (err == LF_ECONFIG && errors.len == 0) {
        abort(); /* a rejection always says why */
    }
    lf_config_free(cfg);
    lf_buf_release(&errors);
    return 0;
}
