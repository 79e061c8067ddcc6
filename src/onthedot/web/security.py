"""What keeps the web admin safe to expose: credentials (HTTP Basic or a bearer token, and a
scrape token good for `/metrics` only), the brute-force limit, the loopback rule, the Host
allow-list (against DNS rebinding) and the Origin check, read-only mode, CSRF tokens and the
security headers on every response."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import os
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from onthedot.observability.events import Event, WebLoginFailed
from onthedot.web.hosts import ENV_ALLOWED_HOSTS, HostRule, header, is_loopback
from onthedot.web.login_limit import LoginLimiter

__all__ = ["ENV_ALLOWED_HOSTS", "HostRule", "is_loopback"]

ENV_USER = "ONTHEDOT_WEB_USER"
ENV_PASSWORD = "ONTHEDOT_WEB_PASSWORD"
ENV_TOKEN = "ONTHEDOT_WEB_TOKEN"
ENV_SECRET = "ONTHEDOT_WEB_SECRET"
ENV_METRICS_TOKEN = "ONTHEDOT_WEB_METRICS_TOKEN"
METRICS_USER = "metrics"

CSRF_COOKIE = "onthedot_csrf"
CSRF_FIELD = "csrf_token"
CSRF_HEADER = "x-csrf-token"
FLASH_COOKIE = "onthedot_flash"
USER_SCOPE_KEY = "onthedot.user"

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
SECURITY_HEADERS = (
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),
    (b"cross-origin-opener-policy", b"same-origin"),
)


@dataclass(frozen=True, slots=True)
class Credentials:
    """Who may use the admin: a Basic user and password, a bearer token, or both (each with
    every right); and `metrics_token`, a bearer token that only reads `GET /metrics`."""

    user: str | None = None
    password: str | None = None
    token: str | None = None
    metrics_token: str | None = None

    def __post_init__(self) -> None:
        if bool(self.user) != bool(self.password):
            raise ValueError(
                f"web credentials: set both {ENV_USER} and {ENV_PASSWORD} (or neither)"
            )

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Credentials:
        env = os.environ if environ is None else environ
        return cls(
            user=env.get(ENV_USER) or None,
            password=env.get(ENV_PASSWORD) or None,
            token=env.get(ENV_TOKEN) or None,
            metrics_token=env.get(ENV_METRICS_TOKEN) or None,
        )

    @property
    def configured(self) -> bool:
        return bool(self.user and self.password) or bool(self.token)

    def authenticate(self, header: str | None) -> str | None:
        """The user name an Authorization header proves (`token` for the bearer), or None."""
        if not header:
            return None
        scheme, _, value = header.partition(" ")
        scheme, value = scheme.lower(), value.strip()
        if scheme == "basic" and self.user and self.password:
            try:
                decoded = base64.b64decode(value, validate=True).decode()
            except (binascii.Error, UnicodeDecodeError):
                return None
            user, sep, password = decoded.partition(":")
            ok_user = _same(user, self.user)
            ok_password = _same(password, self.password)
            return user if sep and ok_user and ok_password else None
        if scheme == "bearer" and self.token and _same(value, self.token):
            return "token"
        return None

    def scrapes(self, header: str | None) -> bool:
        """The header carries the metrics token (good for `GET /metrics` only)."""
        if not header or not self.metrics_token:
            return False
        scheme, _, value = header.partition(" ")
        return scheme.lower() == "bearer" and _same(value.strip(), self.metrics_token)

    @staticmethod
    def claimed_user(header: str | None) -> str:
        """Who a failed Authorization header says it is, for the log (never the secret)."""
        scheme, _, value = (header or "").partition(" ")
        if scheme.lower() != "basic":
            return scheme.lower()[:20] or "-"
        try:
            decoded = base64.b64decode(value.strip(), validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            return "-"
        return decoded.partition(":")[0][:64] or "-"


def _same(given: str, expected: str) -> bool:
    return hmac.compare_digest(given.encode(), expected.encode())


def check_bind(host: str, credentials: Credentials) -> None:
    """Refuse (ValueError, one line) to serve a non-loopback address without credentials."""
    if not is_loopback(host) and not credentials.configured:
        raise ValueError(
            f"refusing to serve the web admin on {host!r} without credentials: set "
            f"{ENV_USER} and {ENV_PASSWORD} (HTTP Basic) or {ENV_TOKEN} (bearer), or bind "
            "to 127.0.0.1"
        )


class Signer:
    """HMAC-signed cookie values. The key comes from ONTHEDOT_WEB_SECRET (set it when several
    processes serve the admin behind one address) or is random per process."""

    def __init__(self, secret: str | bytes | None = None) -> None:
        raw = secret if secret is not None else os.environ.get(ENV_SECRET)
        if raw is None:
            raw = secrets.token_bytes(32)
        self.key = hashlib.sha256(raw.encode() if isinstance(raw, str) else raw).digest()

    def _mac(self, purpose: str, value: str) -> str:
        mac = hmac.new(self.key, f"{purpose}:{value}".encode(), hashlib.sha256)
        return base64.urlsafe_b64encode(mac.digest()).decode().rstrip("=")

    def sign(self, purpose: str, value: str) -> str:
        return f"{value}.{self._mac(purpose, value)}"

    def unsign(self, purpose: str, signed: str | None) -> str | None:
        if not signed or len(signed) > 4096:
            return None
        value, _, mac = signed.rpartition(".")
        if not value or not hmac.compare_digest(mac, self._mac(purpose, value)):
            return None
        return value

    # -- CSRF -------------------------------------------------------------------------------
    def csrf_token(self, cookie: str | None) -> tuple[str, bool]:
        """The session's CSRF token from its cookie, or a new one (then True: set the cookie)."""
        token = self.unsign("csrf", cookie)
        if token is not None:
            return token, False
        return secrets.token_urlsafe(24), True

    def csrf_ok(self, cookie: str | None, submitted: str | None) -> bool:
        token = self.unsign("csrf", cookie)
        return bool(token and submitted and hmac.compare_digest(token, submitted))

    # -- flash messages ---------------------------------------------------------------------
    def flash(self, message: str, kind: str) -> str:
        data = json.dumps({"m": message[:2000], "k": kind}).encode()
        return self.sign("flash", base64.urlsafe_b64encode(data).decode().rstrip("="))

    def read_flash(self, cookie: str | None) -> dict[str, str] | None:
        value = self.unsign("flash", cookie)
        if value is None:
            return None
        try:
            data = json.loads(base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)))
        except (binascii.Error, ValueError):
            return None
        if not isinstance(data, dict):
            return None
        return {"message": str(data.get("m", "")), "kind": str(data.get("k", "ok"))}


def cross_site(headers: Mapping[str, str]) -> bool:
    """A browser says this request comes from another site (Fetch Metadata)."""
    return headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none")


class GuardMiddleware:
    """Every response gets the security headers; a Host not served is refused (400); requests
    need credentials when configured (wrong ones counted per client: 429 after too many); the
    metrics token reads `GET /metrics` only; an unsafe request from another origin is refused
    (403); read-only mode answers 403 to anything but GET and HEAD."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        credentials: Credentials,
        read_only: bool,
        static_prefix: str,
        hosts: HostRule | None = None,
        limiter: LoginLimiter | None = None,
        emit: Callable[[Event], None] | None = None,
    ) -> None:
        self.app = app
        self.credentials = credentials
        self.read_only = read_only
        self.static_prefix = static_prefix
        self.hosts = hosts or HostRule(())  # loopback and the arrival address only
        self.limiter = limiter or LoginLimiter()
        self.emit = emit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        root, path = scope.get("root_path", ""), scope.get("path", "")
        static = path.startswith(root + self.static_prefix)
        safe = scope.get("method") in ("GET", "HEAD")

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {k.lower() for k, _ in headers}
                headers += [(k, v) for k, v in SECURITY_HEADERS if k not in present]
                if not static and b"cache-control" not in present:
                    headers.append((b"cache-control", b"no-store"))
                message = {**message, "headers": headers}
            await send(message)

        refused = self.hosts.refuses(header(scope, b"host"), scope)
        if refused:
            await _plain(send_with_headers, 400, refused, [])
            return
        if self.credentials.configured:
            denied = self._authenticate(scope, safe and path == root + "/metrics")
            if denied is not None:
                status, text, headers = denied
                await _plain(send_with_headers, status, text, headers)
                return
        if self.read_only and not safe:
            await _plain(send_with_headers, 403, "read-only: actions are disabled", [])
            return
        if not safe:
            cross = self.hosts.origin_refused(scope)
            if cross:
                await _plain(send_with_headers, 403, cross, [])
                return
        await self.app(scope, receive, send_with_headers)

    def _authenticate(
        self, scope: Scope, metrics: bool
    ) -> tuple[int, str, list[tuple[bytes, bytes]]] | None:
        """None when the request may go on (the user set in the scope), else the refusal."""
        client = str((scope.get("client") or ("-",))[0])
        given = header(scope, b"authorization")
        account = Credentials.claimed_user(given) if given else None
        wait = self.limiter.retry_after(client, account)
        if wait:
            return (
                429,
                "too many failed logins: try again later",
                [(b"retry-after", str(wait).encode())],
            )
        user = self.credentials.authenticate(given)
        if user is not None:
            self.limiter.succeeded(client)
            scope[USER_SCOPE_KEY] = user
            return None
        if self.credentials.scrapes(given):
            if metrics:
                scope[USER_SCOPE_KEY] = METRICS_USER
                return None
            return 403, "the metrics token reads GET /metrics only", []
        if given:  # wrong credentials (a request without any is not a guess)
            failure = self.limiter.failed(client, account or "-")
            if self.emit is not None:
                self.emit(
                    WebLoginFailed(
                        client=client,
                        user=account or "-",
                        failures=failure.failures,
                        blocked_for=failure.blocked_for,
                        blocked=failure.blocked,
                    )
                )
        return 401, "authentication required", self._challenge()

    def _challenge(self) -> list[tuple[bytes, bytes]]:
        if self.credentials.user:
            return [(b"www-authenticate", b'Basic realm="onthedot", charset="UTF-8"')]
        return [(b"www-authenticate", b'Bearer realm="onthedot"')]


async def _plain(send: Send, status: int, text: str, headers: list[tuple[bytes, bytes]]) -> None:
    body = (text + "\n").encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
