#!/usr/bin/env bash
# bootstrap.sh - set up a Debian 12 machine for logferry, build it, then run or test it.
#
#   ./bootstrap.sh run   [CONFIGURE-ARGS...]  install what the build and the agent need,
#                                             build, run the agent on conf/logferry.yml
#                                             until Ctrl-C
#   ./bootstrap.sh build [CONFIGURE-ARGS...]  install what the build and the agent need, build
#   ./bootstrap.sh check [CONFIGURE-ARGS...]  install that and the tests' and lint's tools,
#                                             build, make check
#   ./bootstrap.sh deps  [--all] [PACKAGES...] install what the build needs (--all: and the
#                                             tests' and lint's tools), plus PACKAGES
#   ./bootstrap.sh --dry-run COMMAND [ARGS...] print what COMMAND would install; change nothing
#
# The build lives in ./build (an out-of-tree autotools build); configure runs again whenever
# CONFIGURE-ARGS differ from the last run. Package installation is idempotent and silent
# when everything is present. `run` and `build` install no test tool: rsyslog, for one,
# starts a syslog daemon on a real host.
set -euo pipefail

top=$(cd "$(dirname "$0")" && pwd)
cd "$top"

# What the build and the agent need, by Debian package name (run, build, deps).
# libsystemd-dev is optional to configure (without it sd_notify() is a datagram of our own)
# but wanted: libsystemd is what a systemd host runs. check: configure requires it. zstd:
# zstdcat reads what the default config writes. tzdata: the timestamp stage reads time
# zones from /usr/share/zoneinfo.
build_packages=(
    build-essential autoconf automake pkg-config
    libuv1-dev libyaml-dev libzstd-dev libpcre2-dev libjansson-dev zlib1g-dev libsystemd-dev
    librdkafka-dev libssl-dev libcurl4-openssl-dev
    check zstd tzdata
)
# What the tests, the benchmarks and `make lint` need besides (check, deps --all).
check_packages=(
    openssl python3 procps
    prometheus cppcheck clang-tidy
    # the packaging tests: systemd-analyze, YAML manifests, man pages rendered, the
    # kustomize layouts rendered by kubectl (kubectl kustomize)
    systemd python3-yaml groff-base man-db kubernetes-client
    # the journald input's tests write real journal files with systemd-journal-remote
    systemd-journal-remote
    # the syslog output's tests run a real rsyslogd; make bench-peers runs it beside logferry
    # and make bench-outputs its omelasticsearch and omkafka outputs (syslog-ng, with its
    # http and kafka modules, is unpacked by the harnesses)
    rsyslog rsyslog-gnutls rsyslog-elasticsearch rsyslog-kafka
    # the SigV4 signer is compared with botocore's on random requests
    python3-botocore
)
dry_run=0

installed() {
    dpkg-query -W -f='${Status}\n' "$1" 2>/dev/null | grep -q '^install ok installed$'
}

missing_packages() {
    local p
    for p in "$@"; do
        # The package kubectl (from Kubernetes' or Google's own apt repository) owns
        # /usr/bin/kubectl too, so it and kubernetes-client cannot both be installed; either
        # one will do.
        [ "$p" = kubernetes-client ] && installed kubectl && continue
        installed "$p" || echo "$p"
    done
}

# install_packages PACKAGES...: installs those not installed yet (with --dry-run: names
# them and exits).
install_packages() {
    local missing
    mapfile -t missing < <(missing_packages "$@")
    if [ "$dry_run" = 1 ]; then
        if [ "${#missing[@]}" -eq 0 ]; then
            echo "bootstrap: nothing to install"
        else
            echo "bootstrap: would install ${missing[*]}"
        fi
        exit 0
    fi
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

if [ "${1:-}" = --dry-run ]; then
    dry_run=1
    shift
fi
cmd=${1:-}
[ $# -gt 0 ] && shift
case "$cmd" in
run)
    install_packages "${build_packages[@]}"
    build "$@"
    echo "bootstrap: running build/logferry -c conf/logferry.yml (events in ./data/out; Ctrl-C stops)" >&2
    exec build/logferry -c conf/logferry.yml
    ;;
check)
    install_packages "${build_packages[@]}" "${check_packages[@]}"
    build "$@"
    # One test more than CPUs: most of the suite waits (for a daemon, a timer, a peer).
    make -C build -j"$(($(nproc) + 1))" check
    ;;
build)
    install_packages "${build_packages[@]}"
    build "$@"
    ;;
deps)
    if [ "${1:-}" = --all ]; then
        shift
        install_packages "${build_packages[@]}" "${check_packages[@]}" "$@"
    else
        install_packages "${build_packages[@]}" "$@"
    fi
    ;;
*)
    awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0" >&2 # the header
    exit 2
    ;;
esac
