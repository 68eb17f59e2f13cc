/* cond.h - the condition language of `when:` (docs/processing.md "Conditions").
 *
 *   level == "ERROR" and (http.status >= 500 or message =~ 'timeout|refused')
 *
 * Two levels, like compiled regexes and their match data:
 *   struct lf_cond        compiled once at config load: a flat program of tests and
 *                         short-circuit jumps, its regexes compiled (PCRE2, JIT). Read-only
 *                         once built: any number of threads may evaluate it at once.
 *   struct lf_cond_scratch what one evaluating thread needs (regex match data, a buffer for
 *                         escaped JSON strings); one per chain, or per batcher.
 * Evaluation reads the event as the encoder would write it (SPEC.md "Events"): `message`,
 * `log.file.path`, `log.offset`, the members stages added (ev->extra), then the source's
 * `input`, `host` and `fields`. It allocates nothing once the scratch buffer has grown to the
 * longest escaped string met. */
#ifndef LF_COND_H
#define LF_COND_H

#include <stdbool.h>
#include <stddef.h>

#include "logferry/err.h"
#include "logferry/event.h"

struct lf_cond;
struct lf_cond_scratch;

/* Compiles the len bytes of text into a new condition in *out; free with lf_cond_free().
 * LF_ECONFIG with eb saying what was expected (`expected a value after "==", got ")"`) and
 * *err_at (if not NULL) the byte offset into text of the token at fault. LF_ENOMEM. Any
 * thread. */
LF_MUST_CHECK enum lf_err lf_cond_compile(
    const char *text, size_t len, struct lf_cond **out, size_t *err_at, struct lf_errbuf *eb);

/* Frees c. lf_cond_free(NULL) is a no-op. */
void lf_cond_free(struct lf_cond *c);

/* Returns a new scratch in *out; free with lf_cond_scratch_free(). LF_ENOMEM. */
LF_MUST_CHECK enum lf_err lf_cond_scratch_new(struct lf_cond_scratch **out);

/* Frees s. lf_cond_scratch_free(NULL) is a no-op. */
void lf_cond_scratch_free(struct lf_cond_scratch *s);

/* True when ev (borrowed during the call) matches c. s is the calling thread's own. A test
 * on a field the event lacks is false (so `not exists(x)` and `not x == 1` are true). Never
 * fails: a string too long for the scratch buffer (out of memory) is compared as escaped. */
bool lf_cond_eval(const struct lf_cond *c, const struct lf_event *ev, struct lf_cond_scratch *s);

#endif
