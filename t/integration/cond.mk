# Conditions, `when:` on a parser and the drop stage through the binary: --once, --preview
# and config errors with their column (cond_drop.py), the daemon's metrics and a reload that
# changes a condition (cond_reload.py).
COND_TESTS = t/integration/cond_drop.py t/integration/cond_reload.py
TESTS += $(COND_TESTS)
EXTRA_DIST += $(COND_TESTS)
