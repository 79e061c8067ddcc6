"""Plans made while the jobs table looked empty must not outlive it (PostgreSQL). A prepared
statement, or a PL/pgSQL function's query, may keep after five runs a generic plan made with the
statistics of that moment; made on an empty table (a new install, a pruned table) such a plan
scans the whole table on every claim until the next ANALYZE: 141 ms a claim over 200k finished
jobs, ~100 ms a claim and a next-ready lookup over 200k delayed ones, against 1-5 ms planned
afresh (bench/NOTES.md). So the claims and the next-ready lookup are never prepared, and the
priorities function runs without sequential scans (migration 0006)."""

from __future__ import annotations

import psycopg

from onthedot.storage.postgres.storage import PostgresStorage
from onthedot.storage.sqlfile import load_queries
from tests.storage.contract.conftest import at, new_job
from tests.storage.test_delayed_jobs import MOST_PAGES, claim_params, pages_on

Q = load_queries("postgres")


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


def test_plans_made_on_an_empty_table_do_not_outlive_it(
    one_connection: PostgresStorage, pg_url: str
) -> None:
    """The session that ran the claims on an empty table (and so made and kept whatever plans
    it keeps) claims and looks up the next ready job in a few pages once 100k delayed jobs
    arrived with no ANALYZE since: the function listing a queue's priorities
    (onthedot_queue_priorities) runs without sequential scans (migration 0006). With the
    plans it kept before, both statements read ~3,600 pages (the whole table)."""
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE onthedot_jobs")
    s = one_connection
    for i in range(12):
        s.at(at(i)).enqueue([new_job("j")])
        assert len(s.at(at(i)).claim_jobs("w", "default", 4, 30)) == 1
        assert s.at(at(i)).seconds_until_ready(["default"]) is None
    with psycopg.connect(pg_url, autocommit=True) as conn:  # no ANALYZE after it
        conn.execute(
            "INSERT INTO onthedot_jobs (name, queue, run_at, created_at)"
            " SELECT 'later', 'default', %s::timestamptz + g * interval '1 minute', %s"
            " FROM generate_series(1, 100000) AS g",
            (at(86_400), at(0)),
        )
    s.at(at(20)).enqueue([new_job("due")])
    with s._read() as conn:  # the pool's only connection, whose plans were made above
        conn.autocommit = False
        try:
            claim = pages_on(conn, Q["claim_jobs"], claim_params(10))
            lookup_params = {"queues": ["default"], "now": at(20)}
            lookup = pages_on(conn, Q["seconds_until_ready"], lookup_params)
        finally:
            conn.autocommit = True
    assert claim <= MOST_PAGES and lookup <= MOST_PAGES, (claim, lookup)
