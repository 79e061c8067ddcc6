"""How a request becomes a response: `page` (GET) and `action` (POST) wrap a plain function of
a `Page`, run it in a thread (the App's verbs block), and turn every failure into a clean page:
bad input 400, unknown object 404, a refused operation a flash message, anything else 500."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from jinja2 import Environment
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from onthedot.domain.errors import DatabaseUnavailable, OnthedotError, SchemaOutOfDate
from onthedot.domain.fields import printable
from onthedot.web.forms import BadInput, NotFound, local_path
from onthedot.web.security import (
    CSRF_COOKIE,
    CSRF_FIELD,
    CSRF_HEADER,
    FLASH_COOKIE,
    USER_SCOPE_KEY,
    Signer,
    cross_site,
)
from onthedot.web.throughput import Throughput

# Set in the ASGI scope by a host framework that checks CSRF itself (the Django mount,
# `onthedot.contrib.django.admin`), after its check: {"token", "field", "header"} of its own
# CSRF. Only code in the process sets scope keys; a client cannot.
HOST_CSRF_KEY = "onthedot.host_csrf"

if TYPE_CHECKING:
    from onthedot.app import App

log = logging.getLogger("onthedot.web")
MAX_FORM_BYTES = 1_000_000
Handler = Callable[["Page"], Response]
Endpoint = Callable[[Request], Awaitable[Response]]


@dataclass(frozen=True, slots=True)
class WebState:
    """What every request needs, built once by `onthedot.web.asgi`."""

    app: App
    env: Environment
    signer: Signer
    read_only: bool
    late_after: float = 60.0  # seconds past its due time before a schedule counts as late
    refresh: int = 10  # seconds between live refreshes of the overview and workers pages
    throughput: Throughput = field(default_factory=Throughput)


class Page:
    """One request: the App, its input, and how to answer (render, redirect, flash)."""

    def __init__(
        self, request: Request, web: WebState, form: dict[str, str] | None, csrf: str
    ) -> None:
        self.request = request
        self.web = web
        self.app = web.app
        self.form = form or {}
        self.query = request.query_params
        self.root = str(request.scope.get("root_path", "")).rstrip("/")
        # The form field and header carrying the CSRF token: the admin's own, or those of the
        # framework it is mounted in when that framework checks CSRF (HOST_CSRF_KEY).
        host_csrf = request.scope.get(HOST_CSRF_KEY)
        self.csrf = host_csrf["token"] if host_csrf else csrf
        self.csrf_field = host_csrf["field"] if host_csrf else CSRF_FIELD
        self.csrf_header = host_csrf["header"] if host_csrf else "X-CSRF-Token"  # CSRF_HEADER
        self.read_only = web.read_only
        self.htmx = request.headers.get("hx-request") == "true"
        self.flash = web.signer.read_flash(request.cookies.get(FLASH_COOKIE))
        self.new_flash: str | None = None
        self.now: datetime = self.app.clock.now()
        self.back = local_path(self.form.get("next"), "/")

    @property
    def actor(self) -> str:
        user = self.request.scope.get(USER_SCOPE_KEY)
        return f"web:{user}" if user else "web"

    @property
    def here(self) -> str:
        """This page's path inside the admin, with its query string (for `next` fields)."""
        raw = self.request.scope.get("raw_path")
        path = raw.decode("latin-1") if raw else self.request.url.path
        if self.root and path.startswith(self.root):
            path = path[len(self.root) :] or "/"
        query = self.request.url.query
        return f"{path}?{query}" if query else path

    def url(self, path: str) -> str:
        return self.root + path

    def render(self, template: str, *, status: int = 200, **context: object) -> HTMLResponse:
        html = self.web.env.get_template(template).render(page=self, **context)
        return HTMLResponse(html, status_code=status)

    def redirect(self, path: str, message: str | None = None, *, error: bool = False) -> Response:
        if message:
            self.new_flash = self.web.signer.flash(message, "error" if error else "ok")
        return RedirectResponse(self.url(path), status_code=303)

    def notify(self, message: str, *, error: bool = False) -> None:
        """Show a message in this response (fragments: an out-of-band swap of the flash)."""
        self.flash = {"message": message, "kind": "error" if error else "ok"}


def page(fn: Handler) -> Endpoint:
    """A GET endpoint."""

    async def endpoint(request: Request) -> Response:
        return await _run(request, fn, None)

    endpoint.__name__ = fn.__name__
    return endpoint


def action(fn: Handler) -> Endpoint:
    """A POST endpoint: refused in read-only mode and without a valid CSRF token."""

    async def endpoint(request: Request) -> Response:
        web: WebState = request.app.state.onthedot
        if web.read_only:
            return _error_page(request, 403, "read-only: actions are disabled")
        length = request.headers.get("content-length")
        if length is None and "chunked" in request.headers.get("transfer-encoding", ""):
            return _error_page(request, 411, "a form needs a Content-Length")
        if length is not None and (not length.isdigit() or int(length) > MAX_FORM_BYTES):
            return _error_page(request, 413, "the form is too large")
        try:
            data = await request.form(max_files=0, max_fields=100)
        except Exception:  # malformed multipart or url-encoding: the client's fault
            return _error_page(request, 400, "the form could not be read")
        values: dict[str, str] = {}
        for key, value in data.multi_items():
            if isinstance(value, str):
                values.setdefault(key, value)
        submitted = values.get(CSRF_FIELD) or request.headers.get(CSRF_HEADER)
        cookie = request.cookies.get(CSRF_COOKIE)
        # Mounted in Django, Django's CsrfViewMiddleware has checked this POST already.
        host_checked = request.scope.get(HOST_CSRF_KEY) is not None
        if cross_site(request.headers) or not (
            host_checked or web.signer.csrf_ok(cookie, submitted)
        ):
            return _error_page(
                request, 403, "the form's security token is missing or stale: reload the page"
            )
        return await _run(request, fn, values)

    endpoint.__name__ = fn.__name__
    return endpoint


async def _run(request: Request, fn: Handler, form: dict[str, str] | None) -> Response:
    web: WebState = request.app.state.onthedot
    csrf, new_token = web.signer.csrf_token(request.cookies.get(CSRF_COOKIE))
    pg = Page(request, web, form, csrf)
    try:
        response = await run_in_threadpool(fn, pg)
    except BadInput as exc:
        response = _failure(pg, 400, str(exc))
    except NotFound as exc:
        response = _failure(pg, 404, str(exc) or "not found")
    except (DatabaseUnavailable, SchemaOutOfDate) as exc:
        response = _failure(pg, 503, _first_line(exc))
    except OnthedotError as exc:
        response = _refused(pg, form is not None, _first_line(exc))
    except Exception:
        log.exception("web admin: %s %s failed", request.method, printable(request.url.path))
        response = _failure(pg, 500, "internal error: the details are in the server's log")
    # HTTPS as the connection says, or as a proxy `onthedot web --forwarded-allow-ips` trusts
    # says (X-Forwarded-Proto): the cookies are then never sent over plain HTTP.
    secure = request.url.scheme == "https"
    cookie_path = pg.root or "/"
    if new_token:
        response.set_cookie(
            CSRF_COOKIE,
            web.signer.sign("csrf", csrf),
            path=cookie_path,
            httponly=True,
            samesite="lax",
            secure=secure,
        )
    if pg.new_flash:
        response.set_cookie(
            FLASH_COOKIE,
            pg.new_flash,
            path=cookie_path,
            httponly=True,
            samesite="lax",
            secure=secure,
        )
    elif request.cookies.get(FLASH_COOKIE) and isinstance(response, HTMLResponse):
        response.delete_cookie(
            FLASH_COOKIE, path=cookie_path, secure=secure, httponly=True, samesite="lax"
        )
    return response


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _refused(pg: Page, is_action: bool, message: str) -> Response:
    """An operation the App refused (a schedule not paused, a job already finished)."""
    if not is_action:
        return _failure(pg, 400, message)
    if pg.htmx:
        pg.notify(message, error=True)
        response = pg.render("_flash.html", oob=False)
        response.headers["HX-Retarget"] = "#flash"
        response.headers["HX-Reswap"] = "outerHTML"
        return response
    return pg.redirect(pg.back, message, error=True)


def _failure(pg: Page, status: int, message: str) -> Response:
    try:
        return pg.render("error.html", status=status, status_code=status, message=message)
    except Exception:  # the error page itself failed (say the database vanished mid-render)
        log.exception("web admin: the error page failed")
        return Response(f"{status}: {message}\n", status_code=status, media_type="text/plain")


def _error_page(request: Request, status: int, message: str) -> Response:
    web: WebState = request.app.state.onthedot
    csrf, _ = web.signer.csrf_token(request.cookies.get(CSRF_COOKIE))
    return _failure(Page(request, web, None, csrf), status, message)


async def http_error(request: Request, exc: Exception) -> Response:
    """Starlette's own errors (no such route, method not allowed) as our error page."""
    status = exc.status_code if isinstance(exc, HTTPException) else 500
    detail = exc.detail if isinstance(exc, HTTPException) else "internal error"
    response = _error_page(request, status, str(detail))
    if isinstance(exc, HTTPException) and exc.headers:
        response.headers.update(exc.headers)
    return response
