# The output benchmarks' sink (t/bench/sink, built in check_PROGRAMS by t/bench/Makefile.inc)
# against the real outputs: every line counted once, sums equal to `sink --hash`.
TESTS += t/integration/bench_sink.py
EXTRA_DIST += t/integration/bench_sink.py
