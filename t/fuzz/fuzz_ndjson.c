/* fuzz_ndjson.c - libFuzzer target for the ndjson stage: objects merged at the root or
 * under a target, overwrite_keys both ways, message_key, decode errors with and without
 * error.message, and ndjson behind the container stage (Docker's escaped JSON in JSON).
 *
 * The input is an NDJSON file, run whole through chain_harness.h; its first byte also
 * picks one of the settings below. Each line is then also given straight to the stage
 * twice, once through its fast decoder and once through jansson alone: the two events must
 * be the same (message, extra, time, flags). */
#include "chain_harness.h"

#include "../../src/stage/stage_int.h"

struct fuzz_outcome {
    struct lf_buf text; /* message, extra, time and flags of the one event out */
    size_t n;
};

static enum lf_err fuzz_keep(void *arg, const struct lf_event *ev)
{
    struct fuzz_outcome *o = arg;
    char tail[64];
    int n = snprintf(tail, sizeof(tail), "|%lld|%u|", (long long)ev->timestamp_ns, ev->flags);
    o->n++;
    lf_buf_reset(&o->text);
    FUZZ_CHECK(lf_buf_append_str(&o->text, ev->message) == LF_OK);
    FUZZ_CHECK(lf_buf_append(&o->text, tail, (size_t)n) == LF_OK);
    FUZZ_CHECK(lf_buf_append_str(&o->text, ev->extra) == LF_OK);
    return LF_OK;
}

/* One line through the stage, fast or jansson only, into o. */
static void fuzz_ndjson_once(
    const void *spec, void *state, struct lf_str line, bool tree, struct fuzz_outcome *o)
{
    const struct lf_stage_out out = { fuzz_keep, o };
    struct lf_event ev = { line,
                           42,
                           0,
                           line.len + 1,
                           0,
                           NULL,
                           LF_STR_LIT("\"stream\":\"stdout\",\"level\":\"x\",\"doc\":0"),
                           0 };
    lf_stage__ndjson_jansson_only = tree;
    FUZZ_CHECK(lf_stage_ndjson.process(spec, state, &ev, 0, &out) == LF_OK);
    lf_stage__ndjson_jansson_only = false;
}

static void fuzz_ndjson_agree(const uint8_t *data, size_t size)
{
    static const struct {
        const char *target;
        bool overwrite;
        const char *message_key;
    } confs[] = { { "", false, "" }, { "", true, "msg" }, { "doc", true, "msg" } };
    static void *specs[3];
    static void *states[3];
    static struct fuzz_outcome fast = { { NULL, 0, 0, SIZE_MAX }, 0 };
    static struct fuzz_outcome tree = { { NULL, 0, 0, SIZE_MAX }, 0 };
    size_t k = data[0] % 3;
    if (specs[k] == NULL) {
        struct lf_parser_conf pc = { .kind = LF_PARSER_NDJSON };
        pc.u.ndjson.target = (char *)confs[k].target;
        pc.u.ndjson.overwrite_keys = confs[k].overwrite;
        pc.u.ndjson.add_error_key = true;
        pc.u.ndjson.message_key = (char *)confs[k].message_key;
        struct lf_errbuf eb = { "" };
        FUZZ_CHECK(lf_stage_ndjson.compile(&pc, &specs[k], &eb) == LF_OK);
        FUZZ_CHECK(lf_stage_ndjson.open(specs[k], &states[k]) == LF_OK);
    }
    const char *p = (const char *)data + 1;
    const char *end = (const char *)data + size;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        struct lf_str line = lf_str_make(p, (size_t)((nl != NULL ? nl : end) - p));
        fuzz_ndjson_once(specs[k], states[k], line, false, &fast);
        fuzz_ndjson_once(specs[k], states[k], line, true, &tree);
        if (fast.text.len != tree.text.len ||
            memcmp(fast.text.ptr, tree.text.ptr, fast.text.len) != 0) {
            fprintf(stderr, "fast: %.*s\ntree: %.*s\n", (int)fast.text.len, fast.text.ptr,
                    (int)tree.text.len, tree.text.ptr);
            __builtin_trap();
        }
        p = nl != NULL ? nl + 1 : end;
    }
}

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
    if (size > 0)
        fuzz_ndjson_agree(data, size);
    return fuzz_chain_input(configs, specs, N_CONFIGS, data, size);
}
