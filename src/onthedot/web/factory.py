"""The web admin's app factory: `asgi(app)` builds the Starlette application (routes, static
files, the security middleware and the error pages)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles

from onthedot.web.handlers import WebState, http_error
from onthedot.web.hosts import HostRule, allowed_from_env
from onthedot.web.rendering import build_environment
from onthedot.web.routes_health import routes as health_routes
from onthedot.web.routes_jobs import routes as job_routes
from onthedot.web.routes_limits import routes as limit_routes
from onthedot.web.routes_overview import routes as overview_routes
from onthedot.web.routes_schedules import routes as schedule_routes
from onthedot.web.routes_workers import routes as worker_routes
from onthedot.web.security import Credentials, GuardMiddleware, Signer

if TYPE_CHECKING:
    from onthedot.app import App

STATIC = Path(__file__).parent / "static"


def asgi(
    app: App,
    *,
    read_only: bool = False,
    credentials: Credentials | None = None,
    secret_key: str | bytes | None = None,
    late_after: float = 60.0,
    refresh: int = 10,
    allowed_hosts: Iterable[str] | None = None,
) -> Starlette:
    """The web admin of `app` as an ASGI application, to serve (`onthedot web`) or to mount
    inside your own Starlette or FastAPI app.

    - `read_only`: hide every action and answer 403 to every POST.
    - `credentials`: who may use it (HTTP Basic user and password, and/or a bearer token);
      default: $ONTHEDOT_WEB_USER / $ONTHEDOT_WEB_PASSWORD / $ONTHEDOT_WEB_TOKEN. With none
      set, no authentication: protect the mount point yourself, or use `onthedot web`, which
      refuses a non-loopback address without them.
    - `secret_key`: signs the CSRF and flash cookies (default $ONTHEDOT_WEB_SECRET, else
      random per process: set it when several processes serve the admin behind one address).
    - `late_after`: seconds past due before an active schedule is shown as late.
    - `refresh`: seconds between live refreshes of the overview and workers pages (0: off).
    - `allowed_hosts`: Host names answered besides loopback names and the address a request
      arrived at; any other gets a 400 (DNS rebinding). Default $ONTHEDOT_WEB_ALLOWED_HOSTS,
      else none: name the names your app is served under, or pass `["*"]` when your app
      checks Host itself (Starlette's `TrustedHostMiddleware`).
    """
    creds = credentials if credentials is not None else Credentials.from_env()
    state = WebState(
        app=app,
        env=build_environment(),
        signer=Signer(secret_key),
        read_only=read_only,
        late_after=late_after,
        refresh=refresh,
    )
    site = Starlette(
        routes=[
            *overview_routes,
            *job_routes,
            *health_routes,
            *schedule_routes,
            *worker_routes,
            *limit_routes,
            Mount("/static", StaticFiles(directory=STATIC), name="static"),
        ],
        middleware=[
            Middleware(
                GuardMiddleware,
                credentials=creds,
                read_only=read_only,
                static_prefix="/static/",
                hosts=HostRule(
                    allowed_hosts if allowed_hosts is not None else allowed_from_env() or ()
                ),
                emit=app.events.emit,
            )
        ],
        exception_handlers={HTTPException: http_error, Exception: http_error},
    )
    site.state.onthedot = state
    return site
