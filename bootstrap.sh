#!/usr/bin/env bash
# bootstrap.sh - set up a Debian 12 machine for logferry, build it, then run or test it.
#
#   ./bootstrap.sh run   [CONFIGURE-ARGS...]  install what is missing, build, run the agent on
#                                             conf/logferry.yml until Ctrl-C
#   ./bootstrap.sh check [CONFIGURE-ARGS...]  install what is missing, build, make check
#   ./bootstrap.sh build [CONFIGURE-ARGS...]  install what is missing, build
#   ./bootstrap.sh deps  [PACKAGES...]        install what is missing, plus PACKAGES
#
# The build lives in ./build (an out-of-tree autotools build); configure runs again whenever
# CONFIGURE-ARGS differ from the last run. Package installation is idempotent and silent
# when everything is present.
set -euo pipefail

top=$(cd "$(dirname "$0")" && pwd)
cd "$top"

# Everything the build, the tests, the benchmarks and `make lint` need, by Debian package
# name.
# libsystemd-dev is optional to configure (without it sd_notify() is a datagram of our own)
# but wanted: libsystemd is what a systemd host runs.
packages=(
    build-essential autoconf automake pkg-config
    libuv1-dev libyaml-dev libzstd-dev libpcre2-dev libjansson-dev zlib1g-dev libsystemd-dev
    librdkafka-dev libssl-dev libcurl4-openssl-dev openssl
    check zstd python3 procps
    prometheus cppcheck clang-tidy
    # the packaging tests: systemd-analyze, YAML manifests, man pages rendered
    systemd python3-yaml groff-base man-db
    # the syslog output's tests run a real rsyslogd; make bench-peers runs it beside logferry
    # (syslog-ng is unpacked by the harness)
    rsyslog rsyslog-gnutls
    # the timestamp stage reads time zones from tzdata (/usr/share/zoneinfo)
    tzdata
)

missing_packages() {
    local p
    for p in "${packages[@]}" "$@"; do
        dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' ||
            echo "$p"
    done
}

install_packages() {
    local missing
    mapfile -t missing < <(missing_packages "$@")
    [ "${#missing[@]}" -eq 0 ] && return 0
    echo "bootstrap: installing ${missing[*]}" >&2
    local sudo=()
    [ "$(id -u)" -eq 0 ] || sudo=(sudo)
    export DEBIAN_FRONTEND=noninteractive
    "${sudo[@]}" apt-get update -qq
    "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

build() {
    [ -x configure ] && [ configure -nt configure.ac ] || autoreconf -fi
    mkdir -p build
    local args="$*"
    if [ ! -f build/Makefile ] || [ "$(cat build/.configure-args 2>/dev/null)" != "$args" ]; then
        (cd build && ../configure "$@")
        printf '%s' "$args" >build/.configure-args
    fi
    make -C build -j"$(nproc)"
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case "$cmd" in
run)
    install_packages
    build "$@"
    echo "bootstrap: running build/logferry -c conf/logferry.yml (events in ./data/out; Ctrl-C stops)" >&2
    exec build/logferry -c conf/logferry.yml
    ;;
check)
    install_packages
    build "$@"
    make -C build -j"$(nproc)" check
    ;;
build)
    install_packages
    build "$@"
    ;;
deps)
    install_packages "$@"
    ;;
*)
    sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
