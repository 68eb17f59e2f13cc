# aws_sigv4 on the http-based outputs and the AWS credentials chain against the stand-in
# (aws_standin.py: STS, IMDSv2 and a receiver checking signatures; started and stopped by
# PID).
AWS_TESTS = t/integration/aws_sigv4_http.py t/integration/aws_web_identity.py \
	t/integration/aws_imds.py
TESTS += $(AWS_TESTS)
EXTRA_DIST += $(AWS_TESTS) t/integration/aws_standin.py t/integration/awstest.py
