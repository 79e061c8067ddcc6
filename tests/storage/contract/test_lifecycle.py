"""Lifecycle verbs, called directly: ping, migrate, the clock views and wake-ups."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta

from onthedot.storage.interface import Storage
from tests.storage.contract.conftest import T0, at, job, new_job


def test_ping_and_migrate_on_first_use(storage: Storage) -> None:
    storage.ping()
    # Migrated already: nothing to do, on every backend (and never anything on PostgreSQL).
    assert storage.migrate(first_use=True) == []
    assert storage.migrate() == []
    current, latest = storage.schema_version()
    assert current == latest >= 1


def test_at_fixes_now_and_shares_the_connections(storage: Storage) -> None:
    (fixed,) = storage.at(T0).enqueue([new_job("a")])
    assert job(storage, fixed).created_at == T0
    assert storage.at(at(5)).at(at(9)).queue_stats()[0].queued == 1
    (live,) = storage.at(None).enqueue([new_job("b")])
    created = job(storage, live).created_at
    assert abs(created - datetime.now(UTC)) < timedelta(minutes=5)
    assert storage.get_job(live) is not None  # the view wrote through the same database


def test_wakeup_wakes_on_jobs_from_another_connection(
    storage: Storage, other_storages: Callable[[int], Sequence[Storage]]
) -> None:
    (other,) = other_storages(1)
    wakeup = storage.wakeup({"default"})
    wakeup.start()
    try:
        wakeup.wait(5 if storage.backend == "postgresql" else 0.2)  # the listener is ready
        assert not wakeup.wait(0.2)  # nothing happened: no wake-up
        other.enqueue([new_job("w")])
        assert wakeup.wait(30)
        wakeup.wake()  # and from this process, at once
        assert wakeup.wait(0)
    finally:
        wakeup.stop()


def test_a_view_of_an_in_memory_sqlite_shares_its_database() -> None:
    from onthedot.storage import open_storage

    memory = open_storage("sqlite:///:memory:")
    try:
        view = memory.at(T0)  # before any other use: still the same database
        (job_id,) = view.enqueue([new_job("m")])
        assert job(memory, job_id).created_at == T0
    finally:
        memory.close()
