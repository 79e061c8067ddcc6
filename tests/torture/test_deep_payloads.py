"""Deeply nested JSON (issue 24 item 2), on both backends.

Python's `json` recurses once per level of arrays and objects, so a value nested about 1,000
deep raises `RecursionError` wherever it is encoded or decoded. Before: `enqueue` accepted
`json.loads("[" * 979 + "]" * 979)` (1,958 bytes, as a webhook could send); the worker that
claimed it died in the claim's decoding, its whole batch with it, and `onthedot jobs list`
crashed for as long as the row existed.

Checked: enqueue refuses an argument nested past `MAX_NESTING` with one `ValueError` line
naming the argument and the limit, and stores nothing; rows written directly with SQL (as an
older version, or a hand, could) with arguments, keyword arguments, a result and an error
history nested far deeper, and on SQLite text that is not JSON at all, are listed and shown by
real `onthedot jobs list|show` and `onthedot web` processes; a real worker fails each hostile
job at once with one line (appending to a hostile error history, too), runs every innocent
job of the same batches, stays up, and stops on SIGTERM with exit 0. A runtime schedule whose
stored definition is nested 5,000 deep is listed by `onthedot schedules list`, and the
worker's scheduler keeps firing the declared schedules beside it, with no traceback.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from onthedot import App, JobState
from onthedot.config import parse_database_url
from onthedot.domain.nesting import MAX_NESTING
from tests.torture.chaos_app import create_tables, make_app
from tests.torture.checker import FINAL, Db
from tests.torture.harness import ROOT, ChaosLog, Fleet, wait_for, worker_env
from tests.torture.webproc import serve_web

ISSUE_DEPTH = 979  # the issue's payload
DEEP = 5_000  # far past any recursion limit (PostgreSQL's jsonb takes it, 20,000 not)


def nested(depth: int, open_: str = "[", close: str = "]", middle: str = "") -> str:
    return open_ * depth + middle + close * depth


def deep_list(depth: int) -> list[Any]:
    """What `json.loads(nested(depth))` returns, built without recursion."""
    value: list[Any] = []
    for _ in range(depth - 1):
        value = [value]
    return value


def nested_object(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


def test_a_deep_argument_is_refused_at_enqueue(app: App) -> None:
    echo = app.job(name="deep.echo")(_echo)
    refused = {
        "args[0]": lambda: echo.enqueue(deep_list(ISSUE_DEPTH)),
        "args[0] ": lambda: echo.enqueue(deep_list(MAX_NESTING + 1)),
        "args[1]": lambda: echo.enqueue(1, deep_list(200_000)),
        "kwargs['b']": lambda: echo.enqueue(b={"k": deep_list(MAX_NESTING)}),
        "args[0]  ": lambda: echo.enqueue_many([[deep_list(MAX_NESTING + 1)]]),
    }
    for argument, call in refused.items():
        with pytest.raises(ValueError) as info:
            call()
        message = str(info.value)
        assert "\n" not in message and len(message) < 300, message
        assert f"argument {argument.strip()}" in message, message
        assert f"limit is {MAX_NESTING}" in message, message
    assert app.list_jobs() == [], "nothing is stored"
    at_limit = deep_list(MAX_NESTING)
    job_id = echo.enqueue(at_limit, b={"k": deep_list(MAX_NESTING - 1)})
    assert app.get_job(job_id).args == [at_limit], "a value at the limit is stored intact"


def _echo(a: Any = None, b: Any = None) -> str:
    return "ok"


@pytest.mark.slow
def test_hostile_rows_crash_nothing(
    db_url: str, tmp_path: Path, record_result: dict[str, Any]
) -> None:
    client = make_app(db_url, log_events=False)
    client.migrate()
    innocent = client.jobs["chaos.innocent"]
    create_tables(db_url)
    try:
        # A job with a hostile result and error history, in a queue no worker serves.
        shown = innocent.enqueue_with([200, 20], queue="elsewhere")
        ids = [innocent.enqueue(n, 20) for n in range(12)]
        hostile = {
            "issue": innocent.enqueue(100, 20),
            "deep": innocent.enqueue(101, 20),
            "kwargs": innocent.enqueue(102, 20),
        }
        ids += [innocent.enqueue(n, 20) for n in range(12, 24)]
        rows = {
            hostile["issue"]: ("args", nested(ISSUE_DEPTH)),
            hostile["deep"]: ("args", nested(DEEP)),
            hostile["kwargs"]: ("kwargs", nested_object(DEEP)),
        }
        writer = _Writer(db_url)
        try:
            for job_id, (column, text) in rows.items():
                writer.set(job_id, column, text)
            writer.set(shown, "result", nested(DEEP))
            writer.set(shown, "errors", nested(DEEP, '[{"e":', "}]", "1"))
            # Failing this job appends to its error history, in SQL.
            writer.set(hostile["deep"], "errors", nested(DEEP, '[{"e":', "}]", "1"))
            if writer.backend == "sqlite":  # SQLite stores any text in a JSON column
                hostile["garbage"] = innocent.enqueue(103, 20)
                writer.set(hostile["garbage"], "args", "[1, 2")
                writer.set(hostile["garbage"], "errors", "{not json")
            # A runtime schedule whose stored definition is nested far too deep: the other
            # schedules must still fire, and listings must show it.
            client.schedules.create("hostile", "every 1s", "chaos.innocent", args=[1, 20])
            deep_definition = '{"job": "chaos.innocent", "args": ' + nested(DEEP) + "}"
            writer.set_definition("hostile", deep_definition)
        finally:
            writer.close()

        listing = _cli(db_url, "jobs", "list", "--limit", "100")
        as_json = _cli(db_url, "jobs", "list", "--json", "--limit", "100")
        listed = {j["id"] for j in json.loads(as_json)}
        assert set(hostile.values()) | {shown} <= listed, as_json[:2000]
        for job_id in [*hostile.values(), shown]:
            page = _cli(db_url, "jobs", "show", str(job_id))
            assert "not decoded" in page, page
        with serve_web(db_url, tmp_path) as web:
            statuses = {"/jobs": httpx.get(web.url + "/jobs", timeout=30).status_code}
            for job_id in [*hostile.values(), shown]:
                response = httpx.get(f"{web.url}/jobs/{job_id}", timeout=30)
                statuses[f"/jobs/{job_id}"] = response.status_code
                assert "not decoded" in response.text, response.text[:2000]
            for page in ("/schedules", "/schedules/hostile"):
                statuses[page] = httpx.get(web.url + page, timeout=30).status_code
            assert set(statuses.values()) == {200}, (statuses, web.output()[-3000:])
            assert "Traceback" not in web.output(), web.output()[-3000:]

        schedules = _cli(db_url, "schedules", "list")
        assert "hostile" in schedules, schedules

        fleet = Fleet(db_url, tmp_path, ChaosLog(), lease=2.0)
        watch = Db(db_url)
        try:
            proc = fleet.start("-c", "2")
            fleet.wait_started(proc)
            started = time.time()
            everything = [*ids, *hostile.values()]
            wait_for(lambda: _final(watch, everything) or not proc.alive(), "every job final", 90)
            wait_for(
                lambda: _fired_since(watch, "every-second", started) or not proc.alive(),
                "a declared schedule to fire beside the hostile one",
            )
            assert proc.alive(), f"the worker died:\n{proc.output()[-3000:]}"
            fleet.stop_all()
            log = proc.output()
        finally:
            fleet.close()
            watch.close()
        jobs = {i: client.get_job(i) for i in ids}
        bad = {name: client.get_job(i) for name, i in hostile.items()}
        record_result.update(
            listing_lines=len(listing.splitlines()),
            web=statuses,
            innocent_succeeded=sum(j.state is JobState.SUCCEEDED for j in jobs.values()),
            hostile={k: (str(j.state), j.attempts, j.error) for k, j in bad.items()},
        )
        assert all(j.state is JobState.SUCCEEDED for j in jobs.values()), jobs
        assert all(j.attempts == 1 for j in jobs.values()), "no innocent job ran twice"
        for name, job in bad.items():
            assert job.state is JobState.FAILED and job.attempts == 1, (name, job)
            assert job.error is not None and "\n" not in job.error, job.error
            assert job.error.startswith("UnreadableArguments: "), job.error
        assert "Traceback" not in log and "RecursionError" not in log, log[-3000:]
    finally:
        client.close()


def _final(db: Db, ids: list[int]) -> bool:
    states = db.rows("SELECT id, state FROM onthedot_jobs")
    return all(state in FINAL for job_id, state in states if job_id in ids)


def _fired_since(db: Db, key: str, since: float) -> bool:
    sql = f"SELECT count(*) FROM onthedot_jobs WHERE schedule_key = %s AND {db.ep('slot')} > %s"
    return int(db.rows(sql, key, since)[0][0]) > 0


def _cli(db_url: str, *args: str) -> str:
    """A real `onthedot` process; it must exit 0 without a traceback."""
    done = subprocess.run(
        [sys.executable, "-m", "onthedot", "--app", "tests.torture.chaos_app:app", *args],
        cwd=ROOT,
        env=worker_env(db_url),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr, (args, done)
    return done.stdout


class _Writer:
    """Writes a column of a job row directly with SQL, as an older version or a hand could."""

    def __init__(self, url: str) -> None:
        cfg = parse_database_url(url)
        self.backend = cfg.backend
        self._conn: Any
        if cfg.backend == "sqlite":
            assert cfg.path is not None
            self._conn = sqlite3.connect(cfg.path, timeout=30, isolation_level=None)
        else:
            self._conn = psycopg.connect(cfg.direct_url or cfg.url, autocommit=True)

    def set(self, job_id: int, column: str, text: str) -> None:
        if self.backend == "sqlite":
            sql = f"UPDATE onthedot_jobs SET {column} = ? WHERE id = ?"
        else:
            sql = f"UPDATE onthedot_jobs SET {column} = %s::jsonb WHERE id = %s"
        assert self._conn.execute(sql, (text, job_id)).rowcount == 1

    def set_definition(self, key: str, text: str) -> None:
        sql = "UPDATE onthedot_schedules SET definition = %s WHERE key = %s"
        if self.backend == "sqlite":
            sql = sql.replace("%s", "?")
        else:
            sql = sql.replace("= %s WHERE", "= %s::jsonb WHERE")
        assert self._conn.execute(sql, (text, key)).rowcount == 1

    def close(self) -> None:
        self._conn.close()
