# lib.sh - helpers for the integration scripts: a temp dir, the binary, assertions that
# print what they expected and what they got, and the closing "N passed, N failed" line.
set -u
LOGFERRY=${LOGFERRY:-./logferry}
T=$(mktemp -d "${TMPDIR:-/tmp}/lf-it.XXXXXX")
trap 'rm -rf "$T"' EXIT
passed=0
failed=0
current=""

t_begin() { current=$1; }
t_ok() { passed=$((passed + 1)); echo "ok - $current"; }
t_fail() {
    failed=$((failed + 1))
    echo "not ok - $current: $1"
}
# assert_eq WHAT EXPECTED ACTUAL
assert_eq() {
    if [ "$2" == "$3" ]; then return 0; fi
    t_fail "$1: expected [$2], got [$3]"
    return 1
}
# assert_contains WHAT NEEDLE HAYSTACK
assert_contains() {
    case "$3" in *"$2"*) return 0 ;; esac
    t_fail "$1: expected to contain [$2], got [$3]"
    return 1
}
t_end() {
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ]
}
