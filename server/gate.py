"""What every request passes before any route sees it: the Host check, the token for a body, the body cap.

* **Host** (DNS rebinding): on a loopback bind, a request whose ``Host`` names anything but a loopback
  name or one of ``settings.allowed_hosts`` gets 421, on every route (``/mcp`` checks it again itself).
* **Token before body**: with a token configured, a request that carries a body must show the token
  (bearer header, the pages' cookie, or ``?token=``) before a byte of the body is read; else 401.
* **Body cap**: bodies over ``max_body_bytes`` get 413, from Content-Length or while streaming; only a
  multipart upload to ``POST /v1/scan`` gets the larger ``max_upload_bytes``.
"""

from __future__ import annotations

import contextlib
import hmac
from http.cookies import SimpleCookie
from urllib.parse import parse_qsl

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from server.deps import TOKEN_COOKIE
from server.problems import problem_response
from server.settings import LOOPBACK_NAMES, ServerSettings, is_loopback

UPLOAD_ROUTE = ("POST", "/v1/scan")


def host_name(header: str) -> str:
    """The name in a Host header, without the port; IPv6 literals keep no brackets."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1 : header.find("]")] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


def allowed_host_names(settings: ServerSettings) -> set[str] | None:
    """The Host names this server answers to; None when any is fine (a public bind without an allow-list)."""
    extra = {host_name(h) for h in settings.allowed_hosts if h.strip()}
    if is_loopback(settings.host):
        return set(LOOPBACK_NAMES) | extra
    return extra or None


class RequestGate:
    def __init__(self, app: ASGIApp, settings: ServerSettings) -> None:
        self.app, self.settings = app, settings
        self.hosts = allowed_host_names(settings)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        if self.hosts is not None:
            name = host_name(headers.get(b"host", b"").decode("latin-1"))
            if name not in self.hosts:
                detail = f"this server does not answer to Host {name!r}; allowed: {', '.join(sorted(self.hosts))}"
                await problem_response(421, "Misdirected request", detail)(scope, receive, send)
                return
        declared = headers.get(b"content-length")
        has_body = (declared is not None and declared.strip() not in (b"", b"0")) or b"transfer-encoding" in headers
        if has_body and self.settings.token is not None and not self._authorized(scope, headers):
            response = problem_response(401, "Unauthorized", "missing or wrong bearer token")
            response.headers["WWW-Authenticate"] = "Bearer"
            await response(scope, receive, send)
            return
        content_type = headers.get(b"content-type", b"").decode("latin-1").lower()
        upload = (scope.get("method"), scope.get("path")) == UPLOAD_ROUTE and content_type.startswith("multipart/")
        limit = self.settings.max_upload_bytes if upload else self.settings.max_body_bytes
        await _capped(self.app, limit, declared, scope, receive, send)

    def _authorized(self, scope: Scope, headers: dict[bytes, bytes]) -> bool:
        token = (self.settings.token or "").encode("utf-8")
        scheme, _, given = headers.get(b"authorization", b"").partition(b" ")
        candidates = [given.strip()] if scheme.lower() == b"bearer" else []
        cookie = SimpleCookie()
        with contextlib.suppress(Exception):  # a malformed Cookie header is just no cookie
            cookie.load(headers.get(b"cookie", b"").decode("latin-1"))
        if TOKEN_COOKIE in cookie:
            candidates.append(cookie[TOKEN_COOKIE].value.strip().encode("utf-8", "replace"))
        query = scope.get("query_string", b"").decode("latin-1")
        candidates += [v.strip().encode("utf-8", "replace") for k, v in parse_qsl(query) if k == "token"]
        return any(c and hmac.compare_digest(c, token) for c in candidates)


async def _capped(app: ASGIApp, limit: int, declared: bytes | None, scope: Scope, receive: Receive, send: Send) -> None:
    if declared is not None and declared.strip().isdigit() and int(declared) > limit:
        detail = f"body is {int(declared)} bytes; the limit is {limit}"
        await problem_response(413, "Request too large", detail)(scope, receive, send)
        return
    seen = 0
    rejected = False

    async def counting_receive() -> Message:
        nonlocal seen, rejected
        if rejected:
            return {"type": "http.disconnect"}
        message = await receive()
        if message["type"] == "http.request":
            seen += len(message.get("body", b""))
            if seen > limit:
                # Answer now and tell the app the client went away; whatever it sends later is dropped.
                rejected = True
                await problem_response(413, "Request too large", f"body exceeds the limit of {limit} bytes")(
                    scope, receive, send
                )
                return {"type": "http.disconnect"}
        return message

    async def guarded_send(message: Message) -> None:
        if not rejected:
            await send(message)

    try:
        await app(scope, counting_receive, guarded_send)
    except Exception:
        if not rejected:
            raise
