"""A real Django project (tests/contrib/django_project) on SQLite and PostgreSQL: migrations,
Django tasks enqueued inside and outside transactions, a `manage.py onthedot worker --burst`
subprocess running them, and their results read back through Django Tasks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("django")
pytest.importorskip("django_tasks")

from tests.conftest import drop_pg_schema, new_pg_schema_url

PROJECT = Path(__file__).parent / "django_project"
SRC = Path(__file__).parents[2] / "src"


class Project:
    def __init__(self, env: dict[str, str]) -> None:
        self.env = env

    def manage(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=PROJECT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        if check and proc.returncode != 0:
            raise AssertionError(
                f"manage.py {' '.join(args)} exited {proc.returncode}:\n"
                f"{proc.stdout}\n{proc.stderr}"
            )
        return proc

    def json(self, *args: str) -> dict:
        return json.loads(self.manage(*args).stdout.strip().splitlines()[-1])


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTHEDOT_DATABASE")}
    env["PYTHONPATH"] = os.pathsep.join([str(PROJECT), str(SRC), env.get("PYTHONPATH", "")])
    env["DJANGO_SETTINGS_MODULE"] = "djproject.settings"
    env.update(extra)
    return env


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def project(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Project]:
    if request.param == "sqlite":
        yield Project(_env(DJANGO_DB="sqlite", DJANGO_SQLITE_PATH=str(tmp_path / "db.sqlite3")))
        return
    url, schema = new_pg_schema_url()
    try:
        yield Project(
            _env(DJANGO_DB="postgres", DJANGO_PG_URL=url.split("?")[0], DJANGO_PG_SCHEMA=schema)
        )
    finally:
        drop_pg_schema(schema)


@pytest.mark.slow
def test_tasks_run_on_onthedot_workers(project: Project) -> None:
    out = project.manage("migrate", "--noinput").stdout
    assert "onthedot.0001_onthedot_schema... OK" in out
    # Run again: nothing to do, and onthedot's own migrate agrees the schema is current.
    project.manage("migrate", "--noinput")
    assert "nothing to do" in project.manage("onthedot", "migrate").stdout

    ids = project.json("shopdemo", "enqueue")
    assert ids["jobs_after_rollback"] == 0  # the rolled-back enqueue left no job
    if project.env["DJANGO_DB"] == "postgres":  # inserted in Django's own transaction
        assert ids["id_inside_atomic"] and ids["seen_before_commit"] is False
    else:  # SQLite: onthedot's own connection, after the commit (on_commit)
        assert ids["id_inside_atomic"] == "" and ids["seen_before_commit"] is False
    mail = json.loads(project.manage("onthedot", "jobs", "show", ids["mail"], "--json").stdout)
    assert (mail["queue"], mail["args"][1:]) == ("mail", [[4, 4], {}]), mail
    assert ids["ok"] and ids["fail"] and ids["ctx"] and ids["async"]
    assert ids["flags"] == [True, True, True, True]
    assert ids["fresh_status"] == "READY"
    assert ids["refresh_id"]

    worker = project.manage("onthedot", "worker", "--burst", "-c", "2")
    assert worker.returncode == 0

    keys = ("rolled_back", "ok", "fail", "ctx", "async", "orders", "later")
    results = project.json("shopdemo", "results", *(f"{k}={ids[k] or 'none'}" for k in keys))
    assert results["rolled_back"] is None
    ok = results["ok"]
    assert ok["status"] == "SUCCESSFUL" and ok["return_value"] == 5
    assert ok["typed"] == 5 and ok["aget"] == 5
    assert ok["attempts"] == 1 and ok["errors"] == [] and ok["finished"]
    assert ok["task"] == "shop.tasks.add" and ok["args"] == [2, 3]
    fail = results["fail"]
    assert fail["status"] == "FAILED" and fail["attempts"] == 1
    assert fail["exc"] == "LookupError"
    [(path, trace)] = fail["errors"]
    assert path == "builtins.LookupError" and "no such thing" in trace
    assert "Traceback" in trace
    assert results["ctx"]["return_value"] == {"tag": "t1", "attempt": 1, "id": ids["ctx"]}
    assert results["async"]["return_value"] == 42
    assert results["orders"]["return_value"] == 1  # the ORM works in the worker: one kept order
    assert results["later"]["status"] == "READY"  # run_after an hour from now: still waiting


@pytest.mark.slow
def test_burst_worker_serves_the_queues_of_tasks_and_lists_task_paths(project: Project) -> None:
    """`manage.py onthedot worker --burst` with no -q serves the queues the backend's QUEUES
    name (a `mail` task runs), and the CLI shows each Django task by its own path."""
    project.manage("migrate", "--noinput")
    ids = project.json("shopdemo", "enqueue")
    first = project.manage("onthedot", "worker", "--burst", "-c", "2")
    assert "default, mail" in first.stdout + first.stderr  # the first line names both queues
    mail = project.json("shopdemo", "results", f"mail={ids['mail']}")["mail"]
    assert mail["status"] == "SUCCESSFUL" and mail["return_value"] == 8, mail
    listing = project.manage("onthedot", "jobs", "list", "--limit", "100").stdout
    rows = [line for line in listing.splitlines() if line.split()[:1] == [ids["mail"]]]
    assert rows and rows[0].endswith("shop.tasks.add (django.task)"), listing
    shown = project.manage("onthedot", "jobs", "show", ids["mail"]).stdout
    assert "name: shop.tasks.add (django.task)" in shown, shown


DROP_ONTHEDOT = """
from django.db import connection
names = [t for t in connection.introspection.table_names() if t.startswith("onthedot_")]
pg = connection.vendor == "postgresql"
with connection.cursor() as cur:
    for t in names:
        cur.execute(f"DROP TABLE {t}" + (" CASCADE" if pg else ""))
    if pg:
        cur.execute(
            "SELECT p.oid::regprocedure::text FROM pg_proc p JOIN pg_namespace n"
            " ON n.oid = p.pronamespace WHERE n.nspname = current_schema()"
            " AND left(p.proname, 9) = 'onthedot_'"
        )
        for (f,) in cur.fetchall():
            cur.execute(f"DROP FUNCTION {f} CASCADE")
print(len(names))
"""


@pytest.mark.slow
def test_every_migrate_brings_onthedots_schema_up_to_date(project: Project) -> None:
    """Django records onthedot's 0001 once; a later onthedot schema (here: all of it, dropped
    behind Django's back) is still applied by the next `manage.py migrate`."""
    project.manage("migrate", "--noinput")
    assert int(project.manage("shell", "-c", DROP_ONTHEDOT).stdout.split()[-1]) >= 5
    out = project.manage("migrate", "--noinput").stdout
    assert "No migrations to apply" in out  # Django itself has nothing left to do ...
    assert "nothing to do" in project.manage("onthedot", "migrate").stdout  # ... onthedot did
    job_id = project.manage("onthedot", "enqueue", "djproject.jobs.ping").stdout.strip()
    assert "queued" in project.manage("onthedot", "jobs", "show", job_id).stdout


@pytest.mark.slow
def test_manage_py_runs_every_cli_command(project: Project) -> None:
    project.manage("migrate", "--noinput")
    assert project.manage("onthedot", "check").returncode == 0
    listing = project.manage("onthedot", "schedules", "list").stdout
    assert "nightly-orders" in listing and "Europe/Paris" in listing
    assert (
        "django.task" in project.manage("onthedot", "schedules", "explain", "nightly-orders").stdout
    )
    job_id = project.manage("onthedot", "enqueue", "djproject.jobs.ping").stdout.strip()
    # the declared schedule on a Django @task, run now: a worker runs the task through Django
    slot_job = int(project.manage("onthedot", "schedules", "trigger", "nightly-orders").stdout)
    assert project.manage("onthedot", "worker", "--burst").returncode == 0
    assert "succeeded" in project.manage("onthedot", "jobs", "show", job_id).stdout
    ran = json.loads(project.manage("onthedot", "jobs", "show", str(slot_job), "--json").stdout)
    assert (ran["state"], ran["name"], ran["result"]) == ("succeeded", "django.task", 0)
    assert ran["schedule_key"] == "nightly-orders" and ran["slot"]
    help_text = project.manage("onthedot", "--help").stdout
    assert "manage.py onthedot" in help_text and "worker" in help_text


def test_example_runs() -> None:
    example = Path(__file__).parents[2] / "examples" / "django_example.py"
    proc = subprocess.run(
        [sys.executable, str(example)], env=_env(), capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().endswith("SUCCESSFUL hello ada")


@pytest.mark.slow
def test_a_worker_runs_only_real_django_tasks(project: Project, tmp_path: Path) -> None:
    """Issue 24 item 6: a `django.task` job whose row names something that only looks like a
    Task (a `call` and a `takes_context`), or a plain function, fails with one line; nothing
    of it runs."""
    marker = tmp_path / "impostor-ran"
    project.env["ONTHEDOT_TEST_MARKER"] = str(marker)
    project.manage("migrate", "--noinput")
    ids = {
        path: project.manage(
            "onthedot", "enqueue", "django.task", "--args", json.dumps([path, [], {}])
        ).stdout.strip()
        for path in ("shop.lookalike.impostor", "os.getcwd")
    }
    assert project.manage("onthedot", "worker", "--burst").returncode == 0
    for path, job_id in ids.items():
        job = json.loads(project.manage("onthedot", "jobs", "show", job_id, "--json").stdout)
        assert job["state"] == "failed", job
        assert job["error"] == (
            f"TypeError: {path!r} is not a Django task (a @task function): not run"
        ), job["error"]
    assert not marker.exists()


def test_admin_inside_django_behind_its_login_and_csrf(project: Project) -> None:
    """onthedot's admin mounted in the project's URLconf: anonymous visitors are sent to
    Django's login, a user who is not staff gets 403, staff see the admin (Django tasks by
    their path); a POST needs Django's CSRF token, and actions are audited as web:<user>."""
    project.manage("migrate", "--noinput")
    out = project.json("admindemo")
    assert out["anonymous"] == [302, "/admin/login/?next=/admin/onthedot/jobs"], out
    assert out["not_staff"] == 403
    assert out["permission"] == [200, 403]  # ADMIN_PERMISSION instead of is_staff
    assert out["staff"] == 200 and out["task_path_shown"] and out["static"] == 200
    assert out["django_token_in_forms"] and out["htmx_header"]
    assert out["post_without_token"] == 403  # Django's CsrfViewMiddleware refuses it
    assert out["post_with_token"] == [303, "/admin/onthedot/jobs"]
    assert out["state_after"] == "FAILED"  # cancelled: Django Tasks reports it FAILED
    assert out["pause"] == 303 and out["actor"] == "web:alice"
