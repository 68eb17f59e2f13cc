# The kubernetes section against a stand-in API server (kube_apiserver.py, run in the tests'
# own process on 127.0.0.1): the server alone first, then the real binary enriching events.
KUBE_TESTS = t/integration/kube_apiserver_test.py t/integration/kube_fields.py \
	t/integration/kube_changes.py t/integration/kube_faults.py t/integration/kube_scale.py \
	t/integration/kube_outage.py t/integration/kube_nslate.py t/integration/kube_reload.py
TESTS += $(KUBE_TESTS)
EXTRA_DIST += $(KUBE_TESTS) t/integration/kube_apiserver.py t/integration/kubetest.py
