"""Issue 25, "errors that tell the truth": the real `onthedot` command (a subprocess, as a user
runs it) where it used to wait, guess or miscount: a SQLite folder that does not exist, an
`--app` that names something else than an App, a new empty database made in the wrong folder,
and what a worker, `jobs show`, `health` and `schedules explain` report."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from onthedot import App, ConfigurationError
from tests.cli.test_newuser import ONTHEDOT, ROOT, error_line, ok, onthedot
from tests.waiting import wait_for

APP = "tests.cli.truthful_app:app"
NEWUSER_APP = "tests.cli.newuser_app:app"

PROJECT_TASKS = """
from onthedot import App

app = App()  # sqlite:///onthedot.db: relative to the folder it runs from


@app.job(name="hello")
def hello() -> str:
    return "hi"


@app.job(name="nightly", schedule="0 3 * * *")
def nightly() -> None: ...
"""


def project(tmp_path: Path) -> Path:
    """A user's project: `proj/pkg/tasks.py` declaring a job and a schedule."""
    root = tmp_path / "proj"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "tasks.py").write_text(PROJECT_TASKS)
    return root


def run_in(cwd: Path, root: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """A command run in `cwd` with the project `root` importable (as an installed project)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTHEDOT_")}
    env["PYTHONPATH"] = f"{root}{os.pathsep}{ROOT}"
    return subprocess.run(list(argv), cwd=cwd, env=env, capture_output=True, text=True, timeout=60)


# -- a SQLite folder that does not exist ------------------------------------------------------
@pytest.mark.parametrize("burst", [True, False], ids=["burst", "steady"])
def test_a_worker_on_a_missing_folder_stops_at_once_with_the_line_of_jobs_list(
    tmp_path: Path, burst: bool
) -> None:
    url = f"sqlite:///{tmp_path}/no/such/folder/x.db"
    listed = error_line(onthedot("jobs", "list", cwd=tmp_path, db_url=url, app=None))
    assert "folder " in listed and "does not exist" in listed, listed
    # Before: the worker retried its "schema check" every 10 s, for ever (the timeout fails).
    args = ["worker", "--burst"] if burst else ["worker"]
    worker = onthedot(*args, cwd=tmp_path, db_url=url, timeout=20)
    assert worker.returncode == 1
    assert error_line(worker) == listed
    assert "schema check" not in worker.stderr
    assert not (tmp_path / "no").exists()


def test_the_storage_calls_a_missing_folder_a_configuration_error(tmp_path: Path) -> None:
    """Not DatabaseUnavailable: that one a worker waits out, and no wait creates a folder."""
    app = App(f"sqlite:///{tmp_path}/absent/x.db", log_events=False)
    try:
        with pytest.raises(ConfigurationError, match="does not exist"):
            app.storage.queue_stats()
    finally:
        app.close()
    assert not (tmp_path / "absent").exists()


# -- --app naming something else than an App ----------------------------------------------------
def test_app_naming_a_fastapi_object_says_so_and_names_the_apps(tmp_path: Path) -> None:
    pytest.importorskip("fastapi")
    url = f"sqlite:///{tmp_path}/x.db"
    for args in (["worker", "--burst"], ["jobs", "list"], ["check"]):
        result = onthedot(*args, cwd=tmp_path, db_url=url, app="tests.cli.asgi_main:api")
        assert result.returncode == 2
        line = error_line(result)
        # Before: "FastAPI.__call__() missing 3 required positional arguments"
        assert "__call__" not in line
        assert "'tests.cli.asgi_main:api' is a FastAPI object" in line, line
        assert "not an onthedot App" in line
        assert "has the App(s) jobs (use tests.cli.asgi_main:jobs)" in line
    missing = onthedot("check", cwd=tmp_path, db_url=url, app="tests.cli.asgi_main")
    assert "has no attribute 'app'; module 'tests.cli.asgi_main' has the App(s) jobs" in (
        error_line(missing)
    )
    built = onthedot("check", cwd=tmp_path, db_url=url, app="tests.cli.asgi_main:make_jobs")
    assert built.returncode == 0, built.stderr  # a factory function is still called


# -- a new, empty database made in another folder ---------------------------------------------
def test_a_worker_says_new_file_and_warns_when_run_from_another_folder(tmp_path: Path) -> None:
    root = project(tmp_path)
    worker = (ONTHEDOT, "--app", "pkg.tasks:app", "worker", "--burst")
    first = run_in(root, root, *worker)
    assert first.returncode == 0, first.stderr
    start = first.stderr.splitlines()[0]
    assert f"({root / 'onthedot.db'}, new file))" in start, start
    # A first run in the project's folder: only the declared schedule is worth a word.
    warnings = [line for line in first.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "declares 1 schedule(s)" in warnings[0], first.stderr

    again = run_in(root, root, *worker)
    assert "new file" not in again.stderr and "warning:" not in again.stderr, again.stderr

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    lost = run_in(elsewhere, root, *worker)
    assert lost.returncode == 0, lost.stderr
    assert f"({elsewhere / 'onthedot.db'}, new file))" in lost.stderr.splitlines()[0]
    assert (
        f"warning: {elsewhere / 'onthedot.db'} is a new, empty database, but "
        f"{root / 'onthedot.db'} exists beside your app's module: run from {root}, or pass "
        f"--database sqlite:///{root / 'onthedot.db'}"
    ) in lost.stderr.splitlines()


def test_the_first_enqueue_into_a_new_sqlite_file_logs_a_warning(tmp_path: Path) -> None:
    root = project(tmp_path)
    script = (
        "import logging; logging.basicConfig(level=logging.WARNING)\n"
        "from pkg.tasks import hello\n"
        "hello.enqueue(); hello.enqueue()\n"
    )
    first = run_in(tmp_path, root, sys.executable, "-c", script)
    assert first.returncode == 0, first.stderr
    created = [line for line in first.stderr.splitlines() if "event=database_created" in line]
    assert len(created) == 1, first.stderr  # once, at the enqueue that made the file
    assert f"path={tmp_path / 'onthedot.db'} relative_to={tmp_path}" in created[0]
    assert f"give the URL an absolute path (sqlite:///{tmp_path / 'onthedot.db'})" in created[0]
    again = run_in(tmp_path, root, sys.executable, "-c", script)
    assert again.returncode == 0 and "database_created" not in again.stderr, again.stderr


# -- what the commands report -----------------------------------------------------------------
def test_health_prints_an_error_without_stray_quotes(tmp_path: Path) -> None:
    result = onthedot("health", cwd=tmp_path, db_url="mysql://user@host/db", app=None)
    assert result.returncode == 1
    # Before: unhealthy: "unsupported database URL scheme 'mysql' ... postgresql://"
    assert result.stderr == (
        "unhealthy: unsupported database URL scheme 'mysql' in 'mysql://user@host/db': "
        "use sqlite:/// or postgresql://\n"
    )


@pytest.fixture
def migrated(db_url: str, tmp_path: Path) -> str:
    ok(onthedot("migrate", cwd=tmp_path, db_url=db_url, app=APP))
    return db_url


def show(job_id: str, cwd: Path, url: str) -> tuple[str, dict[str, object]]:
    text = ok(onthedot("jobs", "show", job_id, cwd=cwd, db_url=url, app=None))
    shown = json.loads(ok(onthedot("jobs", "show", job_id, "--json", cwd=cwd, db_url=url)))
    return text, shown


def test_a_job_that_ran_three_times_and_the_burst_summary(migrated: str, tmp_path: Path) -> None:
    job = ok(onthedot("enqueue", "boom", cwd=tmp_path, db_url=migrated, app=APP)).strip()
    burst = onthedot(
        "worker", "--burst", "--processes", "1", cwd=tmp_path, db_url=migrated, app=APP
    )
    assert burst.returncode == 0, burst.stderr
    # Before: "3 job(s) finished" for the three attempts of one job.
    assert burst.stderr.splitlines()[-1].endswith(
        "stopped (burst: queues empty); 3 attempt(s) ran: 2 failed and will be retried, "
        "1 failed for good"
    ), burst.stderr
    text, shown = show(job, tmp_path, migrated)
    assert "state: failed" in text and "attempts: 3" in text
    assert "began:" not in text and "cancel_requested:" not in text, text  # was "began: no"
    assert shown["began"] is None and shown["cancel_requested"] is None


@pytest.mark.slow
def test_jobs_show_of_a_job_cancelled_on_request(migrated: str, tmp_path: Path) -> None:
    job = ok(onthedot("enqueue", "waits", cwd=tmp_path, db_url=migrated, app=APP)).strip()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTHEDOT_")}
    env["PYTHONPATH"] = str(ROOT)
    argv = [ONTHEDOT, "--app", APP, "--database", migrated, "worker", "--processes", "1"]
    worker = subprocess.Popen(argv, cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: show(job, tmp_path, migrated)[1]["began"], "the job to start", 60)
        text, _ = show(job, tmp_path, migrated)
        assert "state: running" in text and "cancel_requested: no" in text, text
        ok(onthedot("jobs", "cancel", job, cwd=tmp_path, db_url=migrated, app=None))
        wait_for(lambda: show(job, tmp_path, migrated)[1]["state"] == "cancelled", "the cancel", 60)
        text, shown = show(job, tmp_path, migrated)
        # Before: "cancel_requested: no" for the job cancelled on that very request.
        assert "cancel_requested:" not in text and "began:" not in text, text
        assert "error: cancelled on request" in text
        assert shown["cancel_requested"] is None
    finally:
        worker.send_signal(signal.SIGTERM)
        _, stderr = worker.communicate(timeout=60)
    assert worker.returncode == 0, stderr
    assert stderr.splitlines()[-1].endswith("1 attempt(s) ran: 1 cancelled"), stderr


def test_a_burst_names_the_ready_jobs_it_does_not_know(migrated: str, tmp_path: Path) -> None:
    other = App(migrated, log_events=False)
    try:

        @other.job(name="billing.newer")
        def newer() -> None: ...

        newer.enqueue()
        newer.enqueue()
    finally:
        other.close()
    ok(onthedot("enqueue", "quick", cwd=tmp_path, db_url=migrated, app=APP))
    burst = onthedot(
        "worker", "--burst", "--processes", "1", cwd=tmp_path, db_url=migrated, app=APP
    )
    assert burst.returncode == 0, burst.stderr
    lines = burst.stderr.splitlines()
    # Before: "stopped (burst: queues empty)" while two ready jobs waited.
    assert (
        "warning: jobs are ready in queue default under name(s) this worker does not know: "
        "`billing.newer` (2 queued); run a worker whose app registers them"
    ) in lines, burst.stderr
    assert lines[-1].endswith(
        "stopped (burst: no job it knows is ready); 1 attempt(s) ran: 1 succeeded"
    )
    alone = onthedot("worker", "--burst", "-q", "other", cwd=tmp_path, db_url=migrated, app=APP)
    assert "warning:" not in alone.stderr and "(burst: queues empty)" in alone.stderr


@pytest.mark.slow
@pytest.mark.parametrize("how", ["second signal", "grace ran out"])
def test_a_forced_stop_exits_non_zero(migrated: str, tmp_path: Path, how: str) -> None:
    job = ok(onthedot("enqueue", "waits", cwd=tmp_path, db_url=migrated, app=APP)).strip()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTHEDOT_")}
    env["PYTHONPATH"] = str(ROOT)
    grace = ["--grace", "0.2"] if how == "grace ran out" else []
    argv = [ONTHEDOT, "--app", APP, "--database", migrated, "worker", "--processes", "1", *grace]
    worker = subprocess.Popen(argv, cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: show(job, tmp_path, migrated)[1]["began"], "the job to start", 60)
        worker.send_signal(signal.SIGTERM)
        if how == "second signal":
            worker.send_signal(signal.SIGTERM)
        _, stderr = worker.communicate(timeout=60)
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
    # Before: 0, as after a stop that let every job finish.
    assert worker.returncode == 1, stderr
    assert "forced: 1 job(s) cut short, rescued after their lease" in stderr.splitlines()[-1]


def _documented_default(option: str) -> str:
    """The default docs/scheduling.md's option table gives `option`, without its quotes."""
    for line in (ROOT / "docs" / "scheduling.md").read_text().splitlines():
        if line.startswith(f"| `{option}` |"):
            return line.split("|")[2].strip().strip("`").strip('"')
    raise AssertionError(f"{option} is not in the options table")


def test_durations_are_shown_as_the_docs_write_them(tmp_path: Path) -> None:
    from onthedot.web import asgi
    from onthedot.web.security import Credentials
    from tests.web.helpers import TestClient

    url = f"sqlite:///{tmp_path}/x.db"
    ok(onthedot("migrate", cwd=tmp_path, db_url=url, app=None))
    explained = ok(
        onthedot("schedules", "explain", "fast", cwd=tmp_path, db_url=url, app=NEWUSER_APP)
    )
    window = _documented_default("catchup_window")
    # Before: the docs said "24h" and `explain` printed window=1d.
    assert f"window={window} " in explained, explained
    app = App(url, log_events=False)
    try:
        app.job(name="echo")(lambda: None)
        app.schedule("spread", "every 1h", "echo", jitter="90s")
        explained = app.schedules.explain("spread")
        assert f"window={window} " in explained and "jitter=1m30s" in explained
        stored = app.schedules.declared()["spread"].definition_json()  # as runtime ones keep it
        # An unset grace is not stored: it is derived from the spec, as the docs' table says.
        assert _documented_default("grace") == "see meaning" and "grace" not in stored
        assert stored["catchup_window"] == window
        with TestClient(asgi(app, credentials=Credentials(), secret_key="k")) as client:
            page = client.get("/schedules/spread").text
        # Before: the web page said "within 24h" and "1m 30s" where explain said 1d, 1m30s.
        assert f"within {window}</dd>" in page and "<dd>1m30s</dd>" in page
    finally:
        app.close()


def test_explain_says_when_no_live_worker_fires_it_or_runs_its_jobs(
    db_url: str, tmp_path: Path
) -> None:
    from onthedot.storage.interface import WorkerInfo

    def verdict() -> str:
        explained = ok(
            onthedot(
                "schedules",
                "explain",
                "billing.invoice_run",
                cwd=tmp_path,
                db_url=db_url,
                app=NEWUSER_APP,
            )
        )
        # The verdict line, wherever the health lines that follow it put it.
        return next(line for line in explained.splitlines() if line.startswith("verdict: "))

    ok(onthedot("migrate", cwd=tmp_path, db_url=db_url, app=None))
    for action in ("pause", "resume"):  # its ledger row, as an operator's action makes it
        ok(
            onthedot(
                "schedules",
                action,
                "billing.invoice_run",
                cwd=tmp_path,
                db_url=db_url,
                app=NEWUSER_APP,
            )
        )
    # Before: "nothing holds it back: it fires at its next slot", with no worker alive.
    assert verdict() == (
        "verdict: no live worker runs the scheduler, so it does not fire until one starts: "
        "start `onthedot worker` (without --no-scheduler)"
    )
    app = App(db_url, log_events=False)
    try:
        storage = app.storage
        for worker_id, queues, jobs, expected in (
            ("w1", ("default",), ("fast",), "no live worker knows its job `billing.invoice_run`"),
            (
                "w2",
                ("mail",),
                ("billing.invoice_run",),
                "no live worker serves its queue `default`",
            ),
            ("w3", ("default",), ("billing.invoice_run",), "nothing holds it back"),
        ):
            storage.register_worker(WorkerInfo(worker_id, "host", 1, queues, 1, jobs=jobs))
            assert expected in verdict()
            storage.deregister_worker(worker_id)
    finally:
        app.close()
