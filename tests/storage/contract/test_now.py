"""The storage's now (`db_now`): the fixed time of its clock when it has one (a test's
ManualClock), else the database's clock; callers no longer re-derive it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from onthedot.storage.interface import Storage
from tests.storage.contract.conftest import T0, at


def test_db_now_is_the_fixed_clock_when_there_is_one(storage: Storage) -> None:
    assert storage.at(T0).db_now() == T0
    assert storage.at(at(90)).db_now() == T0 + timedelta(seconds=90)


def test_db_now_without_a_fixed_clock_is_the_database_clock(storage: Storage) -> None:
    before = datetime.now(UTC) - timedelta(minutes=5)
    now = storage.at(None).db_now()
    assert now.tzinfo is not None and now > before and now != T0
