"""onthedot's web admin inside a Django project, behind Django's own login and CSRF.

```python
# myproject/urls.py
urlpatterns = [
    path("admin/onthedot/", include("onthedot.contrib.django.urls")),
    path("admin/", admin.site.urls),
]
```

A Django view hands each request to the admin's ASGI app (`onthedot.web.asgi`) and returns its
answer, so it works under `manage.py runserver` (WSGI) as under an ASGI server. Django decides
who gets in: an anonymous visitor is sent to the login page, a signed-in user needs
`is_staff` (or the permission `ONTHEDOT["ADMIN_PERMISSION"]` names) and is refused (403)
otherwise. Django's `CsrfViewMiddleware` checks every POST: the admin's forms and htmx requests
carry Django's token (`csrfmiddlewaretoken`, `X-CSRFToken`), and the admin skips its own check.
Django's ALLOWED_HOSTS has checked the Host, so the admin answers any. Operator actions are
audited as `web:<username>`.
"""

from __future__ import annotations

import threading
from http.cookies import SimpleCookie
from typing import Any

from asgiref.sync import async_to_sync
from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.http.request import RawPostDataException
from django.middleware.csrf import get_token
from django.urls import NoReverseMatch, reverse

from onthedot.contrib.django.runtime import get_app

_lock = threading.Lock()
_site: Any = None


def admin_site() -> Any:
    """The admin's ASGI app for this process's App (built once): no credentials of its own
    (Django's login decides), any Host (Django's ALLOWED_HOSTS decides), read-only when
    `ONTHEDOT["ADMIN_READ_ONLY"]` says so."""
    global _site
    with _lock:
        if _site is None:
            from onthedot.web import Credentials, asgi

            options = getattr(settings, "ONTHEDOT", {}) or {}
            _site = asgi(
                get_app(),
                read_only=bool(options.get("ADMIN_READ_ONLY", False)),
                credentials=Credentials(),
                allowed_hosts=["*"],
            )
        return _site


def allowed(user: Any) -> bool:
    """Staff, or the holders of `ONTHEDOT["ADMIN_PERMISSION"]` when it names one."""
    if not (user.is_authenticated and user.is_active):
        return False
    permission = (getattr(settings, "ONTHEDOT", {}) or {}).get("ADMIN_PERMISSION")
    return bool(user.has_perm(permission)) if permission else bool(user.is_staff)


def login_url() -> str:
    """Django admin's login page when the admin is installed, else `settings.LOGIN_URL`."""
    try:
        return str(reverse("admin:login"))
    except NoReverseMatch:
        return str(settings.LOGIN_URL)


def admin_view(request: HttpRequest, path: str = "") -> HttpResponse:
    """Every page and action of the admin, under the URL this view is included at."""
    if not request.user.is_authenticated:
        return redirect_to_login(request.get_full_path(), login_url())
    if not allowed(request.user):
        raise PermissionDenied("onthedot's admin is for staff")
    if request.method not in ("GET", "HEAD", "POST"):
        return HttpResponse(status=405)
    root = request.path[: len(request.path) - len(path)].rstrip("/")
    scope = _scope(request, root)
    body = _body(request, scope) if request.method == "POST" else b""
    status, headers, content = async_to_sync(_call)(admin_site(), scope, body)
    return _response(status, headers, content)


def _scope(request: HttpRequest, root: str) -> dict[str, Any]:
    """The ASGI scope of `request` for the admin mounted at `root`."""
    meta = request.META
    headers = [
        (key[5:].replace("_", "-").lower().encode("latin-1"), str(value).encode("latin-1"))
        for key, value in meta.items()
        if key.startswith("HTTP_")
    ]
    for key, name in (("CONTENT_TYPE", b"content-type"), ("CONTENT_LENGTH", b"content-length")):
        if meta.get(key):
            headers.append((name, str(meta[key]).encode("latin-1")))
    port = int(request.get_port() or 0)
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": request.method,
        "scheme": request.scheme,
        "path": request.path,
        "raw_path": request.path.encode("utf-8"),
        "root_path": root,
        "query_string": meta.get("QUERY_STRING", "").encode("latin-1"),
        "headers": headers,
        "client": (meta.get("REMOTE_ADDR") or "127.0.0.1", 0),
        "server": (request.get_host().rsplit(":", 1)[0], port),
        "onthedot.user": request.user.get_username(),
        "onthedot.host_csrf": {
            "token": get_token(request),
            "field": "csrfmiddlewaretoken",
            "header": "X-CSRFToken",
        },
    }


def _body(request: HttpRequest, scope: dict[str, Any]) -> bytes:
    """The form as the admin reads it. A multipart form Django has already parsed (its CSRF
    check reads the POST data) is passed on url-encoded: the admin's forms hold no files."""
    try:
        return bytes(request.body)
    except RawPostDataException:
        body: bytes = request.POST.urlencode().encode("ascii")
        scope["headers"] = [
            (k, v) for k, v in scope["headers"] if k not in (b"content-type", b"content-length")
        ] + [
            (b"content-type", b"application/x-www-form-urlencoded"),
            (b"content-length", str(len(body)).encode("ascii")),
        ]
        return body


async def _call(site: Any, scope: dict[str, Any], body: bytes) -> tuple[int, list[Any], bytes]:
    """Run one request through the ASGI app; its status, headers and whole body."""
    sent = False
    status = 500
    headers: list[tuple[bytes, bytes]] = []
    chunks: list[bytes] = []

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
            headers.extend(message.get("headers", []))
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    await site(scope, receive, send)
    return status, headers, b"".join(chunks)


def _response(status: int, headers: list[tuple[bytes, bytes]], content: bytes) -> HttpResponse:
    response = HttpResponse(content, status=status)
    for raw_name, raw_value in headers:
        name, value = raw_name.decode("latin-1"), raw_value.decode("latin-1")
        if name.lower() == "set-cookie":
            cookie: SimpleCookie = SimpleCookie()
            cookie.load(value)
            response.cookies.update(cookie)
        elif name.lower() != "content-length":
            response[name] = value
    return response
