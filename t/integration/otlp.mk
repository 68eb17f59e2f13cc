# The otlp output against the stand-in OpenTelemetry Collector (otlp_collector.py, started
# and stopped by PID).
OTLP_TESTS = t/integration/otlp_push.py t/integration/otlp_answers.py \
	t/integration/otlp_outage.py t/integration/otlp_spool.py
TESTS += $(OTLP_TESTS)
EXTRA_DIST += $(OTLP_TESTS) t/integration/otlp_collector.py
