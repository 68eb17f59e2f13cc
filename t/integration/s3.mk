# The s3 output against the stand-in S3 (s3_standin.py, started and stopped by PID).
S3_TESTS = t/integration/s3_put.py t/integration/s3_errors.py t/integration/s3_gather.py \
	t/integration/s3_creds.py \
	t/integration/s3_multipart.py t/integration/s3_spool.py t/integration/s3_held_memory.py
TESTS += $(S3_TESTS)
EXTRA_DIST += $(S3_TESTS) t/integration/s3_standin.py t/integration/s3test.py
