"""Shared fixtures: real databases only (a SQLite file, and PostgreSQL in a schema of its own).

PostgreSQL tests skip when no server answers, except under CI=true where they fail: CI must
prove both backends.
"""

from __future__ import annotations

import importlib.util
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import psycopg
import pytest

from onthedot import App

PG_ADMIN_URL = os.environ.get(
    "ONTHEDOT_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/postgres"
)
PG_TEST_DB = "onthedot_tests"
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")

# The optional integrations' test modules skip without their framework; CI installs every
# extra (`pip install -e ".[dev]"`), so there a missing one is a broken install, not a skip.
CI_REQUIRED_MODULES = (
    "django",
    "django_tasks",
    "fastapi",
    "celery",
    "yaml",
    "prometheus_client",
    "opentelemetry.sdk",
    "playwright",
)


# The fast lane (`python -m pytest -m "not slow" -n 4`, CONTRIBUTING.md) leaves out what is
# marked `slow`: these folders whole (crash/outage torture with private clusters and real
# processes, and the real-browser tests), plus the tests marked one by one.
SLOW_FOLDERS = ("torture", "e2e")
TESTS = Path(__file__).resolve().parent


def pytest_itemcollected(item: pytest.Item) -> None:
    """Mark the slow folders `slow` (the fast lane leaves them out)."""
    path = Path(str(item.path)).resolve()
    if path.is_relative_to(TESTS):
        parts = path.relative_to(TESTS).parts
        if parts and parts[0] in SLOW_FOLDERS:
            item.add_marker(pytest.mark.slow)


def pytest_configure(config: pytest.Config) -> None:
    if not IN_CI:
        return
    missing = [m for m in CI_REQUIRED_MODULES if importlib.util.find_spec(m) is None]
    if missing:
        raise pytest.UsageError(
            f"CI=true needs {', '.join(missing)} (install the dev extra: pip install -e '.[dev]')"
        )


_pg_error: str | None = None
_pg_base: str | None = None


def _pg_base_url() -> str:
    """URL of the test database, created on first use; skip (or fail in CI) without a server."""
    global _pg_error, _pg_base
    if _pg_base is None and _pg_error is None:
        try:
            with psycopg.connect(PG_ADMIN_URL, autocommit=True, connect_timeout=3) as conn:
                exists = conn.execute(
                    "SELECT 1 FROM pg_database WHERE datname = %s", (PG_TEST_DB,)
                ).fetchone()
                if not exists:
                    try:
                        conn.execute(f'CREATE DATABASE "{PG_TEST_DB}"')
                    except psycopg.errors.DuplicateDatabase:
                        pass
            base, _, _ = PG_ADMIN_URL.rpartition("/")
            _pg_base = f"{base}/{PG_TEST_DB}"
        except psycopg.OperationalError as exc:
            _pg_error = str(exc).strip().splitlines()[0]
    if _pg_base is None:
        message = f"PostgreSQL not available at {PG_ADMIN_URL}: {_pg_error}"
        if IN_CI:
            pytest.fail(message + " (required under CI=true)")
        pytest.skip(message)
    return _pg_base


def new_pg_schema_url() -> tuple[str, str]:
    """A fresh schema in the test database, and a URL whose search_path points at it."""
    base = _pg_base_url()
    schema = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    return f"{base}?options={quote(f'-c search_path={schema}')}", schema


def drop_pg_schema(schema: str) -> None:
    base = _pg_base_url()
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.fixture
def pg_url() -> Iterator[str]:
    url, schema = new_pg_schema_url()
    yield url
    drop_pg_schema(schema)


@pytest.fixture
def pg_app(pg_url: str) -> Iterator[App]:
    """A migrated App on a fresh PostgreSQL schema."""
    application = App(pg_url, log_events=False)
    application.migrate()
    yield application
    application.close()


@pytest.fixture
def sqlite_url(tmp_path: object) -> str:
    return f"sqlite:///{tmp_path}/onthedot.db"


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request: pytest.FixtureRequest, tmp_path: object) -> Iterator[str]:
    """Every test using this runs on both backends."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/onthedot.db"
        return
    url, schema = new_pg_schema_url()
    yield url
    drop_pg_schema(schema)


@pytest.fixture
def app(db_url: str) -> Iterator[App]:
    """A migrated app on each backend, with event logging off (tests subscribe explicitly)."""
    application = App(db_url, log_events=False, lease=2.0)
    application.migrate()
    yield application
    application.close()


@pytest.fixture(scope="session")
def pgbouncer_db() -> Iterator[tuple[object, str]]:
    """A PgBouncer in transaction mode in front of the test server, and a database of this
    session's own behind it (tests/pgbouncer.py); skips without pgbouncer (fails in CI)."""
    from urllib.parse import urlsplit

    from tests.pgbouncer import PgBouncer, pgbouncer_or_skip

    pgbouncer_or_skip()
    base = _pg_base_url()
    name = f"onthedot_pgb_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    parts = urlsplit(base)
    bouncer = PgBouncer(parts.hostname or "127.0.0.1", parts.port or 5432)
    try:
        yield bouncer, name
    finally:
        bouncer.stop()
        with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def pgbouncer_url(pgbouncer_db: tuple[object, str], *, direct: bool = True) -> str:
    """A fresh, empty `public` schema in the PgBouncer session's database, and the URL that
    reaches it through PgBouncer (`pooler=transaction`, with a `direct_url` for LISTEN and
    migrations unless `direct=False`)."""
    from tests.pgbouncer import PgBouncer

    bouncer, name = pgbouncer_db
    assert isinstance(bouncer, PgBouncer)
    base, _, _ = PG_ADMIN_URL.rpartition("/")
    with psycopg.connect(f"{base}/{name}", autocommit=True) as conn:
        conn.execute("DROP SCHEMA IF EXISTS public CASCADE")
        conn.execute("CREATE SCHEMA public")
    return bouncer.url(name, f"direct_url={quote(f'{base}/{name}', safe='')}" if direct else "")
