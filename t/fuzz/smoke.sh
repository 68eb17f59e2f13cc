#!/usr/bin/env bash
# smoke.sh SRCDIR SECONDS JOBS TARGET...: runs each libFuzzer target for SECONDS on its seed
# corpus (SRCDIR/t/fuzz/corpus/NAME) and what earlier runs found (fuzz-corpus/TARGET),
# JOBS at a time; an input running over 10 s counts as a hang. Each target's output goes
# to fuzz-corpus/TARGET.log and is printed whole when it fails; the exit status is 1 if
# any target failed.
set -u
src=$1 secs=$2 jobs=$3
shift 3
run() {
    local t=$1
    mkdir -p "fuzz-corpus/$t"
    if "./$t" -max_total_time="$secs" -timeout=10 -print_final_stats=1 "fuzz-corpus/$t" \
        "$src/t/fuzz/corpus/${t##*/}" >"fuzz-corpus/$t.log" 2>&1; then
        echo "== $t ($secs s): $(grep -m1 '^stat::number_of_executed_units' "fuzz-corpus/$t.log")"
    else
        echo "== $t FAILED:"
        cat "fuzz-corpus/$t.log"
        return 1
    fi
}
failed=0
running=0
for t in "$@"; do
    if [ "$running" -ge "$jobs" ]; then
        wait -n || failed=1
        running=$((running - 1))
    fi
    run "$t" &
    running=$((running + 1))
done
while [ "$running" -gt 0 ]; do
    wait -n || failed=1
    running=$((running - 1))
done
exit "$failed"
