# The syslog output against a real rsyslogd, started and stopped by each test (rsyslogtest.py).
SYSLOG_TESTS = t/integration/syslog_tcp.py t/integration/syslog_fields.py \
	t/integration/syslog_tls.py t/integration/syslog_outage.py
TESTS += $(SYSLOG_TESTS)
EXTRA_DIST += $(SYSLOG_TESTS) t/integration/rsyslogtest.py
