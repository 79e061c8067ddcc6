"""The app the torture workers run (`python -m onthedot --app tests.torture.chaos_app:app worker`).

Configuration comes from the environment, so each worker process can differ:
- $ONTHEDOT_DATABASE_URL: the shared database (SQLite file or PostgreSQL);
- $ONTHEDOT_TEST_LEASE: the lease in seconds (default 2, so killed workers' jobs come back fast);
- $ONTHEDOT_TEST_CLOCK_OFFSET: seconds this worker's own clock is shifted by (clock skew; the
  database clock still decides what is due);
- $ONTHEDOT_TEST_CLOCK_STEP_FILE: a file holding seconds added to this process's wall clock,
  re-read at every use, for its storage verbs too (`SteppedClock`: a clock step, as an NTP
  step or a VM resume makes; on PostgreSQL it stands for a step of the database clock as this
  process's statements see it);
- $ONTHEDOT_TEST_OLD_DEPLOY: set, the app is the older deploy that lacks `chaos.newjob`;
- $ONTHEDOT_TEST_RETENTION, $ONTHEDOT_TEST_KEEP_TICK: the app's retention and `chaos.tick`'s
  `keep=`, as JSON (default: "7d", none).

A worker records (pid, time) in `torture_workers` once it is up. Two schedules: `every-second`
(interval, `every 1s`) and `every-3s` (6-field cron with seconds), both with catch-up "all" and
a one-hour window, so no slot may ever be dropped. Every execution
of a job records (job id, attempt, pid, schedule key, slot) in the `torture_executions` table
of the same database when it starts, and marks it ended when it returns or raises; a second run
of the same (job id, attempt) is counted in `runs`, never a second row.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg

from onthedot import App, Backoff, SystemClock, current_job
from onthedot.config import parse_database_url, resolve_database_url
from onthedot.observability.events import WorkerStarted

MAX_ATTEMPTS = 8
BACKOFF = Backoff(base=0.1, factor=2.0, cap=1.0, jitter=0.5)
SCHEDULES = {"every-second": "every 1s", "every-3s": "*/3 * * * * *"}
EXECUTIONS = "torture_executions"

_POSTGRES_DDL = f"""
CREATE TABLE IF NOT EXISTS {EXECUTIONS} (
    job_id bigint NOT NULL,
    attempt integer NOT NULL,
    pid integer NOT NULL,
    schedule_key text,
    slot double precision,
    started double precision NOT NULL,
    ended double precision,
    failed boolean NOT NULL DEFAULT false,
    runs integer NOT NULL DEFAULT 1,
    PRIMARY KEY (job_id, attempt)
);
CREATE TABLE IF NOT EXISTS torture_workers (pid integer NOT NULL, ready double precision NOT NULL)
"""
_SQLITE_DDL = _POSTGRES_DDL.replace("bigint", "INTEGER").replace("boolean", "INTEGER")
_SQLITE_DDL = _SQLITE_DDL.replace("DEFAULT false", "DEFAULT 0")
_READY = "INSERT INTO torture_workers (pid, ready) VALUES ({p}, {p})"

_START = (
    f"INSERT INTO {EXECUTIONS} (job_id, attempt, pid, schedule_key, slot, started)"
    " VALUES ({p}, {p}, {p}, {p}, {p}, {p})"
    f" ON CONFLICT (job_id, attempt) DO UPDATE SET runs = {EXECUTIONS}.runs + 1"
)
_END = (
    f"UPDATE {EXECUTIONS} SET ended = {{p}}, failed = {{p}}"
    " WHERE job_id = {p} AND attempt = {p}"
)


def create_tables(url: str) -> None:
    """Create the tables of executions and of ready workers (before starting workers)."""
    cfg = parse_database_url(url)
    if cfg.backend == "sqlite":
        assert cfg.path is not None
        with sqlite3.connect(cfg.path, timeout=30) as conn:
            conn.executescript(_SQLITE_DDL)
        return
    with psycopg.connect(cfg.direct_url or cfg.url, autocommit=True) as conn:
        conn.execute(_POSTGRES_DDL)


class RecordingError(Exception):
    """The job could not write its execution record (the database went away)."""


class Recorder:
    """One connection per thread to the shared database, dropped after any error (a restarted
    PostgreSQL breaks it); the error propagates, so the job's attempt fails and is retried."""

    def __init__(self) -> None:
        self._local = threading.local()

    def _execute(self, sql: str, params: tuple[Any, ...]) -> None:
        cfg = parse_database_url(resolve_database_url(None))
        conn = getattr(self._local, "conn", None)
        try:
            if cfg.backend == "sqlite":
                if conn is None:
                    assert cfg.path is not None
                    conn = sqlite3.connect(cfg.path, timeout=30, isolation_level=None)
                    self._local.conn = conn
                conn.execute(sql.format(p="?"), params)
            else:
                if conn is None:
                    # the server itself, past any PgBouncer (the records are not under test)
                    conn = psycopg.connect(
                        cfg.direct_url or cfg.url, autocommit=True, connect_timeout=5
                    )
                    self._local.conn = conn
                conn.execute(sql.format(p="%s"), params)
        except Exception as exc:
            self._local.conn = None
            if conn is not None:
                try:
                    conn.close()
                except Exception:
                    pass
            raise RecordingError(f"{type(exc).__name__}: {exc}") from exc

    def start(self) -> None:
        ctx = current_job()
        slot = ctx.slot.timestamp() if ctx.slot is not None else None
        params = (ctx.job_id, ctx.attempt, os.getpid(), ctx.schedule_key, slot, time.time())
        self._execute(_START, params)

    def end(self, failed: bool) -> None:
        ctx = current_job()
        self._execute(_END, (time.time(), failed, ctx.job_id, ctx.attempt))

    def ready(self, event: WorkerStarted) -> None:
        """When a worker is up (connected, registered, its threads running): the start of
        its alive span in the checker's eyes."""
        try:
            self._execute(_READY, (os.getpid(), time.time()))
        except RecordingError as exc:
            print(f"torture: could not record worker {event.worker_id} ready: {exc}")


recorder = Recorder()


def work(n: int, fail_times: int = 0, ms: int = 50) -> int:
    """A produced job: runs `ms` milliseconds; its first `fail_times` attempts raise."""
    recorder.start()
    time.sleep(ms / 1000)
    if current_job().attempt <= fail_times:
        recorder.end(failed=True)
        raise RuntimeError(f"planned failure of job n={n} (attempt {current_job().attempt})")
    recorder.end(failed=False)
    return n


def tick() -> str:
    """A scheduled job: records its slot."""
    recorder.start()
    time.sleep(0.01)
    recorder.end(failed=False)
    slot = current_job().slot
    return slot.isoformat() if slot else ""


def innocent(n: int, ms: int = 200) -> int:
    """A job that only sleeps: it fails only if something else kills its worker."""
    time.sleep(ms / 1000)
    return n


def poison() -> None:
    """A job that kills its own worker process at once (as a segfault or the OOM killer would)."""
    os._exit(1)


def newjob(n: int) -> int:
    """A job only the newer deploy has (absent when $ONTHEDOT_TEST_OLD_DEPLOY is set)."""
    time.sleep(0.005)
    return n


def gated(n: int, gate: str) -> int:
    """A job that runs until the file `gate` exists."""
    recorder.start()
    while not os.path.exists(gate):
        time.sleep(0.02)
    recorder.end(failed=False)
    return n


def hang() -> None:
    """A job that never returns (for as long as a test lasts)."""
    time.sleep(3600)


async def blocker(seconds: float = 20.0) -> str:
    """An async job that blocks its event loop (a sync call where an await belongs)."""
    time.sleep(seconds)
    return "returned"


async def ticker(n: int) -> int:
    """An async job that awaits briefly, as a well-behaved one does."""
    await asyncio.sleep(0.05)
    return n


class SteppedClock(SystemClock):
    """The system clock plus the seconds written in `path`, also for storage verbs (with the
    database's clock unused, as with a ManualClock): a process whose wall clock was stepped."""

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = Path(path)

    def now(self) -> datetime:
        return datetime.now(UTC) + timedelta(seconds=float(self.path.read_text() or 0))

    def fixed_now(self) -> datetime | None:
        return self.now()


def make_app(database_url: str | None = None, *, log_events: bool = True) -> App:
    offset = float(os.environ.get("ONTHEDOT_TEST_CLOCK_OFFSET", "0") or 0)
    step_file = os.environ.get("ONTHEDOT_TEST_CLOCK_STEP_FILE")
    clock = SteppedClock(step_file) if step_file else SystemClock(offset=timedelta(seconds=offset))
    application = App(
        database_url,
        lease=float(os.environ.get("ONTHEDOT_TEST_LEASE", "2")),
        clock=clock,
        log_events=log_events,
        retention=json.loads(os.environ.get("ONTHEDOT_TEST_RETENTION") or '"7d"'),
    )
    options: dict[str, Any] = {"max_attempts": MAX_ATTEMPTS, "backoff": BACKOFF}
    keep_tick = json.loads(os.environ.get("ONTHEDOT_TEST_KEEP_TICK") or "null")
    application.job(name="chaos.work", runtime=True, **options)(work)
    application.job(name="chaos.innocent", max_attempts=3, runtime=True)(innocent)
    application.job(name="chaos.poison", max_attempts=3)(poison)
    application.job(name="chaos.hang", max_attempts=1)(hang)
    application.job(name="chaos.gated", max_attempts=3)(gated)
    if not os.environ.get("ONTHEDOT_TEST_OLD_DEPLOY"):
        application.job(name="chaos.newjob", max_attempts=3, backoff=BACKOFF)(newjob)
    application.job(name="chaos.blocker", max_attempts=1, timeout=3)(blocker)
    application.job(name="chaos.ticker", max_attempts=1)(ticker)
    tick_job = application.job(name="chaos.tick", runtime=True, keep=keep_tick, **options)(tick)
    for key, spec in SCHEDULES.items():
        application.schedule(key, spec, tick_job, catchup="all", catchup_window="1h")
    application.events.subscribe(recorder.ready, WorkerStarted)
    return application


app = make_app()
