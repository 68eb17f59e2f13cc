# Integration tests of the tailing daemon: real binary, real files, real signals.
# `make check-soak` runs the same scripts longer (LF_SOAK=1).
TAIL_TESTS = t/integration/tail_shutdown.py t/integration/tail_identity.py \
	t/integration/tail_latency.py t/integration/tail_rotation.py \
	t/integration/tail_crash.py t/integration/tail_badfiles.py \
	t/integration/tail_scale.py t/integration/tail_stages.py \
	t/integration/tail_metrics.py t/integration/tail_systemd.py \
	t/integration/tail_backpressure.py t/integration/tail_hang.py \
	t/integration/tail_clean.py t/integration/tail_ack.py \
	t/integration/tail_lanes.py t/integration/tail_reload.py \
	t/integration/tail_reload_change.py t/integration/tail_stdin.py
# Fault injection and the promises of docs/reliability.md, one line each.
TAIL_TESTS += t/integration/registry_broken.py
TAIL_TESTS += t/integration/tail_promises.py
TAIL_TESTS += t/integration/tail_health.py
TAIL_TESTS += t/integration/tail_logging.py
TAIL_TESTS += t/integration/tail_enospc.py
TAIL_TESTS += t/integration/tail_emfile.py
TAIL_TESTS += t/integration/tail_inotify.py
TAIL_TESTS += t/integration/tail_removed.py
TAIL_TESTS += t/integration/skip_if_exists.py
TAIL_TESTS += t/integration/journald_hint.py
TAIL_TESTS += t/integration/journald_perms.py
TAIL_TESTS += t/integration/tail_regkill.py
TAIL_TESTS += t/integration/tail_readers.py
TAIL_TESTS += t/integration/config_watch.py
# Soak only: run by `make check-soak`, never by the default `make check`.
SOAK_TESTS = t/integration/soak_mixed.py
TESTS += $(TAIL_TESTS)
EXTRA_DIST += $(SOAK_TESTS)
EXTRA_DIST += $(TAIL_TESTS) t/integration/tailtest.py t/integration/reloadtest.py \
	t/integration/configmap.py
TAIL_TESTS += t/integration/tail_symlinks.py
TAIL_TESTS += t/integration/tail_inode_reuse.py

.PHONY: check-soak
check-soak: logferry
	@fail=0; for t in $(TAIL_TESTS) $(SOAK_TESTS); do \
	  echo "== $$t (soak)"; \
	  LF_SOAK=1 LOGFERRY='$(abs_top_builddir)/logferry' LF_SRCDIR='$(abs_top_srcdir)' \
	    python3 $(srcdir)/$$t || fail=1; \
	done; exit $$fail
TAIL_TESTS += t/integration/tail_reload_outage.py
