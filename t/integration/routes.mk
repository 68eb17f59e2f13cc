# Routing by content through the binary (routes.py): --once, --preview, config errors, the
# daemon's route counts and reloads, and a route whose http output is down.
ROUTES_TESTS = t/integration/routes.py
TESTS += $(ROUTES_TESTS)
EXTRA_DIST += $(ROUTES_TESTS)
