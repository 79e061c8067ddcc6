"""Under Django, onthedot's hints name the commands of a Django project (`python manage.py
migrate`, `python manage.py onthedot worker`), never a bare `onthedot ...` that the project
does not run: `manage.py onthedot ...` subprocesses on the project of test_django.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("django")
pytest.importorskip("django_tasks")

from tests.conftest import drop_pg_schema, new_pg_schema_url

PROJECT = Path(__file__).parent / "django_project"
SRC = Path(__file__).parents[2] / "src"


def manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=PROJECT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def project_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ONTHEDOT_")}
    env["PYTHONPATH"] = os.pathsep.join([str(PROJECT), str(SRC), env.get("PYTHONPATH", "")])
    env["DJANGO_SETTINGS_MODULE"] = "djproject.settings"
    env.update(extra)
    return env


def test_a_missing_sqlite_database_hints_manage_py_migrate(tmp_path: Path) -> None:
    env = project_env(DJANGO_DB="sqlite", DJANGO_SQLITE_PATH=str(tmp_path / "db.sqlite3"))
    listed = manage(env, "onthedot", "jobs", "list")
    assert listed.returncode == 1
    # Before: "... or create it with `onthedot migrate`", a command the project does not run.
    assert "create it with `python manage.py migrate`" in listed.stderr, listed.stderr
    assert "`onthedot migrate`" not in listed.stderr


@pytest.mark.postgres
def test_an_unmigrated_postgresql_and_explain_hint_manage_py() -> None:
    url, schema = new_pg_schema_url()
    try:
        env = project_env(
            DJANGO_DB="postgres", DJANGO_PG_URL=url.split("?")[0], DJANGO_PG_SCHEMA=schema
        )
        worker = manage(env, "onthedot", "worker", "--burst")
        assert worker.returncode == 1
        assert "run `python manage.py migrate`" in worker.stderr, worker.stderr
        health = manage(env, "onthedot", "health")
        assert "run `python manage.py migrate`" in health.stderr, health.stderr

        assert manage(env, "migrate", "--noinput").returncode == 0
        for action in ("pause", "resume"):  # the schedule's ledger row, as an operator makes it
            done = manage(env, "onthedot", "schedules", action, "nightly-orders")
            assert done.returncode == 0, done.stderr
        explained = manage(env, "onthedot", "schedules", "explain", "nightly-orders")
        assert explained.returncode == 0, explained.stderr
        verdict = next(
            line for line in explained.stdout.splitlines() if line.startswith("verdict: ")
        )
        assert "start `python manage.py onthedot worker` (without --no-scheduler)" in verdict
    finally:
        drop_pg_schema(schema)
