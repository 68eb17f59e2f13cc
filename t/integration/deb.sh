#!/usr/bin/env bash
# The Debian package, built from `make dist` as `make deb` builds it (`make check-packaging`
# runs this; it is not part of `make check`): what it installs (dpkg -c), its control data
# and conffiles (dpkg -I), its maintainer scripts, the unit's and config's paths inside it,
# the binary it ships, and lintian with no error.
. "${LF_SRCDIR:-.}/t/integration/lib.sh"
src=${LF_SRCDIR:-.}
bld=${LF_BUILDDIR:-.}
if ! command -v dh >/dev/null || ! command -v dpkg-buildpackage >/dev/null; then
    echo "debhelper or dpkg-dev is not installed (make check-packaging installs them)"
    exit 77
fi

t_begin "dpkg-buildpackage -b builds the .deb from the dist tarball"
start=$(date +%s)
version=$(sed -n 's/^PACKAGE_VERSION = //p' "$bld/Makefile")
if ${MAKE:-make} -s -C "$bld" dist-gzip >"$T/dist.log" 2>&1 &&
    sh "$src/packaging/debian/build-deb.sh" "$bld/logferry-$version.tar.gz" "$T/out" \
        >"$T/build.log" 2>&1; then
    t_ok
else
    t_fail "the build failed: $(tail -15 "$T/dist.log" "$T/build.log")"
    t_end
    exit 1
fi
echo "# built in $(($(date +%s) - start)) s"
deb=$(ls "$T"/out/logferry_*.deb)
dpkg -c "$deb" | awk '{ print $1, $2, $NF }' >"$T/contents"
dpkg -I "$deb" >"$T/info"

t_begin "it installs the binary, the unit, the config, the man pages and the docs"
missing=""
for f in ./usr/bin/logferry ./lib/systemd/system/logferry.service ./etc/logferry/logferry.yml \
    ./usr/share/man/man8/logferry.8.gz ./usr/share/man/man5/logferry.yml.5.gz \
    ./usr/share/doc/logferry/copyright ./usr/share/doc/logferry/changelog.Debian.gz \
    ./usr/share/doc/logferry/configuration.md.gz ./usr/share/doc/logferry/operating.md.gz \
    ./usr/share/doc/logferry/journald.md.gz; do
    grep -q " $f\$" "$T/contents" || missing="$missing $f"
done
assert_eq "missing from dpkg -c" "" "$missing" &&
    assert_contains "the binary's mode and owner" "-rwxr-xr-x root/root ./usr/bin/logferry" \
        "$(cat "$T/contents")" && t_ok

t_begin "dpkg -I: its name, version, dependencies and scripts"
info=$(cat "$T/info")
depends=$(sed -n 's/^ Depends: //p' "$T/info")
ok=1
for dep in adduser libuv1 libyaml-0-2 libzstd1 libpcre2-8-0 libjansson4 libc6 libcurl4 librdkafka1 \
    libssl3; do
    case ", $depends," in *", $dep"[\ ,]*) ;; *) t_fail "Depends lacks $dep: [$depends]"; ok=0 ;; esac
done
[ $ok = 1 ] && assert_contains "package" " Package: logferry" "$info" &&
    assert_contains "version" " Version: $version-1" "$info" &&
    assert_contains "postinst" " postinst " "$info" && t_ok

dpkg-deb -e "$deb" "$T/control"
dpkg-deb -x "$deb" "$T/root"

t_begin "/etc/logferry/logferry.yml is a conffile"
assert_eq "conffiles" "/etc/logferry/logferry.yml" "$(cat "$T/control/conffiles")" && t_ok

t_begin "postinst creates the logferry system user in groups adm and systemd-journal and /var/lib/logferry"
post=$(cat "$T/control/postinst")
assert_contains "user" "adduser --system --group" "$post" &&
    assert_contains "adm" "adduser --quiet logferry adm" "$post" &&
    assert_contains "systemd-journal" "adduser --quiet logferry systemd-journal" "$post" &&
    assert_contains "data dir" 'chown logferry:logferry "$root/var/lib/logferry"' "$post" &&
    assert_contains "the unit enabled and started (dh_installsystemd)" "deb-systemd-helper" "$post" &&
    assert_contains "a unit that shadows its own named" "shadows the package's" "$post" &&
    sh -n "$T/control/postinst" && t_ok

t_begin "the packaged unit runs /usr/bin/logferry on /etc/logferry/logferry.yml, in groups adm and systemd-journal"
assert_eq "ExecStart" "/usr/bin/logferry -c /etc/logferry/logferry.yml" \
    "$(sed -n 's/^ExecStart=//p' "$T/root/lib/systemd/system/logferry.service")" &&
    assert_eq "SupplementaryGroups" "adm systemd-journal" \
        "$(sed -n 's/^SupplementaryGroups=//p' "$T/root/lib/systemd/system/logferry.service")" &&
    assert_eq "EnvironmentFile" "-/etc/default/logferry" \
        "$(sed -n 's/^EnvironmentFile=//p' "$T/root/lib/systemd/system/logferry.service")" && t_ok

t_begin "the packaged config keeps 10 rotated files, none older than a week"
assert_contains "rotate_keep" "rotate_keep: 10" "$(cat "$T/root/etc/logferry/logferry.yml")" &&
    assert_contains "max_age" "max_age: 168h" "$(cat "$T/root/etc/logferry/logferry.yml")" &&
    assert_eq "no ./data left in it" "" "$(grep -n '\./data' "$T/root/etc/logferry/logferry.yml")" &&
    t_ok

t_begin "the packaged binary and config work together, data under /var/lib/logferry"
out=$("$T/root/usr/bin/logferry" -c "$T/root/etc/logferry/logferry.yml" --test-config 2>&1); rc=$?
assert_eq "exit" 0 "$rc" && assert_eq "output" "config OK" "$out" &&
    assert_contains "data_dir" 'data_dir: ${LOGFERRY_DATA:-/var/lib/logferry}' \
        "$(cat "$T/root/etc/logferry/logferry.yml")" &&
    assert_eq "version" "logferry $version" "$("$T/root/usr/bin/logferry" --version | head -1)" && t_ok

t_begin "lintian finds no error"
if command -v lintian >/dev/null; then
    lintian --tag-display-limit 0 "$T"/out/logferry_*.changes >"$T/lintian" 2>&1
    sed 's/^/# lintian: /' "$T/lintian"
    assert_eq "errors" "" "$(grep '^E: ' "$T/lintian")" && t_ok
else
    echo "# lintian is not installed (make check-packaging installs it): not run"
    passed=$((passed + 1))
fi
t_end
