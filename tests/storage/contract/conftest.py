"""Helpers of the storage conformance suite: every test here runs on SQLite, on PostgreSQL and
on PostgreSQL through PgBouncer in transaction mode (`db_url` below; `app` of tests/conftest.py).

Time is driven explicitly: tests fix "now" with `storage.at(instant)` (the same storage at a
ManualClock's time) for every verb that depends on it, so no test depends on the wall clock or
sleeps.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timedelta
from typing import Any, TypeVar

import pytest

from onthedot import App, ManualClock
from onthedot.domain.jobs import Job, NewJob, Outcome, OutcomeKind
from onthedot.storage import open_storage
from onthedot.storage.interface import Storage
from tests.conftest import drop_pg_schema, new_pg_schema_url, pgbouncer_url
from tests.waiting import wait_for

T = TypeVar("T")

T0 = ManualClock().now()  # 2030-01-01T00:00:00Z: far from the wall clock on purpose


def new_job(name: str = "job", **fields: Any) -> NewJob:
    """A NewJob with empty arguments unless given."""
    fields.setdefault("args", [])
    fields.setdefault("kwargs", {})
    return NewJob(name=name, **fields)


def at(seconds: float) -> datetime:
    """T0 plus some seconds."""
    return T0 + timedelta(seconds=seconds)


def job(storage: Storage, job_id: int) -> Job:
    """The job, which must exist."""
    found = storage.get_job(job_id)
    assert found is not None, f"job {job_id} vanished"
    return found


def succeed(job_id: int, result: Any = None) -> Outcome:
    return Outcome(job_id=job_id, kind=OutcomeKind.SUCCEEDED, result=result)


def run_threads(n: int, target: Callable[[int], T], *, timeout: float = 60.0) -> list[T]:
    """Run `target(i)` in n threads released together; return results, re-raising failures."""
    barrier = threading.Barrier(n)
    results: list[Any] = [None] * n
    errors: list[BaseException] = []

    def body(i: int) -> None:
        try:
            barrier.wait(timeout)
            results[i] = target(i)
        except BaseException as exc:  # re-raised in the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=body, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
        assert not t.is_alive(), "a thread did not finish within the deadline"
    if errors:
        raise errors[0]
    return results


wait_until = wait_for  # the contract tests' name for it


@pytest.fixture(params=["sqlite", "postgres", "pgbouncer"])
def db_url(request: pytest.FixtureRequest, tmp_path: object) -> Iterator[str]:
    """The conformance suite's databases: SQLite, PostgreSQL, and PostgreSQL behind PgBouncer
    (pool_mode = transaction; `pooler=transaction` with a direct URL for LISTEN/migrate)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/onthedot.db"
    elif request.param == "postgres":
        url, schema = new_pg_schema_url()
        yield url
        drop_pg_schema(schema)
    else:
        yield pgbouncer_url(request.getfixturevalue("pgbouncer_db"))


@pytest.fixture
def storage(app: App) -> Storage:
    """The app's storage (migrated)."""
    return app.storage


@pytest.fixture
def clock(app: App) -> ManualClock:
    """A manual clock at T0 driving the app (enqueue's `delay`, `now` of the app's verbs)."""
    manual = ManualClock(T0)
    app.clock = manual
    return manual


@pytest.fixture
def other_storages(db_url: str, app: App) -> Iterator[Callable[[int], Sequence[Storage]]]:
    """Open n more storages on the same (migrated) database: separate connections, as separate
    worker processes would have."""
    opened: list[Storage] = []

    def make(n: int) -> Sequence[Storage]:
        fresh = [open_storage(db_url, pool_size=2) for _ in range(n)]
        opened.extend(fresh)
        return fresh

    yield make
    for s in opened:
        s.close()
