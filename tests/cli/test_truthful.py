"""Issue 25, "errors that tell the truth": the real `onthedot` command (a subprocess, as a user
runs it) where it used to wait, guess or miscount: a SQLite folder that does not exist, an
`--app` that names something else than an App, a new empty database made in the wrong folder,
and what a worker, `jobs show`, `health` and `schedules explain` report."""

from __future__ import annotations

from pathlib import Path

import pytest

from onthedot import App, ConfigurationError
from tests.cli.test_newuser import error_line, onthedot


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
