"""The claims are planned afresh on every call (PostgreSQL): a prepared claim would keep, after
five runs, a generic plan made with the statistics of that moment, and one made while the jobs
table looked empty (a new install, a pruned table) seq-scans the whole table on every claim
until the next ANALYZE: 141 ms a claim over 200k finished jobs, measured, against 1-5 ms
planned afresh (bench/NOTES.md). Checked on the storage's own connection: after many claims,
no claim statement is kept prepared there, while the other statements still are."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest

from onthedot.storage import open_storage
from onthedot.storage.postgres.storage import PostgresStorage
from tests.storage.contract.conftest import at, new_job


@pytest.fixture
def one_connection(pg_url: str) -> Iterator[PostgresStorage]:
    storage = open_storage(pg_url, pool_size=1)
    assert isinstance(storage, PostgresStorage)
    storage.migrate()
    yield storage
    storage.close()


def test_no_claim_keeps_a_plan_made_on_an_empty_table(
    one_connection: PostgresStorage, pg_url: str
) -> None:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE onthedot_jobs")  # statistics: an empty table
    s = one_connection
    for i in range(12):  # past the five runs after which a prepared plan may turn generic
        s.at(at(i)).enqueue([new_job("j")])
        claimed = s.at(at(i)).claim_jobs("w", "default", 4, 30)
        assert len(claimed) == 1
        assert s.at(at(i)).claim_alone("w", "default", 30) is None
    with s._read() as conn:  # the pool's only connection: the one that ran the claims
        prepared = [row[0] for row in conn.execute("SELECT statement FROM pg_prepared_statements")]
    assert prepared, "the other hot statements (the enqueue) stay prepared"
    assert not [text for text in prepared if "SET state = 'running'" in text], prepared
