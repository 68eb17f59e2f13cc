# The journald input over real journal files written by systemd-journal-remote (Debian
# package systemd-journal-remote, journaltest.py); journald_live.py reads the host's own
# journal where one runs and skips elsewhere (t/skips.allowed).
JOURNALD_TESTS = t/integration/journald_read.py t/integration/journald_restart.py \
	t/integration/journald_follow.py t/integration/journald_cursor.py \
	t/integration/journald_live.py t/integration/journald_reload_outage.py \
	t/integration/journald_enospc.py
TESTS += $(JOURNALD_TESTS)
EXTRA_DIST += $(JOURNALD_TESTS) t/integration/journaltest.py
