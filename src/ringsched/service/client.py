"""A small client of the service's API (standard library only), for the CLI verbs.

The service is found from ``--url``, else ``RINGSCHED_URL``, else the default address; a
token from ``--token`` or ``RINGSCHED_TOKEN``. Failures are one-line ``InputError``s: the
service unreachable, an unknown job, a submission it refused (with its reason).
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request

from ringsched.errors import InputError

DEFAULT_URL = "http://127.0.0.1:8642"
TIMEOUT_S = 30.0


def service_url(url: str | None) -> str:
    """The service's base URL: http(s)://HOST[:PORT][/PATH], else one InputError."""
    text = (url or os.environ.get("RINGSCHED_URL") or DEFAULT_URL).strip().rstrip("/")
    try:
        parts = urllib.parse.urlsplit(text)
        parts.port  # noqa: B018 - a port out of range or not a number raises here
    except ValueError as e:
        raise InputError(f"{text!r} is not a service URL ({e})", field="url") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InputError(f"{text!r} is not a service URL: expected http://HOST:PORT", field="url")
    return text


class Client:
    def __init__(self, url: str | None = None, token: str | None = None):
        self.url = service_url(url)
        self.token = token or os.environ.get("RINGSCHED_TOKEN") or None

    def _call(self, method: str, path: str, body: dict | None = None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if self.token:
            req.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(req, timeout=TIMEOUT_S) as r:
                return json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            try:
                detail = json.loads(e.read()).get("detail", e.reason)
            except (ValueError, AttributeError):
                detail = e.reason
            if isinstance(detail, list):  # a request the API's schema refused
                detail = "; ".join(f"{'.'.join(map(str, d.get('loc', ())))}: {d.get('msg')}" for d in detail)
            raise InputError(f"{detail}", field="url" if e.code == 401 else None) from None
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise InputError(f"service unreachable at {self.url} ({reason}); start it with ringsched serve, "
                             "or give --url / RINGSCHED_URL", field="url") from None

    def get(self, path: str):
        return self._call("GET", path)

    def post(self, path: str, body: dict | None = None):
        return self._call("POST", path, body if body is not None else {})
