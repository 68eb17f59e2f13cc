"""A test CA and a server certificate for 127.0.0.1, made with `openssl` at test time, for the
tests that talk TLS (http_tls.py, the stand-in Kubernetes API server kube_apiserver.py).
Python standard library only."""
import os
import subprocess


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_pki(d):
    """ca.pem, and srv.pem/srv.key for 127.0.0.1 signed by it, in directory d. Returns
    ((cert, key), ca)."""
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
            "-subj", "/CN=logferry test CA", cwd=d)
    openssl("req", *ec, "-keyout", "srv.key", "-out", "srv.csr", "-subj", "/CN=127.0.0.1", cwd=d)
    with open(os.path.join(d, "ext.cnf"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\n")
    openssl("x509", "-req", "-in", "srv.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-out", "srv.pem", "-days", "2", "-extfile", "ext.cnf", cwd=d)
    return (os.path.join(d, "srv.pem"), os.path.join(d, "srv.key")), os.path.join(d, "ca.pem")
