# The throttle and sample stages through the binary: --once, --preview and config errors
# (throttle_once.py), the daemon's metrics and a reload (throttle_reload.py).
THROTTLE_TESTS = t/integration/throttle_once.py t/integration/throttle_reload.py
TESTS += $(THROTTLE_TESTS)
EXTRA_DIST += $(THROTTLE_TESTS)
