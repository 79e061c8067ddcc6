"""Which Host and Origin the web admin answers: loopback names, the address a connection
arrived at and an allow-list, against DNS rebinding (a hostile name resolving to this
machine) and cross-origin posts."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit

from starlette.types import Scope

from onthedot.addresses import is_loopback as is_loopback  # the rule, written once there

ENV_ALLOWED_HOSTS = "ONTHEDOT_WEB_ALLOWED_HOSTS"
ANY_HOST = "*"


def host_name(value: str) -> str:
    """The host of a Host header or netloc, lowercased, without its port or a final dot."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    if value.count(":") == 1:
        value = value.partition(":")[0]
    return value.rstrip(".")


def served_hosts(bind: str, environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The Host names `onthedot web` answers besides loopback names: the address it is bound
    to (unless a wildcard) and $ONTHEDOT_WEB_ALLOWED_HOSTS (comma-separated)."""
    found = list(allowed_from_env(environ) or ())
    if bind and host_name(bind) not in ("0.0.0.0", "::", ""):
        found.append(host_name(bind))
    return tuple(found)


def allowed_from_env(environ: Mapping[str, str] | None = None) -> tuple[str, ...] | None:
    raw = (os.environ if environ is None else environ).get(ENV_ALLOWED_HOSTS)
    if raw is None or not raw.strip():
        return None
    return tuple(host_name(h) if h.strip() != ANY_HOST else ANY_HOST for h in raw.split(","))


class HostRule:
    """Which Host headers are answered: loopback names, the address the connection arrived
    at, and the allowed names; `*` among them turns the check off. A browser led to this
    server by a hostile DNS name (DNS rebinding) sends that name and gets a 400."""

    def __init__(self, allowed: Iterable[str]) -> None:
        self.names = frozenset(host_name(h) if h != ANY_HOST else ANY_HOST for h in allowed)
        self.any = ANY_HOST in self.names

    def refuses(self, host: str | None, scope: Scope) -> str | None:
        """Why this request's Host is refused, or None."""
        if self.any or host is None:  # HTTP/1.0 without Host: not a browser's rebinding
            return None
        name = host_name(host)
        server = scope.get("server")
        if is_loopback(name) or name in self.names or (server and name == host_name(server[0])):
            return None
        return (
            f"host {name[:100]!r} is not served here: add it to {ENV_ALLOWED_HOSTS} "
            "(or asgi(..., allowed_hosts=...))"
        )

    def origin_refused(self, headers: Scope) -> str | None:
        """Why an unsafe request's Origin (else Referer) is refused: it must name exactly the
        Host asked for (host and port; a proxy must pass Host through). Without either header
        (not a browser) the CSRF token decides."""
        host = header(headers, b"host")
        source = header(headers, b"origin") or header(headers, b"referer")
        if source is None:
            return None
        if source.strip() == "null":
            return "cross-origin request refused: Origin null"
        try:
            parts = urlsplit(source.strip())
            netloc = _without_default_port(parts.netloc.lower(), parts.scheme.lower())
        except ValueError:
            return "cross-origin request refused: malformed Origin"
        if host is None or netloc == _without_default_port(host.strip().lower(), None):
            return None
        return f"cross-origin request refused: {netloc[:100]!r} is not this admin's host"


def _without_default_port(netloc: str, scheme: str | None) -> str:
    for port, schemes in ((":80", ("http", None)), (":443", ("https", None))):
        if netloc.endswith(port) and scheme in schemes:
            return netloc[: -len(port)]
    return netloc


def header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None
