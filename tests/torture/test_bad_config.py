"""Bad configuration, each a clear one-line error (CLI: one `Error:` line, no traceback) and
nothing lost or half-created: malformed database URLs (fuzzed), a missing SQLite folder,
unreachable PostgreSQL (a closed port), a schema that is behind (never migrated), and read-only
databases: PostgreSQL with `default_transaction_read_only=on`, a PostgreSQL role allowed only
to SELECT (private cluster), and a SQLite file chmod 0444 (as root: in a process without the
capability to override file permissions).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import psycopg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from onthedot import ConfigurationError, DatabaseUnavailable, JobFilter, SchemaOutOfDate
from onthedot.config import parse_database_url
from tests.conftest import IN_CI
from tests.torture import clitools
from tests.torture.chaos_app import make_app
from tests.torture.clitools import one_line_error, run
from tests.torture.harness import ROOT, wait_for, worker_env
from tests.torture.pgcluster import free_port

WRITES = [
    ("enqueue", "chaos.work", "--args", "[1]"),
    ("jobs", "cancel", "1"),
    ("schedules", "create", "runtime-key", "every 5s", "chaos.tick"),
]


@pytest.fixture(autouse=True)
def _close_cli_apps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.chdir(tmp_path)  # a default sqlite:///onthedot.db lands here, never in the repo
    yield
    clitools.close_opened()


# -- URLs -----------------------------------------------------------------------------------------
@settings(max_examples=400, deadline=None)
@given(
    st.one_of(
        st.text(max_size=80),
        st.builds(
            lambda scheme, rest: f"{scheme}{rest}",
            st.sampled_from(["sqlite://", "sqlite:///", "postgresql://", "postgres://", "x://"]),
            st.text(max_size=60),
        ),
    )
)
def test_parse_database_url_raises_only_configuration_error(url: str) -> None:
    try:
        cfg = parse_database_url(url)
    except ConfigurationError as exc:
        assert str(exc) and "\n" not in str(exc)
    else:
        assert cfg.backend in ("sqlite", "postgresql")


@pytest.mark.parametrize(
    "url",
    [
        "   ",
        "mysql://user@host/db",
        "sqlite:/relative.db",
        "sqlite://",
        "sqlite:///",
        "sqlite:///x.db?journal=wal",
        "postgresql://host:notaport/db",
        "postgresql://[::1/db",
        "just words",
        "postgresql://u@h/db?sslmode=bogus'; DROP TABLE onthedot_jobs; --",
    ],
)
def test_malformed_urls_are_one_line_errors(url: str) -> None:
    line = one_line_error(run("jobs", "list", database=url, app=False))
    assert "URL" in line or "url" in line or "database" in line, line


def test_a_sqlite_file_in_a_missing_folder(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/no/such/folder/x.db"
    assert "does not exist" in one_line_error(run("jobs", "list", database=url, app=False))
    assert not (tmp_path / "no").exists()


@pytest.mark.slow
def test_an_unreachable_postgresql_is_one_line(tmp_path: Path) -> None:
    url = f"postgresql://postgres@127.0.0.1:{free_port()}/postgres"
    line = one_line_error(run("enqueue", "chaos.work", "--args", "[1]", database=url))
    assert "unreachable" in line and str(url.split(":")[2].split("/")[0]) in line
    unhealthy = run("health", database=url, app=False)
    assert unhealthy.exit_code == 1 and "unhealthy" in unhealthy.output


# -- a schema that is behind ----------------------------------------------------------------------
def _tables(url: str) -> list[str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
        ).fetchall()
    return sorted(r[0] for r in rows)


@pytest.mark.parametrize(
    "args",
    [
        ("jobs", "list"),
        ("queues",),
        ("enqueue", "chaos.work", "--args", "[1]"),
        ("schedules", "list"),
        ("schedules", "history", "every-second"),
        ("worker", "--burst"),
    ],
)
def test_an_unmigrated_postgresql_schema_is_refused_and_left_alone(
    pg_url: str, args: tuple[str, ...]
) -> None:
    line = one_line_error(run(*args, database=pg_url))
    assert "onthedot migrate" in line, line
    assert _tables(pg_url) == [], "nothing may be created in a schema that is behind"


def test_the_api_refuses_a_schema_that_is_behind(pg_url: str) -> None:
    app = make_app(pg_url, log_events=False)
    try:
        with pytest.raises(SchemaOutOfDate, match="run `onthedot migrate`"):
            app.enqueue("chaos.work", 1)
        app.migrate()
        assert app.storage.count_jobs(JobFilter()) == 0
    finally:
        app.close()


# -- read-only databases --------------------------------------------------------------------------
def _read_only_url(pg_url: str) -> str:
    base, _, query = pg_url.partition("?options=")
    from urllib.parse import unquote

    options = unquote(query) + " -c default_transaction_read_only=on"
    return f"{base}?options={quote(options.strip())}"


def _seed(url: str) -> list[int]:
    app = make_app(url, log_events=False)
    try:
        app.migrate()
        return app.jobs["chaos.work"].enqueue_many([[1], [2], [3]])
    finally:
        app.close()


def _ids(url: str) -> list[int]:
    app = make_app(url, log_events=False)
    try:
        return sorted(j.id for j in app.list_jobs(JobFilter(limit=1000)))
    finally:
        app.close()


def _worker_refuses(url: str, tmp_path: Path, expected: str, *, prefix: list[str]) -> str:
    """Start a worker subprocess on `url`: it must say `expected` in one clean line, without
    a traceback, and either stop with that error or keep waiting until SIGTERM."""
    log = tmp_path / f"worker-{uuid.uuid4().hex[:6]}.log"
    with log.open("wb") as handle:
        command = [sys.executable, "-m", "onthedot", "--app", "tests.torture.chaos_app:app"]
        proc = subprocess.Popen(
            [*prefix, *command, "worker"],
            cwd=ROOT,
            env=worker_env(url),
            stdout=handle,
            stderr=subprocess.STDOUT,
        )
        try:
            wait_for(lambda: expected in log.read_text(errors="replace"), expected)
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
            proc.wait(60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
    output = log.read_text(errors="replace")
    assert "Traceback" not in output, output
    return output


@pytest.mark.slow
def test_a_read_only_postgresql(pg_url: str, tmp_path: Path) -> None:
    before = _seed(pg_url)
    ro = _read_only_url(pg_url)
    for args in WRITES:
        assert "read-only" in one_line_error(run(*args, database=ro)), args
    assert "read-only" in one_line_error(run("migrate", database=ro, app=False))
    app = make_app(ro, log_events=False)
    try:
        with pytest.raises(DatabaseUnavailable, match="read-only"):
            app.enqueue("chaos.work", 4)
        assert len(app.list_jobs()) == 3  # reading still works
    finally:
        app.close()
    output = _worker_refuses(ro, tmp_path, "is read-only", prefix=[])
    assert "event=database_error" in output  # it waits, like an outage, and says why
    assert _ids(pg_url) == sorted(before), "nothing lost, nothing added"


@pytest.mark.slow
def test_a_postgresql_role_that_may_only_select(private_pg_url: str, tmp_path: Path) -> None:
    before = _seed(private_pg_url)
    role = f"reader_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(private_pg_url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN")
        conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}")
    reader = private_pg_url.replace("postgresql://postgres@", f"postgresql://{role}@")
    for args in WRITES:
        line = one_line_error(run(*args, database=reader))
        assert "permission denied" in line and "role" in line, (args, line)
    output = _worker_refuses(reader, tmp_path, "permission denied", prefix=[])
    assert "Error: PostgreSQL at" in output  # a configuration error: it stops, clearly
    assert _ids(private_pg_url) == sorted(before)


def _without_root_powers() -> list[str]:
    """A prefix running a command without the capabilities that let root ignore file modes."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        message = "running as root without setpriv: cannot make a file read-only for us"
        if IN_CI:
            pytest.fail(message + " (required under CI=true)")
        pytest.skip(message)
    caps = "-dac_override,-dac_read_search,-fowner"
    return [setpriv, f"--inh-caps={caps}", f"--bounding-set={caps}", "--"]


@pytest.mark.slow
def test_a_read_only_sqlite_file(tmp_path: Path) -> None:
    path = tmp_path / "ro.db"
    url = f"sqlite:///{path}"
    before = _seed(url)
    _ids(url)  # leaves the WAL files in place, as a reader would
    path.chmod(0o444)
    prefix = _without_root_powers()
    command = [sys.executable, "-m", "onthedot", "--database", url, "--app", clitools.APP]
    for args in WRITES:
        result = subprocess.run(
            [*prefix, *command, *args], cwd=ROOT, capture_output=True, text=True, timeout=120
        )
        assert result.returncode == 1, result
        assert "Traceback" not in result.stderr, result.stderr
        errors = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
        assert len(errors) == 1 and "read-only" in errors[0], result.stderr
    output = _worker_refuses(url, tmp_path, "is read-only", prefix=prefix)
    assert "event=database_error" in output
    path.chmod(0o644)
    assert _ids(url) == sorted(before)
