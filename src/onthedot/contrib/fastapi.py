"""onthedot in a FastAPI or Starlette app: a lifespan that opens onthedot's connections with
the app and closes them after it, and the web admin mounted under a path behind the host app's
own authentication. Install with `pip install "onthedot[fastapi]"`. See docs/fastapi.md.

```python
jobs = onthedot.App("postgresql://app@db/app")
api = FastAPI(lifespan=lifespan(jobs))
api.add_middleware(SessionMiddleware, secret_key=...)   # for request.session in the guard
mount_admin(api, jobs, "/admin/jobs", guard=require_staff)

@api.post("/signup")
async def signup(user: User) -> dict:
    return {"job": await send_welcome.aenqueue(user.id)}
```
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from onthedot.app import App

# A check run before every request to the admin: it returns (or awaits) None to let the
# request through and raises starlette's (or FastAPI's) HTTPException to refuse it.
Guard = Callable[[Request], Awaitable[None] | None]
Lifespan = Callable[[Any], contextlib.AbstractAsyncContextManager[Any]]


def lifespan(app: App, inner: Lifespan | None = None) -> Lifespan:
    """A lifespan for `FastAPI(lifespan=...)` / `Starlette(lifespan=...)`: at startup it opens
    the storage and checks the schema (a PostgreSQL database not migrated stops the startup
    with `SchemaOutOfDate`); at shutdown it closes the pool. `inner` is your own lifespan, run
    inside it (its state is passed through)."""

    @contextlib.asynccontextmanager
    async def run(asgi_app: Any) -> AsyncIterator[Any]:
        await asyncio.to_thread(app.check_schema)
        try:
            if inner is None:
                yield None
            else:
                async with inner(asgi_app) as state:
                    yield state
        finally:
            await asyncio.to_thread(app.close)

    return run


class GuardedApp:
    """An ASGI app that lets an HTTP request through to `inner` only when `guard` accepts it."""

    def __init__(self, inner: ASGIApp, guard: Guard) -> None:
        self.inner = inner
        self.guard = guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            try:
                outcome = self.guard(Request(scope, receive))
                if inspect.isawaitable(outcome):
                    await outcome
            except HTTPException as exc:
                response = PlainTextResponse(
                    str(exc.detail), status_code=exc.status_code, headers=exc.headers
                )
                await response(scope, receive, send)
                return
        await self.inner(scope, receive, send)


def mount_admin(
    host: Any, app: App, path: str = "/jobs", *, guard: Guard | None = None, **options: Any
) -> None:
    """Mount onthedot's web admin on the FastAPI/Starlette app `host` at `path`. `guard` runs
    before each request (your own auth: it sees the host middleware's `request.user` and
    session); `options` go to `onthedot.web.asgi` (`read_only`, `credentials`, ...).
    Without a guard or credentials the admin is open to whoever reaches `path`."""
    from onthedot.web import asgi

    admin: ASGIApp = asgi(app, **options)
    host.mount(path, GuardedApp(admin, guard) if guard is not None else admin)
