"""Plans made while the jobs table looked empty must not outlive it (PostgreSQL). A prepared
statement, or a PL/pgSQL function's query, may keep after five runs a generic plan made with the
statistics of that moment; made on an empty table (a new install, a pruned table) such a plan
scans the whole table on every claim until the next ANALYZE: 141 ms a claim over 200k finished
jobs, ~100 ms a claim and a next-ready lookup over 200k delayed ones, against 1-5 ms planned
afresh (bench/NOTES.md). So the claim of jobs is a function whose generic plan is made without
sequential scans (migration 0007), the priorities function runs without them too (migration
0006), and the solo claim and the next-ready lookup are never prepared."""

from __future__ import annotations

import psycopg
import pytest

from onthedot.domain.limits import LimitSetting
from onthedot.storage.postgres.storage import PostgresStorage
from onthedot.storage.sqlfile import load_queries
from tests.storage.contract.conftest import at, new_job
from tests.storage.test_delayed_jobs import MOST_PAGES, claim_params, pages_on

Q = load_queries("postgres")


def _claims_on_an_empty_table(s: PostgresStorage, pg_url: str) -> None:
    """Claims (and the lookups of an idle worker) on a table whose statistics say empty:
    past the five runs after which a plan may turn generic, with whatever plans they keep."""
    with psycopg.connect(pg_url, autocommit=True) as conn:
        # No automatic ANALYZE later: it would replace the plans under test (and its re-plan
        # would read the catalog, counted with the claim's pages).
        conn.execute("ALTER TABLE onthedot_jobs SET (autovacuum_enabled = false)")
        conn.execute("VACUUM ANALYZE onthedot_jobs")
    for i in range(12):
        s.at(at(i)).enqueue([new_job("j")])
        assert len(s.at(at(i)).claim_jobs("w", "default", 4, 30)) == 1
        assert s.at(at(i)).claim_alone("w", "default", 30) is None
        assert s.at(at(i)).seconds_until_ready(["default"]) is None


def _claim_pages(s: PostgresStorage) -> int:
    """Pages a claim of 10 reads on the pool's only connection, the one whose plans were made
    above (one job is due, and whatever the test enqueued before)."""
    s.at(at(20)).enqueue([new_job("due")])
    with s._read() as conn:
        conn.autocommit = False
        try:
            return pages_on(conn, Q["claim_jobs"], {**claim_params(10), "now": at(30)})
        finally:
            conn.autocommit = True


@pytest.mark.slow
def test_a_claim_planned_on_an_empty_table_stays_cheap_over_finished_jobs(
    one_connection: PostgresStorage, pg_url: str
) -> None:
    """200k finished jobs arrive with no ANALYZE since: the claim still reads a few pages (a
    plan kept from the empty table, a sequential scan of the jobs table, read them all)."""
    s = one_connection
    _claims_on_an_empty_table(s, pg_url)
    with s._read() as conn:
        prepared = [row[0] for row in conn.execute("SELECT statement FROM pg_prepared_statements")]
    assert prepared, "the other hot statements (the enqueue) stay prepared"
    # The solo claim is a statement, never prepared; the claim of jobs calls its function.
    assert not [text for text in prepared if "SET state = 'running'" in text], prepared
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO onthedot_jobs (name, queue, state, run_at, created_at, finished_at)"
            " SELECT 'done', 'default', 'succeeded', %s, %s, %s FROM generate_series(1, 200000)",
            (at(0), at(0), at(1)),
        )
    assert _claim_pages(s) <= MOST_PAGES


def test_plans_made_on_an_empty_table_do_not_outlive_it(
    one_connection: PostgresStorage, pg_url: str
) -> None:
    """The session that ran the claims on an empty table (and so made and kept whatever plans
    it keeps) claims and looks up the next ready job in a few pages once 100k delayed jobs
    arrived with no ANALYZE since: the function listing a queue's priorities
    (onthedot_queue_priorities) runs without sequential scans (migration 0006). With the
    plans it kept before, both statements read ~3,600 pages (the whole table)."""
    s = one_connection
    _claims_on_an_empty_table(s, pg_url)
    with psycopg.connect(pg_url, autocommit=True) as conn:  # no ANALYZE after it
        conn.execute(
            "INSERT INTO onthedot_jobs (name, queue, run_at, created_at)"
            " SELECT 'later', 'default', %s::timestamptz + g * interval '1 minute', %s"
            " FROM generate_series(1, 100000) AS g",
            (at(86_400), at(0)),
        )
    claim = _claim_pages(s)
    with s._read() as conn:
        conn.autocommit = False
        try:
            lookup_params = {"queues": ["default"], "now": at(20)}
            lookup = pages_on(conn, Q["seconds_until_ready"], lookup_params)
        finally:
            conn.autocommit = True
    assert claim <= MOST_PAGES and lookup <= MOST_PAGES, (claim, lookup)


def test_the_lock_checks_planned_on_an_empty_table_probe_their_indexes(
    one_connection: PostgresStorage, pg_url: str
) -> None:
    """A due job with a lock key is checked against the running jobs' keys and the queued
    jobs of its key by one index probe each, whatever the claim's plan was made on: here 20k
    running jobs hold lock keys and 100k finished jobs come first in id order, with no ANALYZE
    since the claims on an empty table. (Written as a hash of every running key, or a walk of
    the primary key for the first queued job of the key, the check reads hundreds of pages.)"""
    s = one_connection
    _claims_on_an_empty_table(s, pg_url)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO onthedot_jobs (name, queue, state, run_at, created_at, finished_at)"
            " SELECT 'done', 'default', 'succeeded', %s, %s, %s FROM generate_series(1, 100000)",
            (at(0), at(0), at(1)),
        )
        conn.execute(
            "INSERT INTO onthedot_jobs (name, queue, state, lock_key, run_at, created_at,"
            " started_at, lease_until) SELECT 'held', 'default', 'running', 'held-' || g,"
            " %s, %s, %s, %s FROM generate_series(1, 20000) AS g",
            (at(0), at(0), at(1), at(3600)),
        )
    s.at(at(20)).enqueue([new_job("locked", lock_key="free"), new_job("locked", lock_key="free")])
    assert _claim_pages(s) <= MOST_PAGES
    claimed = s.at(at(21)).claim_jobs("w", "default", 10, 30)
    assert sorted(j.name for j in claimed) == ["due", "locked"]  # one job per lock key


def test_the_limited_claim_planned_on_an_empty_table_does_not_walk_a_limited_backlog(
    one_connection: PostgresStorage, pg_url: str
) -> None:
    """The limited claim's gather (onthedot_limit_gather) keeps generic plans: made while the
    table looked empty, its loose scan of the home keys took each key as an aggregate over
    every queued job of the queue and the "has a due job" probe as a hash over them all, so a
    claim read the whole limited backlog (5 ms a claim at 20k jobs, docs/benchmarks.md). Since
    migration 0011 each step is one index descent, whatever the estimates."""
    s = one_connection
    _claims_on_an_empty_table(s, pg_url)
    s.sync_limits([LimitSetting("lim", 1000, None, None)])
    for i in range(6):  # the gather's plans are made here, on the empty table
        s.at(at(i)).enqueue([new_job("limited", limit_key="lim|k=A", limits='["lim|k=A"]')])
        assert len(s.at(at(i)).claim_limited("w", "default", 4, 30)) == 1
    with psycopg.connect(pg_url, autocommit=True) as conn:  # no ANALYZE after it
        conn.execute(
            "INSERT INTO onthedot_jobs (name, queue, run_at, created_at, limit_key, limits)"
            " SELECT 'limited', 'default', %s, %s, 'lim|k=' || (g %% 3), "
            " '[\"lim|k=' || (g %% 3) || '\"]' FROM generate_series(1, 20000) AS g",
            (at(0), at(0)),
        )
    params = {"queue": "default", "now": at(30), "limit": 10, "any_name": True, "names": []}
    with s._read() as conn:
        conn.autocommit = False
        try:
            pages = pages_on(conn, Q["limit_gather"], params)
        finally:
            conn.autocommit = True
    assert pages <= MOST_PAGES, pages
    assert len(s.at(at(31)).claim_limited("w", "default", 10, 30)) == 10
