"""Issue 25 item 3: one `--metrics-port` for the whole tree. The supervisor serves every worker
process's metrics summed (prometheus_client's multiprocess mode), promtool-clean, and its
probes answer for every child: a child that stops beating turns /healthz to 503 naming it.
Before, process i served PORT + i, each with its own counts, and /healthz covered process 0."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from onthedot import App, JobState
from tests import waiting
from tests.worker.tree import onthedot, started_jobs, wait_or_kill, workers

PROMTOOL = shutil.which("promtool")


@pytest.fixture
def app(pg_url: str) -> Iterator[App]:
    application = App(pg_url, log_events=False)
    application.job(name="nap.nap")(lambda seconds: None)
    application.migrate()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE nap_started (job_id bigint PRIMARY KEY, pid integer)")
    yield application
    application.close()


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def sample(text: str, name: str, **labels: str) -> float:
    """The value of one sample of the exposition (0 when absent)."""
    for line in text.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            found = dict(re.findall(r'(\w+)="([^"]*)"', line.partition("}")[0]))
            if all(found.get(k) == v for k, v in labels.items()):
                return float(line.rsplit(" ", 1)[1])
    return 0.0


@pytest.mark.slow
def test_one_endpoint_serves_the_whole_tree(app: App, pg_url: str, tmp_path: Path) -> None:
    log = tmp_path / "tree.log"
    proc = onthedot(pg_url, log, "worker", "--processes", "2", "--metrics-port", "0")
    try:
        line = waiting.wait_for(
            lambda: re.search(
                r"metrics of every worker process on (http://\S+)/metrics", log.read_text()
            ),
            "the endpoint's line",
        )
        base = line.group(1)
        waiting.wait_for(lambda: len(workers(pg_url)) == 2, "two children registered")
        ids = app.jobs["nap.nap"].enqueue_many([(0.02,)] * 60)
        waiting.wait_for(
            lambda: {waiting.get_job(app, i).state for i in ids} == {JobState.SUCCEEDED},
            "every job done",
        )
        assert len(set(started_jobs(pg_url).values())) == 2  # both children ran jobs
        finished = "onthedot_jobs_finished_total"
        labels = {"job": "nap.nap", "queue": "default", "state": "succeeded"}
        text = waiting.wait_for(
            lambda: (t := get(base + "/metrics")[1]) and sample(t, finished, **labels) == 60 and t,
            "all 60 jobs counted at the one endpoint",
        )
        assert sample(text, "onthedot_worker_processes", state="running") == 2
        assert sample(text, "onthedot_database_up") == 1  # the database gauges too
        if PROMTOOL:
            check = subprocess.run(
                [PROMTOOL, "check", "metrics"], input=text, capture_output=True, text=True
            )
            assert check.returncode == 0, check.stdout + check.stderr
        assert get(base + "/healthz") == (200, "ok\n")
        assert get(base + "/readyz") == (200, "ok\n")

        # A child that stops beating: the tree's liveness says which one.
        victim = min(r["pid"] for r in workers(pg_url))
        os.kill(victim, signal.SIGSTOP)
        try:
            _, body = waiting.wait_for(
                lambda: (answer := get(base + "/healthz"))[0] == 503 and answer,
                "/healthz to notice the silent child",
            )
            assert "no heartbeat" in body
        finally:
            os.kill(victim, signal.SIGCONT)
        waiting.wait_for(lambda: get(base + "/healthz")[0] == 200, "the child beating again")
        assert get(base + "/metrics")[0] == 200  # a scrape that opened the database ...

        os.kill(victim, signal.SIGKILL)  # ... and a restart after it: still forked
        waiting.wait_for(
            lambda: (
                sample(get(base + "/metrics")[1], "onthedot_worker_process_restarts_total") == 1
                and get(base + "/healthz")[0] == 200
            ),
            "the restart counted and the tree live again",
        )
        after = get(base + "/metrics")[1]
        assert sample(after, finished, **labels) == 60  # the dead child's counts are kept
    finally:
        proc.send_signal(signal.SIGTERM)
        code = wait_or_kill(proc, 60)
    assert code == 0, log.read_text()
    assert "new interpreters" not in log.read_text()
    assert not list(Path("/tmp").glob(f"onthedot-metrics-*/*_{victim}.db"))  # folder removed


def test_a_public_address_needs_a_token(app: App, pg_url: str, tmp_path: Path) -> None:
    """Issue 24 item 6: like the web admin, the metrics endpoint refuses to listen beyond
    loopback without a token. Before, `--metrics-host 0.0.0.0` served anyone."""
    for args in (["--processes", "2"], ["--processes", "1"]):
        log = tmp_path / "refused.log"
        proc = onthedot(
            pg_url, log, "worker", *args, "--metrics-port", "0", "--metrics-host", "0.0.0.0"
        )
        assert wait_or_kill(proc, 60) == 1, log.read_text()
        last = log.read_text().splitlines()[-1]
        assert "ONTHEDOT_WEB_METRICS_TOKEN" in last and "0.0.0.0" in last, last


def test_with_a_token_metrics_need_it_and_probes_do_not(
    app: App, pg_url: str, tmp_path: Path
) -> None:
    log = tmp_path / "tree.log"
    env = {"ONTHEDOT_WEB_METRICS_TOKEN": "s3cret-token"}
    args = ["worker", "--processes", "2", "--metrics-port", "0", "--metrics-host", "0.0.0.0"]
    proc = onthedot(pg_url, log, *args, env=env)
    try:
        line = waiting.wait_for(
            lambda: re.search(r"on http://0\.0\.0\.0:(\d+)/metrics", log.read_text()), "endpoint"
        )
        base = f"http://127.0.0.1:{line.group(1)}"
        assert get(base + "/metrics")[0] == 401
        request = urllib.request.Request(
            base + "/metrics", headers={"Authorization": "Bearer s3cret-token"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.status == 200
        waiting.wait_for(lambda: get(base + "/healthz")[0] == 200, "the tree live")
    finally:
        proc.send_signal(signal.SIGTERM)
        assert wait_or_kill(proc, 60) == 0, log.read_text()
