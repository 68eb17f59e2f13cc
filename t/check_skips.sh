#!/usr/bin/env bash
# check_skips.sh BUILDDIR ALLOWED - fails when `make check` in BUILDDIR skipped (exit 77) a
# test that ALLOWED (t/skips.allowed) does not list, or when BUILDDIR holds no results.
set -euo pipefail
builddir=$1
allowed=$2

mapfile -t trs < <(find "$builddir" -name '*.trs' -not -path '*/_build/*' | sort)
if [ "${#trs[@]}" -eq 0 ]; then
    echo "check_skips: no test results (*.trs) under $builddir" >&2
    exit 1
fi
mapfile -t ok < <(sed -e 's/#.*//' "$allowed" | awk 'NF { print $1 }')
bad=0
skips=0
for f in "${trs[@]}"; do
    grep -q '^:test-result: SKIP' "$f" || continue
    skips=$((skips + 1))
    name=${f#"$builddir"/}
    name=${name%.trs}
    if printf '%s\n' "${ok[@]}" | grep -qxF -- "$name"; then
        echo "check_skips: $name skipped (allowed: $(grep -F -- "$name " "$allowed" | sed 's/^[^ ]* *//'))"
    else
        echo "check_skips: $name skipped, and $allowed does not allow it" >&2
        bad=$((bad + 1))
    fi
done
echo "check_skips: ${#trs[@]} results, $skips skipped, $bad not allowed"
[ "$bad" -eq 0 ]
