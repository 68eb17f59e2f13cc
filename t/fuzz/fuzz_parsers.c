/* fuzz_parsers.c - libFuzzer target for the member-adding parsers: dissect, kv, regex,
 * access_log and fields, alone and chained so that later stages meet earlier members.
 *
 * The input is a log file, run whole through chain_harness.h (every event must encode to
 * one JSON object that parses back); its first byte also picks one of the settings below. */
#include "chain_harness.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const configs[] = {
    "[{dissect: {tokenizer: '%{ts} %{+ts} %{level->} [%{component}] %{message}'}}]",
    "[{dissect: {tokenizer: '%{a}|%{+a/2}|%{?b}|%{c}', target: d, trim_values: both}}]",
    "[{kv: {}}]",
    "[{kv: {field_split: '&;', value_split: '=>', prefix: k_, target: kv}}]",
    "[{regex: {pattern: '^(?<ts>\\S+ \\S+) (?<level>\\w+) \\[(?<c>[^\\]]*)\\] (?<message>.*)$'}}]",
    "[{regex: {pattern: '(?<n:int>[-+]?\\d+)(?:\\.(?<f:float>[\\d.eE+-]+))? (?<b:bool>\\w+)?',"
    " target: r, on_failure: keep}}]",
    "[{regex: {pattern: '^(?<x>\\p{L}+)', on_failure: drop}}]",
    "[{regex: {pattern: '(?<all>.*)', types: {all: float}, on_failure: keep_silent}}]",
    "[{access_log: {format: combined}}]",
    "[{access_log: {format: common, target: web}}]",
    "[{kv: {}}, {fields: {rename: {msg: message, a: b.c, level: lvl.name}, drop: [x, b.d],"
    " add: {env: prod, b.e: {f: [1, 2]}}}}]",
    "[{access_log: {}}, {fields: {rename: {source.ip: client.ip, url.original: message},"
    " drop: [http.request], add: {http.request.id: r1}}}]",
    "[{kv: {}}, {regex: {pattern: '^(?<major:int>\\d+)\\.(?<minor:int>\\d+)', field: v}}]",
    "[{dissect: {tokenizer: '%{a} %{b}'}}, {kv: {field_split: ',', target: k}},"
    " {fields: {rename: {a: k.a, k: a}, drop: [b]}}]",
};

#define N_CONFIGS (sizeof(configs) / sizeof(configs[0]))

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct fuzz_chain_spec specs[N_CONFIGS];
    return fuzz_chain_input(configs, specs, N_CONFIGS, data, size);
}
