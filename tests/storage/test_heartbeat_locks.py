"""The heartbeat never waits for a row lock (PostgreSQL).

An outcome batch (the completer) and the heartbeat both update the rows of the jobs a worker
holds, each in its own transaction and in its own order; when the heartbeat waited for the rows
the batch held, and the batch for rows the heartbeat held, PostgreSQL broke the cycle with
`deadlock detected` (seen with 32 worker processes, tests/torture/test_many_processes.py). The
heartbeat now skips a locked row and extends it at the next beat.
"""

from __future__ import annotations

import threading
from datetime import datetime

import psycopg
import pytest

from onthedot import App
from onthedot.storage.interface import Renewal, Storage
from tests.storage.contract.conftest import T0, at, new_job


def _lease(url: str, job_id: int) -> datetime:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT lease_until FROM onthedot_jobs WHERE id = %s", (job_id,))
        value = row.fetchone()
    assert value is not None
    return value[0]  # type: ignore[no-any-return]


@pytest.mark.parametrize("held", [True, False], ids=["held-ids", "all-running"])
def test_heartbeat_skips_a_row_another_transaction_holds(
    pg_app: App, pg_url: str, held: bool
) -> None:
    storage: Storage = pg_app.storage
    locked, free = storage.at(T0).enqueue([new_job("h"), new_job("h")])
    storage.at(T0).claim_jobs("w1", "default", 2, 10)  # leased until T0+10
    with psycopg.connect(pg_url) as other:  # a transaction holding one of the rows
        other.execute("SELECT id FROM onthedot_jobs WHERE id = %s FOR UPDATE", (locked,))
        beat: list[Renewal] = []
        ids = [locked, free] if held else None
        thread = threading.Thread(
            target=lambda: beat.append(storage.at(at(5)).heartbeat("w1", 10, held=ids)),
            daemon=True,
        )
        thread.start()
        thread.join(10)
        assert not thread.is_alive(), "the heartbeat waited for a row another transaction holds"
        other.rollback()
    assert [b.renewed for b in beat] == [{free}]  # the locked row: not renewed
    assert _lease(pg_url, free) == at(15)
    assert _lease(pg_url, locked) == at(10)  # skipped: the next beat extends it
    storage.at(at(6)).heartbeat("w1", 10, held=ids)
    assert _lease(pg_url, locked) == at(16)
