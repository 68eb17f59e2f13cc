#!/usr/bin/env bash
# fetch-syslog-ng.sh DIR - unpacks Debian's syslog-ng-core into DIR/root, with the libraries
# it needs that are not installed, and prints nothing but errors. syslog-ng-core conflicts
# with rsyslog as a package, so the benchmark runs it from DIR instead of installing it:
#
#   LD_LIBRARY_PATH=DIR/root/usr/lib/x86_64-linux-gnu:DIR/root/usr/lib/syslog-ng \
#     DIR/root/usr/sbin/syslog-ng --module-path=DIR/root/usr/lib/syslog-ng/<version> ...
#
# Does nothing when DIR/root/usr/sbin/syslog-ng is already there.
set -euo pipefail

dir=${1:?usage: fetch-syslog-ng.sh DIR}
[ -x "$dir/root/usr/sbin/syslog-ng" ] && exit 0
mkdir -p "$dir/debs"
cd "$dir/debs"

installed() {
    dpkg-query -W -f='${Status}\n' "$1" 2>/dev/null | grep -q '^install ok installed$'
}

apt-get download -q syslog-ng-core >/dev/null 2>&1 ||
    { echo "fetch-syslog-ng: apt-get download syslog-ng-core failed" >&2; exit 1; }
# Each alternative group "a (>= 1) | b": satisfied if any member is installed.
missing=()
IFS=',' read -ra groups < <(dpkg-deb -f syslog-ng-core_*.deb Depends)
for group in "${groups[@]}"; do
    first=
    ok=
    IFS='|' read -ra alts <<<"$group"
    for alt in "${alts[@]}"; do
        name=$(echo "$alt" | sed 's/(.*)//; s/[[:space:]]//g; s/:any$//')
        [ -n "$first" ] || first=$name
        if installed "$name"; then ok=1; break; fi
    done
    [ -n "$ok" ] || missing+=("$first")
done
if [ "${#missing[@]}" -gt 0 ]; then
    apt-get download -q "${missing[@]}" >/dev/null 2>&1 ||
        { echo "fetch-syslog-ng: apt-get download ${missing[*]} failed" >&2; exit 1; }
fi
for deb in ./*.deb; do
    dpkg -x "$deb" "$dir/root"
done
[ -x "$dir/root/usr/sbin/syslog-ng" ]
