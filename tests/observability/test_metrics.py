"""Prometheus metrics: event counters and histograms, database gauges, promtool-clean text,
served by the web admin and by a real worker process over HTTP."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from onthedot import App
from onthedot.observability import metrics
from onthedot.observability.probes import ProbeServer, ok_or
from onthedot.storage.interface import WorkerInfo
from onthedot.testing import drain, tick
from tests.observability.helpers import get, metrics_url, promtool_check, sample, start_worker
from tests.waiting import wait_for


def register(app: App) -> None:
    @app.job(name="echo")
    def echo(value: object = None) -> object:
        return value

    @app.job(name="explode", max_attempts=2, backoff=0.0)
    def explode() -> None:
        raise RuntimeError("boom")


def test_event_metrics_count_what_the_worker_did(app: App) -> None:
    register(app)
    m = metrics.instrument(app)
    assert metrics.instrument(app) is m  # once
    app.enqueue("echo", 1)
    app.enqueue("echo", 2)
    app.enqueue("explode")
    drain(app)
    drain(app)  # the retry
    value = m.registry.get_sample_value
    job = {"job": "echo", "queue": "default"}
    assert value("onthedot_jobs_enqueued_total", job) == 2
    assert value("onthedot_jobs_started_total", job) == 2
    assert value("onthedot_jobs_finished_total", {**job, "state": "succeeded"}) == 2
    boom = {"job": "explode", "queue": "default"}
    assert value("onthedot_jobs_retried_total", boom) == 1
    assert value("onthedot_jobs_finished_total", {**boom, "state": "failed"}) == 1
    assert value("onthedot_job_duration_seconds_count", {**job, "outcome": "succeeded"}) == 2
    assert value("onthedot_job_duration_seconds_count", {**boom, "outcome": "retried"}) == 1
    assert value("onthedot_job_duration_seconds_count", {**boom, "outcome": "failed"}) == 1
    assert value("onthedot_job_wait_seconds_count", job) == 2  # the claim says when it was ready
    text = metrics.render(app).decode()
    assert sample(text, "onthedot_jobs", queue="default", state="succeeded") == 2
    promtool_check(text)


def test_database_gauges(app: App) -> None:
    register(app)
    app.enqueue("echo", 1)
    app.resolve("echo").enqueue_with([2], queue="other")
    app.schedule("a", "* * * * *", "echo")
    app.schedule("b", "* * * * *", "echo")
    past = datetime.now(UTC) - timedelta(hours=2)
    tick(app, past)
    app.schedules.pause("b", actor="ops")
    app.storage.register_worker(WorkerInfo("w-live", "h", 1, ("default",), 1))
    app.storage.at(past).register_worker(WorkerInfo("w-old", "h", 2, ("default",), 1))
    text = metrics.render(app).decode()  # not instrumented: the database gauges only
    assert "onthedot_jobs_enqueued_total" not in text
    assert sample(text, "onthedot_database_up") == 1
    assert sample(text, "onthedot_queue_ready", queue="other") == 1
    assert sample(text, "onthedot_queue_running", queue="other") == 0
    assert sample(text, "onthedot_workers_alive") == 1
    assert sample(text, "onthedot_workers_stale") == 1
    assert sample(text, "onthedot_schedules_paused") == 1
    assert sample(text, "onthedot_schedules_late") == 1
    lag = sample(text, "onthedot_schedule_lag_seconds", schedule="a")
    assert lag is not None and lag > 3000  # two hours behind, minus the catch-up
    assert sample(text, "onthedot_schedule_lag_seconds", schedule="b") == 0  # paused
    missed = {v["key"]: v["missed"] for v in app.schedules.views()}
    assert sample(text, "onthedot_schedule_missed_total", schedule="a") == missed["a"]
    assert sample(text, "onthedot_schedule_coalesced_total", schedule="a") is not None
    promtool_check(text)


def test_database_down_answers_up_zero(tmp_path: Path) -> None:
    app = App(f"sqlite:///{tmp_path}/missing/dir/db.sqlite", log_events=False)
    text = metrics.render(app).decode()
    assert sample(text, "onthedot_database_up") == 0
    promtool_check(text)


def test_probe_server_token_guards_metrics_only() -> None:
    routes = {"/metrics": lambda: (200, b"x 1\n", "text/plain"), "/healthz": lambda: ok_or(None)}
    server = ProbeServer("127.0.0.1", 0, routes, token="s3cret").start()
    try:
        base = f"http://127.0.0.1:{server.port}"
        assert get(base + "/metrics")[0] == 401
        assert get(base + "/metrics", token="wrong")[0] == 401
        assert get(base + "/metrics", token="s3cret") == (200, "x 1\n")
        assert get(base + "/healthz") == (200, "ok\n")
        assert get(base + "/nope")[0] == 404
    finally:
        server.stop()


def test_worker_process_serves_metrics_and_probes(db_url: str, tmp_path: Path) -> None:
    app = App(db_url, log_events=False)
    app.migrate()
    register(app)
    proc = start_worker(db_url, tmp_path, "--metrics-port", "0", "-c", "2")
    try:
        base = metrics_url(proc)
        assert get(base + "/readyz") == (200, "ok\n")
        wait_for(lambda: get(base + "/healthz")[0] == 200, "a fresh heartbeat")
        for i in range(3):
            app.enqueue("echo", i)
        app.enqueue("explode")

        def scraped() -> str | None:
            status, text = get(base + "/metrics")
            assert status == 200
            done = sample(text, "onthedot_jobs_finished_total", job="explode", state="failed")
            return text if done == 1 else None

        text = wait_for(scraped, "the worker to count the jobs")
        ok = {"job": "echo", "queue": "default", "state": "succeeded"}
        assert sample(text, "onthedot_jobs_finished_total", **ok) == 3
        assert sample(text, "onthedot_jobs_retried_total", job="explode") == 1
        assert sample(text, "onthedot_workers_alive") == 1
        promtool_check(text)
    finally:
        assert proc.stop() == 0, proc.output()[-3000:]
    app.close()


def test_liveness_follows_the_keeper_through_a_database_outage() -> None:
    from onthedot.observability.events import DatabaseError, EventBus, WorkerHeartbeat
    from onthedot.observability.probes import HeartbeatWatch

    events = EventBus()
    watch = HeartbeatWatch(events, "w-1", lease=30.0)
    assert watch.problem() == "worker w-1: no heartbeat yet"
    # The keeper runs but the database refuses: live (readiness reports the outage), so an
    # orchestrator does not restart a worker that would resume by itself.
    events.emit(DatabaseError(where="heartbeat", error="connection refused", retry_in=0.2))
    assert watch.problem() is None
    watch.last = watch.last - 31.0 if watch.last is not None else None  # the keeper went quiet
    assert watch.problem() is not None and "last heartbeat" in watch.problem()
    events.emit(WorkerHeartbeat("w-1", 0))
    assert watch.problem() is None
    events.emit(DatabaseError(where="claim", error="x", retry_in=0.1))  # not the keeper
    watch.close()


def test_rescued_jobs_are_counted_by_job_and_queue(app: App) -> None:
    # A rescuer takes a dead worker's job once it has seen its lease unrenewed for a whole lease
    # of its own: a short one, so that the burst worker below waits that long at most.
    app.lease = 0.3
    register(app)
    m = metrics.instrument(app)
    app.jobs["echo"].enqueue_with([1], queue="mail")
    assert len(app.storage.claim_jobs("a-worker-that-died", "mail", 1, lease=0.05)) == 1
    time.sleep(0.2)  # the dead worker's lease runs out on the database's clock
    value = m.registry.get_sample_value
    done = {"job": "echo", "queue": "mail", "state": "succeeded"}

    def rescued_and_run() -> bool:
        # a burst worker's keeper rescues the job; that worker, or the next, runs it
        drain(app, queues=["mail"])
        return value("onthedot_jobs_finished_total", done) == 1

    wait_for(rescued_and_run, "the dead worker's job to be rescued and run", every=0.05)
    rescued = {"job": "echo", "queue": "mail", "outcome": "requeued"}
    assert value("onthedot_jobs_rescued_total", rescued) == 1
    promtool_check(metrics.render(app).decode())
