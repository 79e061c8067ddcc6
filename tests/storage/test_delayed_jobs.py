"""Many jobs delayed in a served queue: the claim and the idle worker's next-ready lookup read
a few index entries, not every delayed entry of the ready index.

Checked on the statement text the storage runs, in ways that do not depend on the machine's
speed: on PostgreSQL the pages each statement touches (EXPLAIN ANALYZE, BUFFERS), on SQLite
its plan (every read of the ready index bounded by run_at, no sort of the due jobs). The
storage verbs themselves are checked for what they return, on both databases.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import psycopg
import pytest

from onthedot import App
from onthedot.storage import open_storage
from onthedot.storage.postgres.storage import PostgresStorage
from onthedot.storage.sqlfile import load_queries
from tests.storage.contract.conftest import T0, at, new_job

Q = load_queries("postgres")
LITE = load_queries("sqlite")
DELAYED = 100_000
# A claim or a lookup that walks the delayed entries reads ~900 pages here (an index page holds
# ~150 entries); read one priority at a time the claim touches ~50 once its functions are
# compiled and planned (~1,000 on a connection's first call, the catalog read): ~30 to read
# (the priorities, each range from its start), the rest to write the claimed rows and their
# index entries.
MOST_PAGES = 250


def load_delayed(url: str) -> None:
    """DELAYED jobs in `default` due a day to a month after T0, in priorities 0 and 5."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO onthedot_jobs (name, queue, priority, run_at, created_at)"
            " SELECT 'later', 'default', (g %% 2) * 5,"
            "        %s::timestamptz + interval '1 day' + g * interval '1 minute', %s"
            " FROM generate_series(1, %s) AS g",
            (T0, T0, DELAYED),
        )
        conn.execute("VACUUM ANALYZE onthedot_jobs")


def pages(url: str, query: str, params: dict[str, Any]) -> int:
    """Shared pages (hit or read) the statement touched, run and rolled back: its second run
    on a new connection (the first also reads the catalog, to compile and plan the functions
    it calls)."""
    with psycopg.connect(url) as conn:
        pages_on(conn, query, params)
        return pages_on(conn, query, params)


def pages_on(conn: psycopg.Connection[Any], query: str, params: dict[str, Any]) -> int:
    """`pages` on a given connection (in a transaction, rolled back)."""
    row = conn.execute(f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {query}", params).fetchone()
    conn.rollback()
    assert row is not None
    plan = row[0] if isinstance(row[0], list) else json.loads(row[0])
    top = plan[0]["Plan"]
    return int(top["Shared Hit Blocks"]) + int(top["Shared Read Blocks"])


def claim_params(limit: int) -> dict[str, Any]:
    return {
        "worker_id": "w",
        "queue": "default",
        "limit": limit,
        "lease": 30.0,
        "now": at(10),
        "shared": True,
        "charge": False,
        "any_name": True,
        "names": [],
    }


def test_a_claim_asking_more_than_is_due_reads_no_delayed_entry(
    pg: PostgresStorage, pg_url: str
) -> None:
    load_delayed(pg_url)
    due = pg.at(T0).enqueue([new_job("now", priority=p) for p in (0, 0, -3)])
    # The statement the storage runs: a few pages, however many jobs are delayed.
    assert pages(pg_url, Q["claim_jobs"], claim_params(50)) <= MOST_PAGES
    # And what it claims: the due jobs, highest priority first, none of the delayed ones.
    claimed = pg.at(at(10)).claim_jobs("w", "default", 50, 30)
    assert sorted(j.id for j in claimed) == sorted(due)
    again = pg.at(at(10)).claim_jobs("w", "default", 50, 30)
    assert again == []


def test_the_claim_keeps_the_priority_order_across_priorities(app: App) -> None:
    pg = app.storage
    s = pg.at(T0)
    low = s.enqueue([new_job("low", priority=-1)])
    later_high = s.enqueue([new_job("later", priority=9, run_at=at(3600))])
    high = s.enqueue([new_job("high", priority=5), new_job("high", priority=5)])
    mid = s.enqueue([new_job("mid", priority=2)])
    first = pg.at(at(10)).claim_jobs("w", "default", 3, 30)
    assert {j.id for j in first} == {*high, *mid}
    rest = pg.at(at(10)).claim_jobs("w", "default", 10, 30)
    assert [j.id for j in rest] == low
    assert later_high[0] not in {j.id for j in first + rest}
    # Between priorities and within one: (run_at, id) order, a later-due job after.
    s.enqueue([new_job("b", run_at=at(5))])
    a = s.enqueue([new_job("a", run_at=at(1))])
    s.enqueue([new_job("c", priority=-4)])
    assert [j.id for j in pg.at(at(10)).claim_jobs("w", "default", 1, 30)] == a


def test_the_next_ready_instant_is_the_earliest_of_every_queue_and_priority(app: App) -> None:
    storage = app.storage
    s = storage.at(T0)
    assert s.seconds_until_ready(["default"]) is None
    s.enqueue([new_job("x", priority=4, run_at=at(500)), new_job("y", queue="q2", run_at=at(90))])
    s.enqueue([new_job("z", priority=-9, run_at=at(200))])
    assert s.seconds_until_ready(["default"]) == pytest.approx(200)
    assert s.seconds_until_ready(["default", "q2"]) == pytest.approx(90)
    assert storage.at(at(300)).seconds_until_ready(["default"]) == pytest.approx(-100)


def sqlite_plan(url: str, query: str, params: dict[str, Any]) -> list[str]:
    path = url.removeprefix("sqlite:///")
    with sqlite3.connect(path) as conn:
        return [row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {query}", params)]


@pytest.mark.parametrize("statement", ["claim_jobs", "seconds_until_ready"])
def test_sqlite_reads_the_ready_index_by_priority_and_never_sorts(
    sqlite_url: str, statement: str
) -> None:
    opened = open_storage(sqlite_url)
    opened.migrate()
    opened.close()
    params = {**claim_params(50), "now": 10.0, "shared": 1, "charge": 0, "any_name": 1}
    params.update(names="[]", queues='["default"]')
    plan = sqlite_plan(sqlite_url, LITE[statement], params)
    reads = [line for line in plan if "onthedot_jobs_ready" in line]
    assert reads, plan
    # Each read of the ready index is a range of one (queue, priority): equal on both, or the
    # loose scan's step to the next lower priority; never the whole queue.
    assert all("queue=? AND priority" in line for line in reads if "queue=?)" not in line), plan
    ranges = [line for line in reads if "priority=?" in line]
    assert ranges, plan
    if statement == "claim_jobs":
        assert all("run_at<?" in line for line in ranges), plan
    assert not [line for line in plan if "TEMP B-TREE" in line], plan


def test_the_next_ready_lookup_reads_no_delayed_entry(pg: PostgresStorage, pg_url: str) -> None:
    load_delayed(pg_url)
    params = {"queues": ["default", "other"], "now": at(10)}
    assert pages(pg_url, Q["seconds_until_ready"], params) <= MOST_PAGES
    # The earliest delayed job: a day and a minute after T0 (priority 5, g = 1).
    assert pg.at(at(10)).seconds_until_ready(["default"]) == pytest.approx(86_400 + 60 - 10)
    pg.at(T0).enqueue([new_job("soon", priority=-7, run_at=at(70))])
    assert pg.at(at(10)).seconds_until_ready(["other", "default"]) == pytest.approx(60)
    assert pg.at(at(10)).seconds_until_ready(["other"]) is None
