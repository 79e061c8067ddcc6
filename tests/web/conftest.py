"""Fixtures of the web admin's HTTP tests: the `app` fixture (SQLite and PostgreSQL) served by
`onthedot.web.asgi` through Starlette's test client."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from onthedot import App
from onthedot.web import asgi
from onthedot.web.security import Credentials
from tests.web.helpers import TestClient

MakeClient = Callable[..., TestClient]


def register_jobs(app: App) -> None:
    """Jobs the web tests enqueue: one that returns its argument, one that fails."""

    @app.job(name="echo", queue="default", runtime=True)
    def echo(value: Any = None) -> Any:
        return value

    @app.job(name="explode", max_attempts=1)
    def explode(message: str = "boom") -> None:
        raise RuntimeError(message)


@pytest.fixture
def make_client(app: App) -> Iterator[MakeClient]:
    """Build a test client over the admin of `app`; options go to `asgi` (no credentials
    unless given, whatever the environment says)."""
    clients: list[TestClient] = []

    def make(**options: Any) -> TestClient:
        options.setdefault("credentials", Credentials())
        options.setdefault("secret_key", "test-secret")
        client = TestClient(asgi(app, **options), base_url="http://127.0.0.1")
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


@pytest.fixture
def client(app: App, make_client: MakeClient) -> TestClient:
    register_jobs(app)
    return make_client()
