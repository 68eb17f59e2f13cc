#!/usr/bin/env bash
# The command line against the real binary: options, exit codes, error text, --once to the
# console output, --preview.
. "${LF_SRCDIR:-.}/t/integration/lib.sh"

t_begin "--version prints the package and version, then the libraries loaded on demand"
out=$("$LOGFERRY" --version); rc=$?
assert_eq "exit" 0 "$rc" && assert_eq "first line" "logferry 0.1.0" "$(printf '%s\n' "$out" | head -1)" &&
    assert_contains "second line" "loads on demand: libcurl.so." "$(printf '%s\n' "$out" | sed -n 2p)" && t_ok

t_begin "--help prints usage and exits 0"
out=$("$LOGFERRY" --help); rc=$?
assert_eq "exit" 0 "$rc" && assert_contains "stdout" "Usage: logferry [-c FILE] [--once]" "$out" && t_ok

t_begin "an unknown option exits 2"
err=$("$LOGFERRY" --bogus 2>&1 >/dev/null); rc=$?
assert_eq "exit" 2 "$rc" && assert_contains "stderr" "Try 'logferry --help'" "$err" && t_ok

t_begin "the default config passes --test-config"
out=$("$LOGFERRY" -c "$LF_SRCDIR/conf/logferry.yml" --test-config 2>&1); rc=$?
assert_eq "exit" 0 "$rc" && assert_eq "output" "config OK" "$out" && t_ok

t_begin "the backfill example passes --test-config"
out=$("$LOGFERRY" -c "$LF_SRCDIR/conf/backfill.yml" -t 2>&1); rc=$?
assert_eq "exit" 0 "$rc" && assert_eq "output" "config OK" "$out" && t_ok

t_begin "a missing config file exits 2 naming the file"
err=$("$LOGFERRY" -c "$T/nope.yml" -t 2>&1); rc=$?
assert_eq "exit" 2 "$rc" && assert_contains "stderr" "$T/nope.yml: " "$err" && t_ok

cat >"$T/bad.yml" <<YAML
inputs:
  - id: app
    pahts: [/tmp/x.log]
outputs:
  - {name: out, type: console}
YAML
t_begin "an unknown key exits 2 with FILE:LINE:COL"
err=$("$LOGFERRY" -c "$T/bad.yml" -t 2>&1); rc=$?
assert_eq "exit" 2 "$rc" && assert_contains "stderr" "$T/bad.yml:3:5: " "$err" &&
    assert_contains "stderr" "pahts" "$err" && t_ok

mkdir -p "$T/logs"
printf 'first line\nsecond \xc3\xa9\r\n\nlast without newline' >"$T/logs/a.log"
printf 'only line\n' >"$T/logs/b.log"
cat >"$T/badstages.yml" <<YAML
data_dir: $T/data
inputs:
  - id: app
    paths: ["$T/logs/*.log"]
    parsers:
      - regex: {pattern: '(?<a>[a-z'}
  - id: web
    paths: ["$T/web/*.log"]
    parsers:
      - multiline: {preset: java}
      - dissect: {tokenizer: '%{a} %{'}
outputs:
  - {name: out, type: console}
YAML
t_begin "--test-config compiles the stages: a bad pattern in each of two inputs, two FILE:LINE:COL lines, exit 2"
err=$("$LOGFERRY" -c "$T/badstages.yml" -t 2>&1); rc=$?
assert_eq "exit" 2 "$rc" &&
    assert_contains "stderr" "$T/badstages.yml:6:9: inputs[0].parsers[0]: regex: invalid pattern" "$err" &&
    assert_contains "stderr" "$T/badstages.yml:11:9: inputs[1].parsers[1]: dissect: " "$err" &&
    assert_eq "lines" 2 "$(printf '%s\n' "$err" | wc -l)" && t_ok

t_begin "--once refuses the same config with the same lines"
err=$("$LOGFERRY" -c "$T/badstages.yml" --once 2>&1); rc=$?
assert_eq "exit" 2 "$rc" && assert_contains "stderr" "$T/badstages.yml:11:9: inputs[1].parsers[1]: dissect: " "$err" && t_ok

cat >"$T/console.yml" <<YAML
data_dir: $T/data
inputs:
  - id: app
    paths: ["$T/logs/*.log"]
outputs:
  - {name: screen, type: console, format: text}
YAML
t_begin "--once writes every line to the text console, files in path order"
out=$("$LOGFERRY" -c "$T/console.yml" --once 2>"$T/err"); rc=$?
expected=$(printf 'first line\nsecond \xc3\xa9\n\nlast without newline\nonly line')
assert_eq "exit" 0 "$rc" && assert_eq "stdout" "$expected" "$out" && t_ok

t_begin "--once logs a summary with the event count"
assert_contains "stderr" "5 events read, 0 filtered out, all acknowledged; output screen: 5 delivered, 0 dead-lettered;" "$(cat "$T/err")" && t_ok

t_begin "a second --once reads only what was appended since the first"
printf 'appended\n' >>"$T/logs/b.log"
out=$("$LOGFERRY" -c "$T/console.yml" --once 2>/dev/null); rc=$?
assert_eq "exit" 0 "$rc" && assert_eq "stdout" "appended" "$out" && t_ok

sed -e 's/format: text/format: json/' -e "s#$T/data#$T/data-json#" "$T/console.yml" >"$T/json.yml"
t_begin "--once json console events carry path, offset and input id"
out=$("$LOGFERRY" -c "$T/json.yml" --once 2>/dev/null | head -n 2 | tail -n 1); rc=$?
assert_contains "event" "\"message\":\"second é\",\"log\":{\"file\":{\"path\":\"$T/logs/a.log\"},\"offset\":11}" "$out" &&
    assert_contains "event" "\"input\":{\"id\":\"app\"}" "$out" && t_ok

t_begin "--preview prints one input's events and touches no output"
out=$("$LOGFERRY" -c "$T/json.yml" --preview app "$T/logs/b.log" 2>&1); rc=$?
assert_eq "exit" 0 "$rc" && assert_contains "stdout" "\"message\":\"only line\",\"log\":{\"file\":{\"path\":\"$T/logs/b.log\"},\"offset\":0}" "$out" && t_ok

t_begin "--preview of an unknown input id exits 2"
err=$("$LOGFERRY" -c "$T/json.yml" --preview nope "$T/logs/b.log" 2>&1); rc=$?
assert_eq "exit" 2 "$rc" && assert_contains "stderr" "no input with id \"nope\"" "$err" && t_ok

t_begin "a data_dir that is a file exits 1"
: >"$T/notadir"
err=$("$LOGFERRY" -c "$T/console.yml" --data-dir "$T/notadir" --once 2>&1 >/dev/null); rc=$?
assert_eq "exit" 1 "$rc" && assert_contains "stderr" "data_dir $T/notadir is not usable" "$err" && t_ok

cat >"$T/stdin.yml" <<YAML
data_dir: $T/data
inputs:
  - {id: in, type: stdin}
outputs:
  - {name: screen, type: console, format: text}
YAML
t_begin "a stdin input reads standard input to its end"
out=$(printf 'a\nb\nc' | "$LOGFERRY" -c "$T/stdin.yml" --once 2>/dev/null); rc=$?
assert_eq "exit" 0 "$rc" && assert_eq "stdout" "$(printf 'a\nb\nc')" "$out" && t_ok

cat >"$T/stdin2.yml" <<YAML
data_dir: $T/data
inputs:
  - {id: in, type: stdin}
  - {id: again, type: stdin}
outputs:
  - {name: screen, type: console, format: text}
YAML
t_begin "the daemon refuses a second stdin input with its position rather than ignoring it"
err=$("$LOGFERRY" -c "$T/stdin2.yml" </dev/null 2>&1 >/dev/null); rc=$?
assert_eq "exit" 2 "$rc" &&
    assert_contains "stderr" "$T/stdin2.yml:4:5: inputs[1].type: stdin is already read by input in" "$err" && t_ok

mkdir -p "$T/flt"
printf 'DBG one\nERR two\nINFO three\nWARN four\nDBG ERR five\n' >"$T/flt/x.log"
cat >"$T/filters.yml" <<YAML
data_dir: $T/data-flt
inputs:
  - id: app
    paths: ["$T/flt/*.log"]
    parsers:
      - include_lines: ['ERR', 'WARN']
      - exclude_lines: ['^DBG']
outputs:
  - {name: screen, type: console, format: text}
YAML
t_begin "include_lines then exclude_lines keep only the wanted events"
out=$("$LOGFERRY" -c "$T/filters.yml" --once 2>/dev/null); rc=$?
assert_eq "exit" 0 "$rc" && assert_eq "stdout" "$(printf 'ERR two\nWARN four')" "$out" && t_ok

t_begin "filtered events still move the registry past them"
printf 'DBG six\n' >>"$T/flt/x.log"
out=$("$LOGFERRY" -c "$T/filters.yml" --once 2>/dev/null); rc=$?
# The registry's offset field (the 6th) of the file's entry, not a match anywhere in the line.
off=$(awk -F '\t' -v p="$T/flt/x.log" 'NR > 1 && $NF == p { print $6 }' "$T/data-flt/registry")
assert_eq "exit" 0 "$rc" && assert_eq "stdout" "" "$out" &&
    assert_eq "registry offset of x.log" "$(wc -c <"$T/flt/x.log")" "$off" && t_ok

t_end
