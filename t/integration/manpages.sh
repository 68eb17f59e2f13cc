#!/usr/bin/env bash
# The man pages render without a warning (groff -ww and man -l), logferry(8) names every
# option `logferry --help` lists, and logferry.yml(5) every key docs/configuration.md
# documents in its tables.
. "${LF_SRCDIR:-.}/t/integration/lib.sh"
src=${LF_SRCDIR:-.}
pages="$src/man/logferry.8 $src/man/logferry.yml.5"

for page in $pages; do
    name=$(basename "$page")
    t_begin "$name renders with groff -ww -man without a warning"
    groff -ww -z -t -man "$page" >"$T/groff.err" 2>&1; rc=$?
    assert_eq "exit" 0 "$rc" && assert_eq "warnings" "" "$(cat "$T/groff.err")" && t_ok

    t_begin "$name renders with man -l --warnings without a warning"
    LC_ALL=C.UTF-8 MANWIDTH=80 MAN_KEEP_FORMATTING= man --warnings -l "$page" \
        >"$T/man.out" 2>"$T/man.err"; rc=$?
    assert_eq "exit" 0 "$rc" && assert_eq "warnings" "" "$(cat "$T/man.err")" &&
        assert_eq "has a NAME section" 1 "$(grep -c '^NAME' "$T/man.out")" && t_ok
done

t_begin "logferry(8) describes every option of logferry --help"
missing=""
for opt in $("$LOGFERRY" --help | grep -oE '(^|[ ,])--?[a-zA-Z][a-z-]*' | tr -d ' ,' | sort -u); do
    roff=$(printf '%s' "$opt" | sed 's/-/\\\\-/g')
    grep -qE "^\.(B|BR|BI|TP|IR).*$roff" "$src/man/logferry.8" || missing="$missing $opt"
done
assert_eq "options missing from logferry.8" "" "$missing" && t_ok

t_begin "logferry.yml(5) describes every key of docs/configuration.md"
keys=$(grep -oE '^\| `[a-z_.]+`' "$src/docs/configuration.md" | sed 's/^| `//; s/`$//' | sort -u)
n=0
missing=""
for key in $keys; do
    n=$((n + 1))
    grep -qE "^\.B(R)? $key( |\$)|^\.BR .* $key( |\$)" "$src/man/logferry.yml.5" || missing="$missing $key"
done
assert_eq "keys missing from logferry.yml.5 (of $n)" "" "$missing" && t_ok
[ "$n" -ge 50 ] || t_fail "only $n keys found in docs/configuration.md: its table format changed?"
t_end
