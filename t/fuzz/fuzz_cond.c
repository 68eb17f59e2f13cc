/* fuzz_cond.c - the condition parser (include/logferry/cond.h) on any bytes, and what it
 * accepts evaluated on fixed events.
 *
 * The input is the condition's text, NUL bytes and all. A refusal must be LF_ECONFIG with
 * a message and an offset inside the text (the config loader turns it into a column); an
 * accepted condition must evaluate, twice to the same answer, on an event with members of
 * every JSON type (escaped strings, UTF-8, nested objects, a list, null), on members that
 * repeat a name or break off, and on a bare event with no members and a stdin source; and
 * to the same answer with the member paths looked up one by one instead of indexed. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/stage/stage_int.h"
#include "logferry/cond.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char extra[] =
    "\"level\":\"ERROR\",\"http\":{\"response\":{\"status_code\":503}},\"count\":\"500\","
    "\"ratio\":-1.5e2,\"ok\":false,\"none\":null,\"user\":\"O\\\"Brien\\u00e9\",\"city\":"
    "\"Z\xc3\xbcrich\",\"tags\":[\"a\",{\"b\":1}],\"a\":{\"b\":{\"c\":\"\"}}";
static const char extra_odd[] =
    "\"a\":1,\"a\":{\"b\":2},\"level\":{\"x\":1},\"http\":{\"response\":{\"status_code\":"
    "\"503\",\"status_code\":1}},\"x\\\"y\":{\"c\":[}],\"count\":{\"z\":\"unterminated";
static const char msg[] = "upstream timeout after 30 s \xe2\x82\xac";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct lf_source *file_src;
    static struct lf_source *stdin_src;
    static struct lf_cond_scratch *scratch;
    if (file_src == NULL &&
        (lf_source_new("/var/log/app.log", "app", "web-1", "{\"env\":\"prod\"}", false,
                       &file_src) ||
         lf_source_new(NULL, "in", NULL, NULL, false, &stdin_src) || lf_cond_scratch_new(&scratch)))
        abort();
    struct lf_cond *c = NULL;
    struct lf_errbuf eb = { "" };
    size_t at = SIZE_MAX;
    enum lf_err err = lf_cond_compile((const char *)data, size, &c, &at, &eb);
    if (err) {
        if (err != LF_ECONFIG || c != NULL || at > size || eb.msg[0] == '\0')
            abort();
        return 0;
    }
    struct lf_event evs[3] = {
        { { msg, sizeof(msg) - 1 }, 0, 7, 40, 0, file_src, { extra, sizeof(extra) - 1 }, 0 },
        { { msg, sizeof(msg) - 1 },
          0,
          7,
          40,
          0,
          file_src,
          { extra_odd, sizeof(extra_odd) - 1 },
          0 },
        { { "", 0 }, 0, 0, 1, 0, stdin_src, { "", 0 }, 0 },
    };
    for (size_t i = 0; i < 3; i++) {
        bool r = lf_cond_eval(c, &evs[i], scratch);
        lf_stage__cond_no_index = true;
        bool alone = lf_cond_eval(c, &evs[i], scratch);
        lf_stage__cond_no_index = false;
        if (r != alone || r != lf_cond_eval(c, &evs[i], scratch))
            abort();
    }
    lf_cond_free(c);
    return 0;
}
