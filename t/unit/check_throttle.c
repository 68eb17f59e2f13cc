/* check_throttle.c - the throttle and sample stages: bucket arithmetic against a clock the
 * test moves, the LRU bound, keys from templates, shared buckets across the chains of one
 * input, sample's determinism and ratio, config errors, the dropped events' flags, and no
 * allocation per event in steady state. Built twice, like the other stage suites. */
#include "config.h"

#include "stage_fixture.h"

#include "logferry/config.h"

/* One input's config and spec, and up to two chains (two files of the input). */
static struct {
    struct lf_config *cfg;
    struct lf_chain_spec *spec;
    struct lf_chain *chain[2];
    size_t kept;
    size_t dropped;
    size_t throttled;
    size_t sampled_out;
} tx;

static enum lf_err count(void *arg, const struct lf_event *ev)
{
    (void)arg;
    if (ev->flags & LF_EVENT_DROPPED)
        tx.dropped++;
    else
        tx.kept++;
    tx.throttled += (ev->flags & LF_EVENT_THROTTLED) != 0;
    tx.sampled_out += (ev->flags & LF_EVENT_SAMPLED_OUT) != 0;
    return LF_OK;
}
static const struct lf_stage_out counter = { count, NULL };

/* Loads an input with the parsers (a YAML flow list); returns the load's result and the
 * messages in errors (NULL: none wanted). */
static enum lf_err load(const char *parsers, char *errors, size_t cap)
{
    char yaml[1024];
    snprintf(yaml, sizeof(yaml),
             "inputs:\n  - id: t\n    paths: ['/x/*.log']\n    parsers: %s\noutputs:\n"
             "  - name: c\n    type: console\n",
             parsers);
    struct lf_buf err;
    lf_buf_init(&err, 1 << 16);
    enum lf_err e = lf_config_load_mem("t.yml", yaml, strlen(yaml), &tx.cfg, &err);
    if (errors != NULL)
        snprintf(errors, cap, "%.*s", (int)err.len, err.ptr != NULL ? err.ptr : "");
    lf_buf_release(&err);
    return e;
}

static void start(const char *parsers)
{
    char errors[1024];
    ck_assert_msg(load(parsers, errors, sizeof(errors)) == LF_OK, "%s", errors);
    struct lf_errbuf eb = { "" };
    ck_assert_msg(lf_chain_spec_new(&tx.cfg->inputs[0], 0, &tx.spec, NULL, &eb) == LF_OK, "%s",
                  eb.msg);
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(lf_chain_new(tx.spec, &counter, &tx.chain[i]), LF_OK);
}

static void tx_teardown(void)
{
    for (int i = 0; i < 2; i++)
        lf_chain_free(tx.chain[i]);
    lf_chain_spec_free(tx.spec);
    lf_config_free(tx.cfg);
    memset(&tx, 0, sizeof(tx));
}

/* Feeds n events with the members extra through chain c at now_ms; returns those kept. */
static size_t push(int c, const char *extra, size_t n, int64_t now_ms)
{
    size_t before = tx.kept;
    for (size_t i = 0; i < n; i++) {
        struct lf_event ev = {
            LF_STR_LIT("line"), 0, i, i + 1, 0, NULL, lf_str_make(extra, strlen(extra)), 0
        };
        ck_assert_int_eq(lf_chain_process(tx.chain[c], &ev, now_ms), LF_OK);
    }
    return tx.kept - before;
}

START_TEST(a_full_bucket_keeps_burst_events_then_the_rate_as_the_clock_moves)
{
    start("[{throttle: {rate: 10/s, burst: 5}}]");
    ck_assert_uint_eq(push(0, "", 20, 1000), 5); /* a full bucket: burst */
    ck_assert_uint_eq(push(0, "", 5, 1099), 0);  /* 99 ms: 990 of the 1000 units a token costs */
    ck_assert_uint_eq(push(0, "", 5, 1100), 1);  /* 100 ms at 10/s: one token */
    ck_assert_uint_eq(push(0, "", 20, 1600), 5); /* 500 ms: five */
    ck_assert_uint_eq(push(0, "", 20, 9000), 5); /* long idle: full, never past burst */
    ck_assert_uint_eq(tx.kept, 16);
    ck_assert_uint_eq(tx.dropped, 54);
    ck_assert_uint_eq(tx.throttled, 54);
    ck_assert_uint_eq(tx.sampled_out, 0);
}
END_TEST

START_TEST(a_second_of_ticks_keeps_exactly_the_rate_per_minute_and_hour)
{
    start("[{throttle: {rate: 120/m, burst: 1}}]");
    size_t kept = 0;
    for (int64_t ms = 0; ms < 60000; ms += 10) /* 100 events a second, for a minute */
        kept += push(0, "", 1, ms);
    ck_assert_uint_eq(kept, 120); /* 1 at the start, then one each 500 ms: 119 more */
    tx_teardown();
    start("[{throttle: {rate: 7200/h}}]"); /* burst: the rate per second, 2 */
    ck_assert_uint_eq(push(0, "", 10, 0), 2);
    ck_assert_uint_eq(push(0, "", 10, 499), 0);
    ck_assert_uint_eq(push(0, "", 10, 500), 1);
}
END_TEST

START_TEST(time_running_back_between_threads_refills_nothing)
{
    start("[{throttle: {rate: 1/s, burst: 1}}]");
    ck_assert_uint_eq(push(0, "", 1, 5000), 1);
    ck_assert_uint_eq(push(1, "", 1, 4000), 0); /* a reader that sampled its clock earlier */
    ck_assert_uint_eq(push(0, "", 1, 5999), 0);
    ck_assert_uint_eq(push(0, "", 1, 6000), 1);
}
END_TEST

START_TEST(each_key_has_its_own_bucket_and_a_missing_field_shares_the_empty_one)
{
    start("[{throttle: {rate: 1/h, burst: 3, key: 'pod=%{kubernetes.pod.name}'}}]");
    ck_assert_uint_eq(push(0, "\"kubernetes\":{\"pod\":{\"name\":\"chatty\"}}", 100, 0), 3);
    ck_assert_uint_eq(push(0, "\"kubernetes\":{\"pod\":{\"name\":\"quiet\"}}", 2, 0), 2);
    ck_assert_uint_eq(push(0, "\"other\":1", 2, 0), 2);
    ck_assert_uint_eq(push(0, "", 2, 0), 1); /* the same "pod=" bucket as the line before */
    ck_assert_uint_eq(push(0, "\"kubernetes\":{\"pod\":{\"name\":\"quiet\"}}", 2, 0), 1);
}
END_TEST

START_TEST(a_key_is_its_text_however_the_json_writes_it)
{
    start("[{throttle: {rate: 1/h, burst: 1, key: '%{k}'}}]");
    ck_assert_uint_eq(push(0, "\"k\":\"A\\\"b\"", 1, 0), 1);
    ck_assert_uint_eq(push(0, "\"k\":\"\\u0041\\\"b\"", 1, 0), 0); /* A"b again, escaped */
    ck_assert_uint_eq(push(0, "\"k\":\"Ab\"", 1, 0), 1);
    ck_assert_uint_eq(push(0, "\"k\":7", 1, 0), 1);
    ck_assert_uint_eq(push(0, "\"k\":\"7\"", 1, 0), 0); /* a number renders as its text */
    ck_assert_uint_eq(push(0, "\"k\":null", 1, 0), 1);  /* null as nothing: the empty key */
    ck_assert_uint_eq(push(0, "\"j\":1", 1, 0), 0);
}
END_TEST

START_TEST(the_chains_of_one_input_draw_on_one_bucket)
{
    start("[{throttle: {rate: 1/h, burst: 10, key: '%{pod}'}}]");
    ck_assert_uint_eq(push(0, "\"pod\":\"a\"", 6, 0), 6);
    ck_assert_uint_eq(push(1, "\"pod\":\"a\"", 6, 0), 4);
}
END_TEST

START_TEST(past_max_keys_the_least_recently_used_bucket_is_evicted_and_returns_full)
{
    start("[{throttle: {rate: 1/h, burst: 1, key: '%{k}', max_keys: 3}}]");
    ck_assert_uint_eq(push(0, "\"k\":\"a\"", 1, 0), 1);
    ck_assert_uint_eq(push(0, "\"k\":\"b\"", 1, 0), 1);
    ck_assert_uint_eq(push(0, "\"k\":\"c\"", 1, 0), 1);
    ck_assert_uint_eq(push(0, "\"k\":\"a\"", 1, 0), 0); /* a is the newest now; b the oldest */
    ck_assert_uint_eq(push(0, "\"k\":\"d\"", 1, 0), 1); /* evicts b */
    ck_assert_uint_eq(push(0, "\"k\":\"a\"", 1, 0), 0); /* a stayed, empty */
    ck_assert_uint_eq(push(0, "\"k\":\"c\"", 1, 0), 0); /* c stayed, empty; d evicts nothing */
    ck_assert_uint_eq(push(0, "\"k\":\"b\"", 1, 0), 1); /* b came back full, evicting d */
    ck_assert_uint_eq(push(0, "\"k\":\"d\"", 1, 0), 1); /* and d too, evicting a */
    ck_assert_uint_eq(push(0, "\"k\":\"a\"", 1, 0), 1);
}
END_TEST

START_TEST(ten_thousand_keys_stay_within_max_keys)
{
    start("[{throttle: {rate: 1/h, burst: 2, key: 'k%{k}', max_keys: 1000}}]");
    char extra[64];
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < 10000; i++) {
            snprintf(extra, sizeof(extra), "\"k\":%d", i);
            ck_assert_uint_eq(push(0, extra, 1, 0), 1); /* every key evicted before it returns */
        }
    }
    /* the last 1000 keys are held: each has one token left */
    for (int i = 9000; i < 10000; i++) {
        snprintf(extra, sizeof(extra), "\"k\":%d", i);
        ck_assert_uint_eq(push(0, extra, 2, 0), 1);
    }
}
END_TEST

START_TEST(sample_by_key_decides_alike_across_specs_and_keeps_about_1_in_n)
{
    start("[{sample: {rate: 10, key: '%{trace.id}'}}]");
    struct lf_chain_spec *spec2 = NULL;
    struct lf_chain *other = NULL;
    struct lf_errbuf eb = { "" };
    ck_assert_int_eq(lf_chain_spec_new(&tx.cfg->inputs[0], 0, &spec2, NULL, &eb), LF_OK);
    ck_assert_int_eq(lf_chain_new(spec2, &counter, &other), LF_OK);
    size_t kept_keys = 0;
    char extra[96];
    for (int i = 0; i < 100000; i++) {
        snprintf(extra, sizeof(extra), "\"trace\":{\"id\":\"%016x%08x\"}", i * 2654435761u, i);
        size_t k = push(0, extra, 3, 0); /* a trace's lines: all or none */
        ck_assert(k == 0 || k == 3);
        kept_keys += k == 3;
        size_t before = tx.kept;
        struct lf_event ev = {
            LF_STR_LIT("x"), 0, 0, 1, 0, NULL, lf_str_make(extra, strlen(extra)), 0
        };
        ck_assert_int_eq(lf_chain_process(other, &ev, 12345), LF_OK);
        ck_assert_uint_eq(tx.kept - before, k == 3 ? 1 : 0); /* another spec, the same call */
    }
    /* 1 in 10 of 100,000 keys: 10,000 with a standard deviation of 95 */
    ck_assert_uint_ge(kept_keys, 9600);
    ck_assert_uint_le(kept_keys, 10400);
    ck_assert_uint_eq(tx.sampled_out, tx.dropped);
    ck_assert_uint_eq(tx.throttled, 0);
    lf_chain_free(other);
    lf_chain_spec_free(spec2);
}
END_TEST

START_TEST(sample_keeps_a_fixed_hash_so_agents_and_runs_agree)
{
    /* FNV-1a 64 then fmix64, as docs/processing.md states: pinned values */
    ck_assert_uint_eq(lf_stage__key_hash(lf_str_make("", 0)), 0xefd01f60ba992926ull);
    ck_assert_uint_eq(lf_stage__key_hash(LF_STR_LIT("4bf92f3577b34da6a3ce929d0e0e4736")),
                      0xe668f55d97f2d8a8ull);
}
END_TEST

START_TEST(sample_without_a_key_keeps_1_in_n_per_source)
{
    start("[{sample: {rate: 4}}]");
    ck_assert_uint_eq(push(0, "", 10, 0), 3); /* the 1st, 5th and 9th */
    ck_assert_uint_eq(push(1, "", 4, 0), 1);  /* another source counts on its own */
    ck_assert_uint_eq(push(0, "", 2, 0), 0);  /* the 11th, 12th */
    ck_assert_uint_eq(push(0, "", 1, 0), 1);  /* the 13th */
    ck_assert_uint_eq(tx.sampled_out, 12);
}
END_TEST

/* Each config and the text its error must hold. */
static const char *const bad[][2] = {
    { "[{throttle: {burst: 5}}]", "rate" },
    { "[{throttle: {rate: 10}}]", "expected events per second, minute or hour" },
    { "[{throttle: {rate: 0/s}}]", "expected events per second, minute or hour" },
    { "[{throttle: {rate: 1.5/s}}]", "expected events per second, minute or hour" },
    { "[{throttle: {rate: 10/d}}]", "expected events per second, minute or hour" },
    { "[{throttle: {rate: 10/s, burst: 0}}]", "burst" },
    { "[{throttle: {rate: 10/s, max_keys: 0}}]", "max_keys" },
    { "[{throttle: {rate: 10/s, action: sample}}]", "action sample is not supported" },
    { "[{throttle: {rate: 10/s, action: delay}}]", "expected drop or sample" },
    { "[{throttle: {rate: 10/s, key: '%{pod'}}]", "%{ without its } at column 1" },
    { "[{throttle: {rate: 10/s, key: 'a%{}'}}]", "empty %{} at column 2" },
    { "[{throttle: {rate: 10/s, key: '%{message}'}}]", "the agent writes that key itself" },
    { "[{sample: {rate: 10, key: '%{log.file.path}'}}]", "the agent writes that key itself" },
    { "[{sample: {key: '%{trace.id}'}}]", "rate" },
    { "[{sample: {rate: 0}}]", "rate" },
    { "[{sample: {rate: 10, ratio: 2}}]", "ratio" },
};

/* What the loader finds fails lf_config_load_mem() with FILE:LINE:COL; what only the stage
 * can tell fails its compile (the agent's load runs that too, lf_chain_parser_check()). */
START_TEST(bad_settings_are_refused_at_load_with_a_clear_error)
{
    char errors[1024];
    const char *cfg = bad[_i][0];
    enum lf_err err = load(cfg, errors, sizeof(errors));
    if (err == LF_OK) {
        struct lf_errbuf eb = { "" };
        err = lf_chain_parser_check(&tx.cfg->inputs[0], 0, &eb);
        snprintf(errors, sizeof(errors), "%s", eb.msg);
    } else {
        ck_assert_msg(strstr(errors, "t.yml:4:") != NULL, "%s: no position in:\n%s", cfg, errors);
    }
    ck_assert_msg(err == LF_ECONFIG, "%s accepted", cfg);
    ck_assert_msg(strstr(errors, bad[_i][1]) != NULL, "%s: want \"%s\" in:\n%s", cfg, bad[_i][1],
                  errors);
}
END_TEST

/* Run alone by check_throttle_alloc (see main). */
START_TEST(steady_state_allocates_nothing_per_event)
{
    start("[{throttle: {rate: 1000/s, key: '%{k}', max_keys: 100}}, "
          "{sample: {rate: 3, key: '%{k}'}}, {sample: {rate: 2}}]");
    char extras[300][16];
    struct lf_event evs[300];
    for (int i = 0; i < 300; i++) {
        snprintf(extras[i], sizeof(extras[i]), "\"k\":%d", i);
        evs[i] = (struct lf_event){
            LF_STR_LIT("x"), 0, 0, 1, 0, NULL, lf_str_make(extras[i], strlen(extras[i])), 0
        };
    }
    enum lf_err err = LF_OK;
    for (int i = 0; i < 300 && !err; i++) /* the table grows to max_keys */
        err = lf_chain_process(tx.chain[0], &evs[i], 0);
    struct lf_alloc_count a0 = lf_alloc_count_now();
    for (int r = 0; r < 100 && !err; r++) { /* evicting, refilling, sampling */
        for (int i = 0; i < 300 && !err; i++)
            err = lf_chain_process(tx.chain[0], &evs[i], r * 7);
    }
    uint64_t calls = lf_alloc_count_now().calls - a0.calls;
    ck_assert_int_eq(err, LF_OK);
    ck_assert_uint_eq(calls, 0);
}
END_TEST

int main(void)
{
    (void)fx_start; /* the fixture's one-stage helpers: these cases run whole chains */
    (void)feed;
    Suite *s = suite_create("throttle");
    TCase *tc = fx_tcase(s, "throttle", false);
    tcase_add_checked_fixture(tc, NULL, tx_teardown);
    tcase_add_test(tc, a_full_bucket_keeps_burst_events_then_the_rate_as_the_clock_moves);
    tcase_add_test(tc, a_second_of_ticks_keeps_exactly_the_rate_per_minute_and_hour);
    tcase_add_test(tc, time_running_back_between_threads_refills_nothing);
    tcase_add_test(tc, each_key_has_its_own_bucket_and_a_missing_field_shares_the_empty_one);
    tcase_add_test(tc, a_key_is_its_text_however_the_json_writes_it);
    tcase_add_test(tc, the_chains_of_one_input_draw_on_one_bucket);
    tcase_add_test(tc, past_max_keys_the_least_recently_used_bucket_is_evicted_and_returns_full);
    tcase_add_test(tc, ten_thousand_keys_stay_within_max_keys);
    TCase *sc = fx_tcase(s, "sample", false);
    tcase_set_timeout(sc, 120); /* 100,000 keys under the sanitizers */
    tcase_add_checked_fixture(sc, NULL, tx_teardown);
    tcase_add_test(sc, sample_by_key_decides_alike_across_specs_and_keeps_about_1_in_n);
    tcase_add_test(sc, sample_keeps_a_fixed_hash_so_agents_and_runs_agree);
    tcase_add_test(sc, sample_without_a_key_keeps_1_in_n_per_source);
    TCase *cc = fx_tcase(s, "config", false);
    tcase_add_checked_fixture(cc, NULL, tx_teardown);
    tcase_add_loop_test(cc, bad_settings_are_refused_at_load_with_a_clear_error, 0,
                        (int)(sizeof(bad) / sizeof(bad[0])));
    TCase *ac = fx_tcase(s, "alloc", true);
    tcase_add_checked_fixture(ac, NULL, tx_teardown);
    tcase_add_test(ac, steady_state_allocates_nothing_per_event);
    return stage_fixture_main(s);
}
