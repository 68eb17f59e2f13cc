#!/usr/bin/env bash
# fetch-syslog-ng.sh DIR - unpacks Debian's syslog-ng-core into DIR/root, with its
# configuration library (syslog-ng-scl: elasticsearch-http()), its http() and kafka-c()
# destinations (syslog-ng-mod-http, syslog-ng-mod-rdkafka: make bench-outputs) and the
# libraries they need that are not installed, and prints nothing but errors. syslog-ng-core conflicts
# with rsyslog as a package, so the benchmark runs it from DIR instead of installing it:
#
#   LD_LIBRARY_PATH=DIR/root/usr/lib/x86_64-linux-gnu:DIR/root/usr/lib/syslog-ng \
#     DIR/root/usr/sbin/syslog-ng --module-path=DIR/root/usr/lib/syslog-ng/<version> ...
#
# Does nothing when DIR/root already holds syslog-ng and those modules.
set -euo pipefail

dir=${1:?usage: fetch-syslog-ng.sh DIR}
packages=(syslog-ng-core syslog-ng-scl syslog-ng-mod-http syslog-ng-mod-rdkafka)
complete() {
    [ -x "$dir/root/usr/sbin/syslog-ng" ] &&
        compgen -G "$dir/root/usr/lib/syslog-ng/*/libhttp.so" >/dev/null &&
        compgen -G "$dir/root/usr/lib/syslog-ng/*/libkafka.so" >/dev/null &&
        [ -d "$dir/root/usr/share/syslog-ng/include/scl/elasticsearch" ]
}
complete && exit 0
mkdir -p "$dir/debs"
cd "$dir/debs"

installed() {
    dpkg-query -W -f='${Status}\n' "$1" 2>/dev/null | grep -q '^install ok installed$'
}

apt-get download -q "${packages[@]}" >/dev/null 2>&1 ||
    { echo "fetch-syslog-ng: apt-get download ${packages[*]} failed" >&2; exit 1; }
# Each alternative group "a (>= 1) | b": satisfied if any member is installed or is one of
# the packages unpacked here.
missing=()
groups=()
for p in "${packages[@]}"; do
    IFS=',' read -ra more < <(dpkg-deb -f "${p}"_*.deb Depends)
    groups+=("${more[@]}")
done
for group in "${groups[@]}"; do
    first=
    ok=
    IFS='|' read -ra alts <<<"$group"
    for alt in "${alts[@]}"; do
        name=$(echo "$alt" | sed 's/(.*)//; s/[[:space:]]//g; s/:any$//')
        [ -n "$first" ] || first=$name
        case " ${packages[*]} " in *" $name "*) ok=1; break ;; esac
        if installed "$name"; then ok=1; break; fi
    done
    [ -n "$ok" ] || case " ${missing[*]} " in *" $first "*) ;; *) missing+=("$first") ;; esac
done
if [ "${#missing[@]}" -gt 0 ]; then
    apt-get download -q "${missing[@]}" >/dev/null 2>&1 ||
        { echo "fetch-syslog-ng: apt-get download ${missing[*]} failed" >&2; exit 1; }
fi
for deb in ./*.deb; do
    dpkg -x "$deb" "$dir/root"
done
complete
