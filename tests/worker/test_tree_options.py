"""Issue 25 item 1: every option given to `onthedot worker` reaches every worker process of the
tree, whether the supervisor forks them or starts them as new interpreters, and with
`--log-format json` every line of the whole tree is JSON, start-up and shutdown included.

Each option is checked by what a child does: the queues, concurrency and scheduler it
registers with, the jobs it holds (`--prefetch`), how long it waits for a running job on
SIGTERM (`--grace`), the debug events it logs (`-v`), the settings it starts with
(`worker_started`: `--batch-size`, `--prefetch`, `--grace`), the database it uses
(`--database`), and that it exits when the queues are empty (`--burst`)."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from onthedot import App, JobState
from tests import waiting
from tests.worker.tree import (
    STARTS,
    json_lines,
    onthedot,
    running_by_worker,
    started_jobs,
    wait_or_kill,
    workers,
)


@pytest.fixture
def app(pg_url: str) -> Iterator[App]:
    application = App(pg_url, log_events=False)
    application.job(name="nap.nap")(lambda seconds: None)
    application.migrate()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE nap_started (job_id bigint PRIMARY KEY, pid integer)")
    yield application
    application.close()


@pytest.mark.parametrize("start", STARTS)
def test_every_option_reaches_every_child_and_every_line_is_json(
    app: App, pg_url: str, tmp_path: Path, start: str
) -> None:
    log = tmp_path / "tree.log"
    # The URL given as --database only: the environment points elsewhere.
    proc = onthedot(
        "postgresql://nobody@127.0.0.1:1/wrong",
        log,
        "--database",
        pg_url,
        "-v",
        "--log-format",
        "json",
        "worker",
        "--processes",
        "2",
        "-q",
        "alpha,beta",
        "-c",
        "2",
        "--no-scheduler",
        "--batch-size",
        "7",
        "--prefetch",
        "3",
        "--grace",
        "0.5",
        start=start,
        env={"NAP_DATABASE_URL": pg_url},
    )
    try:
        rows = waiting.wait_for(lambda: len(workers(pg_url)) == 2 and workers(pg_url), "2 children")
        assert {r["queues"] for r in rows} == {"alpha,beta"}
        assert {r["concurrency"] for r in rows} == {2}
        assert {r["scheduler"] for r in rows} == {False}
        assert proc.pid not in {r["pid"] for r in rows}
        ids = app.jobs["nap.nap"].enqueue_many([(60,)] * 10, queue="alpha")
        # concurrency 2 + prefetch 3: each child holds 5 (without --prefetch it would hold 2)
        held = waiting.wait_for(
            lambda: sum(running_by_worker(pg_url).values()) == 10 and running_by_worker(pg_url),
            "every job claimed",
        )
        assert sorted(held.values()) == [5, 5]
        waiting.wait_for(lambda: len(started_jobs(pg_url)) == 4, "two jobs started per child")
        stopping = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        code = wait_or_kill(proc, 60)
        took = time.monotonic() - stopping
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    # The grace ran out with two jobs still running in each child: work was cut short, so the
    # tree exits 1 (docs/jobs.md, graceful shutdown), and each child's last line says so.
    assert code == 1, log.read_text()
    assert took < 15, f"--grace 0.5 did not reach the children: the stop took {took:.1f}s"
    lines = json_lines(log)  # every line, the supervisor's and the children's
    messages = [line["message"] for line in lines]
    assert any(m.startswith("worker supervisor: 2 process(es)") for m in messages), messages
    cut_short = "stopped (signal SIGTERM; forced: 2 job(s) cut short"
    children = [m for m in messages if m.startswith("worker ") and "supervisor" not in m]
    assert sum(cut_short in m for m in children) == 2, messages
    pids = {r["pid"] for r in rows}
    started = [line for line in lines if line.get("event") == "worker_started"]
    assert len(started) == 2
    for line in started:
        assert (line["batch_size"], line["prefetch"], line["grace"]) == (7, 3, 0.5)
        assert int(line["worker_id"].split("-")[-2]) in pids
    debug = [line for line in lines if line.get("event") == "job_started"]
    assert debug and {line["level"] for line in debug} == {"debug"}  # -v reached them
    running = [line for line in lines if "still running" in line["message"]]
    assert len(running) == 2 and {line["level"] for line in running} == {"warning"}
    states = [waiting.get_job(app, i).state for i in ids]
    assert states.count(JobState.QUEUED) == 6  # the unstarted ones, given back at the stop


@pytest.mark.slow  # two children must both start before 30 jobs drain: not beside other tests
@pytest.mark.parametrize("start", STARTS)
def test_burst_reaches_every_child(app: App, pg_url: str, tmp_path: Path, start: str) -> None:
    ids = app.jobs["nap.nap"].enqueue_many([(0.02,)] * 30)
    log = tmp_path / "tree.log"
    proc = onthedot(pg_url, log, "worker", "--burst", "--processes", "2", "-c", "2", start=start)
    assert wait_or_kill(proc, 60) == 0, log.read_text()
    assert {waiting.get_job(app, i).state for i in ids} == {JobState.SUCCEEDED}
    assert len(set(started_jobs(pg_url).values())) == 2, log.read_text()
    assert "2 process(es) stopped (burst: queues empty); 30 attempt(s) ran" in log.read_text()
