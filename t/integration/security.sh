#!/usr/bin/env bash
# What a writer of a log directory, or of the environment, must not get out of the agent
# (issue 7, security): files outside allowed_roots, FIFOs, secrets in config errors.
. "${LF_SRCDIR:-.}/t/integration/lib.sh"

mkdir -p "$T/logs" "$T/outside" "$T/outdir" "$T/pods"
printf 'plain line\n' >"$T/logs/plain.log"
printf 'root:secret-hash:19000\n' >"$T/outside/shadow"
printf 'outside the root\n' >"$T/outdir/other.log"
printf 'from a pod\n' >"$T/pods/0.log"
ln -s "$T/outside/shadow" "$T/logs/evil.log"
ln -s "$T/outdir" "$T/logs/dir"
cat >"$T/once.yml" <<YAML
data_dir: $T/data
inputs:
  - id: app
    paths: ["$T/logs/**/*.log"]
outputs:
  - {name: screen, type: console, format: text}
YAML
t_begin "--once reads no file whose real path is outside the default allowed_roots"
out=$("$LOGFERRY" -c "$T/once.yml" --once 2>"$T/err"); rc=$?
assert_eq "exit" 0 "$rc" && assert_eq "stdout" "plain line" "$out" && t_ok

t_begin "--once names each refused link and its real path"
err=$(cat "$T/err")
assert_contains "stderr" "input app: refusing $T/logs/evil.log: its real path $T/outside/shadow is outside allowed_roots ($T/logs, /var/log); skipping it" "$err" &&
    assert_contains "stderr" "input app: refusing $T/logs/dir/other.log: its real path $T/outdir/other.log is outside allowed_roots" "$err" && t_ok

ln -s "$T/pods/0.log" "$T/logs/pod.log"
cat >"$T/roots.yml" <<YAML
data_dir: $T/data-roots
inputs:
  - id: app
    paths: ["$T/logs/*.log"]
    allowed_roots: [$T/logs, $T/pods/]
outputs:
  - {name: screen, type: console, format: text}
YAML
t_begin "allowed_roots lets links into the listed directories through, and only those"
out=$("$LOGFERRY" -c "$T/roots.yml" --once 2>"$T/err"); rc=$?
assert_eq "exit" 0 "$rc" && assert_eq "stdout" "$(printf 'plain line\nfrom a pod')" "$out" &&
    assert_contains "stderr" "refusing $T/logs/evil.log" "$(cat "$T/err")" && t_ok

cat >"$T/relroot.yml" <<YAML
inputs:
  - id: app
    paths: ["$T/logs/*.log"]
    allowed_roots: [/var/log, var/lib/app, ""]
outputs:
  - {name: screen, type: console}
YAML
t_begin "a relative or empty allowed_roots entry is a config error at its position"
err=$("$LOGFERRY" -c "$T/relroot.yml" -t 2>&1); rc=$?
assert_eq "exit" 2 "$rc" &&
    assert_eq "stderr" "$T/relroot.yml:4:31: inputs[0].allowed_roots[1]: invalid value \"var/lib/app\": expected an absolute path (starting with /)
$T/relroot.yml:4:44: inputs[0].allowed_roots[2]: expected a non-empty string" "$err" && t_ok

mkfifo "$T/pipe.log"
t_begin "--preview of a FIFO refuses it at once instead of blocking"
err=$(timeout 10 "$LOGFERRY" -c "$T/once.yml" --preview app "$T/pipe.log" 2>&1 >/dev/null); rc=$?
assert_eq "exit" 1 "$rc" &&
    assert_eq "stderr" "logferry: --preview: refusing $T/pipe.log: it is a FIFO, not a regular file" "$err" && t_ok

cat >"$T/secret.yml" <<'YAML'
inputs:
  - id: app
    paths: [/tmp/none/*.log]
    start_at: ${LF_T_DB_PASSWORD}
    fields: {token: "${LF_T_DB_PASSWORD}"}
outputs:
  - {name: screen, type: console, format: '${LF_T_DB_PASSWORD}'}
YAML
t_begin "a value from the environment is never echoed in config errors: the variable is named"
err=$(LF_T_DB_PASSWORD=hunter2 "$LOGFERRY" -c "$T/secret.yml" -t 2>&1); rc=$?
assert_eq "exit" 2 "$rc" &&
    assert_eq "stderr" "$T/secret.yml:4:15: inputs[0].start_at: invalid value from \${LF_T_DB_PASSWORD}: expected beginning or end
$T/secret.yml:7:43: outputs[0].format: invalid value from \${LF_T_DB_PASSWORD}: expected json or text" "$err" && t_ok

t_begin "--data-dir \"\" is refused as a usage error before anything reads it"
err=$("$LOGFERRY" -c "$T/once.yml" --once --data-dir "" 2>&1 >/dev/null); rc=$?
assert_eq "exit" 2 "$rc" &&
    assert_eq "stderr" "logferry: --data-dir needs a directory, not an empty string" "$err" && t_ok

mkdir -p "$T/nl"
forged=$'evil\n2026-12-01T00:00:00.000Z error forged: by a file name\xff\x1b[2J.log'
mkfifo "$T/nl/$forged"
printf 'x\n' >"$T/nl/ok.log"
cat >"$T/nl.yml" <<YAML
data_dir: $T/data-nl
inputs:
  - id: app
    paths: ["$T/nl/*.log"]
outputs:
  - {name: screen, type: console, format: text}
YAML
t_begin "a file name with a newline cannot forge a line in the text log: control bytes are escaped"
"$LOGFERRY" -c "$T/nl.yml" --once >/dev/null 2>"$T/err"; rc=$?
err=$(cat "$T/err")
forged_lines=$(grep -c '^2026-12-01T00:00:00.000Z error forged' "$T/err")
assert_eq "exit" 0 "$rc" && assert_eq "forged lines" 0 "$forged_lines" &&
    assert_contains "stderr" "input app: $T/nl/evil\\n2026-12-01T00:00:00.000Z error forged: by a file name"$'\xff'"\\x1b[2J.log is a FIFO, not a regular file; skipping it" "$err" && t_ok

sed -e "s#data-nl#data-nl-json#" "$T/nl.yml" >"$T/nl-json.yml"
printf 'logging: {format: json}\n' >>"$T/nl-json.yml"
t_begin "JSON logs stay one valid UTF-8 JSON object per line whatever bytes a path holds"
"$LOGFERRY" -c "$T/nl-json.yml" --once >/dev/null 2>"$T/err"; rc=$?
check=$(python3 - "$T/err" "$T/nl/evil" <<'PY'
import json, sys
raw = open(sys.argv[1], "rb").read()
msgs = [json.loads(line.decode("utf-8"))["msg"] for line in raw.splitlines()]
hit = [m for m in msgs if sys.argv[2] + "\n2026-12-01T00:00:00.000Z error forged: by a file name\ufffd\x1b[2J.log is a FIFO" in m]
print(f"{len(msgs)} records, {len(hit)} naming the FIFO")
PY
)
assert_eq "exit" 0 "$rc" && assert_contains "records" "records, 1 naming the FIFO" "$check" && t_ok

t_end
