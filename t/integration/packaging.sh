#!/usr/bin/env bash
# The systemd unit as `make install` puts it: its paths, its hardening (systemd-analyze
# verify and security --offline), the config its ExecStartPre checks, and that the agent
# works under MemoryDenyWriteExecute (PCRE2's JIT refused, the interpreter used instead).
# EXPOSURE_BOUND is the highest systemd-analyze exposure score accepted; docs/operating.md
# must state the score measured here.
. "${LF_SRCDIR:-.}/t/integration/lib.sh"
EXPOSURE_BOUND=2.0
src=${LF_SRCDIR:-.}
bld=${LF_BUILDDIR:-.}

t_begin "make install DESTDIR= puts the binary, the unit, the config, the man pages and the docs in place"
dest=$T/dest
if ! ${MAKE:-make} -s -C "$bld" install DESTDIR="$dest" >"$T/install.log" 2>&1; then
    t_fail "make install failed: $(tail -5 "$T/install.log")"
    t_end
    exit 1
fi
unit_in=$(find "$dest" -name logferry.service -path '*/systemd/system/*')
config=$(find "$dest" -path '*/logferry/logferry.yml')
missing=""
[ -n "$unit_in" ] || missing="$missing unit"
[ -n "$config" ] || missing="$missing config"
for f in man8/logferry.8 man5/logferry.yml.5 doc/logferry/README.md doc/logferry/configuration.md \
    doc/logferry/operating.md doc/logferry/journald.md; do
    [ -n "$(find "$dest" -path "*/$f")" ] || missing="$missing $f"
done
assert_eq "missing after make install" "" "$missing" && t_ok
[ -n "$unit_in" ] || { t_end; exit 1; }

t_begin "a second make install keeps an edited config"
printf '# edited by the operator\n' >>"$config"
${MAKE:-make} -s -C "$bld" install DESTDIR="$dest" >"$T/install2.log" 2>&1
assert_eq "last line of the config" "# edited by the operator" "$(tail -1 "$config")" &&
    assert_contains "make install says so" "keeping $config" "$(cat "$T/install2.log")" && t_ok
sed -i '$d' "$config"

exec_start=$(sed -n 's/^ExecStart=//p' "$unit_in")
bin=${exec_start%% *}
conf_path=$(sed -n 's/^ExecStart=.* -c \([^ ]*\).*/\1/p' "$unit_in")

t_begin "the unit's ExecStart names the installed binary and config"
assert_eq "binary at ExecStart's path" yes "$([ -x "$dest$bin" ] && echo yes)" &&
    assert_eq "config at -c's path" yes "$([ -f "$dest$conf_path" ] && echo yes)" &&
    assert_eq "no @...@ left" "" "$(grep -oE '@(bindir|sysconfdir|localstatedir)@' "$unit_in")" && t_ok

t_begin "the unit keeps its least-privilege lines"
ok=1
for line in 'Type=notify' 'User=logferry' 'SupplementaryGroups=adm systemd-journal' \
    'NoNewPrivileges=yes' \
    'CapabilityBoundingSet=' 'ProtectSystem=strict' 'ReadWritePaths=/var/lib/logferry' \
    'StateDirectory=logferry' 'ProtectHome=read-only' 'ProtectKernelTunables=yes' \
    'ProtectKernelModules=yes' 'ProtectKernelLogs=yes' \
    'RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX' 'SystemCallFilter=@system-service' \
    'MemoryDenyWriteExecute=yes' 'ExecReload=/bin/kill -HUP $MAINPID'; do
    if ! grep -qxF "$line" "$unit_in"; then
        t_fail "no line [$line] in the unit"
        ok=0
    fi
done
[ $ok = 1 ] && t_ok

t_begin "ExecStartPre's --test-config accepts the installed config with the unit's environment"
envline=$(sed -n 's/^Environment=//p' "$unit_in")
out=$(env $envline "$dest$bin" -c "$dest$conf_path" --test-config 2>&1); rc=$?
assert_eq "exit" 0 "$rc" && assert_eq "output" "config OK" "$out" && t_ok

t_begin "the unit reads /etc/default/logferry, if there is one, after its Environment= lines"
env_line=$(grep -n '^EnvironmentFile=' "$unit_in")
assert_eq "EnvironmentFile" "EnvironmentFile=-/etc/default/logferry" "${env_line#*:}" &&
    assert_eq "after Environment= (so it overrides LOGFERRY_DATA)" yes \
        "$([ "${env_line%%:*}" -gt "$(grep -n '^Environment=' "$unit_in" | cut -d: -f1)" ] &&
            echo yes)" && t_ok

# The package's postinst on a machine where `make install` put a unit under /usr/local
# (this very unit): it must say that unit wins and how to drop it. Its commands that change
# the system (adduser, chown, getent's answer) are stand-ins; every path it touches is under
# DPKG_ROOT.
mkdir -p "$T/stubs"
printf '#!/bin/sh\nexit 0\n' >"$T/stubs/chown"
# adduser notes its arguments; getent knows every user and group but those in $NO_GROUPS.
printf '#!/bin/sh\necho "$*" >>"%s"\n' "$T/adduser.log" >"$T/stubs/adduser"
printf '#!/bin/sh\ncase " $NO_GROUPS " in *" $2 "*) exit 2 ;; esac\nexit 0\n' >"$T/stubs/getent"
chmod +x "$T/stubs"/*
run_postinst() { # ROOT: prints what the postinst wrote on stderr; fails if it failed
    PATH="$T/stubs:$PATH" DPKG_ROOT=$1 sh "$src/packaging/debian/logferry.postinst" configure \
        2>&1 >/dev/null
}
sysroot=$T/sysroot
mkdir -p "$sysroot/usr/local/lib/systemd/system" "$sysroot/lib/systemd/system"
cp "$unit_in" "$sysroot/usr/local/lib/systemd/system/logferry.service"
sed 's|^ExecStart=.*|ExecStart=/usr/bin/logferry -c /etc/logferry/logferry.yml|' "$unit_in" \
    >"$sysroot/lib/systemd/system/logferry.service"

t_begin "postinst warns that a /usr/local unit from make install shadows the package's"
warn=$(run_postinst "$sysroot"); rc=$?
assert_eq "exit" 0 "$rc" &&
    assert_contains "names the unit" \
        "WARNING: /usr/local/lib/systemd/system/logferry.service shadows the package's" "$warn" &&
    assert_contains "says what runs instead" "systemd runs '$exec_start' from it" "$warn" &&
    assert_contains "says how to drop it" "systemctl daemon-reload && systemctl reenable" "$warn" &&
    assert_eq "made the data dir under DPKG_ROOT" yes \
        "$([ -d "$sysroot/var/lib/logferry" ] && echo yes)" && t_ok

t_begin "postinst adds the user to adm, and to systemd-journal where that group exists"
: >"$T/adduser.log"
run_postinst "$sysroot" >/dev/null
with=$(cat "$T/adduser.log")
: >"$T/adduser.log"
NO_GROUPS=systemd-journal run_postinst "$sysroot" >/dev/null; rc=$?
without=$(cat "$T/adduser.log")
assert_eq "exit without the group" 0 "$rc" &&
    assert_eq "adduser calls" "--quiet logferry adm
--quiet logferry systemd-journal" "$with" &&
    assert_eq "adduser calls without systemd-journal" "--quiet logferry adm" "$without" && t_ok

t_begin "postinst warns of a copy in /etc/systemd/system, not of a mask or a link to its own"
rm "$sysroot/usr/local/lib/systemd/system/logferry.service"
quiet=$(run_postinst "$sysroot")
mkdir -p "$sysroot/etc/systemd/system"
ln -s /dev/null "$sysroot/etc/systemd/system/logferry.service"
masked=$(run_postinst "$sysroot")
rm "$sysroot/etc/systemd/system/logferry.service"
ln -s "$sysroot/lib/systemd/system/logferry.service" "$sysroot/etc/systemd/system/logferry.service"
linked=$(run_postinst "$sysroot")
rm "$sysroot/etc/systemd/system/logferry.service"
cp "$unit_in" "$sysroot/etc/systemd/system/logferry.service"
copied=$(run_postinst "$sysroot")
assert_eq "nothing shadows it" "" "$quiet" && assert_eq "masked" "" "$masked" &&
    assert_eq "a link to its own unit" "" "$linked" &&
    assert_contains "a copy in /etc" \
        "WARNING: /etc/systemd/system/logferry.service shadows the package's" "$copied" && t_ok

if ! command -v systemd-analyze >/dev/null; then
    t_begin "systemd-analyze"
    t_fail "systemd-analyze is missing (./bootstrap.sh deps --all installs the systemd package)"
    t_end
    exit 1
fi

# verify wants every ExecStart binary and Documentation= page to exist: point the unit's
# paths into DESTDIR, and man at the installed pages.
t_begin "systemd-analyze verify accepts the unit without a word"
mkdir -p "$T/verify"
prefix_bin=${bin%/logferry}
sed "s|$prefix_bin/logferry|$dest$prefix_bin/logferry|g" "$unit_in" >"$T/verify/logferry.service"
mandir=$(dirname "$(dirname "$(find "$dest" -name logferry.8)")")
(cd "$T/verify" && MANPATH=$mandir SYSTEMD_LOG_COLOR=0 systemd-analyze verify \
    "$T/verify/logferry.service" >"$T/verify.out" 2>&1); rc=$?
assert_eq "exit" 0 "$rc" && assert_eq "output" "" "$(cat "$T/verify.out")" && t_ok

t_begin "systemd-analyze security --offline rates the unit's exposure at most $EXPOSURE_BOUND"
(cd "$T/verify" && systemd-analyze security --offline=true "$T/verify/logferry.service" \
    >"$T/security.out" 2>&1)
score=$(sed -n 's/.*Overall exposure level for logferry.service: \([0-9.]*\).*/\1/p' "$T/security.out")
echo "# exposure score: ${score:-none}"
if [ -z "$score" ]; then
    t_fail "no score in: $(tail -3 "$T/security.out")"
elif ! awk -v s="$score" -v b="$EXPOSURE_BOUND" 'BEGIN { exit !(s <= b) }'; then
    t_fail "exposure $score is above $EXPOSURE_BOUND; the failing lines: $(grep '✗' "$T/security.out" | head -20)"
else
    t_ok
fi

t_begin "docs/operating.md states the measured exposure score"
assert_contains "docs/operating.md" "exposure level of $score" "$(cat "$src/docs/operating.md")" && t_ok

# MemoryDenyWriteExecute=yes is what systemd turns into a seccomp filter; Linux's
# PR_SET_MDWE (6.3 and later) applies the same rule to this process and what it executes.
mkdir -p "$T/logs"
cat >"$T/logs/app.log" <<'LOG'
[2026-11-30 01:00:00] INFO start
[2026-11-30 01:00:01] ERROR boom
java.lang.IllegalStateException: boom
	at com.example.A.run(A.java:1)
[2026-11-30 01:00:02] DEBUG noise
[2026-11-30 01:00:03] INFO done
LOG
cat >"$T/mdwe.yml" <<YAML
data_dir: $T/data
inputs:
  - id: app
    paths: ["$T/logs/*.log"]
    exclude_files: ['\.gz\$']
    parsers:
      - multiline: {pattern: '^\[\d{4}-', negate: true, match: after}
      - exclude_lines: ['DEBUG']
outputs:
  - {name: screen, type: console}
YAML
cat >"$T/mdwe.py" <<'PY'
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(65, 1, 0, 0, 0) != 0:  # PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN
    print("PR_SET_MDWE:", os.strerror(ctypes.get_errno()))
    sys.exit(77)
pc = ctypes.CDLL("libpcre2-8.so.0")
pc.pcre2_compile_8.restype = ctypes.c_void_p
pc.pcre2_compile_8.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint32,
                               ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_size_t),
                               ctypes.c_void_p]
pc.pcre2_jit_compile_8.argtypes = [ctypes.c_void_p, ctypes.c_uint32]
err, off = ctypes.c_int(), ctypes.c_size_t()
code = pc.pcre2_compile_8(b"^x", 2, 0, ctypes.byref(err), ctypes.byref(off), None)
print("jit:", pc.pcre2_jit_compile_8(code, 1))  # PCRE2_JIT_COMPLETE
sys.stdout.flush()
os.execv(sys.argv[1], sys.argv[1:])
PY
t_begin "under MemoryDenyWriteExecute PCRE2's JIT is refused and the agent's events are the same"
plain=$("$LOGFERRY" -c "$T/mdwe.yml" --preview app "$T/logs/app.log" 2>&1 | sed 's/"@timestamp":"[^"]*",//')
mdwe=$(python3 "$T/mdwe.py" "$LOGFERRY" -c "$T/mdwe.yml" --preview app "$T/logs/app.log" 2>&1); rc=$?
if [ $rc = 77 ]; then
    echo "# skipped: this kernel has no PR_SET_MDWE ($mdwe)"
    passed=$((passed + 1))
else
    jit=$(printf '%s\n' "$mdwe" | sed -n 's/^jit: //p')
    events=$(printf '%s\n' "$mdwe" | grep -v '^jit: ' | sed 's/"@timestamp":"[^"]*",//')
    assert_eq "exit" 0 "$rc" &&
        assert_eq "pcre2_jit_compile under MDWE (PCRE2_ERROR_NOMEMORY)" -48 "$jit" &&
        assert_eq "events" 3 "$(printf '%s\n' "$events" | grep -c '"message"')" &&
        assert_contains "events" 'boom\njava.lang.IllegalStateException: boom\n\tat com.example.A.run(A.java:1)' "$events" &&
        assert_eq "same events as with the JIT" "$plain" "$events" && t_ok
fi
t_end
