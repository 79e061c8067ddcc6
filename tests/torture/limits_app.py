"""The app of the limits torture (tests/torture/test_limits.py), run by worker processes:
`python -m onthedot --app tests.torture.limits_app:app worker`.

`limited(n, tenant)` sits under its own limit (3 at once per tenant) and under the shared
`api` limit (a rate of RATE starts a second, bucket BURST). Each attempt records, in
`limits_runs` of the same database: when the claim took it (the job row's `started_at`, the
database clock), when its body started and ended (this host's clock; a run killed with its
worker has no end), and how many times it ran (a second run of one attempt counts in `runs`).
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from typing import Any

import psycopg

from onthedot import App, Backoff, current_job
from onthedot.config import parse_database_url, resolve_database_url

RATE = 25.0
BURST = 5
CONCURRENCY = 3
RUNS = "limits_runs"

_DDL = f"""CREATE TABLE IF NOT EXISTS {RUNS} (
    job_id bigint NOT NULL, attempt integer NOT NULL, tenant integer NOT NULL,
    pid integer NOT NULL, claimed double precision, started double precision NOT NULL,
    ended double precision, runs integer NOT NULL DEFAULT 1, PRIMARY KEY (job_id, attempt))"""
_START = (
    f"INSERT INTO {RUNS} (job_id, attempt, tenant, pid, claimed, started) "
    "VALUES ({p}, {p}, {p}, {p}, ({claimed}), {p}) "
    f"ON CONFLICT (job_id, attempt) DO UPDATE SET runs = {RUNS}.runs + 1"
)
_CLAIMED_PG = "SELECT extract(epoch FROM started_at) FROM onthedot_jobs WHERE id = %s"
_CLAIMED_SQLITE = "SELECT started_at FROM onthedot_jobs WHERE id = ?"
_END = f"UPDATE {RUNS} SET ended = {{p}} WHERE job_id = {{p}} AND attempt = {{p}}"


def create_table(url: str) -> None:
    cfg = parse_database_url(url)
    if cfg.backend == "sqlite":
        assert cfg.path is not None
        with sqlite3.connect(cfg.path, timeout=30) as conn:
            conn.execute(_DDL.replace("bigint", "INTEGER"))
        return
    with psycopg.connect(cfg.direct_url or cfg.url, autocommit=True) as conn:
        conn.execute(_DDL)


_local = threading.local()


def _execute(sql: str, params: tuple[Any, ...]) -> None:
    cfg = parse_database_url(resolve_database_url(None))
    conn = getattr(_local, "conn", None)
    if cfg.backend == "sqlite":
        if conn is None:
            assert cfg.path is not None
            conn = _local.conn = sqlite3.connect(cfg.path, timeout=30, isolation_level=None)
        conn.execute(sql.format(p="?", claimed=_CLAIMED_SQLITE), params)
    else:
        if conn is None:
            conn = _local.conn = psycopg.connect(cfg.direct_url or cfg.url, autocommit=True)
        conn.execute(sql.format(p="%s", claimed=_CLAIMED_PG), params)


def limited(n: int, tenant: int, ms: int = 150) -> int:
    ctx = current_job()
    _execute(_START, (ctx.job_id, ctx.attempt, tenant, os.getpid(), ctx.job_id, time.time()))
    time.sleep(ms / 1000)
    _execute(_END, (time.time(), ctx.job_id, ctx.attempt))
    return n


def make_app(url: str | None = None, *, log_events: bool = True) -> App:
    lease = float(os.environ.get("ONTHEDOT_TEST_LEASE", "2"))
    made = App(url, lease=lease, log_events=log_events)
    made.limit("api", rate=f"{RATE:g}/s", burst=BURST)
    made.job(
        name="limited",
        concurrency=CONCURRENCY,
        key="tenant",
        limits=["api"],
        max_attempts=50,
        backoff=Backoff(base=0.05, jitter=0),
    )(limited)
    return made


app = make_app()
