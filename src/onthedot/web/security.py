"""What keeps the web admin safe to expose: credentials (HTTP Basic or a bearer token), the
loopback rule, read-only mode, CSRF tokens and the security headers on every response."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import ipaddress
import json
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass

from starlette.types import ASGIApp, Message, Receive, Scope, Send

ENV_USER = "ONTHEDOT_WEB_USER"
ENV_PASSWORD = "ONTHEDOT_WEB_PASSWORD"
ENV_TOKEN = "ONTHEDOT_WEB_TOKEN"
ENV_SECRET = "ONTHEDOT_WEB_SECRET"

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
    """Who may use the admin: a Basic user and password, a bearer token, or both."""

    user: str | None = None
    password: str | None = None
    token: str | None = None

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


def _same(given: str, expected: str) -> bool:
    return hmac.compare_digest(given.encode(), expected.encode())


def is_loopback(host: str) -> bool:
    """True for addresses only this machine can reach (127.0.0.0/8, ::1, localhost)."""
    name = host.strip().strip("[]").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


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
    """Every response gets the security headers; requests need credentials when configured;
    read-only mode answers 403 to anything but GET and HEAD."""

    def __init__(
        self, app: ASGIApp, *, credentials: Credentials, read_only: bool, static_prefix: str
    ) -> None:
        self.app = app
        self.credentials = credentials
        self.read_only = read_only
        self.static_prefix = static_prefix

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")
        static = path.startswith(scope.get("root_path", "") + self.static_prefix)

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {k.lower() for k, _ in headers}
                headers += [(k, v) for k, v in SECURITY_HEADERS if k not in present]
                if not static and b"cache-control" not in present:
                    headers.append((b"cache-control", b"no-store"))
                message = {**message, "headers": headers}
            await send(message)

        if self.credentials.configured:
            user = self.credentials.authenticate(_header(scope, b"authorization"))
            if user is None:
                await _plain(send_with_headers, 401, "authentication required", self._challenge())
                return
            scope[USER_SCOPE_KEY] = user
        if self.read_only and scope.get("method") not in ("GET", "HEAD"):
            await _plain(send_with_headers, 403, "read-only: actions are disabled", [])
            return
        await self.app(scope, receive, send_with_headers)

    def _challenge(self) -> list[tuple[bytes, bytes]]:
        if self.credentials.user:
            return [(b"www-authenticate", b'Basic realm="onthedot", charset="UTF-8"')]
        return [(b"www-authenticate", b'Bearer realm="onthedot"')]


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


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
