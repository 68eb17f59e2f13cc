# The splunk_hec output against the stand-in HEC (hec_receiver.py, started and stopped by PID).
HEC_TESTS = t/integration/hec_push.py t/integration/hec_ack.py t/integration/hec_errors.py
TESTS += $(HEC_TESTS)
EXTRA_DIST += $(HEC_TESTS) t/integration/hec_receiver.py t/integration/hectest.py
