"""Request signature checks for the local cloud API stand-ins: recompute a request's signature from the
secret of its key id, the way the cloud's API gateway does, and say why it is refused (or None).

Each check returns None for a good signature, else (kind, why): kind is MALFORMED (no or unreadable
authorization), UNKNOWN_KEY (a key id the stand-in does not know) or MISMATCH (wrong signature, a
header the scheme requires left out of the signed set, a body that is not what was hashed); the
stand-in answers each kind with its cloud's error. `secret_of(key_id)` gives the secret, or None.

Schemes (written from the clouds' specifications, no SDK code):
- ACS3-HMAC-SHA256, Alibaba Cloud "V3 request structure and signature",
  https://www.alibabacloud.com/help/en/sdk/product-overview/v3-request-structure-and-signature
- TC3-HMAC-SHA256, Tencent Cloud API 3.0 "Signature v3", https://www.tencentcloud.com/document/api/213/33224
- SDK-HMAC-SHA256, Huawei Cloud "API Request Signing Guide", "Signing Details" (APIG App/AK-SK signing),
  https://support.huaweicloud.com/intl/en-us/devg-apisign/api-sign-algorithm-002.html
(Baidu's bce-auth-v1 is checked by localcloud/standins/baiducloud.py `verify`.)
Not checked: the request time's distance from now (each cloud refuses a request signed some minutes
ago; the stand-ins' requests are signed and sent at once).
"""
from __future__ import annotations

import hashlib
import hmac
from datetime import datetime, timezone
from typing import Callable, Optional
from urllib.parse import parse_qsl, quote, unquote, urlsplit

MALFORMED, UNKNOWN_KEY, MISMATCH = "malformed", "unknown key", "mismatch"
Refusal = Optional[tuple[str, str]]
SecretOf = Callable[[str], Optional[str]]


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


def _encode(text: str, keep_slash: bool = False) -> str:
    """RFC 3986 percent-encoding (unreserved characters kept, space as %20), what all three specs ask."""
    return quote(text, safe="-_.~" + ("/" if keep_slash else ""))


def authorization_fields(authorization: str, algorithm: str) -> Optional[dict[str, str]]:
    """'ALG k1=v1, k2=v2' -> {k1: v1, k2: v2}; None when the header names another algorithm (also for a
    stand-in's own checks beyond the signature: which key signed, which headers it signed)."""
    head, _, rest = authorization.strip().partition(" ")
    if head != algorithm:
        return None
    fields = {}
    for part in rest.split(","):
        name, sep, value = part.strip().partition("=")
        if sep:
            fields[name] = value
    return fields


def _canonical_headers(headers: dict, names: list[str], lower_values: bool = False) -> tuple[str, Optional[str]]:
    """'name:value\\n' per signed header, sorted by name, values trimmed; and the first signed header the
    request does not carry (the gateway cannot rebuild what the client signed)."""
    lines = []
    for name in sorted(names):
        if name not in headers:
            return "", name
        value = str(headers[name]).strip()
        lines.append(f"{name}:{value.lower() if lower_values else value}\n")
    return "".join(lines), None


def _unsigned(signed: list[str], required: set[str]) -> Optional[tuple[str, str]]:
    missing = sorted(required - set(signed))
    return (MISMATCH, f"header(s) {', '.join(missing)} not in SignedHeaders") if missing else None


def _signing_key(headers: dict, algorithm: str, key_field: str, secret_of: SecretOf,
                 unknown: str) -> tuple[dict[str, str], str, Refusal]:
    """(authorization fields, secret, None) of a request signed with `algorithm` by a key the stand-in knows; else
    a refusal: MALFORMED without such an authorization naming the key (`key_field`), the signed headers and the
    signature, UNKNOWN_KEY with `unknown` (the cloud's wording, `{key}` the key id) for a key without a secret."""
    fields = authorization_fields(headers.get("authorization", ""), algorithm)
    if not fields or not {key_field, "SignedHeaders", "Signature"} <= set(fields):
        return {}, "", (MALFORMED, f"no {algorithm} authorization")
    secret = secret_of(fields[key_field])
    if secret is None:
        return fields, "", (UNKNOWN_KEY, unknown.format(key=fields[key_field]))
    return fields, secret, None


def _signed_headers(fields: dict[str, str], headers: dict, required: set[str],
                    lower_values: bool = False) -> tuple[list[str], str, Refusal]:
    """(signed header names, their canonical lines, None); else a MISMATCH refusal: a header of `required` left
    out of SignedHeaders, or a signed header the request does not carry."""
    signed = [n for n in fields["SignedHeaders"].split(";") if n]
    problem = _unsigned(signed, required)
    if problem:
        return signed, "", problem
    canonical_headers, absent = _canonical_headers(headers, signed, lower_values)
    return signed, canonical_headers, (MISMATCH, f"signed header {absent} not sent") if absent else None


def _sorted_query(query: str) -> str:
    pairs = sorted((_encode(k), _encode(v)) for k, v in parse_qsl(query, keep_blank_values=True))
    return "&".join(f"{k}={v}" for k, v in pairs)


def acs3(method: str, path: str, headers: dict, body: bytes, secret_of: SecretOf) -> Refusal:
    """Alibaba ACS3-HMAC-SHA256. Canonical request: method, URI (percent-encoded path, "/" kept),
    query (pairs sorted by name, encoded), headers, SignedHeaders, the body's SHA-256 (which
    x-acs-content-sha256 must carry); StringToSign "ACS3-HMAC-SHA256\\n" + hex SHA-256 of it; signature
    hex HMAC-SHA256(secret, StringToSign). Every x-acs-* header present, host and content-type (when
    present) must be signed ("all common request headers except Authorization")."""
    fields, secret, refused = _signing_key(headers, "ACS3-HMAC-SHA256", "Credential", secret_of,
                                           "unknown access key {key}")
    if refused:
        return refused
    required = {"host", *(n for n in headers if n.startswith("x-acs-"))} | ({"content-type"} & set(headers))
    signed, canonical_headers, refused = _signed_headers(fields, headers, required)
    if refused:
        return refused
    payload = _sha256(body)
    if headers.get("x-acs-content-sha256") != payload:
        return MISMATCH, "x-acs-content-sha256 is not the SHA-256 of the body"
    parts = urlsplit(path)
    canonical = "\n".join([method, _encode(unquote(parts.path) or "/", keep_slash=True), _sorted_query(parts.query),
                           canonical_headers, ";".join(sorted(signed)), payload])
    want = hmac.new(secret.encode(), f"ACS3-HMAC-SHA256\n{_sha256(canonical.encode())}".encode(),
                    hashlib.sha256).hexdigest()
    return None if hmac.compare_digest(want, fields["Signature"]) else (MISMATCH, "signature mismatch")


def tc3(method: str, path: str, headers: dict, body: bytes, secret_of: SecretOf, service: str) -> Refusal:
    """Tencent TC3-HMAC-SHA256. Credential = SecretId/Date/service/tc3_request, Date the UTC day of
    X-TC-Timestamp; canonical request: method, URI, query (GET: as sent; POST: empty), headers (names
    and values lower-cased, trimmed), SignedHeaders (content-type and host at least), hex SHA-256 of the
    body; StringToSign "TC3-HMAC-SHA256\\n{timestamp}\\n{scope}\\n{hex SHA-256 of it}"; key
    HMAC(HMAC(HMAC("TC3"+secret, Date), service), "tc3_request"); signature hex HMAC(key, StringToSign)."""
    fields = authorization_fields(headers.get("authorization", ""), "TC3-HMAC-SHA256")
    if not fields or not {"Credential", "SignedHeaders", "Signature"} <= set(fields):
        return MALFORMED, "no TC3-HMAC-SHA256 authorization"
    scope = fields["Credential"].split("/")
    if len(scope) != 4 or scope[3] != "tc3_request":
        return MALFORMED, f"credential {fields['Credential']!r} is not SecretId/Date/service/tc3_request"
    key, date, scope_service, _ = scope
    secret = secret_of(key)
    if secret is None:
        return UNKNOWN_KEY, f"unknown SecretId {key}"
    timestamp = headers.get("x-tc-timestamp", "")
    if not timestamp.isdigit():
        return MALFORMED, "no X-TC-Timestamp"
    if datetime.fromtimestamp(int(timestamp), timezone.utc).strftime("%Y-%m-%d") != date:
        return MISMATCH, f"credential date {date} is not the UTC day of X-TC-Timestamp {timestamp}"
    if scope_service != service:
        return MISMATCH, f"credential scope names service {scope_service}, this endpoint is {service}"
    signed, canonical_headers, refused = _signed_headers(fields, headers, {"content-type", "host"}, lower_values=True)
    if refused:
        return refused
    parts = urlsplit(path)
    canonical = "\n".join([method, parts.path or "/", parts.query if method == "GET" else "", canonical_headers,
                           ";".join(sorted(signed)), _sha256(body)])
    credential_scope = f"{date}/{service}/tc3_request"
    to_sign = f"TC3-HMAC-SHA256\n{timestamp}\n{credential_scope}\n{_sha256(canonical.encode())}"
    signing_key = _hmac(_hmac(_hmac(f"TC3{secret}".encode(), date), service), "tc3_request")
    want = hmac.new(signing_key, to_sign.encode(), hashlib.sha256).hexdigest()
    return None if hmac.compare_digest(want, fields["Signature"]) else (MISMATCH, "signature mismatch")


def sdk_hmac_sha256(method: str, path: str, headers: dict, body: bytes, secret_of: SecretOf) -> Refusal:
    """Huawei SDK-HMAC-SHA256 (Authorization: SDK-HMAC-SHA256 Access=AK, SignedHeaders=..., Signature=...).
    Canonical request: method, URI (each segment percent-encoded, ending in "/"), query (sorted, encoded),
    headers (names lower-cased, values trimmed), SignedHeaders (host and x-sdk-date at least), hex SHA-256
    of the body (or x-sdk-content-sha256: UNSIGNED-PAYLOAD); StringToSign "SDK-HMAC-SHA256\\n{X-Sdk-Date}\\n"
    + hex SHA-256 of it; signature hex HMAC-SHA256(SK, StringToSign)."""
    fields, secret, refused = _signing_key(headers, "SDK-HMAC-SHA256", "Access", secret_of,
                                           "Get secretKey failed,ak:{key},err:ak not exist")
    if refused:
        return refused
    if "x-sdk-date" not in headers:
        return MALFORMED, "no X-Sdk-Date"
    signed, canonical_headers, refused = _signed_headers(fields, headers, {"host", "x-sdk-date"})
    if refused:
        return refused
    parts = urlsplit(path)
    uri = "/".join(_encode(unquote(segment)) for segment in parts.path.split("/"))
    uri = uri if uri.endswith("/") else uri + "/"
    payload = "UNSIGNED-PAYLOAD" if headers.get("x-sdk-content-sha256") == "UNSIGNED-PAYLOAD" else _sha256(body)
    canonical = "\n".join([method, uri, _sorted_query(parts.query), canonical_headers, ";".join(sorted(signed)),
                           payload])
    to_sign = f"SDK-HMAC-SHA256\n{headers['x-sdk-date']}\n{_sha256(canonical.encode())}"
    want = hmac.new(secret.encode(), to_sign.encode(), hashlib.sha256).hexdigest()
    return None if hmac.compare_digest(want, fields["Signature"]) else (MISMATCH, "verify aksk signature fail")
