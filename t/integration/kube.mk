# The kubernetes section against a stand-in API server (kube_apiserver.py, run in the tests'
# own process on 127.0.0.1): the server alone first, then the real binary enriching events.
KUBE_TESTS = t/integration/kube_apiserver_test.py
TESTS += $(KUBE_TESTS)
EXTRA_DIST += $(KUBE_TESTS) t/integration/kube_apiserver.py
