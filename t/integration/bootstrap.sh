#!/usr/bin/env bash
# bootstrap.sh's package sets, without installing anything: `--dry-run COMMAND` names the
# packages COMMAND would install. dpkg-query is a stand-in that says which packages are
# installed; apt-get and sudo are stand-ins that record any call (there must be none).
# `run` and `build` install what the build and the agent need, never the tests' and lint's
# tools (rsyslog starts a syslog daemon on a real host); `check` and `deps --all` add them;
# .ci/run installs them before it configures and lints.
. "${LF_SRCDIR:-.}/t/integration/lib.sh"
src=$(cd "${LF_SRCDIR:-.}" && pwd)

build_set="build-essential autoconf automake pkg-config libuv1-dev libyaml-dev libzstd-dev \
libpcre2-dev libjansson-dev zlib1g-dev libsystemd-dev librdkafka-dev libssl-dev \
libcurl4-openssl-dev check zstd tzdata"
check_set="openssl python3 procps prometheus cppcheck clang-tidy systemd python3-yaml \
groff-base man-db kubernetes-client systemd-journal-remote rsyslog rsyslog-gnutls rsyslog-elasticsearch \
rsyslog-kafka python3-botocore"

mkdir -p "$T/bin"
cat >"$T/bin/dpkg-query" <<'SH'
#!/bin/sh
# dpkg-query -W -f='${Status}\n' PACKAGE: installed when PACKAGE is in $STUB_INSTALLED
for pkg; do :; done
for p in $STUB_INSTALLED; do
    [ "$p" = "$pkg" ] && { echo "install ok installed"; exit 0; }
done
echo "dpkg-query: no packages found matching $pkg" >&2
exit 1
SH
for cmd in apt-get sudo; do
    printf '#!/bin/sh\necho "%s $*" >>"%s"\nexit 1\n' "$cmd" "$T/installs" >"$T/bin/$cmd"
done
chmod +x "$T/bin"/*
: >"$T/installs"

# would INSTALLED COMMAND [ARGS...]: what bootstrap.sh --dry-run prints
would() {
    local installed=$1
    shift
    PATH="$T/bin:$PATH" STUB_INSTALLED=$installed "$src/bootstrap.sh" --dry-run "$@" 2>&1
}
words() { echo $*; } # one space between words

t_begin "on a bare machine, run and build install the build's and the agent's packages only"
assert_eq "run" "bootstrap: would install $(words $build_set)" "$(would "" run)" &&
    assert_eq "build" "bootstrap: would install $(words $build_set)" "$(would "" build --enable-werror)" &&
    assert_eq "deps" "bootstrap: would install $(words $build_set)" "$(would "" deps)" && t_ok

t_begin "run installs no test or lint tool: no rsyslog, prometheus, clang-tidy, cppcheck, journal-remote"
run=" $(would "" run) "
ok=1
for p in rsyslog rsyslog-gnutls prometheus clang-tidy cppcheck python3 systemd man-db \
    systemd-journal-remote kubernetes-client python3-botocore rsyslog-elasticsearch rsyslog-kafka; do
    case $run in *" $p "*) t_fail "run would install $p: [$run]"; ok=0 ;; esac
done
[ $ok = 1 ] && t_ok

t_begin "check and deps --all install the tests' and lint's tools too"
assert_eq "check" "bootstrap: would install $(words $build_set $check_set)" "$(would "" check)" &&
    assert_eq "deps --all" "bootstrap: would install $(words $build_set $check_set)" \
        "$(would "" deps --all)" &&
    assert_eq "deps --all PACKAGES" "bootstrap: would install $(words $build_set $check_set) lintian" \
        "$(would "" deps --all lintian)" &&
    assert_eq "deps PACKAGES" "bootstrap: would install $(words $build_set) clang" \
        "$(would "" deps clang)" && t_ok

t_begin "only what is missing: a built machine gets the tests' tools from check, nothing from run"
assert_eq "run" "bootstrap: nothing to install" "$(would "$build_set" run)" &&
    assert_eq "check" "bootstrap: would install $(words $check_set)" "$(would "$build_set" check)" &&
    assert_eq "check, all there" "bootstrap: nothing to install" \
        "$(would "$build_set $check_set" check)" && t_ok

t_begin "the package kubectl, which conflicts with kubernetes-client, stands in for it"
assert_eq "check" "bootstrap: nothing to install" \
    "$(would "$build_set ${check_set/kubernetes-client/kubectl}" check)" && t_ok

t_begin "a dry run calls neither apt-get nor sudo"
assert_eq "calls" "" "$(cat "$T/installs")" && t_ok

t_begin ".ci/run installs every tool (deps --all) before it builds and lints"
ci=$(grep -n '' "$src/.ci/run")
all=$(printf '%s\n' "$ci" | grep -m1 './bootstrap.sh deps --all$' | cut -d: -f1)
first_build=$(printf '%s\n' "$ci" | grep -m1 './bootstrap.sh \(build\|check\)' | cut -d: -f1)
lint=$(printf '%s\n' "$ci" | grep -m1 'make -C build lint' | cut -d: -f1)
assert_eq "deps --all before the first build (configure finds cppcheck and clang-tidy)" yes \
    "$([ -n "$all" ] && [ -n "$first_build" ] && [ "$all" -lt "$first_build" ] &&
        [ "$first_build" -lt "$lint" ] && echo yes)" && t_ok
t_end
