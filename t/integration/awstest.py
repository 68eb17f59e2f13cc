"""SigV4 checking for the AWS stand-ins of the tests (the s3 output's store, signed http,
elasticsearch and otlp requests, STS): botocore computes what the Authorization header of a
request received must be, from the request as it arrived and the secret the stand-in knows
for the key id it names; anything else is refused as AWS refuses it."""
import datetime
import re
from urllib.parse import urlsplit

import botocore.auth
from botocore.awsrequest import AWSRequest
from botocore.compat import HTTPHeaders
from botocore.credentials import Credentials

AUTH_RE = re.compile(r"^AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/([^/]+)/aws4_request,"
                     r" ?SignedHeaders=([a-z0-9;\-]+), ?Signature=([0-9a-f]{64})$")


class Refused(Exception):
    """A request AWS would refuse: status, error code (S3's <Code>), message."""

    def __init__(self, status, code, message):
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def verify(method, target, headers, body, secrets, region, service, now=None,
           max_skew=datetime.timedelta(minutes=15)):
    """Checks one request. target: the request line's path and query as sent; headers: a
    list of (name, value) as received; secrets: a function from an access key id to
    (secret, session token or None), or None for an unknown key. Returns the access key id;
    raises Refused (403 SignatureDoesNotMatch, InvalidAccessKeyId, RequestTimeTooSkewed,
    ExpiredToken, InvalidToken, AccessDenied) otherwise."""
    h = {}
    for name, value in headers:
        h.setdefault(name.lower(), []).append(value)
    authz = h.get("authorization", [""])[0]
    m = AUTH_RE.match(authz)
    if not m:
        raise Refused(403, "AccessDenied", "no AWS4-HMAC-SHA256 Authorization header")
    akid, day, reg, svc, signed, _sig = m.groups()
    if reg != region or svc != service:
        raise Refused(403, "SignatureDoesNotMatch",
                      f"credential scope {reg}/{svc}, expected {region}/{service}")
    known = secrets(akid)
    if known is None:
        raise Refused(403, "InvalidAccessKeyId", f"unknown access key id {akid}")
    secret, token = known
    amz_date = h.get("x-amz-date", [""])[0]
    try:
        when = datetime.datetime.strptime(amz_date, "%Y%m%dT%H%M%SZ")
    except ValueError:
        raise Refused(403, "AccessDenied", "no valid x-amz-date") from None
    if when.strftime("%Y%m%d") != day:
        raise Refused(403, "SignatureDoesNotMatch", "the date and the credential scope differ")
    now = now or datetime.datetime.utcnow()
    if abs(now - when) > max_skew:
        raise Refused(403, "RequestTimeTooSkewed",
                      "The difference between the request time and the current time is too large.")
    sent_token = h.get("x-amz-security-token", [None])[0]
    if token is not None and sent_token is None:
        raise Refused(403, "InvalidToken", "these credentials need their session token")
    if token is not None and sent_token != token:
        raise Refused(403, "ExpiredToken", "The provided token has expired.")
    names = signed.split(";")
    if "host" not in names:
        raise Refused(403, "SignatureDoesNotMatch", "host is not signed")
    req = AWSRequest(method=method, url="http://" + h.get("host", [""])[0] + target, data=body)
    hdrs = HTTPHeaders()
    for name, value in headers:
        if name.lower() in names and name.lower() not in ("authorization",):
            hdrs[name] = value
    req.headers = hdrs
    creds = Credentials(akid, secret, token)
    cls = botocore.auth.S3SigV4Auth if service == "s3" else botocore.auth.SigV4Auth
    auth = cls(creds, service, region)
    saved = botocore.auth.get_current_datetime
    botocore.auth.get_current_datetime = lambda: when
    try:
        # botocore signs the headers it is given, minus a few it never signs: sign the same.
        auth.headers_to_sign = lambda r, _names=names: _only(r, _names)
        auth.add_auth(req)
    finally:
        botocore.auth.get_current_datetime = saved
    want = req.headers["Authorization"]
    if want != authz.replace(", ", ",").replace(",", ", ") and want != authz:
        raise Refused(403, "SignatureDoesNotMatch",
                      "The request signature we calculated does not match the signature you "
                      "provided.")
    return akid


def _only(req, names):
    out = HTTPHeaders()
    for name, value in req.headers.items():
        if name.lower() in names:
            out[name.lower()] = value.strip()
    return out


def split_target(target):
    """(path, query) of a request line's target."""
    u = urlsplit(target)
    return u.path, u.query


def error_xml(code, message):
    """S3's error document."""
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code>'
            f"<Message>{message}</Message><RequestId>0</RequestId></Error>").encode()
